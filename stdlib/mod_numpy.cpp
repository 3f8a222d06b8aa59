// The `np` / `jax.numpy` module: Python-facing wrappers over stdlib/np.hpp.
#include <cmath>
#include <set>

#include "lang/args.hpp"
#include "lang/methods.hpp"
#include "lang/tracer.hpp"
#include "runtime/npy.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/lax_precision.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np_einsum.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/reduce_api.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/strict_promotion.hpp"

namespace pxl {

namespace {

Tensor T(InterpreterImpl& in, const Value& v) { return in.to_tensor(v, Span{}); }

std::optional<int> opt_axis(const ArgReader& r, size_t i) {
  if (!r.has(i) || r[i].is_none()) return std::nullopt;
  return static_cast<int>(std::clamp<int64_t>(r.get_int(i), -100000, 100000));
}

std::vector<Tensor> tensor_list(InterpreterImpl& in, const Value& v, const char* fn) {
  std::vector<Tensor> out;
  if (v.is_obj(ObjKind::Array)) {
    // np.concatenate(x) of one array: iterate its first axis.
    for (const Value& x : in.iterate(v, Span{})) out.push_back(T(in, x));
    return out;
  }
  const ValueList* items = sequence_items(v);
  if (!items) throw Error(ErrCode::Type, std::string(fn) + "() expects a sequence of arrays");
  for (const Value& x : *items) out.push_back(T(in, x));
  return out;
}

// The arrays a joining function (concatenate, stack, ...) takes: each converted
// to dtype= when given (JAX's asarray(a, dtype=dtype)), else checked as JAX's
// promote_dtypes checks them under strict promotion.
std::vector<Tensor> joined_list(InterpreterImpl& in, const ArgReader& r, size_t arrays,
                                size_t dtype, const char* fn) {
  std::vector<Tensor> xs = tensor_list(in, r[arrays], fn);
  if (r.has(dtype) && !r[dtype].is_none()) {
    DType d = value_to_dtype(r[dtype]).value();
    for (Tensor& x : xs) x = np::astype(in.ops(), x, d);
  } else {
    strict_check_join(in, xs);
  }
  return xs;
}

// jnp.eye's N and M go through JAX's shape canonicalisation (its TypeError) and
// then its own check for negative sizes.
int64_t eye_dim(const Value& v, const std::string& which) {
  if (v.is_intlike() || v.is_obj(ObjKind::Array)) return value_to_int(v, which);
  throw Error(ErrCode::Type,
              "Shapes must be 1D sequences of concrete values of integer type, got (" + repr(v) +
                  ",). " + which + ".");
}

void eye_check_sizes(int64_t n, std::optional<int64_t> m) {
  if (n < 0 || (m && *m < 0))
    throw Error(ErrCode::Value, "negative dimensions are not allowed, got " + std::to_string(n) +
                                    " and " + (m ? std::to_string(*m) : std::string("None")));
}

void def_creation(ModuleBuilder& b) {
  // jnp.array(object, dtype, copy, order, ndmin) and jnp.asarray(a, dtype, order, *, copy).
  auto array_fn = [](bool is_array) {
    return [is_array](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(
          is_array ? "array" : "asarray", a,
          is_array ? std::initializer_list<const char*>{"object", "dtype", "copy", "order", "ndmin"}
                   : std::initializer_list<const char*>{"a", "dtype", "order", "copy"},
          1);
      auto dt = value_to_dtype(r[1]);
      // np.array(jax.devices()): a grid of devices (numpy would make an object array).
      if (auto grid = device_grid_of(r[0])) return Value::object(grid);
      if (dt && r[0].is_float()) np::check_python_scalar(Scalar::of_float(r[0].f), *dt);
      if (dt && r[0].is_obj(ObjKind::Complex))
        np::check_python_scalar(Scalar::of_complex(0, 0), *dt);
      // A traced array is copied (JAX's copy equation in a jaxpr) unless copy=False.
      const size_t copy_at = is_array ? 2 : 3; // jnp.array copies by default, asarray not
      bool copies = r.has(copy_at) ? in.truthy(r[copy_at], Span{}) : is_array;
      Value object = r[0];
      if (copies && object.is_obj(ObjKind::Array))
        object = make_array(jaxpr_copy(in, object.as<ArrayObj>()->tensor));
      // As in JAX, a bare Python scalar stays weakly typed (jnp.array(3.0) is weak), a list is not.
      Tensor t = in.to_tensor(object, Span{}, dt);
      // A weak array given a dtype= becomes strong, as JAX's asarray/array.
      if (dt && t->aval.weak && r[0].is_obj(ObjKind::Array)) t = np::astype(in.ops(), t, *dt);
      int64_t ndmin = is_array ? r.get_int(4, 0) : 0;
      if (ndmin > t->aval.ndim()) { // ndmin= prepends length-1 axes (JAX's expand_dims)
        std::vector<int> axes;
        for (int64_t i = 0; i < ndmin - t->aval.ndim(); ++i) axes.push_back(static_cast<int>(i));
        t = np::expand_dims(in.ops(), t, axes);
      }
      return make_array(t);
    };
  };
  b.fn("array", array_fn(true));
  b.fn("asarray", array_fn(false));
  auto filled = [](const char* name, int kind) {
    return [name, kind](InterpreterImpl& in, CallArgs& a) {
      if (kind == 2) {
        ArgReader r(name, a, {"shape", "fill_value", "dtype"}, 2);
        return make_array(np::full(in.ops(), canonical_shape(in, r[0]),
                                   value_to_scalar(in, r[1], "fill_value"), value_to_dtype(r[2])));
      }
      ArgReader r(name, a, {"shape", "dtype"}, 1);
      if (r.has(1) && r[0].is_int() && r[1].is_int()) { // JAX's hint for jnp.ones(2, 3)
        std::string sh = std::to_string(r[0].i), dt = std::to_string(r[1].i);
        throw Error(ErrCode::Type,
                    "Cannot interpret '" + dt +
                        "' as a data type.\n\nDid you accidentally write `jax.numpy." + name + "(" +
                        sh + ", " + dt + ")` when you meant `jax.numpy." + name + "((" + sh + ", " +
                        dt + "))`, i.e. with a single tuple argument for the shape?");
      }
      Shape s = canonical_shape(in, r[0]);
      if (kind == 0 && r.has(1) && is_float0_dtype(r[1]))
        return float0_zeros(s); // jax.dtypes.float0
      DType dt = value_to_dtype(r[1]).value_or(DType::Float32);
      return make_array(kind == 1 ? np::ones(in.ops(), s, dt) : np::zeros(in.ops(), s, dt));
    };
  };
  // JAX's core.canonicalize_shape for stdlib .pxl code (jnp.tri): a tuple of ints.
  b.fn("_canonicalize_shape", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_canonicalize_shape", a, {"shape"}, 1);
    ValueList dims;
    for (int64_t d : canonical_shape(in, r[0], false)) dims.push_back(Value::integer(d));
    return make_tuple(std::move(dims));
  });
  // _linspace_terms(num, endpoint, inexact): np::linspace_terms, for the traced
  // bounds of stdlib/numpy_rest.pxl's linspace.
  b.fn("_linspace_terms", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_linspace_terms", a, {"num", "endpoint", "inexact"}, 3);
    ValueList terms;
    for (Tensor& t :
         np::linspace_terms(in.ops(), r.get_int(0), r.get_bool(1, true), r.get_bool(2, true)))
      terms.push_back(make_array(std::move(t)));
    return make_tuple(std::move(terms));
  });
  b.fn("zeros", filled("zeros", 0));
  b.fn("empty", filled("empty", 0));
  b.fn("ones", filled("ones", 1));
  b.fn("full", filled("full", 2));
  auto like = [](const char* name, int kind) {
    return [name, kind](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a,
                  kind == 2 ? std::initializer_list<const char*>{"a", "fill_value", "dtype"}
                            : std::initializer_list<const char*>{"a", "dtype"},
                  kind == 2 ? 2 : 1);
      Tensor x = T(in, r[0]);
      Scalar v = kind == 2 ? value_to_scalar(in, r[1], "fill_value") : Scalar::of_int(kind);
      Tensor out = np::full_like(in.ops(), x, v, value_to_dtype(r[kind == 2 ? 2 : 1]));
      // Inside shard_map JAX's result varies over the axes x varies over.
      out = pvary_to(in.ops(), out, vma_of(in.ops(), x));
      // JAX gives the result x's sharding.
      if (x->sharded && x->sharded->spans_devices())
        out = make_sharded_tensor(
            shard_array(in.ops().concrete(out), x->sharded->mesh, x->sharded->spec, in.pull_log()));
      // ... or x's device, when x was put on another than the default.
      else if (x->concrete && out->concrete && out->concrete->device() != x->concrete->device())
        out = make_tensor(out->concrete->on_device(x->concrete->device()));
      return make_array(out);
    };
  };
  b.fn("zeros_like", like("zeros_like", 0));
  b.fn("ones_like", like("ones_like", 1));
  b.fn("full_like", like("full_like", 2));
  b.fn("empty_like", like("empty_like", 0));
  b.fn("arange", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("arange", a, {"start", "stop", "step", "dtype"}, 1);
    for (size_t i = 0; i < 3; ++i)
      if (r.has(i) && r[i].is_obj(ObjKind::Complex))
        throw Error(ErrCode::Value,
                    "Passing complex start/stop/step to jnp.arange is no longer supported "
                    "starting in JAX v0.10.0.");
    // A traced bound is JAX's ConcretizationTypeError naming the argument, then pxl's
    // account of the trace (which jit turns into JAX's origin text).
    auto bound = [&in](const Value& v, const std::string& name) {
      try {
        return value_to_scalar(in, v, "arange() " + name);
      } catch (Error& e) {
        if (e.code() != ErrCode::ConcreteValue || !v.is_obj(ObjKind::Array)) throw;
        const AVal& av = T(in, v)->aval;
        std::string type = std::string(dtype_name(av.dtype)) + "[";
        for (size_t i = 0; i < av.shape.size(); ++i)
          type += (i ? "," : "") + std::to_string(av.shape[i]);
        std::string why = e.message();
        if (!why.empty())
          why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
        throw Error(
            ErrCode::ConcreteValue,
            "ConcretizationTypeError: Abstract tracer value encountered where concrete value is "
            "expected: "
            "traced array with shape " +
                type + "]\nIt arose in the jnp.arange argument '" + name + "' " + why +
                "\n\nSee "
                "https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError",
            e.span(), e.hint());
      }
    };
    Scalar start = Scalar::of_int(0), stop, step = Scalar::of_int(1);
    if (r.has(1) && !r[1].is_none()) {
      start = bound(r[0], "start");
      stop = bound(r[1], "stop");
    } else {
      stop = bound(r[0], "stop");
    }
    if (r.has(2) && !r[2].is_none()) step = bound(r[2], "step");
    std::optional<DType> dt = value_to_dtype(r[3]);
    // As JAX, without dtype= a typed array argument (jnp.int8(3)) sets the result type,
    // promoted with the others; Python numbers stay weak.
    if (!dt) {
      std::optional<PromotedType> p;
      for (size_t i = 0; i < 3; ++i) {
        if (!r.has(i) || r[i].is_none()) continue;
        PromotedType t{DType::Int32, true};
        if (r[i].is_obj(ObjKind::Array)) {
          const auto& av = T(in, r[i])->aval;
          t = {av.dtype, av.weak};
        } else if (r[i].is_bool()) {
          t = {DType::Bool, false};
        } else if (r[i].is_float()) {
          t = {DType::Float32, true};
        }
        p = p ? promote_types(p->dtype, p->weak, t.dtype, t.weak) : t;
      }
      if (p && !p->weak) dt = p->dtype;
      if (dt == DType::Bool)
        throw Error(ErrCode::Type,
                    "iota does not accept dtype bool. Accepted dtypes are subtypes of "
                    "integer, floating, complexfloating.");
    }
    return make_array(np::arange(in.ops(), start, stop, step, dt, r.has(2) && !r[2].is_none()));
  });
  b.fn("linspace", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("linspace", a, {"start", "stop", "num", "endpoint", "retstep", "dtype"}, 2);
    return make_array(np::linspace(in.ops(), r.get_float(0), r.get_float(1), r.get_int(2, 50),
                                   r.get_bool(3, true), value_to_dtype(r[5])));
  });
  b.fn("eye", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("eye", a, {"N", "M", "k", "dtype"}, 1);
    std::optional<int64_t> m;
    if (r.has(1) && !r[1].is_none()) m = eye_dim(r[1], "argument 'M' of jnp.eye()");
    int64_t n = eye_dim(r[0], "argument of 'N' jnp.eye()"); // sic: JAX's word order
    int64_t k = 0;
    if (r.has(2)) {
      if (!r[2].is_intlike() &&
          !(r[2].is_obj(ObjKind::Array) && !is_inexact(T(in, r[2])->aval.dtype)))
        throw Error(ErrCode::Value, "k must be a scalar integer; got " + repr(r[2]));
      k = r.get_int(2);
    }
    eye_check_sizes(n, m);
    return make_array(np::eye(in.ops(), n, m, k, value_to_dtype(r[3]).value_or(DType::Float32)));
  });
  b.fn("identity", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("identity", a, {"n", "dtype"}, 1);
    int64_t n = eye_dim(r[0], "argument of 'N' jnp.eye()");
    eye_check_sizes(n, std::nullopt);
    return make_array(
        np::eye(in.ops(), n, std::nullopt, 0, value_to_dtype(r[1]).value_or(DType::Float32)));
  });
}

