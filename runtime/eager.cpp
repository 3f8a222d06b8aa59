// Eager OpContext over the reference kernels.
#include "runtime/eager.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "ir/aval_text.hpp"
#include "ir/custom_call.hpp"
#include "lang/diag.hpp"
#include "runtime/debug_print.hpp"
#include "runtime/sharded.hpp"
#include "runtime/spmd_call.hpp"
#include "runtime/while_loop.hpp"

namespace pxl {

std::string invalid_float(const Array& a, FloatChecks checks) {
  if (!is_inexact(a.dtype())) return "";
  for (int64_t i = 0; i < a.size(); ++i) {
    Scalar v = a.get(i);
    for (double part : {v.f, v.im}) {
      if (checks.nans && std::isnan(part)) return "nan";
      if (checks.infs && std::isinf(part)) return "inf";
    }
  }
  return "";
}

std::string invalid_float(const Tensor& t, FloatChecks checks) {
  if (!checks.any() || !is_inexact(t->aval.dtype) || (!t->concrete && !t->sharded)) return "";
  return invalid_float(t->concrete ? *t->concrete : t->sharded->assemble(), checks);
}

// With jax_debug_nans/infs set, an op whose result holds such a value fails
// as JAX's eager primitives do.
Tensor EagerContext::checked(Op op, Tensor t) const {
  std::string bad = invalid_float(t, float_checks_);
  if (!bad.empty())
    throw Error(ErrCode::Value, "invalid value (" + bad + ") encountered in " + op_name(op), loc);
  return t;
}

// An eager op never sees a traced value of a live trace (those bind to the
// trace), so a traced operand here outlived the transformation that made it:
// JAX's UnexpectedTracerError.
static void check_not_leaked(std::span<const Tensor> inputs, const Span& loc) {
  for (const Tensor& t : inputs)
    if (t && !t->concrete && !t->sharded && t->trace)
      throw Error(
          ErrCode::ConcreteValue,
          "UnexpectedTracerError: Encountered an unexpected tracer. A function transformed by JAX "
          "had a "
          "side effect, allowing for a reference to an intermediate value with type " +
              array_type_str(t->aval.dtype, t->aval.shape) +
              " wrapped in a DynamicJaxprTracer to escape the scope of the transformation.\nJAX "
              "transformations require that functions explicitly return their outputs, and "
              "disallow "
              "saving intermediate values to global state.\nSee "
              "https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError",
          loc);
}

namespace {
// An array of partial sums (a shard_map result with unreduced out_specs) is
// no operand of an eager op: JAX's rules ask for a reshard first.
void check_not_unreduced(Op op, std::span<const Tensor> inputs, const Span& loc) {
  std::vector<bool> ur;
  for (const Tensor& t : inputs) ur.push_back(t->sharded && !t->sharded->spec.unreduced.empty());
  if (std::find(ur.begin(), ur.end(), true) == ur.end()) return;
  if (op == Op::Add && ur.size() == 2 && ur[0] != ur[1]) {
    std::string l = ur[0] ? "lhs" : "rhs", r = ur[0] ? "rhs" : "lhs";
    throw Error(ErrCode::Type,
                l + " is unreduced while " + r +
                    " is not. `add` operation does not allow this because there will be implicit "
                    "communication. Please reduce " +
                    l + " via `reshard` before calling `add`.",
                loc);
  }
  throw Error(ErrCode::Unsupported,
              std::string("unreduced rule for ") + op_name(op) +
                  " is not implemented. Please file an issue at "
                  "https://github.com/jax-ml/jax/issues",
              loc, "sum the partial sums first: jax.sharding.reshard(x, P(...))");
}
} // namespace

Tensor EagerContext::bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) {
  check_not_leaked(inputs, loc);
  check_not_unreduced(op, inputs, loc);
  if (op == Op::DebugPrint && attrs.debug) { // prints now; the result is a token
    std::vector<Array> values;
    for (const Tensor& t : inputs) values.push_back(concrete(t));
    print_debug_now(*attrs.debug, values);
    return make_tensor(Array(DType::Bool, {}));
  }
  if (sharded_)
    for (const Tensor& t : inputs)
      if (t->sharded && t->sharded->spans_devices()) {
        if (std::optional<Tensor> r = sharded_->run(op, attrs, inputs, loc))
          return checked(op, std::move(*r));
        break;
      }
  int device = placement(op, inputs);
  std::vector<Array> args;
  args.reserve(inputs.size());
  for (const Tensor& t : inputs) args.push_back(concrete(t));
  // eval_ref (and the JIT) run the shape rule first, so bad input throws pxl::Error.
  std::optional<Array> compiled;
  if (jit_) compiled = jit_->run(op, attrs, args, device, loc);
  Array out = compiled ? std::move(*compiled) : eval_ref(op, attrs, args);
  if (out.device() != device) out = out.on_device(device);
  Tensor result = checked(op, make_tensor(std::move(out)));
  if (sharded_ && device == device_)
    if (std::optional<Tensor> placed = sharded_->place_result(result)) return *placed;
  return result;
}

