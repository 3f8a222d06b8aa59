// jnp functions that JAX itself jits (jnp.var, jnp.std, ...): called eagerly
// they still run as one XLA program, whose multiply-adds XLA contracts
// (ir/contract.hpp). pxl's versions bind ops one by one; this runs them the
// way JAX does.
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "ir/function.hpp"
#include "ir/tensor.hpp"

namespace pxl {

class OpContext;

// `fn` as XLA compiles it (contract_program: ir/contract.hpp, and the
// shard_map calls in it), `consts` the tensors of fn->consts.
std::shared_ptr<Function> as_compiled(const std::shared_ptr<Function>& fn,
                                      std::span<const Tensor> consts);

// body(cx, args) as one program: called from eager code, traced into a
// Function, contracted as XLA would, then run; from inside a trace it just
// binds its ops there (the enclosing program is contracted as a whole).
Tensor as_xla_program(OpContext& cx, std::span<const Tensor> args,
                      const std::function<Tensor(OpContext&, std::span<const Tensor>)>& body);

} // namespace pxl
