// Attributes and methods of Array values: x.shape, x.T, x.sum(axis=1), x.at[i].set(v), ...
#include <algorithm>
#include <cmath>
#include <map>

#include "ir/aval_text.hpp"
#include "lang/args.hpp"
#include "lang/methods.hpp"
#include "runtime/platform.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/lax_precision.hpp"
#include "stdlib/np_index.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/reduce_api.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/trace_origin.hpp"

namespace pxl {

namespace {

// The Device object of platform device `id`.
Value device_object(InterpreterImpl& in, int id) { return device_value(in.platform().name(), id); }

using ArrayMethod = Value (*)(InterpreterImpl&, const Tensor& self, CallArgs&);

// Runs `get` (which reads the array's value); a traced array is JAX's
// ConcretizationTypeError with `context`, the line naming the method.
template <class F> Value needs_value(const Tensor& x, const std::string& context, F&& get) {
  try {
    return get();
  } catch (Error& e) {
    if (e.code() != ErrCode::ConcreteValue) throw;
    throw concretization_error(e, x->aval, context);
  }
}

Value list_rec(const Array& a, size_t dim, int64_t& flat) {
  if (dim == a.shape().size()) {
    int64_t i = flat++;
    if (a.dtype() == DType::Bool) return Value::boolean(a.get(i).i != 0);
    if (is_floating(a.dtype())) return Value::number(a.get_f64(i));
    if (is_complex(a.dtype())) {
      Scalar z = a.get(i);
      return make_complex(z.f, z.im);
    }
    return Value::integer(a.get(i).i);
  }
  ValueList items;
  for (int64_t k = 0; k < a.shape()[dim]; ++k) items.push_back(list_rec(a, dim + 1, flat));
  return make_list(std::move(items));
}

Value reduction(InterpreterImpl& in, const Tensor& x, CallArgs& a, const char* name) {
  return call_reduction(in, name, a, x);
}

// Methods take (self, args); "variadic shape" methods accept x.reshape(2, 3) and x.reshape((2, 3)).
Shape shape_args(CallArgs& a, const char* name) {
  if (a.pos.size() == 1) return value_to_int_list(a.pos[0], std::string(name) + "() shape");
  Shape s;
  for (const Value& v : a.pos) s.push_back(value_to_int(v, std::string(name) + "() shape"));
  return s;
}

// x.item(*args) as numpy's: one int is a flat index, several ints (or one tuple) a
// multi-index; the element comes back as a 0-d array.
Tensor item_element(OpContext& cx, const Tensor& x, const ValueList& args) {
  const Shape& shape = x->aval.shape;
  int64_t flat = 0;
  if (args.size() == 1 && args[0].is_intlike()) {
    int64_t n = x->aval.size(), i = value_to_int(args[0], "item() index");
    if (i < -n || i >= n)
      throw Error(ErrCode::Index,
                  "index " + std::to_string(i) + " is out of bounds for size " + std::to_string(n));
    flat = i < 0 ? i + n : i;
  } else {
    Shape idx;
    if (args.size() == 1)
      idx = value_to_int_list(args[0], "item() index");
    else
      for (const Value& v : args) idx.push_back(value_to_int(v, "item() index"));
    if (idx.size() != shape.size())
      throw Error(ErrCode::Value, "incorrect number of indices for array");
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t i = idx[k], d = shape[k];
      if (i < -d || i >= d)
        throw Error(ErrCode::Index, "index " + std::to_string(i) + " is out of bounds for axis " +
                                        std::to_string(k) + " with size " + std::to_string(d));
      flat = flat * d + (i < 0 ? i + d : i);
    }
  }
  np::IndexItem it;
  it.index = flat;
  return np::index(cx, np::reshape(cx, x, {-1}), {it});
}

const std::map<std::string, ArrayMethod>& methods() {
  static const std::map<std::string, ArrayMethod> m = {
      {"reshape",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         std::string order = "C";
         for (auto& [k, v] : a.kw) {
           if (k != "order")
             throw Error(ErrCode::Arguments,
                         "reshape() got an unexpected keyword argument '" + k + "'");
           order = value_to_str(v, "reshape() order");
         }
         a.kw.clear();
         Shape shape = shape_args(a, "reshape");
         // (several ints: the tuple of them, reshape's own text)
         np::ShapeText written;
         if (a.pos.size() == 1)
           written = [&a] { return written_int_list(a.pos[0], "reshape() shape"); };
         return make_array(np::reshape_order(in.ops(), x, shape, order, written));
       }},
      {"astype",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("astype", a, {"dtype", "copy", "device"}, 1);
         // dtype=None is numpy's default float type, as in JAX (float32 without x64).
         DType dt = value_to_dtype(r[0]).value_or(DType::Float32);
         return make_array(np::astype(in.ops(), x, dt));
       }},
      {"sum", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "sum"); }},
      {"mean", [](InterpreterImpl& in, const Tensor& x,
                  CallArgs& a) { return reduction(in, x, a, "mean"); }},
      {"max", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "max"); }},
      {"min", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "min"); }},
      {"prod", [](InterpreterImpl& in, const Tensor& x,
                  CallArgs& a) { return reduction(in, x, a, "prod"); }},
      {"any", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "any"); }},
      {"all", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "all"); }},
      {"var", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "var"); }},
      {"std", [](InterpreterImpl& in, const Tensor& x,
                 CallArgs& a) { return reduction(in, x, a, "std"); }},
      {"argmax",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("argmax", a, {"axis", "out", "keepdims"});
         std::optional<int> axis;
         if (r.has(0) && !r[0].is_none()) axis = static_cast<int>(r.get_int(0));
         return make_array(np::argmax(in.ops(), x, axis, r.get_bool(2, false)));
       }},
      {"argmin",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("argmin", a, {"axis", "out", "keepdims"});
         std::optional<int> axis;
         if (r.has(0) && !r[0].is_none()) axis = static_cast<int>(r.get_int(0));
         return make_array(np::argmin(in.ops(), x, axis, r.get_bool(2, false)));
       }},
      {"cumsum",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("cumsum", a, {"axis", "dtype", "out"});
         std::optional<int> axis;
         if (r.has(0) && !r[0].is_none()) axis = static_cast<int>(r.get_int(0));
         return make_array(np::cumsum(in.ops(), x, axis, value_to_dtype(r[1])));
       }},
      {"tolist",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("tolist", a, {});
         return needs_value(x,
                            "The tolist() method was called on traced array with shape " +
                                array_type_str(x->aval.dtype, x->aval.shape) + ".",
                            [&] { return array_to_list(in.ops().concrete(x)); });
       }},
      {"item",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("item", a, {"*args"});
         if (r.rest().empty()) {
           if (x->aval.size() != 1)
             throw Error(ErrCode::Value, "can only convert an array of size 1 to a Python scalar");
           return needs_value(x, "This occurred in the item() method of jax.Array",
                              [&] { return array_to_scalar(in, make_array(x), Span{}); });
         }
         return needs_value(x, "This occurred in the item() method of jax.Array", [&] {
           return array_to_scalar(in, make_array(item_element(in.ops(), x, r.rest())), Span{});
         });
       }},
      {"block_until_ready",
       [](InterpreterImpl&, const Tensor& x, CallArgs& a) {
         ArgReader r("block_until_ready", a, {});
         wait_ready(*x); // CUDA results are computed asynchronously
         return make_array(x);
       }},
      {"conj",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("conj", a, {});
         Tensor xs[] = {x};
         return make_array(is_complex(x->aval.dtype) ? in.ops().bind(Op::Conj, {}, xs) : x);
       }},
      {"conjugate",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("conjugate", a, {});
         Tensor xs[] = {x};
         return make_array(is_complex(x->aval.dtype) ? in.ops().bind(Op::Conj, {}, xs) : x);
       }},
      {"copy",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("copy", a, {});
         // Arrays are immutable: sharing is a copy. Under jax.set_mesh JAX
         // places the copy on the mesh, as device_put does.
         return results_on_current_mesh(in, make_array(jaxpr_copy(in, x)), false);
       }},
      {"transpose",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         if (a.pos.empty()) return make_array(np::transpose(in.ops(), x, std::nullopt));
         std::vector<int> perm;
         for (int64_t p : shape_args(a, "transpose")) perm.push_back(static_cast<int>(p));
         return make_array(np::transpose(in.ops(), x, perm));
       }},
      {"flatten",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("flatten", a, {"order"});
         std::string order = r.has(0) ? r.get_str(0) : "C";
         if (order != "C" && order != "F")
           throw Error(ErrCode::Unsupported, "Ravel not implemented for order='" + order + "'.");
         return make_array(np::reshape_order(in.ops(), x, {-1}, order));
       }},
      {"ravel",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("ravel", a, {"order"});
         std::string order = r.has(0) ? r.get_str(0) : "C";
         if (order != "C" && order != "F")
           throw Error(ErrCode::Unsupported, "Ravel not implemented for order='" + order + "'.");
         return make_array(np::reshape_order(in.ops(), x, {-1}, order));
       }},
      {"squeeze",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("squeeze", a, {"axis"});
         return make_array(np::squeeze(in.ops(), x, value_to_axes(r[0], "squeeze() axis")));
       }},
      {"swapaxes",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("swapaxes", a, {"axis1", "axis2"}, 2);
         return make_array(np::swapaxes(in.ops(), x, static_cast<int>(r.get_int(0)),
                                        static_cast<int>(r.get_int(1))));
       }},
      {"clip",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("_clip", a, {"min", "max"}); // JAX's method is _clip (its errors say so)
         std::optional<Tensor> lo, hi;
         if (r.has(0) && !r[0].is_none()) lo = in.to_tensor(r[0], Span{});
         if (r.has(1) && !r[1].is_none()) hi = in.to_tensor(r[1], Span{});
         return make_array(np::clip(in.ops(), x, lo, hi));
       }},
      {"round",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("round", a, {"decimals"});
         CallArgs ra;
         ra.pos = {make_array(x), Value::integer(r.get_int(0, 0))};
         return in.call(in.builtin("round"), ra, Span{});
       }},
      {"dot",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("dot", a, {"b", "precision", "preferred_element_type"}, 1); // as jnp.dot's
         return make_array(np::dot(in.ops(), x, in.to_tensor(r[0], Span{}),
                                   dot_precision(in, r.has(1) ? r[1] : Value())));
       }},
      {"addressable_data",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         // JAX: addressable_shards[i].data, the block of the i-th device.
         ArgReader r("addressable_data", a, {"index"}, 1);
         Value blocks;
         if (!sharded_array_attr(in, x, "device_buffers", blocks))
           throw Error(ErrCode::Value,
                       "addressable_data() needs a concrete array, not a traced one");
         const ValueList& items = blocks.as<ListObj>()->items;
         int64_t i = value_to_int(r[0], "addressable_data() index");
         int64_t n = static_cast<int64_t>(items.size());
         if (i < -n || i >= n)
           throw Error(ErrCode::Index, "addressable_data() index " + std::to_string(i) +
                                           " is out of range for " + std::to_string(n) +
                                           " shard(s)");
         // A fully replicated array answers with its first device's copy
         // whatever the index, as JAX's (its _fully_replicated_shard()).
         Value rep;
         if (sharded_array_attr(in, x, "is_fully_replicated", rep) && rep.b) return items[0];
         return items[static_cast<size_t>(i < 0 ? i + n : i)];
       }},
      {"on_device_size_in_bytes",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         // The bytes every device's block takes, summed over the devices (JAX's).
         ArgReader r("on_device_size_in_bytes", a, {});
         Value blocks;
         if (!sharded_array_attr(in, x, "device_buffers", blocks))
           throw Error(ErrCode::Value,
                       "on_device_size_in_bytes() needs a concrete array, not a traced one");
         int64_t bytes = 0;
         for (const Value& b : blocks.as<ListObj>()->items) {
           const AVal& av = b.as<ArrayObj>()->tensor->aval;
           bytes += av.size() * static_cast<int64_t>(dtype_size(av.dtype));
         }
         return Value::integer(bytes);
       }},
      {"is_ready",
       [](InterpreterImpl&, const Tensor& x, CallArgs& a) {
         ArgReader r("is_ready", a, {});
         wait_ready(*x); // CUDA results are computed asynchronously
         return Value::boolean(true);
       }},
      {"copy_to_host_async",
       [](InterpreterImpl&, const Tensor&, CallArgs& a) {
         ArgReader r("copy_to_host_async", a, {});
         return Value(); // host reads assemble when needed
       }},
      {"to_device",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         // The array API's x.to_device(device_or_sharding): jax.device_put's placement.
         ArgReader r("to_device", a, {"device", "stream"}, 1);
         return device_put_leaf(in, make_array(x), r[0]);
       }},
      {"devices",
       [](InterpreterImpl& in, const Tensor& x, CallArgs& a) {
         ArgReader r("devices", a, {});
         return devices_set_value(in.platform().name(), x);
       }},
  };
  return m;
}