void def_elementwise(ModuleBuilder& b) {
  static const std::pair<const char*, np::UnOp> unary[] = {{"negative", np::UnOp::Neg},
                                                           {"positive", np::UnOp::Pos},
                                                           {"invert", np::UnOp::Invert},
                                                           {"bitwise_not", np::UnOp::Invert},
                                                           {"exp", np::UnOp::Exp},
                                                           {"log", np::UnOp::Log},
                                                           {"log1p", np::UnOp::Log1p},
                                                           {"expm1", np::UnOp::Expm1},
                                                           {"sqrt", np::UnOp::Sqrt},
                                                           {"rsqrt", np::UnOp::Rsqrt},
                                                           {"tanh", np::UnOp::Tanh},
                                                           {"sin", np::UnOp::Sin},
                                                           {"cos", np::UnOp::Cos},
                                                           {"tan", np::UnOp::Tan},
                                                           {"cbrt", np::UnOp::Cbrt},
                                                           {"abs", np::UnOp::Abs},
                                                           {"absolute", np::UnOp::Abs},
                                                           {"sign", np::UnOp::Sign},
                                                           {"floor", np::UnOp::Floor},
                                                           {"ceil", np::UnOp::Ceil},
                                                           {"isnan", np::UnOp::IsNan},
                                                           {"isfinite", np::UnOp::IsFinite},
                                                           {"isinf", np::UnOp::IsInf},
                                                           {"square", np::UnOp::Square},
                                                           {"reciprocal", np::UnOp::Reciprocal},
                                                           {"logical_not", np::UnOp::LogicalNot}};
  for (auto [name, op] : unary) {
    np::UnOp o = op;
    std::string n = name;
    b.fn(n, [n, o](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(n, a, {"x"}, 1);
      return make_array(np::unary(in.ops(), o, T(in, r[0])));
    });
  }
  b.fn("round", [](InterpreterImpl& in, CallArgs& a) {
    return call_as_jitted(in, "round", {"a"}, a, [](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("round", a, {"a", "decimals", "out"}, 1);
      if (r.has(2) && !r[2].is_none())
        throw Error(ErrCode::Unsupported, "The 'out' argument to jnp.round is not supported.");
      CallArgs ra;
      ra.pos = {make_array(T(in, r[0])), Value::integer(r.get_int(1, 0))};
      return in.call(in.builtin("round"), ra, Span{});
    });
  });
  b.alias("around", b.value(), "round");
  static const std::pair<const char*, np::BinOp> binary[] = {
      {"add", np::BinOp::Add},
      {"subtract", np::BinOp::Sub},
      {"multiply", np::BinOp::Mul},
      {"divide", np::BinOp::TrueDiv},
      {"true_divide", np::BinOp::TrueDiv},
      {"floor_divide", np::BinOp::FloorDiv},
      {"mod", np::BinOp::Mod},
      {"remainder", np::BinOp::Mod},
      {"power", np::BinOp::Pow},
      {"pow", np::BinOp::Pow},
      {"maximum", np::BinOp::Maximum},
      {"minimum", np::BinOp::Minimum},
      {"bitwise_and", np::BinOp::BitAnd},
      {"bitwise_or", np::BinOp::BitOr},
      {"bitwise_xor", np::BinOp::BitXor},
      {"left_shift", np::BinOp::LeftShift},
      {"right_shift", np::BinOp::RightShift},
      {"bitwise_left_shift", np::BinOp::LeftShift},
      {"bitwise_right_shift", np::BinOp::RightShift},
      {"equal", np::BinOp::Eq},
      {"not_equal", np::BinOp::Ne},
      {"less", np::BinOp::Lt},
      {"less_equal", np::BinOp::Le},
      {"greater", np::BinOp::Gt},
      {"greater_equal", np::BinOp::Ge},
      {"arctan2", np::BinOp::Arctan2}};
  for (auto [name, op] : binary) {
    np::BinOp o = op;
    std::string n = name;
    b.fn(n, [n, o](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(n, a, {"x1", "x2"}, 2);
      Tensor x = T(in, r[0]), y = T(in, r[1]);
      strict_promote_pair(in, x, y); // jax.numpy_dtype_promotion('strict')
      return make_array(np::binary(in.ops(), o, x, y));
    });
  }
  static const std::pair<const char*, np::BinOp> logical[] = {{"logical_and", np::BinOp::BitAnd},
                                                              {"logical_or", np::BinOp::BitOr},
                                                              {"logical_xor", np::BinOp::BitXor}};
  for (auto [name, op] : logical) {
    np::BinOp o = op;
    std::string n = name;
    b.fn(n, [n, o](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(n, a, {"x1", "x2"}, 2);
      Tensor x0 = T(in, r[0]), y0 = T(in, r[1]);
      Tensor x = np::astype(in.ops(), x0, DType::Bool);
      Tensor y = np::astype(in.ops(), y0, DType::Bool);
      Tensor out = np::binary(in.ops(), o, x, y);
      // As JAX (x != 0 against lax._const(x, 0) after promotion): weak when the promoted
      // operands are weak numbers and the result is 0-d.
      PromotedType p = promote_types(x0->aval.dtype, x0->aval.weak, y0->aval.dtype, y0->aval.weak);
      if (p.weak && p.dtype != DType::Bool && out->aval.shape.empty())
        out = np::detail::convert(in.ops(), out, DType::Bool, true);
      return make_array(out);
    });
  }
  NativeFn where = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("where", a, {"condition", "x", "y", "size", "fill_value"}, 1);
    if (!r.has(1) && !r.has(2)) { // where(condition) is nonzero(condition), as numpy
      Value nonzero = in.get_attr(in.import_module("jax.numpy", Span{}, ""), "nonzero", Span{});
      return in.call(nonzero, ValueList{r[0], r.has(3) ? r[3] : Value(), r.has(4) ? r[4] : Value()},
                     Span{});
    }
    if (!r.has(1) || !r.has(2))
      throw Error(ErrCode::Arguments, "where() takes either 1 or 3 arguments (condition, x, y)");
    Tensor x = T(in, r[1]), y = T(in, r[2]);
    strict_promote_pair(in, x, y);
    return make_array(np::where(in.ops(), T(in, r[0]), x, y));
  };
  b.fn("where", [where](InterpreterImpl& in, CallArgs& a) {
    bool select = a.pos.size() > 1; // where(condition, x, y) is JAX's jitted _where
    for (const auto& kv : a.kw) select = select || kv.first == "x" || kv.first == "y";
    return select ? call_as_jitted(in, "_where", {"condition", "x", "y"}, a, where) : where(in, a);
  });
  NativeFn clip = [](InterpreterImpl& in, CallArgs& a) -> Value {
    // JAX's clip(arr=None, /, min=None, max=None): the old a/a_min/a_max keywords are
    // gone (JAX's TypeError names a_max before a_min before a).
    for (const char* old : {"a_max", "a_min", "a"})
      for (const auto& kv : a.kw)
        if (kv.first == old)
          throw Error(ErrCode::Arguments,
                      std::string("clip() got an unexpected keyword argument '") + old + "'");
    ArgReader r("clip", a, {"arr", "min", "max"});
    if (!r.has(0) || r[0].is_none())
      throw Error(ErrCode::Value, "No input was provided to the clip function.");
    std::optional<Tensor> lo, hi;
    Tensor x = T(in, r[0]);
    // JAX's clip is maximum(min, x), then minimum(max, ...): strict promotion pairwise.
    if (r.has(1) && !r[1].is_none()) lo = T(in, r[1]), strict_promote_pair(in, *lo, x);
    if (r.has(2) && !r[2].is_none()) hi = T(in, r[2]), strict_promote_pair(in, *hi, x);
    return make_array(np::clip(in.ops(), x, lo, hi));
  };
  b.fn("clip", [clip](InterpreterImpl& in, CallArgs& a) {
    return call_as_jitted(in, "clip", {"arr", "min", "max"}, a, clip);
  });
  b.fn("astype", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("astype", a, {"x", "dtype", "copy", "device"}, 2);
    // dtype=None is numpy's default float type, as in JAX (float32 without x64).
    DType dt = value_to_dtype(r[1]).value_or(DType::Float32);
    return make_array(np::astype(in.ops(), T(in, r[0]), dt));
  });
}

