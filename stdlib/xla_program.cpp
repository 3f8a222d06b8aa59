#include "stdlib/xla_program.hpp"

#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "runtime/spmd_call.hpp"

namespace pxl {

std::shared_ptr<Function> as_compiled(const std::shared_ptr<Function>& fn,
                                      std::span<const Tensor> consts) {
  std::vector<Array> values;
  for (const Tensor& c : consts) values.push_back(c->concrete ? *c->concrete : Array());
  return std::const_pointer_cast<Function>(contract_program(fn, values));
}

Tensor as_xla_program(OpContext& cx, std::span<const Tensor> args,
                      const std::function<Tensor(OpContext&, std::span<const Tensor>)>& body) {
  if (!dynamic_cast<EagerContext*>(&cx)) return body(cx, args);
  auto f = std::make_shared<Function>();
  f->name = "jnp";
  std::vector<Tensor> consts;
  {
    TraceContext tc(*f, cx, "jit");
    std::vector<Tensor> params;
    for (const Tensor& a : args) params.push_back(tc.add_param(a->aval, 0, cx.loc, "an argument"));
    f->results.push_back(tc.value_of(body(tc, params)));
    consts = tc.captured_tensors();
  }
  return inline_function(cx, *as_compiled(f, consts), args, consts)[0];
}

} // namespace pxl
