// Reverse-mode differentiation over the IR (DESIGN §3, grad / value_and_grad).
// A function traced into a Function is re-run in the current OpContext (the
// forward pass, keeping every intermediate), then its instructions are walked
// backwards applying each op's transpose rule (stdlib/autodiff_rules.cpp). Both
// passes bind primitives through the context, so differentiation works eagerly,
// inside jit and inside pmap/shard_map (where the backward pass is itself
// recorded), and grad of grad works by nesting.
#pragma once
#include <span>
#include <vector>

#include "ir/function.hpp"
#include "ir/tensor.hpp"

namespace pxl {

// How collectives transpose. Inside shard_map values carry pxl's vma typing: a
// cotangent that varies over an axis its primal is invariant over is psum'd
// (the implicit invariant->varying broadcast), psum transposes to a broadcast
// and all_gather to the device's own slice. Inside pmap, grad is per device as
// in JAX's pmap: psum transposes to psum, all_gather to psum_scatter.
enum class SpmdMode { None, Pmap, ShardMap };
SpmdMode spmd_mode(OpContext& cx);

// The mesh axes `t` may vary over in `cx` (0 eagerly or outside any mesh).
AxisSet vma_of(OpContext& cx, const Tensor& t);

class TraceContext;
// psum of `ct` over the mesh axes `axes` of tc's Function (in mesh order).
Tensor psum_over(TraceContext& tc, const Tensor& ct, AxisSet axes);
// Inside a shard_map trace, `t` made varying over `axes` too (JAX's pvary: the
// identity ppermute over those axes); `t` itself elsewhere or when it already does.
Tensor pvary_to(OpContext& cx, const Tensor& t, AxisSet axes);

// Binds every instruction of `f` in `cx`; returns the value of every IR value
// id (params, consts and results of instructions) for the backward pass.
std::vector<Tensor> forward_pass(OpContext& cx, const Function& f, std::span<const Tensor> params,
                                 std::span<const Tensor> consts);

// While make_jaxpr records, the values of f's results in the forward pass
// `env` show although grad discards them (JAX's `_` binders): grad and vjp
// show the whole primal computation, as JAX's linearized function does.
void jaxpr_show_primal_results(OpContext& cx, const Function& f, const std::vector<Tensor>& env);

// The cotangents of f's params given those of its results (nullptr = zero),
// from the forward pass's values `env`. A nullptr entry means a zero cotangent.
// `wanted`, when given, says which params need a cotangent (the others get
// nullptr, and no work is spent on paths that only lead to them).
std::vector<Tensor> backward_pass(OpContext& cx, const Function& f, const std::vector<Tensor>& env,
                                  std::span<const Tensor> result_cts,
                                  const std::vector<bool>* wanted = nullptr);
// JAX's UnexpectedTracerError for differentiating with respect to a value a
// custom function's primal captured (a JVPTracer's under forward mode, a
// LinearizeTracer's under reverse mode).
[[noreturn]] void throw_captured_tracer(const AVal& captured, bool under_jvp, const Span& where);
// Per value of f: whether it depends on a parameter (those `wanted` says, or all).
std::vector<bool> parameter_dependent(const Function& f, const std::vector<bool>* wanted = nullptr);

// The transpose (VJP) rule of one instruction: the cotangent of each operand
// (nullptr = zero or not differentiable), given the primal operands, the
// primal result and the result's cotangent `ct`. need[k] says whether operand
// k's cotangent is wanted (a rule may skip the work otherwise). A rule whose
// JAX form sends an operand two cotangent terms returns the second in `extra`
// (operand, term), accumulated after the first so that sums round as in JAX.
std::vector<Tensor> transpose_rule(OpContext& cx, SpmdMode mode, const Instr& in,
                                   std::span<const Tensor> primals, const Tensor& result,
                                   const Tensor& ct, const std::vector<bool>& need,
                                   std::vector<std::pair<size_t, Tensor>>& extra);

// The transpose of an spmd_call (a pmap'd or shard_map'd function called from
// outside): another spmd_call whose per-participant Function is the callee's
// forward and backward pass. Cotangents enter laid out as the results
// (out_specs / out_axes) and leave as the operands (in_specs / in_axes); inside,
// each collective transposes by the callee's own rules. `cts` has one entry per
// result (nullptr = zero); returns one per operand (nullptr where need[k] is false).
std::vector<Tensor> transpose_spmd_call(OpContext& cx, const Instr& in,
                                        std::span<const Tensor> primals,
                                        std::span<const Tensor> cts, const std::vector<bool>& need);

// The transpose of a while loop whose trip count is known (a long scan):
// the cotangents of its operands given those of its results, as
// transpose_spmd_call's (stdlib/autodiff_loops.cpp).
std::vector<Tensor> transpose_fixed_loop(OpContext& cx, const Instr& in,
                                         std::span<const Tensor> primals,
                                         std::span<const Tensor> cts,
                                         const std::vector<bool>& need);

// Whether JAX accumulates the operands' cotangents of `op` last operand first
// (ops whose JVP is a sum of per-operand terms: mul, div, dot_general, ...).
bool transpose_reversed(Op op);

} // namespace pxl
