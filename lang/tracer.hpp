// Tracing: while a function handed to pmap/shard_map runs, its array operations
// are recorded into an IR Function instead of being computed. Python-level
// control flow runs as usual (at trace time); a traced value's contents are not
// available (bool(), float(), printing them is an error with a hint).
#pragma once
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "ir/function.hpp"
#include "ir/tensor.hpp"
#include "lang/diag.hpp"
#include "lang/jaxpr_record.hpp"
#include "lang/value.hpp"

namespace pxl {

class TraceContext : public OpContext {
public:
  // `what` names the transformation in errors ("pmap", "shard_map").
  TraceContext(Function& fn, OpContext& outer, std::string what);

  // A new function input with the given per-device type and vma.
  Tensor add_param(const AVal& aval, AxisSet vma, const Span& loc, std::string origin);
  // The IR value id of `t`. A tensor from outside this trace (an eager array,
  // or a value of an enclosing trace when transformations nest) is captured as
  // a constant input of the function (Function::consts).
  int value_of(const Tensor& t);
  // The IR value id of `t` if it is this trace's or already captured, else -1.
  int find_value(const Tensor& t) const;
  bool owns(const Tensor& t) const { return t && t->trace == this; }
  const std::string& what() const { return what_; }
  // shard_map(check_vma=False): values carry no varying-axes types, so, as in
  // JAX, reverse mode inside the body follows pmap's rules (psum transposes to
  // psum, and a replicated value's cotangent is not summed over the devices).
  bool check_vma = true;
  // shard_map(axis_names=...): the mesh axes left automatic (not manual) in
  // the body; collectives over them are unbound there, as in JAX.
  std::vector<std::string> auto_axes;
  Function& function() { return fn_; }
  // The captured constants, in Function::consts order: as tensors of the outer
  // context, and (for an outermost trace, where all are concrete) as arrays.
  std::vector<Tensor> captured_tensors() const;
  std::vector<Array> captured() const;
  OpContext& outer() { return outer_; }

  // lax.cond/switch on a traced predicate trace every branch and select the
  // taken one's result. So that reverse mode differentiates only the taken
  // branch (as JAX's real conditional does, and its batched cond, which
  // selects each branch's inputs), while a branch is traced every inexact
  // value it uses from outside the branch goes in as
  // select(pred, x, stop_gradient(x)): the untaken branch's inf or NaN
  // partial derivatives then never reach x. Gates nest (a cond in a branch).
  void push_branch_gate(const Tensor& pred);
  void pop_branch_gate();
  // The predicates of the branches being traced, outermost first (a
  // jax.debug.print in a branch prints only where its branch is taken).
  std::vector<Tensor> branch_predicates() const {
    std::vector<Tensor> out;
    for (const BranchGate& g : gates_) out.push_back(g.pred);
    return out;
  }

  // Set by an eager shard_map call: learns the contents of traced value `id`
  // by running the function traced so far (nullopt when it cannot, e.g. the
  // value varies over the devices). Unset, a traced value's contents are unknown.
  std::function<std::optional<Array>(int id)> concretize;
  // Set by an eager shard_map call: str() of a traced value (JAX prints every
  // device's block). Unset, str() says only its type.
  std::function<std::optional<std::string>(int id)> describe;
  // Set by jit when it traces arrays laid out over a mesh: the sharding in the
  // type of traced value `id` (what jax.typeof shows: a NamedSharding over the
  // abstract mesh), or None when it has none.
  std::function<Value(int id)> type_sharding;
  // Set where the program traced here is laid out over a mesh (jit of arrays
  // on a mesh, shard_map, pmap): the sharding the compiled program gives
  // traced value `id` (-1: a value of a trace nested in this one, taken as
  // replicated; None where the layout is not known), which
  // jax.debug.inspect_array_sharding reports.
  std::function<Value(int id)> layout_sharding;
  // Mutable array references (stdlib/mutable_ref.hpp): whether code traced
  // here may write a reference made outside this trace (jit and loop bodies
  // turn such writes into results; other transformations refuse them), and
  // the token a reference made in this trace keeps to know its trace.
  bool ref_writes_ok = false;
  std::shared_ptr<int> ref_token = std::make_shared<int>(0);
  // Set by make_jaxpr: JAX's nesting of what is traced (lang/jaxpr_record.hpp).
  std::shared_ptr<JaxprRecord> jaxpr_record;

