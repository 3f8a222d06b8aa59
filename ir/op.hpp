// The primitive ops of the array IR (listed once in ir/ops.def) and their rules:
// the shape rule `infer` and the reference kernel `eval_ref`. Later rules (vma,
// lowering, batching, transpose) are added beside these, each a switch over Op
// without `default:` so that -Wswitch flags an op a rule forgot.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/aval.hpp"

namespace pxl {

class Array;
struct SpmdCallee;   // runtime/spmd_call.hpp
struct WhileLoop;    // ir/while_loop.hpp
struct CustomCallee; // ir/custom_call.hpp

// What a jax.debug.print prints: its format string, the keyword names of its
// last operands (the others are positional) and, opaque to the IR, how the
// arguments (pytrees, static values) are rebuilt from the operands
// (stdlib/debug_print.cpp). Shared by every copy of the instruction, so the
// print travels through jit, vmap, grad and loops with its instruction.
struct DebugFormatArgs {
  virtual ~DebugFormatArgs() = default;
};
struct DebugFormat {
  std::string format;
  std::vector<std::string> keywords;
  std::shared_ptr<const DebugFormatArgs> args;
};

// A host_callback's callee (jax.pure_callback / io_callback with results):
// its results' types and how the runtime calls it, opaque to the IR
// (stdlib/host_callback.cpp). Shared by every copy of the instruction.
struct HostCallee {
  virtual ~HostCallee() = default;
  std::vector<AVal> results;
  bool pure = true;   // pure_callback: dead code when its results are unused
  bool gated = false; // the last operand says whether its cond branch is taken
  std::string no_jvp; // JAX's error for differentiating it
  // Calls the callback with one participant's operands (the gate excluded)
  // and returns its checked results; thread-safe (devices call it at once).
  virtual std::vector<Array> call(std::span<const Array> operands) const = 0;
};

enum class Op : uint16_t {
#define OP(name, text, arity, family) name,
#include "ir/ops.def"
#undef OP
};

enum class OpFamily : uint8_t {
  Unary,
  Binary,
  Compare,
  Select,
  Nary,
  Convert,
  Creation,
  Structural,
  Reduce,
  Scan,
  Dot,
  Index,
  Linalg,
  Collective,
  Effect,
  Call,
  Loop
};

const char* op_name(Op op); // the text name, e.g. "dot_general"
int op_arity(Op op);        // -1 for variadic
OpFamily op_family(Op op);
inline bool is_collective(Op op) { return op_family(op) == OpFamily::Collective; }
inline bool is_elementwise(Op op) {
  OpFamily f = op_family(op);
  return f == OpFamily::Unary || f == OpFamily::Binary || f == OpFamily::Compare ||
         f == OpFamily::Select || f == OpFamily::Nary || f == OpFamily::Convert;
}

// The order a float dot_general sums its products in. Auto: XLA's for a
// dot (ref_dot.cpp). A convolution's contraction (stdlib/lax_conv.pxl) takes
// the order of the library XLA's CPU backend hands it to: Chain, one chain of
// fused multiply-adds over k (Eigen's); Ynn, YNNPACK's dot over the
// contraction dims (kernel position..., input feature) with the features
// innermost (ref_dot.cpp: ynn_conv_gemm). Elemental: a vector times a
// transposed matrix, which XLA fuses with the transpose into one loop that
// sums each output as a chain of fused multiply-adds over k (the simplifier
// sets it where it folds that transpose into the dot).
enum class DotOrder : uint8_t { Auto, Chain, Ynn, Elemental };

// The values of DotDims::precision, in lax.Precision's order.
enum : uint8_t { kPrecisionNone = 0, kPrecisionDefault, kPrecisionHigh, kPrecisionHighest };
// "DEFAULT", "HIGH" or "HIGHEST" (kPrecisionNone: "").
const char* precision_name(uint8_t p);

// dot_general's dimension numbers (lax.dot_general's ((lc, rc), (lb, rb))).
struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contract, rhs_contract;
  DotOrder order = DotOrder::Auto;
  // lax.dot_general called without preferred_element_type: JAX's jaxpr
  // prints the parameter as None (it does not change what is computed).
  bool preferred_none = false;
  // lax.Precision per operand (JAX's `precision` parameter): kPrecisionNone
  // or DEFAULT/HIGH/HIGHEST. The CPU computes in the operands' type whatever
  // it says; on CUDA a float32 product below HIGHEST may run in TF32.
  std::array<uint8_t, 2> precision{0, 0};
  bool operator==(const DotDims&) const = default;
};

enum class ScatterMode : uint8_t { Set, Add, Mul, Min, Max };
const char* scatter_mode_name(ScatterMode m);

// The flags of the linalg ops (ops.def) and which result a factorization op gives.
struct LinalgAttrs {
  int output = 0;
  bool left_side = false, lower = false, transpose_a = false, unit_diagonal = false;
  bool full_matrices = false, compute_uv = false;
  bool compute_left = false, compute_right = false; // eig: which eigenvectors geev computes
  bool operator==(const LinalgAttrs&) const = default;
};

