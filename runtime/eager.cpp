// Eager OpContext over the reference kernels.
#include "runtime/eager.hpp"

#include <vector>

#include "ir/custom_call.hpp"
#include "lang/diag.hpp"
#include "runtime/debug_print.hpp"
#include "runtime/sharded.hpp"
#include "runtime/spmd_call.hpp"
#include "runtime/while_loop.hpp"

namespace pxl {

Tensor EagerContext::bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) {
  if (op == Op::DebugPrint && attrs.debug) { // prints now; the result is a token
    std::vector<Array> values;
    for (const Tensor& t : inputs) values.push_back(concrete(t));
    print_debug_now(*attrs.debug, values);
    return make_tensor(Array(DType::Bool, {}));
  }
  if (sharded_)
    for (const Tensor& t : inputs)
      if (t->sharded && t->sharded->spans_devices()) {
        if (std::optional<Tensor> r = sharded_->run(op, attrs, inputs, loc)) return std::move(*r);
        break;
      }
  std::vector<Array> args;
  args.reserve(inputs.size());
  for (const Tensor& t : inputs) args.push_back(concrete(t));
  // eval_ref (and the JIT) run the shape rule first, so bad input throws pxl::Error.
  std::optional<Array> compiled;
  if (jit_) compiled = jit_->run(op, attrs, args, device_, loc);
  Array out = compiled ? std::move(*compiled) : eval_ref(op, attrs, args);
  if (out.device() != device_) out = out.on_device(device_);
  return make_tensor(std::move(out));
}

std::vector<Tensor> EagerContext::bind_call(const OpAttrs& attrs,
                                            std::span<const Tensor> inputs) {
  std::vector<AVal> avals;
  for (const Tensor& t : inputs) avals.push_back(t->aval);
  if (attrs.loop) { // a while loop: on this device, its cond and body compiled
    infer_while(attrs, avals);
    std::vector<Array> args;
    for (const Tensor& t : inputs) args.push_back(concrete(t).on_device(device_));
    std::vector<Tensor> out;
    for (Array& a : run_while(*attrs.loop, args, loc)) out.push_back(make_tensor(std::move(a)));
    return out;
  }
  infer_call(attrs, avals); // operand checks, as eval_ref runs the shape rule
  if (attrs.custom) return bind_custom_primal(*this, *attrs.custom, inputs);
  return run_spmd_call(*attrs.callee, inputs, pull_log_);
}

const Array& EagerContext::concrete(const Tensor& t) {
  PXL_ASSERT(t != nullptr, "null tensor");
  // A sharded array is pulled to the host (device 0) as a whole.
  if (!t->concrete && t->sharded) return t->sharded->assemble();
  if (!t->concrete)
    throw Error(
        ErrCode::ConcreteValue,
        "a concrete value is required here, but the array is abstract (traced) with shape " +
            shape_str(t->aval.shape) + " and dtype " + dtype_name(t->aval.dtype));
  return *t->concrete;
}

Tensor EagerContext::constant(Array a) {
  if (a.device() != device_) a = a.on_device(device_);
  return make_tensor(std::move(a));
}

} // namespace pxl
