// custom_call: a call of a function with a user-defined derivative
// (jax.custom_jvp / jax.custom_vjp, stdlib/custom_derivatives.cpp). The
// instruction holds the primal Function, which is what it computes; autodiff
// (stdlib/autodiff.cpp) asks the callee's rule for the operands' cotangents
// instead of differentiating that Function. Everything else treats the call as
// its primal: executables and the jit partitioner see the Function with every
// custom_call inlined (lower_custom_calls), eager evaluation binds the primal's
// instructions, vmap batches it (keeping the rule).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/function.hpp"
#include "ir/tensor.hpp"

namespace pxl {

struct CustomCallee {
  std::string kind; // "custom_jvp" or "custom_vjp"
  // The primal; its params are the call's operands: the differentiable
  // argument leaves first, then what the primal captured (no consts).
  std::shared_ptr<const Function> fn;
  size_t num_args = 0; // how many operands are argument leaves
  // How make_jaxpr shows the call: as this JAX primitive (a lax op the stdlib
  // defines with a custom rule, such as clamp) with these params (its JAX
  // params, where the stdlib gives them), or when empty as JAX's
  // custom_jvp_call/custom_vjp_call with these params (name, jvp / fwd, bwd).
  std::string primitive;
  std::vector<std::pair<std::string, std::string>> jaxpr_params;
  virtual ~CustomCallee() = default;
};

// The shape rule: the primal's result types (operands checked against its params).
std::vector<AVal> custom_call_avals(const CustomCallee& c, std::span<const AVal> inputs);
// The mesh axes each result varies over, given the operands' (the primal's vma rules).
std::vector<AxisSet> custom_call_vma(const CustomCallee& c, std::span<const AxisSet> operands);
// "custom_jvp @name": the attributes as IR text.
std::string custom_callee_str(const CustomCallee& c);

// Evaluates the call by binding the primal's instructions in `cx`.
std::vector<Tensor> bind_custom_primal(OpContext& cx, const CustomCallee& c,
                                       std::span<const Tensor> operands);

// `f` with every custom_call (also those nested in primals) replaced by its
// primal's instructions; `f` itself when it has none. What executables compile.
std::shared_ptr<const Function> lower_custom_calls(std::shared_ptr<const Function> f);
bool has_custom_calls(const Function& f);

} // namespace pxl