// The static parameters of a primitive; each op reads only the fields its
// ops.def comment names, the rest keep their defaults (so equal ops compare equal).
struct OpAttrs {
  std::vector<int64_t> axes;                    // reduce_*, rev; broadcast_in_dim dims
  Shape shape;                                  // iota, broadcast_in_dim, reshape
  std::vector<int64_t> perm;                    // transpose
  std::vector<int64_t> starts, limits, strides; // slice
  std::vector<int64_t> lo, hi, interior;        // pad
  DType dtype = DType::Float32;                 // convert, bitcast, iota, argmax/argmin
  bool weak = false;                            // convert_element_type's result weak_type
  int64_t axis = 0;                             // iota, concatenate, argmax, cumsum, take, scatter
  int64_t exponent = 0;                         // integer_pow
  // reduce_sum and mul_reduce_sum: the LoopBody (ir/reduce_tree.hpp) of the
  // elementwise work XLA fuses into the sum's loop (contract_multiply_adds).
  int64_t loop_body = 0;
  bool reverse = false; // cumsum
  // mul of complex64: the right (left) operand is a broadcast scalar, which
  // changes the product XLA's multiply fuses into the imaginary part
  // (ref_complex.hpp); XLA's multiply takes the scalar on the right.
  bool scalar_rhs = false;
  bool scalar_lhs = false;
  // debug_print: recorded by participant 0 alone (a print in an automatically
  // partitioned jit, which JAX runs once, on device 0, with the whole value).
  bool first_participant = false;
  // pow: the exponent was an integer before its conversion to the base's type
  // (JAX's pow of an integer y, whose derivative in x is 0 where y == 0).
  bool int_exponent = false;
  // exp and log of a float32 operand that XLA compiles alone (an eager op):
  // the elements ref::xla::libm_tail_start names take the C library's expf
  // and logf, as XLA's split SLP vectors do.
  bool libm_tail = false;
  // broadcast_in_dim of a jnp.full/zeros/ones: the program's own op, which a
  // jaxpr shows even where it only does a binary op's broadcasting.
  bool filled = false;
  // mul by a constant reciprocal that JAX's jaxpr shows as a div by this
  // count (jnp.mean's; XLA rewrites that div as the mul pxl binds); 0: none.
  int64_t shown_divisor = 0;
  // concatenate of expand_dims along `axis`: jnp.stack's, which a jaxpr shows
  // as JAX's stack primitive of the unexpanded operands.
  bool stacked = false;
  // Which integer params a jaxpr prints as numpy ints (np.int64(n)), as JAX's
  // transpose and batching rules compute them with numpy: bits 0, 1, 2 are
  // pad's lo, hi and interior, slice's start_indices, limit_indices and
  // strides, and bit 0 broadcast_in_dim's broadcast_dimensions and a
  // reduction's (or argmax's) axes.
  uint8_t numpy_ints = 0;
  DotDims dot;                         // dot_general
  ScatterMode mode = ScatterMode::Set; // scatter
  std::vector<std::string> axis_names; // collectives: the mesh axes, major first
  int64_t group_size = 1;              // collectives: product of those axes' sizes,
                                       // or the size of each axis_index_groups group
  // psum/pmax/pmin/all_gather/psum_scatter/all_to_all: axis_index_groups, a
  // partition of the ranks 0..N-1 over axis_names into equal groups that act
  // independently (ranks within a group in listed order); empty: one group.
  std::vector<std::vector<int64_t>> index_groups;
  bool tiled = false;                             // all_gather, psum_scatter
  int64_t concat_axis = 0;                        // all_to_all
  std::vector<std::pair<int64_t, int64_t>> pairs; // ppermute: (source, destination) ranks
  LinalgAttrs linalg;                             // the linalg ops (ops.def)
  std::vector<std::vector<std::string>> dim_axes; // sharding_constraint: each dimension's mesh axes
  // sharding_constraint: the mesh axes its result is unreduced over (JAX's
  // out_sharding=P(..., unreduced=...) of a contraction: per-device partial sums).
  std::vector<std::string> unreduced;
  std::shared_ptr<const SpmdCallee> callee;   // spmd_call
  std::shared_ptr<const WhileLoop> loop;      // while
  std::shared_ptr<const CustomCallee> custom; // custom_call
  std::shared_ptr<const DebugFormat> debug;   // debug_print
  std::shared_ptr<const HostCallee> host;     // host_callback
  bool operator==(const OpAttrs&) const = default;
};

// The attributes `op` uses, as IR text: "axes=[0, 1]", "shape=(2, 3) dtype=int32"...
std::string attrs_str(Op op, const OpAttrs& attrs);

// Shape rule: the result's abstract value, or pxl::Error (no span) naming the
// offending shapes/dtypes.
AVal infer(Op op, const OpAttrs& attrs, std::span<const AVal> inputs);

// spmd_call's and custom_call's shape rule: the (global) types of all of its results.
std::vector<AVal> infer_call(const OpAttrs& attrs, std::span<const AVal> inputs);
// Whether `op` defines several values (Instr::nresults) and is bound with
// OpContext::bind_call: spmd_call, while, custom_call and host_callback.
inline bool is_multi_result(Op op) {
  return op == Op::SpmdCall || op == Op::While || op == Op::CustomCall || op == Op::HostCallback;
}
// The shape rule of any op: all of its results' types (one for most ops).
std::vector<AVal> infer_results(Op op, const OpAttrs& attrs, std::span<const AVal> inputs);
// spmd_call's attributes as IR text: "shard_map @f mesh=... in=(...) out=(...)".
std::string callee_str(const SpmdCallee& callee);

// Reference kernel: slow, simple, obviously correct; the oracle compiled code is
// checked against. Runs the shape rule first, so bad input throws the same errors.
Array eval_ref(Op op, const OpAttrs& attrs, std::span<const Array> inputs);

} // namespace pxl