namespace {

// How JAX's error names an eager op's operands i and j: the jnp function it
// runs as a jit of, with that function's parameter names (x + y is jnp.add's
// jit: "argument x of add"), or the primitive itself ("args[0] of concatenate").
std::pair<std::string, std::string> operand_name(Op op, size_t i, size_t n) {
  static const std::map<Op, std::pair<const char*, bool>> jnp_names = {
      {Op::Add, {"add", false}},         {Op::Sub, {"subtract", false}},
      {Op::Mul, {"multiply", false}},    {Op::Div, {"true_divide", true}},
      {Op::Rem, {"remainder", false}},   {Op::Pow, {"_power", true}},
      {Op::Max, {"maximum", false}},     {Op::Min, {"minimum", false}},
      {Op::And, {"bitwise_and", false}}, {Op::Or, {"bitwise_or", false}},
      {Op::Xor, {"bitwise_xor", false}}, {Op::Atan2, {"arctan2", true}},
      {Op::Eq, {"equal", false}},        {Op::Ne, {"not_equal", false}},
      {Op::Lt, {"less", false}},         {Op::Le, {"less_equal", false}},
      {Op::Gt, {"greater", false}},      {Op::Ge, {"greater_equal", false}},
  };
  if (auto it = jnp_names.find(op); it != jnp_names.end() && n == 2) {
    const char* names[2][2] = {{"x", "y"}, {"x1", "x2"}};
    return {names[it->second.second ? 1 : 0][i], it->second.first};
  }
  if (op == Op::DotGeneral && n == 2) return {i == 0 ? "a" : "b", "dot"};
  if (op == Op::Select && n == 3) {
    const char* names[3] = {"condition", "x", "y"};
    return {names[i], "_where"};
  }
  return {"args[" + std::to_string(i) + "]", op_name(op)};
}

} // namespace

// JAX's ValueError for an eager op whose operands i and j are committed to
// different devices (stages.py's _device_assignment_mismatch_error).
std::string incompatible_devices_message(Op op, std::span<const Tensor> inputs, size_t i,
                                         size_t j) {
  auto describe = [&](size_t k) {
    const Tensor& t = inputs[k];
    auto [name, fn] = operand_name(op, k, inputs.size());
    int d = t->concrete ? t->concrete->device() : t->sharded->mesh.device_ids[0];
    std::string shape;
    for (size_t a = 0; a < t->aval.shape.size(); ++a)
      shape += (a ? "," : "") + std::to_string(t->aval.shape[a]);
    return "argument " + name + " of " + fn + " with shape " + dtype_name(t->aval.dtype) + "[" +
           shape + "] and with device ids [" + std::to_string(d) + "] on platform CPU";
  };
  return "Received incompatible devices for jitted computation. Got " + describe(i) + " and " +
         describe(j);
}

// JAX's "computation follows data": an op whose operands were put on another
// device than the default (jax.device_put(x, jax.devices()[1])) runs there and
// leaves its result there. (JAX tracks which arrays are committed; pxl counts
// an array on a device other than this context's as put there.) Operands put
// on two different such devices are JAX's error: every eager op is a jit of
// its primitive, whose arguments must share their devices.
int EagerContext::placement(Op op, std::span<const Tensor> inputs) const {
  int device = device_;
  size_t first = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    int d = t->concrete ? t->concrete->device()
            : t->sharded && t->sharded->mesh.device_ids.size() == 1
                ? t->sharded->mesh.device_ids[0] // a mesh of one
                : device_;
    if (d == device_ || d == device) continue;
    if (device != device_)
      throw Error(ErrCode::Value, incompatible_devices_message(op, inputs, first, i));
    device = d;
    first = i;
  }
  return device;
}

std::vector<Tensor> EagerContext::bind_call(const OpAttrs& attrs, std::span<const Tensor> inputs) {
  std::vector<AVal> avals;
  for (const Tensor& t : inputs) avals.push_back(t->aval);
  if (attrs.loop) { // a while loop: on this device, its cond and body compiled
    infer_while(attrs, avals);
    std::vector<Array> args;
    for (const Tensor& t : inputs) args.push_back(concrete(t).on_device(device_));
    std::vector<Tensor> out;
    for (Array& a : run_while(*attrs.loop, args, loc)) out.push_back(make_tensor(std::move(a)));
    return checked_results("invalid value (%) encountered in while", std::move(out), loc);
  }
  if (attrs.host) { // a callback with results: called now
    std::vector<Array> args;
    for (const Tensor& t : inputs) args.push_back(concrete(t));
    if (attrs.host->gated) {
      bool taken = args.back().as<uint8_t>()[0] != 0;
      args.pop_back();
      if (!taken) {
        std::vector<Tensor> out;
        for (const AVal& a : attrs.host->results)
          out.push_back(make_tensor(Array(a.dtype, a.shape)));
        return out;
      }
    }
    std::vector<Tensor> out;
    for (Array& a : attrs.host->call(args)) out.push_back(make_tensor(std::move(a)));
    return out;
  }
  infer_call(attrs, avals); // operand checks, as eval_ref runs the shape rule
  if (attrs.custom) return bind_custom_primal(*this, *attrs.custom, inputs);
  std::vector<DebugRecord> prints;
  std::vector<Tensor> out = run_spmd_call(*attrs.callee, inputs, pull_log_, &prints);
  sort_debug_records(prints);
  print_debug_records(prints);
  return checked_results("Invalid value (%) encountered in sharded computation.", std::move(out),
                         loc);
}

std::vector<Tensor> EagerContext::checked_results(const std::string& message,
                                                  std::vector<Tensor> out,
                                                  const Span& where) const {
  for (const Tensor& t : out)
    if (std::string bad = invalid_float(t, float_checks_); !bad.empty()) {
      std::string text = message;
      text.replace(text.find('%'), 1, bad);
      throw Error(ErrCode::Value, text, where);
    }
  return out;
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