// Methods that are jnp functions taking the array first (x.repeat(2) is jnp.repeat(x, 2)).
const char* const kDelegated[] = {"argsort", "sort",         "take",   "nonzero",
                                  "trace",   "diagonal",     "ptp",    "cumprod",
                                  "repeat",  "searchsorted", "choose", "argpartition"};

// x.at[idx].apply(func): func applied to each indexed element once per time the
// index reaches it (XLA's scatter applies it per update, as numpy's ufunc.at).
Value at_apply(InterpreterImpl& in, const Tensor& x, const std::vector<np::IndexItem>& items,
               const Value& func, const np::IndexOptions& opts) {
  OpContext& cx = in.ops();
  Tensor counts = np::index_counts(cx, x, items, opts);
  int64_t rounds;
  if (!counts->trace) {
    rounds = 0;
    const Array& c = cx.concrete(counts);
    for (int64_t i = 0; i < c.size(); ++i) rounds = std::max<int64_t>(rounds, c.get(i).i);
  } else { // at most once per update
    rounds = np::index_clamped(cx, x, items, opts.wrap_negative)->aval.size();
  }
  Tensor y = x;
  for (int64_t t = 0; t < rounds; ++t) {
    Tensor fy = in.to_tensor(in.call(func, ValueList{make_array(y)}, Span{}), Span{});
    fy = np::detail::convert(cx, fy, x->aval.dtype, x->aval.weak);
    Tensor hit = np::binary(cx, np::BinOp::Gt, counts,
                            np::scalar(cx, Scalar::of_int(t), DType::Int32, false));
    y = np::where(cx, hit, fy, y);
  }
  return make_array(y);
}

