// Reductions (sum prod max min mean any all var), argmax/argmin and cumsum with
// jnp's result dtypes: sums of bool/int give int32, means of ints float32.
#include <cmath>
#include <limits>

#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

const char* reduce_name(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Mean:
    return "mean";
  case ReduceOp::Any:
    return "any";
  case ReduceOp::All:
    return "all";
  }
  return "?";
}

int64_t count(const Shape& s, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= s[static_cast<size_t>(a)];
  return n;
}

// 1 / n rounded to `compute` (as XLA constant-folds it), filled to the shape of `like`.
Tensor reciprocal_of_count(OpContext& cx, double n, DType compute, const AVal& like) {
  double inv =
      compute == DType::Float64 ? 1.0 / n : static_cast<double>(1.0f / static_cast<float>(n));
  return fill(cx, like.shape, Scalar::of_float(inv), compute, like.weak);
}

// jnp's check of where=: None or a bool array.
std::optional<Tensor> checked_where(const char* fn, const std::optional<Tensor>& w) {
  if (w && av(*w).dtype != DType::Bool)
    throw Error(ErrCode::Value,
                std::string("jnp.") + fn +
                    ": where must be None or a boolean array; got where.dtype=dtype('" +
                    dtype_name(av(*w).dtype) + "').");
  return w;
}

// The reduction's identity in dtype d, which masked-out elements become (JAX's
// _reduction_init_val: infinities saturate to an integer's range, bools are init > 0).
Tensor identity(OpContext& cx, ReduceOp op, DType d) {
  bool max = op == ReduceOp::Max, min = op == ReduceOp::Min;
  if (d == DType::Bool)
    return constant(cx, Scalar::of_bool(op == ReduceOp::Prod || op == ReduceOp::All || min), d);
  if (max || min) {
    if (is_integer(d)) return constant(cx, Scalar::of_int(max ? int_min(d) : int_max(d)), d);
    double inf = std::numeric_limits<double>::infinity();
    return constant(cx, Scalar::of_float(max ? -inf : inf), d);
  }
  return constant(cx, Scalar::of_int(op == ReduceOp::Prod || op == ReduceOp::All), d);
}

// jnp's default integer of a narrow integer's signedness (promote_integers=True).
DType promote_integer(DType d) {
  // JAX asks numpy's iinfo for the width, which refuses ml_dtypes' narrow integers.
  if (is_narrow_int(d)) throw Error(ErrCode::DType, "Invalid integer data type 'V'.");
  if (d == DType::Bool || is_signed_int(d)) return DType::Int32;
  if (is_unsigned_int(d)) return DType::UInt32;
  return d;
}

// `mask` broadcast to x's shape (JAX's _broadcast_to of where=).
Tensor mask_like(OpContext& cx, const Tensor& mask, const Tensor& x, const char* fn) {
  return broadcast(cx, mask, broadcast_shapes(fn, av(mask).shape, av(x).shape), fn);
}

Tensor mean_impl(OpContext& cx, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                 std::optional<DType> dtype, const std::optional<Tensor>& where);

} // namespace