  Tensor bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  // Records an spmd_call (its results are invariant: single-device code), a
  // while (attrs.loop) or a custom_call (attrs.custom).
  std::vector<Tensor> bind_call(const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  const Array& concrete(const Tensor& t) override;
  Tensor constant(Array a) override;

private:
  Tensor make(int id);
  // The value ids of `inputs` in this trace (capturing outside values), and their types.
  std::vector<int> operand_ids(std::span<const Tensor> inputs, std::vector<AVal>& avals);
  // `id` (the value of `t`) as the open branches see it (see push_branch_gate).
  int gated(const Tensor& t, int id);
  struct BranchGate {
    Tensor pred;
    size_t start;                         // fn_.body.size() when the branch began
    std::vector<std::pair<int, int>> ids; // value id -> its gated id
  };
  std::vector<BranchGate> gates_;
  Function& fn_;
  OpContext& outer_;
  std::string what_;
  // Eager tensor -> const id. The tensors are kept alive so that an address is
  // never reused by another tensor while the trace looks it up.
  std::vector<std::pair<Tensor, int>> captured_ids_;
  std::deque<Array> concretized_; // what concrete() handed out (references stay valid)
};

// Runs `f` by binding each of its instructions in `cx` (eagerly, or into an
// enclosing trace): how a transformed function (jit, grad, vmap) is applied.
// `params` and `consts` match f.params and f.consts.
std::vector<Tensor> inline_function(OpContext& cx, const Function& f,
                                    std::span<const Tensor> params, std::span<const Tensor> consts);

// Walks f's instructions in order with a value table of type V (a Tensor, or
// vmap's batched value), calling bind(op, attrs, operands) for each with cx.loc
// set to the instruction's source; returns the whole table.
// An spmd_call, while or custom_call is handed to bind_call(attrs, operands,
// instr), which returns all of its results.
template <class V, class Bind, class BindCall>
std::vector<V> walk_function(OpContext& cx, const Function& f, std::span<const V> params,
                             std::span<const V> consts, Bind&& bind, BindCall&& bind_call);
// The same, returning every value of `f` (indexed by value id): the forward pass
// that reverse mode differentiates.
std::vector<Tensor> inline_function_values(OpContext& cx, const Function& f,
                                           std::span<const Tensor> params,
                                           std::span<const Tensor> consts);
// `in`'s attributes for binding it in `cx`: a debug_print's format moves into
// the enclosing trace's table (only traces can hold one).
OpAttrs attrs_for_rebind(OpContext& cx, const Function& f, const Instr& in);

template <class V, class Bind, class BindCall>
std::vector<V> walk_function(OpContext& cx, const Function& f, std::span<const V> params,
                             std::span<const V> consts, Bind&& bind, BindCall&& bind_call) {
  PXL_ASSERT(params.size() == f.params.size() && consts.size() == f.consts.size(),
             "walk_function: wrong number of inputs");
  std::vector<V> env(f.values.size());
  for (size_t i = 0; i < params.size(); ++i) env[f.params[i]] = params[i];
  for (size_t i = 0; i < consts.size(); ++i) env[f.consts[i]] = consts[i];
  LocScope keep(cx, Span{}); // restores the caller's location afterwards
  for (const Instr& in : f.body) {
    std::vector<V> args;
    for (int o : in.operands) args.push_back(env[o]);
    OpAttrs attrs = attrs_for_rebind(cx, f, in);
    cx.loc = f.values[in.result].loc;
    if (is_multi_result(in.op)) {
      std::vector<V> outs = bind_call(attrs, args, in);
      for (int r = 0; r < in.nresults; ++r) env[in.result + r] = std::move(outs[r]);
      continue;
    }
    env[in.result] = bind(in.op, attrs, args, f.values[in.result]);
  }
  return env;
}

} // namespace pxl