void def_shape(ModuleBuilder& b) {
  b.fn("reshape", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("reshape", a, {"a", "newshape", "order", "shape"}, 1);
    const Value& s = r.has(1) ? r[1] : r[3];
    std::string order = r.has(2) && !r[2].is_none() ? r.get_str(2) : "C";
    auto written = [&s] { return written_int_list(s, "reshape() shape"); };
    return make_array(np::reshape_order(in.ops(), T(in, r[0]),
                                        value_to_int_list(s, "reshape() shape"), order, written));
  });
  b.fn("ravel", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("ravel", a, {"a", "order"}, 1);
    std::string order = r.has(1) ? r.get_str(1) : "C";
    if (order != "C" && order != "F")
      throw Error(ErrCode::Unsupported, "Ravel not implemented for order='" + order + "'.");
    return make_array(np::reshape_order(in.ops(), T(in, r[0]), {-1}, order));
  });
  b.fn("transpose", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("transpose", a, {"a", "axes"}, 1);
    std::optional<std::vector<int>> perm = value_to_axes(r[1], "transpose() axes");
    return make_array(np::transpose(in.ops(), T(in, r[0]), perm));
  });
  b.fn("swapaxes", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("swapaxes", a, {"a", "axis1", "axis2"}, 3);
    return make_array(np::swapaxes(in.ops(), T(in, r[0]), static_cast<int>(r.get_int(1)),
                                   static_cast<int>(r.get_int(2))));
  });
  b.fn("moveaxis", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("moveaxis", a, {"a", "source", "destination"}, 3);
    auto axes = [](const Value& v, const char* what) {
      if (v.is_none())
        throw Error(ErrCode::Type,
                    std::string(what) + " must be an integer or a tuple of integers, not None");
      return *value_to_axes(v, what);
    };
    return make_array(np::moveaxis(in.ops(), T(in, r[0]), axes(r[1], "moveaxis() source"),
                                   axes(r[2], "moveaxis() destination")));
  });
  b.fn("expand_dims", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("expand_dims", a, {"a", "axis"}, 2);
    return make_array(
        np::expand_dims(in.ops(), T(in, r[0]), *value_to_axes(r[1], "expand_dims() axis")));
  });
  b.fn("squeeze", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("squeeze", a, {"a", "axis"}, 1);
    return make_array(np::squeeze(in.ops(), T(in, r[0]), value_to_axes(r[1], "squeeze() axis")));
  });
  b.fn("broadcast_to", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("broadcast_to", a, {"array", "shape"}, 2);
    return make_array(np::broadcast_to(in.ops(), T(in, r[0]), canonical_shape(in, r[1])));
  });
  b.fn("concatenate", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("concatenate", a, {"arrays", "axis", "dtype"}, 1);
    std::vector<Tensor> xs = joined_list(in, r, 0, 2, "concatenate");
    if (r.has(1) && r[1].is_none()) // axis=None concatenates the flattened arrays
      for (Tensor& x : xs) x = np::reshape(in.ops(), x, {-1});
    return make_array(np::concatenate(in.ops(), xs, static_cast<int>(r.get_int(1, 0))));
  });
  b.fn("stack", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("stack", a, {"arrays", "axis", "out", "dtype"}, 1);
    if (r.has(2) && !r[2].is_none())
      throw Error(ErrCode::Unsupported, "The 'out' argument to jnp.stack is not supported.");
    return make_array(np::stack(in.ops(), joined_list(in, r, 0, 3, "stack"),
                                static_cast<int>(r.get_int(1, 0)), true));
  });
  b.fn("hstack", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("hstack", a, {"tup", "dtype"}, 1);
    auto xs = joined_list(in, r, 0, 1, "hstack");
    bool all_1d = !xs.empty() && xs[0]->aval.ndim() <= 1;
    return make_array(np::concatenate(in.ops(), xs, all_1d ? 0 : 1));
  });
  b.fn("vstack", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("vstack", a, {"tup", "dtype"}, 1);
    auto xs = joined_list(in, r, 0, 1, "vstack");
    for (auto& x : xs)
      if (x->aval.ndim() < 2) x = np::reshape(in.ops(), x, {1, -1});
    return make_array(np::concatenate(in.ops(), xs, 0));
  });
  b.fn("split", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("split", a, {"ary", "indices_or_sections", "axis"}, 2);
    Tensor x = T(in, r[0]);
    int axis = static_cast<int>(r.get_int(2, 0));
    // make_jaxpr shows JAX's one split equation (lax.split) for the slices.
    auto* tc = dynamic_cast<TraceContext*>(&in.ops());
    int region = -1;
    if (tc && tc->jaxpr_record && tc->owns(x)) {
      region = jaxpr_begin_region(*tc, "split", {tc->value_of(x)}, {});
      tc->jaxpr_record->regions[static_cast<size_t>(region)].opaque = true;
    }
    std::vector<Tensor> parts;
    if (r[1].is_intlike()) {
      parts = np::split_sections(in.ops(), x, r[1].as_int(), axis);
    } else {
      std::vector<int64_t> idx = value_to_int_list(r[1], "split() indices");
      // JAX splits at the indices as they are (lax.split's sizes), so indices
      // past the end or out of order are its error, unlike numpy's.
      int nd = static_cast<int>(x->aval.ndim());
      if (nd > 0 && axis >= -nd && axis < nd) {
        int64_t n = x->aval.shape[static_cast<size_t>((axis + nd) % nd)], prev = 0;
        std::vector<int64_t> sizes;
        for (int64_t i : idx) {
          sizes.push_back(i - prev); // negative indices are not wrapped, as JAX's
          prev = i;
        }
        sizes.push_back(n - prev);
        if (std::any_of(sizes.begin(), sizes.end(), [](int64_t d) { return d < 0; })) {
          std::string got = "[";
          for (size_t k = 0; k < sizes.size(); ++k)
            got += (k ? ", np.int64(" : "np.int64(") + std::to_string(sizes[k]) + ")";
          throw Error(ErrCode::Value,
                      "Sizes passed to split must be nonnegative, got " + got + "]");
        }
      }
      parts = np::split_indices(in.ops(), x, idx, axis);
    }
    if (region >= 0) {
      const int nd = static_cast<int>(x->aval.ndim());
      const size_t ax = static_cast<size_t>((axis % nd + nd) % nd);
      std::string sizes = "(";
      std::vector<int> outs;
      for (size_t k = 0; k < parts.size(); ++k) {
        sizes += (k ? ", np.int64(" : "np.int64(") + std::to_string(parts[k]->aval.shape[ax]) + ")";
        outs.push_back(tc->value_of(parts[k]));
      }
      sizes += parts.size() == 1 ? ",)" : ")";
      tc->jaxpr_record->regions[static_cast<size_t>(region)].params = {{"axis", std::to_string(ax)},
                                                                       {"sizes", sizes}};
      jaxpr_end_region(*tc, region, outs);
    }
    ValueList out;
    for (auto& p : parts) out.push_back(make_array(p));
    return make_list(std::move(out));
  });
  auto shape_query = [](const char* name, int which) {
    return [name, which](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a, {"a"}, 1);
      // numpy reads a.shape first: objects with one (ShapeDtypeStruct) answer too.
      if (r[0].is_obj(ObjKind::Opaque) && in.has_attr(r[0], "shape")) {
        Value shape = in.get_attr(r[0], "shape", Span{});
        if (which == 0) return shape;
        int64_t n = 1;
        const ValueList* dims = sequence_items(shape);
        if (!dims)
          throw Error(ErrCode::Type, std::string(name) + "(): the object's shape is not a tuple");
        for (const Value& d : *dims) n *= value_to_int(d, std::string(name) + "() shape entry");
        return Value::integer(which == 1 ? static_cast<int64_t>(dims->size()) : n);
      }
      // None is numpy's 0-d object array: shape (), one element.
      const AVal av = r[0].is_none() ? AVal{} : T(in, r[0])->aval; // a copy: a list's is temporary
      if (which == 0) {
        ValueList d;
        for (int64_t x : av.shape) d.push_back(Value::integer(x));
        return make_tuple(std::move(d));
      }
      return Value::integer(which == 1 ? av.ndim() : av.size());
    };
  };
  b.fn("shape", shape_query("shape", 0));
  b.fn("ndim", shape_query("ndim", 1));
  b.fn("size", shape_query("size", 2));
}