Tensor reduce(OpContext& cx, ReduceOp op, const Tensor& x0, const Axes& axes0, bool keepdims,
              std::optional<DType> dtype, const ReduceExtras& ex) {
  const char* fn = reduce_name(op);
  std::optional<Tensor> where = checked_where(fn, ex.where);
  std::vector<int64_t> axes = norm_axes(axes0, av(x0).ndim()); // JAX names no function
  if (op == ReduceOp::Mean) {
    if (ex.initial)
      throw Error(ErrCode::Arguments, "mean() got an unexpected keyword argument 'initial'");
    if (dtype && *dtype == DType::Bool) // JAX divides the bool sum by the bool count
      lax_dtype_error0("div", DType::Bool, "integer, floating, complexfloating");
    return mean_impl(cx, x0, axes, keepdims, dtype, where);
  }
  bool minmax = op == ReduceOp::Max || op == ReduceOp::Min;
  bool logical = op == ReduceOp::Any || op == ReduceOp::All;
  if (ex.initial && logical)
    throw Error(ErrCode::Arguments,
                std::string(fn) + "() got an unexpected keyword argument 'initial'");
  if (where && minmax && !ex.initial)
    throw Error(ErrCode::Value, std::string("reduction operation ") + fn +
                                    " does not have an identity, so to use a where mask one has "
                                    "to specify 'initial'");
  Tensor x = x0;
  DType d = av(x).dtype;
  if (logical && d != DType::Bool) { // JAX's _cast_to_bool: a complex's real part
    if (is_complex(d)) x = bind(cx, Op::Real, {}, {x});
    x = binary(cx, BinOp::Ne, x, scalar(cx, Scalar::of_int(0)));
  }
  if (!logical && !minmax && d == DType::Bool) x = convert(cx, x, DType::Int32, false);
  d = av(x).dtype;
  if (minmax && !ex.initial && count(av(x).shape, axes) == 0)
    throw Error(ErrCode::Value, std::string("zero-size array to reduction operation ") + fn +
                                    " which has no identity");
  DType result = dtype                                          ? *dtype
                 : (!minmax && !logical && ex.promote_integers) ? promote_integer(d)
                                                                : d;
  // Sums and products of 16-bit floats accumulate in float32 unless dtype= asks otherwise.
  bool half = result == DType::Float16 || result == DType::BFloat16;
  DType compute = !dtype && !minmax && !logical && half ? DType::Float32 : result;
  x = convert(cx, x, compute, false);
  if (where) x = np::where(cx, *where, x, identity(cx, op, compute));
  bool b = compute == DType::Bool;
  Op rop = op == ReduceOp::Sum    ? (b ? Op::ReduceOr : Op::ReduceSum)
           : op == ReduceOp::Prod ? (b ? Op::ReduceAnd : Op::ReduceProd)
           : op == ReduceOp::Max  ? (b ? Op::ReduceOr : Op::ReduceMax)
           : op == ReduceOp::Min  ? (b ? Op::ReduceAnd : Op::ReduceMin)
           : op == ReduceOp::Any  ? Op::ReduceOr
                                  : Op::ReduceAnd;
  Tensor r = reduce_axes(cx, rop, x, axes);
  if (ex.initial) {
    Tensor init = convert(cx, *ex.initial, compute, false);
    if (av(init).ndim() != 0)
      throw Error(ErrCode::Value, "initial value must be a scalar. Got array of shape " +
                                      shape_str(av(init).shape));
    BinOp comb = op == ReduceOp::Sum    ? (b ? BinOp::BitOr : BinOp::Add)
                 : op == ReduceOp::Prod ? (b ? BinOp::BitAnd : BinOp::Mul)
                 : op == ReduceOp::Max  ? (b ? BinOp::BitOr : BinOp::Maximum)
                                        : (b ? BinOp::BitAnd : BinOp::Minimum);
    r = binary(cx, comb, init, r);
  }
  if (keepdims) r = expand_dims_at(cx, r, axes); // (axes sorted: norm_axes)
  // jnp reductions drop the weak type.
  return convert(cx, r, result, false);
}

