// The function transformations of this part of the stdlib: jax.jit (jit.cpp)
// and jax.vmap (vmap.cpp, with one batching rule per op in batching_rules.cpp).
#pragma once
#include <span>

#include "ir/function.hpp"
#include "ir/tensor.hpp"
#include "lang/interp_impl.hpp"

namespace pxl {

struct TracedFunction;

// Registers jax.jit / jax.vmap and the predeclared `jit` / `vmap`.
void add_jit(InterpreterImpl& in, Value& jax);
void add_vmap(InterpreterImpl& in, Value& jax);
// Registers the pxl-source stdlib modules (nn, optim; jax.nn is nn).
void add_pxl_modules(InterpreterImpl& in, Value& jax);

// Whether jax.disable_jit() (or the jax_disable_jit flag) is on: jitted
// functions run as plain Python functions.
bool jit_disabled(InterpreterImpl& in);

// Runs a jitted Function in the current context (see jit.cpp).
Value run_jitted(InterpreterImpl& in, const TracedFunction& t, std::span<const Tensor> params);

// The ops of `inner` (a trace with sharding constraints over a mesh) now bound
// into `cx`: an enclosing trace outside shard_map takes that mesh too, so that
// jit partitions over it (vmap(jit(f)), jit(vmap(f)) of a
// with_sharding_constraint).
void inherit_constraint_mesh(OpContext& cx, const Function& inner);

// A value during batching: when `batched`, dimension 0 of `t` is the vmapped
// axis (of size B); otherwise `t` is the same for every example.
struct BVal {
  Tensor t;
  bool batched = false;
};

// The vmap axis of a batching interpretation: its size and, when vmap was given
// an axis_name, the name collectives use for it.
struct BatchAxis {
  int64_t size = 0;
  std::string name;
  // vmap(spmd_axis_name=...): the mesh axes the batch would be split over; a
  // shard_map called inside may not use them in its specs (JAX's ValueError).
  std::vector<std::string> spmd_axis_name;
};

// Applies `op` to batched operands by binding primitives in `cx` (the batching
// rule of every op, batching_rules.cpp).
BVal batch_op(OpContext& cx, Op op, const OpAttrs& attrs, std::span<const BVal> in,
              const BatchAxis& axis);
// A call's operand tensors `ts` and which are `batched`; when none is, binds
// the call as it is, puts its (unbatched) results in `out` and returns false.
bool call_operands(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                   std::vector<Tensor>& ts, std::vector<bool>& batched, std::vector<BVal>& out);
// The batching rule of spmd_call (several results).
std::vector<BVal> batch_spmd_call(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                                  const BatchAxis& axis);
// The batching rule of while (stdlib/while_loop.cpp).
std::vector<BVal> batch_while(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                              const BatchAxis& axis);
// Where a batched evaluation put f's instructions in the enclosing trace, for
// carrying make_jaxpr's record of f over (stdlib/jaxpr_record.hpp): after[k]
// is the trace's length just past f's instruction k; env holds every value.
struct BatchLanding {
  size_t start = 0;
  std::vector<size_t> after;
  std::vector<BVal> env;
};
// Evaluates `f` on batched params (consts are unbatched) with the batching
// rules; `landing` (optional) receives where each instruction landed.
std::vector<BVal> batch_function(OpContext& cx, const Function& f, std::span<const BVal> params,
                                 std::span<const Tensor> consts, const BatchAxis& axis,
                                 BatchLanding* landing = nullptr);
// The unbatched value `t` with a batch dimension of size B in front.
Tensor broadcast_batch(OpContext& cx, const Tensor& t, int64_t B);

} // namespace pxl