Value at_method(InterpreterImpl& in, const AtProxyObj& p, const std::string& name, CallArgs& a) {
  static const std::map<std::string, np::UpdateMode> modes = {
      {"set", np::UpdateMode::Set},      {"add", np::UpdateMode::Add},
      {"subtract", np::UpdateMode::Sub}, {"multiply", np::UpdateMode::Mul},
      {"mul", np::UpdateMode::Mul},      {"min", np::UpdateMode::Min},
      {"max", np::UpdateMode::Max}};
  const Tensor& x = p.array.as<ArrayObj>()->tensor;
  // JAX's GatherScatterMode: None, "fill" and "drop" are FILL_OR_DROP; "clip" clamps
  // indices into range; "promise_in_bounds" clamps a gather and drops a scatter's.
  auto mode_of = [](const ArgReader& r, size_t i) -> std::string {
    if (!r.has(i) || r[i].is_none()) return "";
    // A lax.GatherScatterMode member (stdlib/lax_gather.pxl) prints as GatherScatterMode.NAME.
    if (r[i].is_obj(ObjKind::Opaque)) {
      const auto* o = r[i].as<OpaqueObj>();
      if (o->type_name() == "GatherScatterMode") {
        std::string n = o->str().substr(o->str().find('.') + 1);
        return n == "CLIP"           ? "clip"
               : n == "FILL_OR_DROP" ? "fill"
               : n == "ONE_HOT"      ? "one_hot"
                                     : "promise_in_bounds";
      }
    }
    std::string m = r.get_str(i);
    if (m != "fill" && m != "drop" && m != "clip" && m != "promise_in_bounds")
      throw Error(ErrCode::Value, "Unknown gather mode \"" + m + "\"");
    return m;
  };
  auto items = [&] { return to_index_items(in, p.index, Span{}); };
  if (name == "get") {
    ArgReader r("get", a,
                {"indices_are_sorted", "unique_indices", "mode", "fill_value", "out_sharding",
                 "wrap_negative_indices"});
    std::string mode = mode_of(r, 2);
    bool wrap = r.get_bool(5, true);
    // The default mode is x[idx]'s (JAX's _rewriting_take: make_jaxpr shows its
    // dynamic_slice or gather).
    if (mode.empty() && wrap) return make_array(np::index(in.ops(), x, items()));
    if (mode != "fill" && mode != "drop")
      return make_array(np::index_clamped(in.ops(), x, items(), wrap));
    Tensor fill;
    if (r.has(3) && !r[3].is_none()) {
      fill = in.to_tensor(r[3], Span{});
      if (!fill->aval.shape.empty())
        throw Error(ErrCode::Value, "fill_value argument to indexed get() must be a scalar");
    } else { // NaN, the lowest signed, the highest unsigned integer, True
      DType dt = x->aval.dtype;
      Scalar f = is_floating(dt) || is_complex(dt) ? Scalar::of_float(std::nan(""))
                 : dt == DType::Bool               ? Scalar::of_bool(true)
                 : is_unsigned_int(dt)             ? Scalar::of_int(int_max(dt))
                                                   : Scalar::of_int(int_min(dt));
      fill = np::scalar(in.ops(), f, dt, false);
    }
    return make_array(np::index_fill(in.ops(), x, items(), fill, wrap));
  }
  np::IndexOptions opts;
  if (name == "apply") {
    ArgReader r("apply", a,
                {"func", "indices_are_sorted", "unique_indices", "mode", "wrap_negative_indices"},
                1);
    opts.clip = mode_of(r, 3) == "clip";
    opts.wrap_negative = r.get_bool(4, true);
    // Through _without_jvp (stdlib/lax_gather.pxl): as JAX's scatter_apply, not
    // differentiable.
    Value func = r[0];
    std::vector<np::IndexItem> idx = items();
    Value apply = make_builtin("apply", [idx, func, opts](InterpreterImpl& in2, CallArgs& fa) {
      return at_apply(in2, in2.to_tensor(fa.pos.at(0), Span{}), idx, func, opts);
    });
    Value gather = in.import_module("lax_gather", Span{}, "");
    return in.call(in.get_attr(gather, "_without_jvp", Span{}), ValueList{apply, p.array}, Span{});
  }
  ArgReader r(name, a,
              {"values", "indices_are_sorted", "unique_indices", "mode", "wrap_negative_indices",
               "out_sharding"},
              1);
  const std::string mode = mode_of(r, 3);
  opts.clip = mode == "clip";
  opts.promise_in_bounds = mode == "promise_in_bounds";
  opts.wrap_negative = r.get_bool(4, true);
  // As JAX: a Python int that fits x's integer dtype is taken in that dtype
  // (a uint32 array's .set(2**32 - 1)).
  Tensor v = r[0].is_int() && is_integer(x->aval.dtype) && x->aval.dtype != DType::Bool &&
                     r[0].i >= int_min(x->aval.dtype) && r[0].i <= int_max(x->aval.dtype)
                 ? np::scalar(in.ops(), Scalar::of_int(r[0].i), x->aval.dtype, false)
                 : in.to_tensor(r[0], Span{});
  if (x->aval.dtype == DType::Bool) { // JAX's scatter_add/sub/mul refuse bools
    const char* prim = name == "add" ? "add" : name == "subtract" ? "sub" : "mul";
    if (name != "set" && name != "min" && name != "max")
      np::detail::lax_dtype_error0(prim, DType::Bool, "integer, floating, complexfloating");
  }
  if (name == "divide" || name == "power") {
    // As JAX: x / (ones.at[idx].multiply(v)), x ** (ones.at[idx].multiply(v)).
    Tensor ones = np::full_like(in.ops(), x, Scalar::of_int(1));
    Tensor f = np::index_update(in.ops(), ones, items(), v, np::UpdateMode::Mul, opts);
    return make_array(
        np::binary(in.ops(), name == "divide" ? np::BinOp::TrueDiv : np::BinOp::Pow, x, f));
  }
  return make_array(np::index_update(in.ops(), x, items(), v, modes.at(name), opts));
}

} // namespace