void def_reductions(ModuleBuilder& b) {
  for (const char* name :
       {"sum", "prod", "max", "amax", "min", "amin", "mean", "any", "all", "var", "std"}) {
    std::string n = name;
    b.fn(n, [n](InterpreterImpl& in, CallArgs& a) { return call_reduction(in, n, a); });
  }
  auto arg = [](const char* name, bool is_max) {
    return [name, is_max](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(name, a, {"a", "axis", "out", "keepdims"}, 1);
      Tensor x = T(in, r[0]);
      return make_array(is_max ? np::argmax(in.ops(), x, opt_axis(r, 1), r.get_bool(3, false))
                               : np::argmin(in.ops(), x, opt_axis(r, 1), r.get_bool(3, false)));
    };
  };
  b.fn("argmax", arg("argmax", true));
  b.fn("argmin", arg("argmin", false));
  b.fn("cumsum", [](InterpreterImpl& in, CallArgs& a) {
    return call_as_jitted(in, "cumsum", {"a"}, a, [](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("cumsum", a, {"a", "axis", "dtype", "out"}, 1);
      if (r.has(3) && !r[3].is_none())
        throw Error(ErrCode::Unsupported, "The 'out' argument to jnp.cumsum is not supported");
      return make_array(np::cumsum(in.ops(), T(in, r[0]), opt_axis(r, 1), value_to_dtype(r[2])));
    });
  });
}

