// The np layer's shared helpers (see np_internal.hpp).
#include <algorithm>

#include "stdlib/np_internal.hpp"

namespace pxl::np::detail {

Tensor bind(OpContext& cx, Op op, const OpAttrs& attrs, std::initializer_list<Tensor> in) {
  std::vector<Tensor> v(in);
  return cx.bind(op, attrs, v);
}

Tensor constant(OpContext& cx, const Scalar& v, DType dtype, bool weak) {
  return cx.constant(Array::scalar(v, dtype, weak));
}

Tensor convert(OpContext& cx, const Tensor& x, DType dtype, bool weak) {
  if (av(x).dtype == dtype && av(x).weak == weak) return x;
  OpAttrs a;
  a.dtype = dtype;
  a.weak = weak;
  return bind(cx, Op::ConvertElementType, a, {x});
}

Shape broadcast_shapes(const char* fn, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(ErrCode::Shape, std::string(fn) + ": shapes " + shape_str(a) + " and " +
                                      shape_str(b) + " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_shapes_all(const std::vector<Shape>& shapes) {
  Shape out;
  try {
    for (const Shape& s : shapes) out = broadcast_shapes("", out, s);
  } catch (const Error&) {
    std::string all;
    for (const Shape& s : shapes) all += (all.empty() ? "" : ", ") + shape_str(s);
    throw Error(ErrCode::Shape, "Incompatible shapes for broadcasting: shapes=[" + all + "]");
  }
  return out;
}

Tensor broadcast(OpContext& cx, const Tensor& x, const Shape& shape, const char* fn) {
  const Shape& s = av(x).shape;
  if (s == shape) return x;
  if (s.size() > shape.size() || broadcast_shapes(fn, s, shape) != shape)
    throw Error(ErrCode::Shape, std::string(fn) + ": cannot broadcast shape " + shape_str(s) +
                                    " to shape " + shape_str(shape));
  OpAttrs a;
  a.shape = shape;
  size_t lead = shape.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) a.axes.push_back(static_cast<int64_t>(lead + i));
  return bind(cx, Op::BroadcastInDim, a, {x});
}

Tensor reshape_to(OpContext& cx, const Tensor& x, const Shape& shape) {
  if (av(x).shape == shape) return x;
  OpAttrs a;
  a.shape = shape;
  return bind(cx, Op::Reshape, a, {x});
}

Tensor squeeze_dims(OpContext& cx, const Tensor& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  OpAttrs a;
  const Shape& s = av(x).shape;
  for (size_t i = 0; i < s.size(); ++i)
    if (!std::count(dims.begin(), dims.end(), static_cast<int64_t>(i))) a.shape.push_back(s[i]);
  a.axes = dims;
  return bind(cx, Op::Reshape, a, {x});
}

Tensor expand_dims_at(OpContext& cx, const Tensor& x, const std::vector<int64_t>& new_dims) {
  if (new_dims.empty()) return x;
  const Shape& s = av(x).shape;
  OpAttrs a;
  a.perm = new_dims;
  size_t k = 0;
  for (size_t i = 0; i < s.size() + new_dims.size(); ++i)
    a.shape.push_back(std::count(new_dims.begin(), new_dims.end(), static_cast<int64_t>(i)) ||
                              k >= s.size()
                          ? 1
                          : s[k++]);
  return bind(cx, Op::Reshape, a, {x});
}

Tensor transpose_to(OpContext& cx, const Tensor& x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity && perm.size() == av(x).shape.size()) return x;
  OpAttrs a;
  a.perm = perm;
  return bind(cx, Op::Transpose, a, {x});
}

Tensor reduce_axes(OpContext& cx, Op op, const Tensor& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  OpAttrs a;
  a.axes = axes;
  return bind(cx, op, a, {x});
}

Tensor iota(OpContext& cx, DType dtype, const Shape& shape, int64_t axis) {
  OpAttrs a;
  a.dtype = dtype;
  a.shape = shape;
  a.axis = axis;
  return cx.bind(Op::Iota, a, {});
}

Tensor ravel(OpContext& cx, const Tensor& x) { return reshape_to(cx, x, {av(x).size()}); }

Tensor fill(OpContext& cx, const Shape& shape, const Scalar& v, DType dtype, bool weak,
            bool user_op) {
  for (int64_t d : shape)
    if (d < 0)
      throw Error(ErrCode::Value, "negative dimensions are not allowed: " + shape_str(shape));
  Tensor c = constant(cx, v, dtype, weak);
  if (shape.empty()) return c;
  OpAttrs a;
  a.shape = shape;
  a.filled = user_op;
  return bind(cx, Op::BroadcastInDim, a, {c});
}

int64_t norm_axis(int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim)
    throw Error(ErrCode::Axis, "axis " + std::to_string(axis) +
                                   " is out of bounds for array of dimension " +
                                   std::to_string(ndim));
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int64_t> norm_axes(const Axes& axes, int ndim) {
  std::vector<int64_t> out;
  if (!axes) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int ax : *axes) {
    int64_t a = norm_axis(ax, ndim);
    if (std::find(out.begin(), out.end(), a) != out.end()) // JAX's message shows the axes as given
      throw Error(ErrCode::Axis, "duplicate value in 'axis': " +
                                     dims_str(std::vector<int64_t>(axes->begin(), axes->end())));
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

PromotedType result_type(const std::vector<Tensor>& xs) {
  PromotedType p{av(xs[0]).dtype, av(xs[0]).weak};
  if (p.dtype == DType::Bool) p.weak = false;
  for (size_t i = 1; i < xs.size(); ++i)
    p = promote_types(p.dtype, p.weak, av(xs[i]).dtype, av(xs[i]).weak);
  return p;
}

PromotedType to_inexact(PromotedType p) {
  if (!is_inexact(p.dtype)) p.dtype = DType::Float32;
  return p;
}

std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

} // namespace pxl::np::detail