Value array_to_list(const Array& a) {
  int64_t flat = 0;
  return list_rec(a, 0, flat);
}

// x.__add__(y), x.__radd__(y), x.__lt__(y), x.__neg__() ...: Python's operators as
// methods, computed as the operators are (a reflected method swaps the operands).
bool operator_method(const Value& obj, const std::string& name, Value& out) {
  static const std::pair<const char*, BinOpKind> bins[] = {
      {"add", BinOpKind::Add},           {"sub", BinOpKind::Sub},
      {"mul", BinOpKind::Mul},           {"truediv", BinOpKind::Div},
      {"floordiv", BinOpKind::FloorDiv}, {"mod", BinOpKind::Mod},
      {"pow", BinOpKind::Pow},           {"matmul", BinOpKind::MatMul},
      {"and", BinOpKind::BitAnd},        {"or", BinOpKind::BitOr},
      {"xor", BinOpKind::BitXor},        {"lshift", BinOpKind::LShift},
      {"rshift", BinOpKind::RShift}};
  static const std::pair<const char*, CmpOpKind> cmps[] = {
      {"eq", CmpOpKind::Eq}, {"ne", CmpOpKind::Ne}, {"lt", CmpOpKind::Lt},
      {"le", CmpOpKind::Le}, {"gt", CmpOpKind::Gt}, {"ge", CmpOpKind::Ge}};
  static const std::pair<const char*, UnaryOpKind> uns[] = {
      {"neg", UnaryOpKind::Neg}, {"pos", UnaryOpKind::Pos}, {"invert", UnaryOpKind::Invert}};
  if (name.size() < 5 || name.compare(0, 2, "__") != 0 ||
      name.compare(name.size() - 2, 2, "__") != 0)
    return false;
  std::string core = name.substr(2, name.size() - 4);
  auto bind = [&](NativeFn fn) {
    out = Value::object(std::make_shared<BoundMethodObj>(obj, make_builtin(name, std::move(fn))));
    return true;
  };
  for (auto [n, op] : bins) {
    bool reflected = core == std::string("r") + n;
    if (core != n && !reflected) continue;
    BinOpKind k = op;
    return bind([k, reflected, name](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a, {"self", "other"}, 2);
      return reflected ? in.binary_op(k, r[1], r[0], Span{}) : in.binary_op(k, r[0], r[1], Span{});
    });
  }
  for (auto [n, op] : cmps) {
    if (core != n) continue;
    CmpOpKind k = op;
    return bind([k, name](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a, {"self", "other"}, 2);
      return in.compare(k, r[0], r[1], Span{});
    });
  }
  for (auto [n, op] : uns) {
    if (core != n) continue;
    UnaryOpKind k = op;
    return bind([k, name](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a, {"self"}, 1);
      return in.unary_op(k, r[0], Span{});
    });
  }
  if (core == "abs")
    return bind([](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("__abs__", a, {"self"}, 1);
      return make_array(np::unary(in.ops(), np::UnOp::Abs, in.to_tensor(r[0], Span{})));
    });
  return false;
}