// einsum's optimize=: True or a strategy name (opt_einsum's optimal path is
// taken for every strategy), False (left to right), or a path of tuples.
np::EinsumOptimize einsum_optimize(const Value& v) {
  np::EinsumOptimize o;
  if (v.is_bool()) {
    o.left_to_right = !v.as_int();
    return o;
  }
  if (v.is_obj(ObjKind::Str)) return o;
  const ValueList* steps = sequence_items(v);
  if (!steps)
    throw Error(ErrCode::Type, "einsum(): optimize must be a bool, a string or a contraction path");
  np::EinsumPath path;
  for (const Value& st : *steps) {
    const ValueList* ids = sequence_items(st);
    if (!ids)
      throw Error(ErrCode::Type,
                  "einsum(): a contraction path is a list of tuples of operand positions");
    std::vector<int64_t> step;
    for (const Value& i : *ids) step.push_back(value_to_int(i, "einsum() path entry"));
    path.push_back(step);
  }
  o.path = path;
  return o;
}

// The subscripts and operands of einsum(subscripts, *operands) or numpy's
// interleaved einsum(op0, sublist0, op1, sublist1, ..., [output sublist]),
// whose symbols map, in sorted order, to letters (opt_einsum's
// convert_interleaved_input).
std::pair<std::string, ValueList> einsum_operands(const ValueList& pos) {
  if (pos[0].is_obj(ObjKind::Str))
    return {value_to_str(pos[0], "einsum() subscripts"), ValueList(pos.begin() + 1, pos.end())};
  ValueList operands;
  std::vector<const ValueList*> subs;
  for (size_t i = 0; i + 1 < pos.size(); i += 2) {
    operands.push_back(pos[i]);
    const ValueList* items = sequence_items(pos[i + 1]);
    if (!items) throw Error(ErrCode::Type, "einsum(): a sublist must be a list of integers");
    subs.push_back(items);
  }
  const ValueList* out = nullptr;
  if (pos.size() % 2 == 1) {
    out = sequence_items(pos.back());
    if (!out) throw Error(ErrCode::Type, "einsum(): a sublist must be a list of integers");
  }
  std::set<int64_t> symbols;
  for (const ValueList* s : subs)
    for (const Value& e : *s)
      if (!e.is_obj(ObjKind::Ellipsis)) symbols.insert(value_to_int(e, "einsum() sublist entry"));
  if (symbols.size() > 52)
    throw Error(ErrCode::Value, "einsum: more than 52 distinct subscripts are not supported");
  auto letters = [&](const ValueList& items) {
    static const char* kSymbols = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    std::string r;
    for (const Value& e : items) {
      if (e.is_obj(ObjKind::Ellipsis)) {
        r += "...";
        continue;
      }
      int64_t k = value_to_int(e, "einsum() sublist entry");
      auto it = symbols.find(k);
      if (it == symbols.end()) throw Error(ErrCode::Key, std::to_string(k));
      r += kSymbols[std::distance(symbols.begin(), it)];
    }
    return r;
  };
  std::string spec;
  for (size_t i = 0; i < subs.size(); ++i) spec += (i ? "," : "") + letters(*subs[i]);
  if (out) spec += "->" + letters(*out);
  return {spec, operands};
}

