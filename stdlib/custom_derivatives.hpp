// jax.custom_jvp, jax.custom_vjp and jax.custom_gradient (custom_derivatives.cpp).
#pragma once
#include <span>
#include <vector>

#include "ir/custom_call.hpp"
#include "lang/interp_impl.hpp"
#include "lang/jaxpr_record.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

// What a custom_call's callee is: the primal and the rule that reverse mode
// uses instead of differentiating it.
struct CustomRule : CustomCallee {
  // After the num_args argument operands, this many operands are the arrays in
  // nondiff_argnums arguments (no cotangent; the rest are captured values).
  size_t num_static = 0;
  // Recorded where forward mode (jax.jvp) differentiates the call: JAX's
  // leaked-tracer error then names a JVPTracer (else a LinearizeTracer).
  bool under_jvp = false;
  // make_jaxpr's record of the primal's trace (a jit inside it); null when
  // the call was not traced under make_jaxpr.
  std::shared_ptr<const JaxprRecord> jaxpr_record;
  // The cotangents of the call's first num_args operands (nullptr = zero),
  // bound in `cx`, given all of its operands and its results' cotangents
  // (nullptr = zero). `need[k]`: whether operand k's cotangent is wanted (a
  // rule may skip the others). Errors in the user's rule propagate as
  // pxl::Error.
  virtual std::vector<Tensor> vjp(OpContext& cx, std::span<const Tensor> operands,
                                  std::span<const Tensor> cts,
                                  const std::vector<bool>& need) const = 0;
  // The same rule over another primal Function (null where the rule cannot
  // be copied): how differentiation runs a call's primal without its prints.
  virtual std::shared_ptr<CustomRule> with_primal(std::shared_ptr<const Function>) const {
    return nullptr;
  }
  // Forward mode, where the rule gives it directly (a custom_jvp's rule
  // called on the primals and their tangents, as JAX's jvp calls it instead
  // of the primal): the results and their tangents, bound in `cx`, given all
  // of the call's operands and the tangents of the first num_args (nullptr =
  // zero). False where the rule has no such form (forward mode then takes the
  // transpose of vjp).
  virtual bool jvp(OpContext&, std::span<const Tensor> /*operands*/,
                   std::span<const Tensor> /*tangents*/, std::vector<Tensor>& /*results*/,
                   std::vector<Tensor>& /*result_tangents*/) const {
    return false;
  }
};

// Makes `cx` the interpreter's current context while it lives (the backward
// pass may run in a trace nobody pushed, e.g. an SPMD call's transpose).
struct OpsScope {
  InterpreterImpl& in;
  bool pushed;
  OpsScope(InterpreterImpl& i, OpContext& cx) : in(i), pushed(&i.ops() != &cx) {
    if (pushed) in.push_ops(&cx);
  }
  ~OpsScope() {
    if (pushed) in.pop_ops();
  }
  OpsScope(const OpsScope&) = delete;
  OpsScope& operator=(const OpsScope&) = delete;
};

// A function's name as JAX's messages show it (its type name for other callables).
std::string callable_name(const Value& f);

// Whether the innermost differentiating trace is forward mode's (jax.jvp).
bool forward_mode(InterpreterImpl& in);

// Binds the custom_call of `rule` on `operands` in the current context (at
// `where`) and returns its results as the pytree `out_tree`.
Value bind_custom_call(InterpreterImpl& in, std::shared_ptr<const CustomCallee> rule,
                       std::span<const Tensor> operands, const TreeDef& out_tree,
                       const Span& where);

// The positional arguments of a call of the `kind`-decorated function `fun`
// (custom_jvp, custom_vjp, custom_vmap): keywords bound through fun's
// signature, defaults included, or JAX's TypeError.
ValueList positional_args(InterpreterImpl& in, const Value& fun, const std::string& kind,
                          CallArgs& a, const Span& where);

// `t` typed as varying over the mesh axes `like` (of its type) varies over,
// as JAX's pvary makes it: a tangent or cotangent has its primal's type.
Tensor pvary_like(OpContext& cx, const Tensor& t, const Tensor& like);

// vmap of a custom_call: a custom_call of the batched primal whose rule is the
// batched rule (cotangents of unbatched operands summed over the batch).
std::vector<BVal> batch_custom_call(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                                    const BatchAxis& axis);

// Registers jax.custom_jvp, jax.custom_vjp and jax.custom_gradient.
void add_custom_derivatives(InterpreterImpl& in, Value& jax);

} // namespace pxl
