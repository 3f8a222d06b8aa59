// jnp functions that JAX itself jits (jnp.var, jnp.std, ...): called eagerly
// they still run as one XLA program, whose multiply-adds XLA contracts
// (ir/contract.hpp). pxl's versions bind ops one by one; this runs them the
// way JAX does, tracing each signature once as JAX's jit cache does.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/function.hpp"
#include "ir/tensor.hpp"

namespace pxl {

class InterpreterImpl;
class OpContext;
struct TracedFunction;
struct Value;

// `t` as XLA compiles it (contract_program: ir/simplify.hpp and
// ir/contract.hpp, and the shard_map calls in it): its Function rewritten,
// the constants the rewrites add appended to t.consts. False when nothing
// changed.
bool compile_as_xla(TracedFunction& t);

// body(cx, args) as one program: called from eager code, traced into a
// Function, contracted as XLA would, then run; from inside a trace it just
// binds its ops there (the enclosing program is contracted as a whole).
// `key` names what else the body depends on (its static arguments); "" when
// that cannot be named, and the body is traced on every call.
Tensor as_xla_program(InterpreterImpl& in, const std::string& key, std::span<const Tensor> args,
                      const std::function<Tensor(OpContext&, std::span<const Tensor>)>& body);

// The eager programs traced so far, by signature: `key` (the function and its
// static arguments) and the types of `args`. Empty when the call cannot be
// keyed: an argument spread over devices, a mesh in context, or an empty `key`.
std::string program_signature(InterpreterImpl& in, const std::string& key,
                              std::span<const Tensor> args);
std::shared_ptr<const TracedFunction> cached_program(InterpreterImpl& in,
                                                     const std::string& signature);
void cache_program(InterpreterImpl& in, const std::string& signature,
                   std::shared_ptr<const TracedFunction> program);

// Appends to `key` a text that identifies `v` when it is a plain literal
// (None, bool, number, string, dtype, or a tuple / list of them); false when
// it is anything else (an array, a function: the call is not cached).
bool append_literal_key(const Value& v, std::string& key);

} // namespace pxl
