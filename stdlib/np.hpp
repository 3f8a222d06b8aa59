// The array namespace (np / jax.numpy), as C++ functions over Tensors. This layer
// does what jax.numpy does on top of lax: dtype promotion, broadcasting, axis
// normalisation, and argument checking with clear messages; it expresses every
// computation as primitives (ir/ops.def) bound through an OpContext.
// Errors are thrown as pxl::Error without a span (the interpreter adds it), and
// name the shapes/dtypes/axes involved, e.g.
//   "add: shapes (3,) and (4,) cannot be broadcast together".
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.hpp"

namespace pxl::np {

using Axes = std::optional<std::vector<int>>; // nullopt = all axes

enum class BinOp {
  Add,
  Sub,
  Mul,
  TrueDiv,
  FloorDiv,
  Mod,
  Pow,
  Maximum,
  Minimum,
  BitAnd,
  BitOr,
  BitXor,
  LeftShift,
  RightShift,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Arctan2
};
enum class UnOp {
  Neg,
  Pos,
  Invert,
  Exp,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Tanh,
  Sin,
  Cos,
  Tan,
  Cbrt,
  Abs,
  Sign,
  Floor,
  Ceil,
  Round,
  IsNan,
  IsFinite,
  IsInf,
  Square,
  Logistic,
  Erf,
  ErfInv,
  Reciprocal,
  LogicalNot
};
enum class ReduceOp { Sum, Prod, Max, Min, Mean, Any, All };

// ---- creation -------------------------------------------------------------
// A host scalar as a 0-d tensor; weak=true for Python literals (x * 2 stays f32).
Tensor scalar(OpContext& cx, const Scalar& v, std::optional<DType> dtype = {}, bool weak = true);
// numpy's check when a Python int is written into an integer dtype (jnp.array(300,
// dtype=jnp.int8), jnp.uint8(-1)): out of the dtype's range is an error.
void check_python_int(int64_t v, DType d);
// A Python float or complex given to jnp.array with an integer dtype: JAX
// takes int(v) (Python's errors for NaN, infinity and complex), then bounds-checks it.
void check_python_scalar(const Scalar& v, DType d);
// From nested Python data already flattened by the interpreter. Without dtype:
// bool if all bool, int32 if all ints (error if out of int32 range), else float32.
Tensor from_host(OpContext& cx, const std::vector<Scalar>& flat, const Shape& shape,
                 std::optional<DType> dtype = {});
Tensor full(OpContext& cx, const Shape& shape, const Scalar& v, std::optional<DType> dtype = {});
Tensor zeros(OpContext& cx, const Shape& shape, DType dtype = DType::Float32);
Tensor ones(OpContext& cx, const Shape& shape, DType dtype = DType::Float32);
Tensor full_like(OpContext& cx, const Tensor& x, const Scalar& v, std::optional<DType> dtype = {});
// numpy's arange: int32 when all of start/stop/step are ints, else float32.
// `step_given`: arange(start, stop, step) rather than arange(stop) or
// arange(start, stop), which JAX builds differently (and a jaxpr shows).
Tensor arange(OpContext& cx, const Scalar& start, const Scalar& stop, const Scalar& step,
              std::optional<DType> dtype = {}, bool step_given = true);
Tensor linspace(OpContext& cx, double start, double stop, int64_t num, bool endpoint = true,
                std::optional<DType> dtype = {});
// The host-side terms of a float32 linspace of num values whose bounds are
// traced, as linspace rounds concrete ones: (i, 1 - i / div as XLA's loop
// computes it, whether value i fuses start * (1 - t) into its fma, 1 / div),
// for the values before the endpoint.
std::vector<Tensor> linspace_terms(OpContext& cx, int64_t num, bool endpoint, bool inexact);
Tensor eye(OpContext& cx, int64_t n, std::optional<int64_t> m = {}, int64_t k = 0,
           DType dtype = DType::Float32);
Tensor astype(OpContext& cx, const Tensor& x, DType dtype); // result is strong (not weak)

// ---- elementwise ----------------------------------------------------------
Tensor binary(OpContext& cx, BinOp op, const Tensor& a, const Tensor& b);
Tensor lax_pow(OpContext& cx, const Tensor& x, const Tensor& y);
// Whether jnp's division by a broadcast value multiplies by the reciprocal
// where it is built in `cx` (as XLA compiles it there), or stays a division
// for a whole-program rewrite; `scalar_divisor`: the divisor has one element.
bool rewrite_division_here(OpContext& cx, bool scalar_divisor);
// a * broadcast(1 / divisor), as XLA rewrites a division by a divisor its
// program broadcasts (`divisor` of a's dtype, broadcastable to a's shape).
Tensor times_reciprocal(OpContext& cx, const Tensor& a, const Tensor& divisor);
Tensor unary(OpContext& cx, UnOp op, const Tensor& x);
// lax.integer_pow: x ** n in x's dtype (integers refuse negative n).
Tensor integer_pow(OpContext& cx, const Tensor& x, int64_t n);
Tensor where(OpContext& cx, const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor clip(OpContext& cx, const Tensor& x, const std::optional<Tensor>& lo,
            const std::optional<Tensor>& hi);

// ---- shape ----------------------------------------------------------------
// One -1 allowed. `shown`: the shape as the caller wrote it (5, [5], (5, 1)),
// which JAX's errors print (made only for an error).
using ShapeText = std::function<std::string()>;
Tensor reshape(OpContext& cx, const Tensor& x, const Shape& shape, const ShapeText& shown = {});
// numpy's order=: 'C' (row-major) or 'F' (column-major: reverse the axes around a C reshape).
Tensor reshape_order(OpContext& cx, const Tensor& x, const Shape& shape, const std::string& order,
                     const ShapeText& shown = {});
Tensor transpose(OpContext& cx, const Tensor& x, const std::optional<std::vector<int>>& perm);
Tensor swapaxes(OpContext& cx, const Tensor& x, int a, int b);
Tensor moveaxis(OpContext& cx, const Tensor& x, int src, int dst);
// Several axes at once (numpy's: the others keep their order).
Tensor moveaxis(OpContext& cx, const Tensor& x, const std::vector<int>& src,
                const std::vector<int>& dst);
Tensor expand_dims(OpContext& cx, const Tensor& x, const std::vector<int>& axes);
Tensor squeeze(OpContext& cx, const Tensor& x, const Axes& axes);
Tensor broadcast_to(OpContext& cx, const Tensor& x, const Shape& shape);
Tensor concatenate(OpContext& cx, const std::vector<Tensor>& xs, int axis);
// as_primitive: jnp.stack's own, marked for jaxprs (OpAttrs::stacked).
Tensor stack(OpContext& cx, const std::vector<Tensor>& xs, int axis, bool as_primitive = false);
// split(x, 3) -> 3 equal parts (error if not divisible); split(x, {2, 5}) -> at indices.
std::vector<Tensor> split_sections(OpContext& cx, const Tensor& x, int64_t sections, int axis);
std::vector<Tensor> split_indices(OpContext& cx, const Tensor& x,
                                  const std::vector<int64_t>& indices, int axis);

// ---- reductions -----------------------------------------------------------
// Sum/Prod of bool or int give int32; Mean of ints gives float32; Any/All give bool.
// `dtype` (jnp's dtype=): the input is converted to it and so is the result
// (a sum of int8 with dtype=int8 stays int8 instead of widening).
// numpy's where= mask (a bool array broadcast to x) and initial= value (a scalar) of
// a reduction; promote_integers=False keeps a sum or product of narrow integers
// in their dtype.
struct ReduceExtras {
  std::optional<Tensor> where, initial;
  bool promote_integers = true;
};
Tensor reduce(OpContext& cx, ReduceOp op, const Tensor& x, const Axes& axes, bool keepdims = false,
              std::optional<DType> dtype = {}, const ReduceExtras& extras = {});
Tensor argmax(OpContext& cx, const Tensor& x, std::optional<int> axis, bool keepdims = false);
Tensor argmin(OpContext& cx, const Tensor& x, std::optional<int> axis, bool keepdims = false);
// jnp.var's keywords: `name` is the function named in errors (var, std).
struct VarOptions {
  const char* name = "var";
  std::optional<DType> dtype;
  std::optional<Tensor> where, mean;
  double correction = 0;
  // Called eagerly, JAX's jitted _var takes the correction as an argument: this
  // scalar, a parameter of the traced program. The count less it is then no
  // constant, and used twice (the division, and the test for a count <= 0),
  // so XLA divides by it.
  std::optional<Tensor> correction_arg;
};
Tensor var(OpContext& cx, const Tensor& x, const Axes& axes, bool keepdims = false,
           const VarOptions& options = {});
// jnp.cumsum: over the flattened x without axis; dtype= as JAX's (bool: x != 0 counted).
Tensor cumsum(OpContext& cx, const Tensor& x, std::optional<int> axis,
              std::optional<DType> dtype = {});

// ---- linear algebra -------------------------------------------------------
// numpy's matmul (batched) and dot rules; `precision`: the dot_general's
// (ir/op.hpp DotDims::precision, stdlib/lax_precision.hpp).
Tensor matmul(OpContext& cx, const Tensor& a, const Tensor& b,
              std::array<uint8_t, 2> precision = {});
Tensor dot(OpContext& cx, const Tensor& a, const Tensor& b, std::array<uint8_t, 2> precision = {});
Tensor outer(OpContext& cx, const Tensor& a, const Tensor& b);
Tensor einsum(OpContext& cx, const std::string& spec, const std::vector<Tensor>& operands);

// ---- indexing -------------------------------------------------------------
struct IndexItem {
  enum class Kind { Int, Slice, Ellipsis, NewAxis, Array } kind = Kind::Int;
  int64_t index = 0;                        // Int
  std::optional<int64_t> start, stop, step; // Slice
  Tensor array;                             // Array: int (gather) or bool (mask)
};
// x[items] with numpy semantics for basic indexing; an int array item gathers
// along its axis. Out-of-bounds ints are an error naming the index, axis and size.
Tensor index(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items);
enum class UpdateMode { Set, Add, Sub, Mul, Min, Max };
// x.at[items].set(v) / .add(v) ...: v broadcasts to the indexed shape. An
// out-of-range entry of an integer array index is dropped (JAX's default mode,
// and 'promise_in_bounds' as XLA's scatter), or clamped into range with `clip`
// (mode='clip').
Tensor index_update(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                    const Tensor& v, UpdateMode mode, bool clip = false);
// x.at[items].get(mode='fill', fill_value=f): x[items] with `fill` (0-d) where an
// integer array index is out of range.
Tensor index_fill(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                  const Tensor& fill);

// nextafter(x, to) in float type dt (16-bit types via their bits).
double next_toward(double x, double to, DType dt);

// ---- random (jax.random, threefry-2x32 exactly as JAX) -----------------------
Tensor prng_key(OpContext& cx, int64_t seed);                       // uint32[2]
Tensor random_split(OpContext& cx, const Tensor& key, int64_t num); // uint32[num, 2]
// data: an integer scalar (converted to uint32, as jnp.asarray(data, 'uint32')).
Tensor random_fold_in(OpContext& cx, const Tensor& key, const Tensor& data);
// A Python int `data`, which must fit in uint32.
Tensor random_fold_in(OpContext& cx, const Tensor& key, int64_t data);
Tensor random_normal(OpContext& cx, const Tensor& key, const Shape& shape,
                     DType dtype = DType::Float32);
Tensor random_uniform(OpContext& cx, const Tensor& key, const Shape& shape,
                      DType dtype = DType::Float32, double minval = 0.0, double maxval = 1.0);
// Array bounds (converted to the dtype, broadcast to `shape`), which may be traced.
Tensor random_uniform(OpContext& cx, const Tensor& key, const Shape& shape, DType dtype,
                      const Tensor& minval, const Tensor& maxval);
Tensor random_randint(OpContext& cx, const Tensor& key, const Shape& shape, int64_t minval,
                      int64_t maxval, DType dtype = DType::Int32);
// A concrete key sorts on the host; a traced one by O(n^2) rank counting.
Tensor random_permutation(OpContext& cx, const Tensor& key, int64_t n);
// JAX's threefry2x32_p: both hashed words of counters (x0, x1) of one shape
// under the key words k0, k1 (uint32 scalars or of that shape).
std::array<Tensor, 2> threefry2x32(OpContext& cx, const Tensor& k0, const Tensor& k1,
                                   const Tensor& x0, const Tensor& x1);
// jax.random.bits: the raw 32-bit threefry draws.
Tensor random_bits(OpContext& cx, const Tensor& key, const Shape& shape);
// sqrt(2) * erfinv(uniform(key, shape, dtype, minval, maxval)), the core of
// jax.random.truncated_normal (the caller computes the erf bounds and clamps).
Tensor random_sqrt2_erfinv_uniform(OpContext& cx, const Tensor& key, const Shape& shape,
                                   DType dtype, const Tensor& minval, const Tensor& maxval);

} // namespace pxl::np