void def_linalg(ModuleBuilder& b) {
  // precision= changes nothing on CPU (float32 products are exact there);
  // preferred_element_type= converts the operands first, as lax.dot does.
  auto operands = [](InterpreterImpl& in, ArgReader& r) {
    Tensor x = T(in, r[0]), y = T(in, r[1]);
    if (r.has(3) && !r[3].is_none()) {
      DType d = value_to_dtype(r[3]).value();
      x = np::astype(in.ops(), x, d);
      y = np::astype(in.ops(), y, d);
    } else {
      strict_check_join(in, {x, y}); // JAX's result_type of the operands
    }
    return std::pair{x, y};
  };
  b.fn("matmul", [operands](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("matmul", a, {"a", "b", "precision", "preferred_element_type", "out_sharding"}, 2);
    auto [x, y] = operands(in, r);
    return make_array(np::matmul(in.ops(), x, y, dot_precision(in, r.has(2) ? r[2] : Value())));
  });
  b.fn("dot", [operands](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("dot", a, {"a", "b", "precision", "preferred_element_type", "out_sharding"}, 2);
    auto [x, y] = operands(in, r);
    return make_array(np::dot(in.ops(), x, y, dot_precision(in, r.has(2) ? r[2] : Value())));
  });
  b.fn("outer", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("outer", a, {"a", "b"}, 2);
    Tensor x = T(in, r[0]), y = T(in, r[1]);
    strict_check_join(in, {x, y});
    return make_array(np::outer(in.ops(), x, y));
  });
  b.fn("einsum", [](InterpreterImpl& in, CallArgs& a) {
    std::optional<DType> preferred;
    np::EinsumOptimize optimize;
    Value precision;
    for (auto& [k, v] : a.kw) {
      if (k == "precision") {
        precision = v;
      } else if (k == "preferred_element_type") {
        preferred = value_to_dtype(v);
      } else if (k == "optimize") {
        optimize = einsum_optimize(v);
      } else if (k == "out") {
        if (!v.is_none())
          throw Error(ErrCode::Unsupported, "The 'out' argument to jnp.einsum is not supported.");
      } else if (k != "precision" && k != "_dot_general") {
        throw Error(ErrCode::Arguments, "einsum() got an unexpected keyword argument '" + k + "'");
      }
    }
    if (a.pos.empty())
      throw Error(ErrCode::Arguments,
                  "einsum() missing 1 required positional argument: 'subscripts'");
    auto [spec, operands] = einsum_operands(a.pos);
    std::vector<Tensor> ops;
    for (const Value& v : operands) ops.push_back(T(in, v));
    // preferred_element_type= is the result (and accumulation) type: the operands go in as it.
    if (preferred)
      for (Tensor& t : ops) t = np::astype(in.ops(), t, *preferred);
    else
      strict_check_join(in, ops);
    return make_array(np::einsum(in.ops(), spec, ops, optimize, dot_precision(in, precision)));
  });
  // (path, info): opt_einsum's path as a list of tuples and its printed PathInfo.
  b.fn("einsum_path", [](InterpreterImpl& in, CallArgs& a) {
    np::EinsumOptimize optimize;
    for (auto& [k, v] : a.kw) {
      if (k != "optimize")
        throw Error(ErrCode::Arguments,
                    "einsum_path() got an unexpected keyword argument '" + k + "'");
      optimize = einsum_optimize(v);
    }
    if (a.pos.empty())
      throw Error(ErrCode::Arguments,
                  "einsum_path() missing 1 required positional argument: 'subscripts'");
    auto [spec, operands] = einsum_operands(a.pos);
    std::vector<Shape> shapes;
    for (const Value& v : operands) shapes.push_back(T(in, v)->aval.shape);
    np::EinsumPathInfo r = np::einsum_path(spec, shapes, optimize);
    ValueList path;
    for (const auto& step : r.path) {
      ValueList ids;
      for (int64_t i : step) ids.push_back(Value::integer(i));
      path.push_back(make_tuple(std::move(ids)));
    }
    return make_tuple({make_list(std::move(path)), make_str(r.info)});
  });
}

