// An SPMD call: a pmap'd or shard_map'd function applied to global arrays, as
// one instruction (spmd_call) of an enclosing single-device Function, so that
// jit, grad and vmap can trace through it. The callee is the per-participant
// Function with how each operand is split into blocks and each result is put
// back together; running it (the op's "kernel") shards the operands, launches
// the callee on the device threads and assembles the results. The eager
// pmap/shard_map call (stdlib/spmd.cpp) runs through the same kernel.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.hpp"
#include "runtime/executable.hpp"
#include "runtime/sharded.hpp"

namespace pxl {

class CodeCache;
class Platform;
struct JaxprRecord; // lang/jaxpr_record.hpp

// How a global array relates to a participant's block: split by `spec` over
// the callee's mesh, then (pmap) the mapped dimension `squeeze`, of size 1 in
// the block, dropped. A spec without axes and no squeeze means replicated.
struct SpmdMapping {
  PartitionSpec spec;
  int squeeze = -1;
  bool replicated() const { return spec.axes().empty() && squeeze < 0; }
};

struct SpmdCallee {
  std::string kind; // "shard_map" or "pmap": how its collectives transpose
  // shard_map's check_vma: when off, an output may vary over mesh axes its
  // out_spec leaves out; the call keeps the first participant's block, as JAX does.
  bool check_vma = true;
  // A user's shard_map over Explicit mesh axes: operand i, where true, must be
  // laid out as ins[i] already (JAX 0.10 does not reshard; jit checks it when
  // it partitions the call). Callees derived from it (transposes) leave it empty.
  std::vector<bool> explicit_in_types;
  std::shared_ptr<const Function> fn; // per participant; its params are the operands (no consts)
  // What make_jaxpr shows of the call (stdlib/jaxpr_print.cpp): how many of
  // fn's trailing params are the constants its trace captured, and a
  // shard_map's manual axes (axis_names=; empty: every mesh axis).
  size_t num_consts = 0;
  std::vector<std::string> manual_axes;
  // JAX's structure of the body (jit, cond, scan...), recorded when it was
  // traced while make_jaxpr recorded the call; null otherwise.
  std::shared_ptr<const JaxprRecord> jaxpr_record;
  SpmdLayout layout;                  // the participant mesh and the device threads
  std::vector<SpmdMapping> ins, outs; // per operand / result
  std::vector<AVal> in_global, out_global;
  std::shared_ptr<Executable> exe;
  // Where it runs and how callees derived from it (transpose, batching) compile:
  // the Platform's, which outlives every Function.
  DeviceThreads* pool = nullptr;
  ExecMode mode = ExecMode::Interp;
  CodeCache* cache = nullptr;
  PhaseTimes* times = nullptr; // --time-passes (the interpreter's), or null
  // The Platform they all come from, when known: it picks the executable (CUDA's on GPUs).
  Platform* platform = nullptr;
};

// The global type of a block under mapping `m` (the inverse of the split).
AVal global_aval(const SpmdLayout& layout, const SpmdMapping& m, const AVal& block);
// The block type of a global array under `m`.
AVal block_aval(const SpmdLayout& layout, const SpmdMapping& m, const AVal& global);

// Makes fn's captured constants its trailing parameters, each replicated
// (an SpmdMapping{} appended to `ins`), as a callee's Function must have them.
void consts_to_replicated_params(Function& fn, std::vector<SpmdMapping>& ins);

// Which program JAX hands XLA: they differ in the order of its passes.
enum class XlaProgram {
  Jit,      // a jitted program: constants fold first, then the rewrites; libm tails
  Pmap,     // a pmap's per-device program: the rewrites see its constants unfolded
            // (exp(v) / exp(w) is exp(v - w)), and its values keep the mapped
            // axis in JAX (f32[1,n]), so no rank-1 loop takes a libm tail
  LoopBody, // a while_loop's cond or body: no libm tails (measured)
};

// `f` as XLA compiles it: constant folding (ir/fold_constants.hpp), its
// algebraic simplifier's rewrites that change float results (ir/simplify.hpp),
// its common subexpression elimination (ir/cse.hpp), then its contraction
// (ir/contract.hpp), and which exp/log ops then take libm tails
// (ir/libm_tail.hpp), as `kind` orders them.
// `consts`: the values of f.consts, when known; `added` receives the values of
// the constants the rewrites append to f.consts (none are when it is null).
std::shared_ptr<const Function> xla_rewrites(std::shared_ptr<const Function> f,
                                             std::span<const Array> consts = {},
                                             std::vector<Array>* added = nullptr,
                                             XlaProgram kind = XlaProgram::Jit);

// xla_rewrites of `f` (a jitted program) and of the shard_map calls in it,
// which JAX compiles as part of the program (an eager shard_map runs op by
// op, a pmap is rewritten always).
std::shared_ptr<const Function> contract_program(std::shared_ptr<const Function> f,
                                                 std::span<const Array> consts = {},
                                                 std::vector<Array>* added = nullptr);

// A callee for `fn` (whose consts must already be params), compiled for `layout`.
// `const_params`: the values of fn's trailing parameters when they are
// captured constants (consts_to_replicated_params), which pmap's rewrites see
// as the program's literals, as XLA does; empty when unknown.
std::shared_ptr<SpmdCallee> make_spmd_callee(std::string kind, std::shared_ptr<Function> fn,
                                             SpmdLayout layout, std::vector<SpmdMapping> ins,
                                             std::vector<SpmdMapping> outs, DeviceThreads* pool,
                                             ExecMode mode, CodeCache* cache, PhaseTimes* times,
                                             Platform* platform = nullptr,
                                             std::vector<Array> const_params = {});

// The kernel: runs the callee on global operands (concrete or sharded tensors)
// and returns the global results, sharded over the devices (pmap outputs with
// out_axes=None are plain arrays). `debug`, when given, receives the
// participants' jax.debug.print records.
std::vector<Tensor> run_spmd_call(const SpmdCallee& c, std::span<const Tensor> operands,
                                  const std::shared_ptr<PullLog>& log,
                                  std::vector<DebugRecord>* debug = nullptr);

} // namespace pxl
