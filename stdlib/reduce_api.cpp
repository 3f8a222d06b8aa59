// Argument binding of jnp's reductions (see reduce_api.hpp).
#include "stdlib/reduce_api.hpp"

#include "lang/args.hpp"
#include "runtime/eager.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/np.hpp"
#include "stdlib/xla_program.hpp"

namespace pxl {

namespace {

Tensor T(InterpreterImpl& in, const Value& v) { return in.to_tensor(v, Span{}); }

std::optional<Tensor> opt_tensor(InterpreterImpl& in, const ArgReader& r, size_t i) {
  if (!r.has(i) || r[i].is_none()) return std::nullopt;
  return T(in, r[i]);
}

void check_out(const ArgReader& r, size_t i, const std::string& name) {
  if (r.has(i) && !r[i].is_none())
    throw Error(ErrCode::Unsupported, "The 'out' argument to jnp." + name + " is not supported.");
}

np::ReduceOp op_of(const std::string& name) {
  if (name == "sum") return np::ReduceOp::Sum;
  if (name == "prod") return np::ReduceOp::Prod;
  if (name == "max" || name == "amax") return np::ReduceOp::Max;
  if (name == "min" || name == "amin") return np::ReduceOp::Min;
  if (name == "mean") return np::ReduceOp::Mean;
  if (name == "any") return np::ReduceOp::Any;
  return np::ReduceOp::All;
}

Value var_std(InterpreterImpl& in, const std::string& name, CallArgs& a) {
  ArgReader r(name, a,
              {"a", "axis", "dtype", "out", "ddof", "keepdims", "where", "mean", "correction"}, 1);
  check_out(r, 3, name);
  np::VarOptions o;
  o.name = name == "std" ? "std" : "var";
  o.dtype = value_to_dtype(r[2]);
  if (name == "std" && o.dtype && !is_inexact(*o.dtype))
    throw Error(ErrCode::Value, std::string("dtype argument to jnp.std must be inexact; got ") +
                                    dtype_name(*o.dtype));
  double ddof = r.get_float(4, 0);
  if (r.has(8) && !r[8].is_none()) {
    if (ddof != 0 || (r.has(4) && !r[4].is_int()))
      throw Error(ErrCode::Value, "ddof and correction can't be provided simultaneously.");
    o.correction = r.get_float(8);
  } else {
    o.correction = ddof;
  }
  o.where = opt_tensor(in, r, 6);
  o.mean = opt_tensor(in, r, 7);
  Tensor x = T(in, r[0]);
  np::Axes axes = value_to_axes(r[1], name + "() axis");
  bool keepdims = r.get_bool(5, false);
  bool eager = dynamic_cast<EagerContext*>(&in.ops()) != nullptr;
  // JAX jits jnp.var and jnp.std: one XLA program, its sum of squares fused,
  // traced once per signature (not when `where` or `mean`, arrays, are given).
  std::string key;
  if (!o.where && !o.mean) {
    key = std::string(o.name) + " axes";
    for (int ax : axes.value_or(std::vector<int>{})) key += " " + std::to_string(ax);
    key += std::string(axes ? "" : " all") + (keepdims ? " keepdims" : "") + " dtype " +
           std::string(o.dtype ? dtype_name(*o.dtype) : "None") + " correction " +
           pxl::repr(Value::number(o.correction));
  }
  std::vector<Tensor> args{x};
  if (eager) args.push_back(np::scalar(in.ops(), Scalar::of_float(o.correction), DType::Float32));
  return make_array(as_xla_program(in, key, args, [&](OpContext& cx, std::span<const Tensor> p) {
    np::VarOptions traced = o;
    if (p.size() > 1) traced.correction_arg = p[1];
    Tensor v = np::var(cx, p[0], axes, keepdims, traced);
    return name == "std" ? np::unary(cx, np::UnOp::Sqrt, v) : v;
  }));
}

} // namespace

Value call_reduction(InterpreterImpl& in, const std::string& name, CallArgs& a,
                     const std::optional<Tensor>& self) {
  if (self) a.pos.insert(a.pos.begin(), make_array(*self));
  if (name == "var" || name == "std") return var_std(in, name, a);
  np::ReduceOp op = op_of(name);
  np::ReduceExtras ex;
  // JAX's signatures: max/min and any/all take no dtype; any/all and mean no initial.
  if (op == np::ReduceOp::Sum || op == np::ReduceOp::Prod) {
    ArgReader r(name, a,
                {"a", "axis", "dtype", "out", "keepdims", "initial", "where", "promote_integers"},
                1);
    check_out(r, 3, name);
    ex.initial = opt_tensor(in, r, 5);
    ex.where = opt_tensor(in, r, 6);
    ex.promote_integers = r.get_bool(7, true);
    return make_array(np::reduce(in.ops(), op, T(in, r[0]), value_to_axes(r[1], name + "() axis"),
                                 r.get_bool(4, false), value_to_dtype(r[2]), ex));
  }
  if (op == np::ReduceOp::Max || op == np::ReduceOp::Min) {
    ArgReader r(name, a, {"a", "axis", "out", "keepdims", "initial", "where"}, 1);
    check_out(r, 2, name);
    ex.initial = opt_tensor(in, r, 4);
    ex.where = opt_tensor(in, r, 5);
    return make_array(np::reduce(in.ops(), op, T(in, r[0]), value_to_axes(r[1], name + "() axis"),
                                 r.get_bool(3, false), {}, ex));
  }
  if (op == np::ReduceOp::Mean) {
    ArgReader r(name, a, {"a", "axis", "dtype", "out", "keepdims", "where"}, 1);
    check_out(r, 3, name);
    ex.where = opt_tensor(in, r, 5);
    return make_array(np::reduce(in.ops(), op, T(in, r[0]), value_to_axes(r[1], name + "() axis"),
                                 r.get_bool(4, false), value_to_dtype(r[2]), ex));
  }
  ArgReader r(name, a, {"a", "axis", "out", "keepdims", "where"}, 1);
  check_out(r, 2, name);
  ex.where = opt_tensor(in, r, 4);
  return make_array(np::reduce(in.ops(), op, T(in, r[0]), value_to_axes(r[1], name + "() axis"),
                               r.get_bool(3, false), {}, ex));
}

} // namespace pxl