namespace {

// jnp.mean: the sum in the computation dtype divided by the count (of where='s
// selected elements), cast to the result dtype (the input's inexact type, or dtype=).
Tensor mean_impl(OpContext& cx, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                 std::optional<DType> dtype, const std::optional<Tensor>& where) {
  DType d = av(x).dtype;
  DType result = dtype ? *dtype : is_inexact(d) ? d : DType::Float32;
  bool half = result == DType::Float16 || result == DType::BFloat16;
  DType compute = !dtype && half ? DType::Float32 : result;
  Axes ax = std::vector<int>(axes.begin(), axes.end());
  ReduceExtras ex;
  ex.where = where;
  Tensor s = reduce(cx, ReduceOp::Sum, x, ax, keepdims, compute, ex);
  Tensor r;
  if (where) {
    Tensor n = reduce(cx, ReduceOp::Sum, mask_like(cx, *where, x, "mean"), ax, keepdims, compute);
    r = bind(cx, Op::Div, {}, {s, n}); // lax.div: integers truncate
  } else if (is_inexact(compute)) {
    // XLA rewrites the division by the constant count as a multiply by its reciprocal.
    OpAttrs shown; // (a jaxpr shows JAX's div)
    shown.shown_divisor = count(av(x).shape, axes);
    r = bind(
        cx, Op::Mul, shown,
        {s, reciprocal_of_count(cx, static_cast<double>(shown.shown_divisor), compute, av(s))});
  } else {
    r = bind(cx, Op::Div, {},
             {s, fill(cx, av(s).shape, Scalar::of_int(count(av(x).shape, axes)), compute, false)});
  }
  return convert(cx, r, result, false);
}

} // namespace