bool array_attr(InterpreterImpl& in, const Value& obj, const std::string& name, Value& out) {
  if (obj.is_obj(ObjKind::AtProxy)) {
    auto* p = obj.as<AtProxyObj>();
    static const char* names[] = {"set", "add",    "subtract", "multiply", "mul",  "min",
                                  "max", "divide", "power",    "get",      "apply"};
    if (!p->has_index || std::find(std::begin(names), std::end(names), name) == std::end(names))
      return false;
    out = Value::object(std::make_shared<BoundMethodObj>(
        obj, make_builtin(name, [name](InterpreterImpl& in, CallArgs& a) {
          Value self = a.pos.front();
          a.pos.erase(a.pos.begin());
          return at_method(in, *self.as<AtProxyObj>(), name, a);
        })));
    return true;
  }
  const Tensor& t = obj.as<ArrayObj>()->tensor;
  const AVal& av = t->aval;
  if (obj.as<ArrayObj>()->deleted) {
    // A deleted array keeps its type and placement; every other use is JAX's error.
    static const char* live[] = {"shape",      "dtype",     "ndim",     "size",     "itemsize",
                                 "nbytes",     "weak_type", "aval",     "sharding", "device",
                                 "is_deleted", "delete",    "committed"};
    if (name == "block_until_ready")
      throw Error(ErrCode::Value,
                  "INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or donated buffer");
    if (std::find(std::begin(live), std::end(live), name) == std::end(live))
      obj.as<ArrayObj>()->check_live();
  }
  if (name == "shape") {
    ValueList dims;
    for (int64_t d : av.shape) dims.push_back(Value::integer(d));
    out = make_tuple(std::move(dims));
    return true;
  }
  if (name == "ndim") return out = Value::integer(av.ndim()), true;
  if (name == "size") return out = Value::integer(av.size()), true;
  if (name == "dtype") return out = Value::object(std::make_shared<DTypeObj>(av.dtype)), true;
  if (name == "itemsize")
    return out = Value::integer(static_cast<int64_t>(dtype_size(av.dtype))), true;
  if (name == "nbytes")
    return out = Value::integer(av.size() * static_cast<int64_t>(dtype_size(av.dtype))), true;
  if (name == "weak_type") return out = Value::boolean(av.weak), true;
  if (name == "T") return out = make_array(np::transpose(in.ops(), t, std::nullopt)), true;
  if (name == "mT") { // the last two axes swapped, as JAX's (ndim >= 2)
    if (t->aval.shape.size() < 2)
      throw Error(ErrCode::Value,
                  "x must be at least two-dimensional for matrix_transpose; got ndim=" +
                      std::to_string(t->aval.shape.size()));
    return out = make_array(np::swapaxes(in.ops(), t, -1, -2)), true;
  }
  if (name == "at")
    return out = Value::object(std::make_shared<AtProxyObj>(obj, Value(), false)), true;
  if (name == "is_deleted" || name == "delete") {
    auto* arr = obj.as<ArrayObj>();
    Value keep = obj; // the bound method keeps the array alive
    out = make_builtin(name, [arr, keep, name](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name, a, {});
      if (name == "delete") return arr->deleted = true, Value();
      return Value::boolean(arr->deleted);
    });
    return true;
  }
  if (name == "real" || name == "imag") {
    Tensor xs[] = {t};
    if (is_complex(av.dtype))
      return out = make_array(in.ops().bind(name == "real" ? Op::Real : Op::Imag, {}, xs)), true;
    return out = name == "real" ? obj : make_array(np::full_like(in.ops(), t, Scalar::of_int(0))),
           true;
  }
  if (name == "device") {
    // An array over several devices answers with its sharding, as JAX's does.
    if (t->sharded && t->sharded->spans_devices())
      return sharded_array_attr(in, t, "sharding", out);
    int id = t->sharded ? t->sharded->mesh.device_ids[0] : t->concrete ? t->concrete->device() : 0;
    return out = device_object(in, id), true;
  }
  if (name == "format" && (t->sharded || t->concrete)) { // (written in pxl: jax_rest.pxl)
    CallArgs ca;
    ca.pos = {obj};
    Value fn = in.get_attr(in.import_module("jax_rest", Span{}, ""), "_array_format", Span{});
    return out = in.call(fn, ca, Span{}), true;
  }
  if ((name == "committed" || name == "_committed") && (t->sharded || t->concrete))
    return out = Value::boolean(array_committed(obj)), true;
  if (sharded_array_attr(in, t, name, out)) {
    // A shard's data is committed when its array is (JAX: s.data._committed).
    if ((name == "addressable_shards" || name == "global_shards") && array_committed(obj))
      for (const Value& shard : *sequence_items(out)) {
        Value data = in.get_attr(shard, "data", Span{});
        if (data.is_obj(ObjKind::Array)) data.as<ArrayObj>()->committed = true;
      }
    return true;
  }
  if (operator_method(obj, name, out)) return true;
  auto it = methods().find(name);
  if (it == methods().end()) {
    // x.view(dtype) and x.compress(condition) are written in pxl: numpy_rest.pxl's
    // _array_view (jnp has no view) and _array_compress (jnp.compress takes the condition first).
    bool in_pxl = name == "view" || name == "compress";
    if (!in_pxl &&
        std::find(std::begin(kDelegated), std::end(kDelegated), name) == std::end(kDelegated))
      return false;
    Value fn =
        in_pxl ? in.get_attr(in.import_module("numpy_rest", Span{}, ""), "_array_" + name, Span{})
               : in.get_attr(in.import_module("jax.numpy", Span{}, ""), name, Span{});
    out = Value::object(std::make_shared<BoundMethodObj>(obj, fn));
    return true;
  }
  ArrayMethod m = it->second;
  out = Value::object(std::make_shared<BoundMethodObj>(
      obj, make_builtin(name, [m, name](InterpreterImpl& in, CallArgs& a) {
        Value self = a.pos.front();
        a.pos.erase(a.pos.begin());
        Value r = m(in, self.as<ArrayObj>()->tensor, a);
        // JAX's x.block_until_ready() returns x itself (`y is x`).
        return name == "block_until_ready" ? self : r;
      })));
  return true;
}

std::vector<std::string> array_attr_names() {
  std::vector<std::string> names = {"shape",
                                    "ndim",
                                    "size",
                                    "dtype",
                                    "itemsize",
                                    "nbytes",
                                    "weak_type",
                                    "T",
                                    "mT",
                                    "at",
                                    "device",
                                    "sharding",
                                    "real",
                                    "imag",
                                    "addressable_shards",
                                    "global_shards",
                                    "device_buffers",
                                    "is_fully_replicated",
                                    "is_fully_addressable",
                                    "committed",
                                    "format",
                                    "aval"};
  for (const auto& [k, _] : methods()) names.push_back(k);
  for (const char* k : kDelegated) names.push_back(k);
  names.push_back("view");
  return names;
}

} // namespace pxl