void def_io(ModuleBuilder& b) {
  b.fn("save", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("save", a, {"file", "arr", "allow_pickle"}, 2);
    std::string path = r.get_str(0);
    if (path.size() < 4 || path.substr(path.size() - 4) != ".npy") path += ".npy";
    save_npy(path, in.ops().concrete(T(in, r[1])));
    return Value();
  });
  b.fn("load", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("load", a, {"file", "allow_pickle"}, 1);
    return make_array(in.ops().constant(load_npy(r.get_str(0))));
  });
}

} // namespace

void add_print_options(ModuleBuilder& np); // stdlib/print_options.cpp

Value make_numpy_module(InterpreterImpl& in) {
  (void)in;
  ModuleBuilder b("jax.numpy");
  def_creation(b);
  add_print_options(b);
  def_elementwise(b);
  def_shape(b);
  def_reductions(b);
  def_linalg(b);
  def_io(b);
  def_dtype_queries(b);
  // The scalar types (jnp.float32 prints as <class 'jax.numpy.float32'>).
  auto scalar_type = [](DType d, bool wide) {
    auto t = std::make_shared<DTypeObj>(d, wide);
    t->scalar_type = true;
    return Value::object(t);
  };
  for (DType d : kAllDTypes) b.val(dtype_name(d), scalar_type(d, false));
  b.val("int64", scalar_type(DType::Int32, true));
  b.val("uint64", scalar_type(DType::UInt32, true));
  b.val("bool_", b.mod->env->vars["bool"]);
  b.val("complex128", scalar_type(DType::Complex64, true));
  b.val("complex_", b.mod->env->vars["complex128"]);
  b.val("cdouble", b.mod->env->vars["complex128"]);
  b.val("csingle", b.mod->env->vars["complex64"]);
  b.fn("dtype", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("dtype", a, {"obj"}, 1);
    if (r[0].is_obj(ObjKind::DType)) { // jnp.dtype(jnp.float32) is dtype('float32')
      auto d = std::make_shared<DTypeObj>(*r[0].as<DTypeObj>());
      d->scalar_type = false;
      return Value::object(d);
    }
    if (r[0].is_obj(ObjKind::Str) && is_x64_name(r[0].as<StrObj>()->value))
      return Value::object(std::make_shared<DTypeObj>(*value_to_dtype(r[0]), true));
    // numpy's dtype(int) is int64 and dtype(complex) complex128: names kept over
    // x64-off storage. dtype(float) stays float32, as pxl honours explicit float64.
    if (r[0].is_obj(ObjKind::Builtin)) {
      const std::string& n = r[0].as<BuiltinObj>()->name;
      if (n == "int") return Value::object(std::make_shared<DTypeObj>(DType::Int32, true));
      if (n == "complex") return Value::object(std::make_shared<DTypeObj>(DType::Complex64, true));
    }
    // numpy's dtype of an object that has one (JAX warns this is deprecated).
    if (r[0].is_obj(ObjKind::Array))
      return Value::object(std::make_shared<DTypeObj>(r[0].as<ArrayObj>()->tensor->aval.dtype));
    return Value::object(std::make_shared<DTypeObj>(*value_to_dtype(r[0])));
  });
  b.val("pi", Value::number(M_PI));
  b.val("e", Value::number(M_E));
  b.val("inf", Value::number(INFINITY));
  b.val("nan", Value::number(NAN));
  b.val("newaxis", Value());
  return b.value();
}

} // namespace pxl