namespace {

Tensor arg_reduce(OpContext& cx, Op op, const Tensor& x0, std::optional<int> axis, bool keepdims) {
  const char* fn = op == Op::Argmax ? "argmax" : "argmin";
  Tensor x = x0;
  int64_t ax = 0;
  if (axis)
    ax = norm_axis(*axis, av(x).ndim());
  else
    x = ravel(cx, x);
  if (av(x).shape[static_cast<size_t>(ax)] == 0)
    throw Error(ErrCode::Value, std::string("attempt to get ") + fn + " of an empty sequence");
  // JAX's argmax/argmin reducers compare with gt/lt, which refuse complex operands.
  if (is_complex(av(x).dtype))
    lax_dtype_error0(op == Op::Argmax ? "gt" : "lt", av(x).dtype, "integer, floating, bool");
  OpAttrs a;
  a.axis = ax;
  a.dtype = DType::Int32;
  Tensor r = bind(cx, op, a, {x});
  if (!keepdims) return r;
  std::vector<int64_t> axes{ax};
  if (!axis) { // every dimension
    axes.resize(av(x0).shape.size());
    for (size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<int64_t>(d);
  }
  return expand_dims_at(cx, r, axes);
}

} // namespace

Tensor argmax(OpContext& cx, const Tensor& x, std::optional<int> axis, bool keepdims) {
  return arg_reduce(cx, Op::Argmax, x, axis, keepdims);
}

Tensor argmin(OpContext& cx, const Tensor& x, std::optional<int> axis, bool keepdims) {
  return arg_reduce(cx, Op::Argmin, x, axis, keepdims);
}

Tensor var(OpContext& cx, const Tensor& x0, const Axes& axes0, bool keepdims, const VarOptions& o) {
  std::optional<Tensor> where = checked_where(o.name, o.where);
  std::vector<int64_t> axes = norm_axes(axes0, av(x0).ndim());
  Axes ax = std::vector<int>(axes.begin(), axes.end());
  DType d = av(x0).dtype;
  // JAX's _var_promote_types: the result is real; 16-bit floats compute in float32.
  DType compute, result;
  if (o.dtype) {
    if (is_complex(d) && !is_complex(*o.dtype))
      throw Error(ErrCode::Value,
                  "jax.numpy.var does not yet support real dtype parameters when computing the "
                  "variance of an array of complex values. The semantics of numpy.var seem unclear "
                  "in this case. Please comment on https://github.com/jax-ml/jax/issues/2283 if "
                  "this behavior is important to you.");
    compute = result = *o.dtype;
  } else if (!is_inexact(d)) {
    compute = result = DType::Float32;
  } else {
    compute = d;
    result = real_dtype(d);
  }
  if (compute == DType::Float16 || compute == DType::BFloat16) compute = DType::Float32;
  Tensor a = convert(cx, x0, compute, false);
  Tensor mu =
      o.mean ? convert(cx, *o.mean, compute, false) : mean_impl(cx, a, axes, true, compute, where);
  Tensor centered = binary(cx, BinOp::Sub, a, mu);
  bool cplx = is_complex(compute);
  if (cplx) { // |c|^2, real
    centered = bind(cx, Op::Real, {},
                    {bind(cx, Op::Mul, {}, {centered, bind(cx, Op::Conj, {}, {centered})})});
    compute = real_dtype(compute);
  } else {
    centered = bind(cx, Op::Square, {}, {centered});
  }
  ReduceExtras ex;
  ex.where = where;
  Tensor ss = reduce(cx, ReduceOp::Sum, centered, ax, keepdims, compute, ex);
  Tensor r;
  if (where) {
    Tensor n = reduce(cx, ReduceOp::Sum, mask_like(cx, *where, a, o.name), ax, keepdims, compute);
    n = binary(cx, BinOp::Sub, n, constant(cx, Scalar::of_float(o.correction), compute));
    r = convert(cx, bind(cx, Op::Div, {}, {ss, n}), result, false);
    Tensor pos = binary(cx, BinOp::Gt, n, constant(cx, Scalar::of_int(0), compute));
    return np::where(cx, pos, r, constant(cx, Scalar::of_float(NAN), DType::Float32, true));
  }
  double n = static_cast<double>(count(av(x0).shape, axes)) - o.correction;
  if (o.correction_arg && is_inexact(compute)) { // JAX's _var, as it traces
    Tensor normalizer = bind(cx, Op::Sub, {},
                             {constant(cx, Scalar::of_float(n + o.correction), compute),
                              convert(cx, *o.correction_arg, compute, false)});
    OpAttrs to;
    to.shape = av(ss).shape;
    Tensor q =
        bind(cx, Op::Div, {},
             {ss, to.shape.empty() ? normalizer : bind(cx, Op::BroadcastInDim, to, {normalizer})});
    Tensor pos = binary(cx, BinOp::Gt, normalizer, constant(cx, Scalar::of_int(0), compute));
    return np::where(cx, pos, convert(cx, q, result, false),
                     constant(cx, Scalar::of_float(NAN), DType::Float32, true));
  }
  // Traced inside jit, the count is a constant, whose division XLA rewrites as
  // a multiply by its reciprocal.
  if (cplx || !is_inexact(compute) || x0->concrete)
    r = bind(cx, Op::Div, {}, {ss, fill(cx, av(ss).shape, Scalar::of_float(n), compute, false)});
  else
    r = bind(cx, Op::Mul, {}, {ss, reciprocal_of_count(cx, n, compute, av(ss))});
  r = convert(cx, r, result, false);
  // JAX's closing where(normalizer > 0, result, nan): an integer dtype= result
  // is promoted with the weak NaN to float32, weakly typed.
  if (is_integer(result) || result == DType::Bool) {
    result = DType::Float32;
    r = convert(cx, r, result, true);
  }
  if (n <= 0) r = fill(cx, av(r).shape, Scalar::of_float(NAN), result, av(r).weak);
  return r;
}

Tensor cumsum(OpContext& cx, const Tensor& x0, std::optional<int> axis,
              std::optional<DType> dtype) {
  Tensor x = x0;
  int64_t ax = 0;
  if (axis && av(x).ndim() > 0)
    ax = norm_axis(*axis, av(x).ndim());
  else
    x = ravel(cx, x);
  if (axis && av(x0).ndim() == 0) norm_axis(*axis, 1);
  // JAX's _cumulative_reduction: bools sum as int32; dtype=bool sums x != 0 as int32.
  DType result = dtype ? *dtype : av(x).dtype == DType::Bool ? DType::Int32 : av(x).dtype;
  DType compute = result;
  if (result == DType::Bool) {
    if (av(x).dtype != DType::Bool) x = binary(cx, BinOp::Ne, x, scalar(cx, Scalar::of_int(0)));
    compute = DType::Int32;
  }
  x = convert(cx, x, compute, false);
  OpAttrs a;
  a.axis = ax;
  return convert(cx, bind(cx, Op::Cumsum, a, {x}), result, false);
}

} // namespace pxl::np
