// Reductions (sum prod max min mean any all var), argmax/argmin and cumsum with
// jnp's result dtypes: sums of bool/int give int32, means of ints float32.
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

// The reduced result with size-1 dims put back where `axes` were.
Tensor keep_dims(OpContext& cx, const Tensor& r, const Shape& in,
                 const std::vector<int64_t>& axes) {
  Shape s = in;
  for (int64_t a : axes) s[static_cast<size_t>(a)] = 1;
  return reshape_to(cx, r, s);
}

int64_t count(const Shape& s, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= s[static_cast<size_t>(a)];
  return n;
}

// 1 / n rounded to `compute` (as XLA constant-folds it), filled to the shape of `like`.
Tensor reciprocal_of_count(OpContext& cx, int64_t n, DType compute, const AVal& like) {
  double inv = compute == DType::Float64 ? 1.0 / static_cast<double>(n)
                                         : static_cast<double>(1.0f / static_cast<float>(n));
  return fill(cx, like.shape, Scalar::of_float(inv), compute, like.weak);
}

// Mean along axes in a float type (half types computed in float32, as jnp does).
Tensor mean_impl(OpContext& cx, const Tensor& x, const std::vector<int64_t>& axes) {
  DType d = av(x).dtype;
  DType compute = (d == DType::Float64 || is_complex(d)) ? d : DType::Float32;
  DType result = is_inexact(d) ? d : DType::Float32;
  Tensor xc = convert(cx, x, compute, av(x).weak);
  Tensor s = reduce_axes(cx, Op::ReduceSum, xc, axes);
  // XLA rewrites the division by the constant count as a multiply by its reciprocal.
  Tensor inv = reciprocal_of_count(cx, count(av(x).shape, axes), compute, av(s));
  return convert(cx, bind(cx, Op::Mul, {}, {s, inv}), result, false);
}

// jnp.mean(x, where=mask): the masked sum divided by the number of selected elements.
Tensor masked_mean(OpContext& cx, const Tensor& x, const Tensor& mask,
                   const std::vector<int64_t>& axes, bool keepdims) {
  DType d = av(x).dtype;
  DType compute = (d == DType::Float64 || is_complex(d)) ? d : DType::Float32;
  DType result = is_inexact(d) ? d : DType::Float32;
  Tensor xc = convert(cx, x, compute, false);
  Tensor s = reduce_axes(cx, Op::ReduceSum, where(cx, mask, xc, constant(cx, Scalar::of_int(0), compute)), axes);
  Tensor n = reduce_axes(cx, Op::ReduceSum, convert(cx, mask, compute, false), axes);
  Tensor r = convert(cx, bind(cx, Op::Div, {}, {s, n}), result, false);
  return keepdims ? keep_dims(cx, r, av(x).shape, axes) : r;
}

} // namespace

Tensor reduce(OpContext& cx, ReduceOp op, const Tensor& x0, const Axes& axes0, bool keepdims,
              std::optional<DType> dtype, const ReduceExtras& ex) {
  const char* fn = reduce_name(op);
  std::vector<int64_t> axes = norm_axes(fn, axes0, av(x0).ndim());
  Tensor x = dtype ? convert(cx, x0, *dtype, false) : x0;
  DType d = av(x).dtype;
  bool minmax = op == ReduceOp::Max || op == ReduceOp::Min;
  if (ex.where && minmax && !ex.initial)
    throw Error(ErrCode::Value, std::string("reduction operation ") + fn +
                                    " does not have an identity, so to use a where mask one has "
                                    "to specify 'initial'");
  std::optional<Tensor> mask;
  if (ex.where) {
    Tensor w = *ex.where;
    if (av(w).dtype != DType::Bool) w = convert(cx, w, DType::Bool, false);
    mask = broadcast(cx, w, av(x).shape, fn);
  }
  if (mask && op == ReduceOp::Mean) return masked_mean(cx, x, *mask, axes, keepdims);
  if (mask) {
    // Masked-out elements become the reduction's identity (initial for max/min).
    bool logical = op == ReduceOp::Any || op == ReduceOp::All;
    if (logical && d != DType::Bool) {
      x = binary(cx, BinOp::Ne, x, scalar(cx, Scalar::of_int(0)));
      d = DType::Bool;
    }
    bool one = op == ReduceOp::Prod || op == ReduceOp::All;
    Tensor id = minmax ? convert(cx, *ex.initial, d, false) : constant(cx, Scalar::of_int(one), d);
    x = where(cx, *mask, x, id);
  }
  Tensor r;
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Prod:
    // jnp sums and multiplies bools and narrow integers in the default
    // integer of their signedness (int8 -> int32, uint16 -> uint32).
    if (d == DType::Bool || is_signed_int(d)) x = convert(cx, x, DType::Int32, false);
    if (is_unsigned_int(d)) x = convert(cx, x, DType::UInt32, false);
    r = reduce_axes(cx, op == ReduceOp::Sum ? Op::ReduceSum : Op::ReduceProd, x, axes);
    break;
  case ReduceOp::Max:
  case ReduceOp::Min:
    if (count(av(x).shape, axes) == 0 && !ex.initial)
      throw Error(ErrCode::Value, std::string(fn) + ": zero-size array to reduction operation " +
                                      fn + " which has no identity (shape " +
                                      shape_str(av(x).shape) + ")");
    r = reduce_axes(cx, op == ReduceOp::Max ? Op::ReduceMax : Op::ReduceMin, x, axes);
    break;
  case ReduceOp::Mean:
    r = mean_impl(cx, x, axes);
    break;
  case ReduceOp::Any:
  case ReduceOp::All:
    if (d != DType::Bool) x = binary(cx, BinOp::Ne, x, scalar(cx, Scalar::of_int(0)));
    r = reduce_axes(cx, op == ReduceOp::Any ? Op::ReduceOr : Op::ReduceAnd, x, axes);
    break;
  }
  // jnp reductions drop the weak type; an explicit dtype is the result's.
  bool to_dtype = dtype && (op == ReduceOp::Sum || op == ReduceOp::Prod);
  r = convert(cx, r, to_dtype ? *dtype : av(r).dtype, false);
  if (ex.initial) {
    static const BinOp combine[] = {BinOp::Add, BinOp::Mul, BinOp::Maximum, BinOp::Minimum};
    if (op > ReduceOp::Min)
      throw Error(ErrCode::Arguments, std::string(fn) + "() got an unexpected keyword argument 'initial'");
    r = binary(cx, combine[static_cast<int>(op)], r, convert(cx, *ex.initial, av(r).dtype, false));
  }
  return keepdims ? keep_dims(cx, r, av(x0).shape, axes) : r;
}

namespace {

Tensor arg_reduce(OpContext& cx, Op op, const Tensor& x0, std::optional<int> axis, bool keepdims) {
  const char* fn = op == Op::Argmax ? "argmax" : "argmin";
  Tensor x = x0;
  int64_t ax = 0;
  if (axis)
    ax = norm_axis(fn, *axis, av(x).ndim());
  else
    x = ravel(cx, x);
  if (av(x).shape[static_cast<size_t>(ax)] == 0)
    throw Error(ErrCode::Value, std::string(fn) + ": attempt to get " + fn +
                                    " of an empty sequence (shape " + shape_str(av(x0).shape) +
                                    ")");
  OpAttrs a;
  a.axis = ax;
  a.dtype = DType::Int32;
  Tensor r = bind(cx, op, a, {x});
  if (!keepdims) return r;
  if (!axis) return reshape_to(cx, r, Shape(av(x0).shape.size(), 1));
  return keep_dims(cx, r, av(x0).shape, {ax});
}

} // namespace

Tensor argmax(OpContext& cx, const Tensor& x, std::optional<int> axis, bool keepdims) {
  return arg_reduce(cx, Op::Argmax, x, axis, keepdims);
}

Tensor argmin(OpContext& cx, const Tensor& x, std::optional<int> axis, bool keepdims) {
  return arg_reduce(cx, Op::Argmin, x, axis, keepdims);
}

Tensor var(OpContext& cx, const Tensor& x, const Axes& axes0, bool keepdims, int ddof) {
  std::vector<int64_t> axes = norm_axes("var", axes0, av(x).ndim());
  DType d = av(x).dtype;
  bool cplx = is_complex(d);
  DType compute = d == DType::Float64 || cplx ? d : DType::Float32;
  DType result = is_floating(d) ? d : DType::Float32;
  Tensor xc = convert(cx, x, compute, av(x).weak);
  Tensor mu = keep_dims(cx, mean_impl(cx, xc, axes), av(x).shape, axes);
  Tensor centered = bind(cx, Op::Sub, {}, {xc, broadcast(cx, mu, av(x).shape, "var")});
  Tensor sq = bind(cx, Op::Mul, {}, {centered, centered});
  if (cplx) { // |c|^2 = re^2 + im^2 (jnp.var of complex is real)
    Tensor re = bind(cx, Op::Real, {}, {centered}), im = bind(cx, Op::Imag, {}, {centered});
    sq = bind(cx, Op::Add, {}, {bind(cx, Op::Mul, {}, {re, re}), bind(cx, Op::Mul, {}, {im, im})});
    compute = DType::Float32;
  }
  Tensor ss = reduce_axes(cx, Op::ReduceSum, sq, axes);
  Tensor r;
  if (cplx) { // jnp divides the complex sum by the count: a true division
    Tensor n = fill(cx, av(ss).shape, Scalar::of_int(count(av(x).shape, axes) - ddof), compute, false);
    r = bind(cx, Op::Div, {}, {ss, n});
  } else {
    r = bind(cx, Op::Mul, {},
             {ss, reciprocal_of_count(cx, count(av(x).shape, axes) - ddof, compute, av(ss))});
  }
  r = convert(cx, r, result, false);
  return keepdims ? keep_dims(cx, r, av(x).shape, axes) : r;
}

Tensor cumsum(OpContext& cx, const Tensor& x0, std::optional<int> axis) {
  Tensor x = x0;
  int64_t ax = 0;
  if (axis)
    ax = norm_axis("cumsum", *axis, av(x).ndim());
  else
    x = ravel(cx, x);
  if (av(x).dtype == DType::Bool) x = convert(cx, x, DType::Int32, false);
  OpAttrs a;
  a.axis = ax;
  return convert(cx, bind(cx, Op::Cumsum, a, {x}), av(x).dtype, false);
}

} // namespace pxl::np
