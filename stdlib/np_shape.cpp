// Shape manipulation: reshape, transpose, swapaxes, moveaxis, expand_dims,
// squeeze, broadcast_to, concatenate, stack, split.
#include <algorithm>

#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

// jnp.swapaxes and jnp.split index the shape tuple with the axis before any
// axis check, so an axis out of range raises the indexing error of the tuple
// (numpy's for swapaxes, which indexes an array of the shape; Python's for split).
int64_t swapaxes_axis(int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim)
    throw Error(ErrCode::Axis, "index " + std::to_string(axis) +
                                   " is out of bounds for axis 0 with size " +
                                   std::to_string(ndim));
  return axis < 0 ? axis + ndim : axis;
}

int64_t split_axis(int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim) throw Error(ErrCode::Axis, "tuple index out of range");
  return axis < 0 ? axis + ndim : axis;
}

} // namespace

Tensor reshape(OpContext& cx, const Tensor& x, const Shape& shape0, const ShapeText& shown) {
  Shape shape = shape0;
  auto written = [&] { return shown ? shown() : shape_str(shape0); };
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0)
        throw Error(ErrCode::Reshape,
                    "can only specify one unknown axis size with a `-1` value, got " +
                        shape_str(shape0));
      infer_at = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw Error(ErrCode::Reshape, "reshape: negative dimension in shape " + shape_str(shape0));
    } else {
      known *= shape[i];
    }
  }
  int64_t size = av(x).size();
  if (infer_at >= 0) {
    if (known == 0 || size % known != 0) // JAX's text
      throw Error(ErrCode::Reshape,
                  "cannot reshape array of shape " + shape_str(av(x).shape) + " (size " +
                      std::to_string(size) + ") into shape " + written() +
                      " because the product of specified axis sizes (" + std::to_string(known) +
                      ") does not evenly divide " + std::to_string(size));
    shape[static_cast<size_t>(infer_at)] = size / known;
  }
  if (shape_size(shape) != size)
    throw Error(ErrCode::Reshape, "cannot reshape array of shape " + shape_str(av(x).shape) +
                                      " (size " + std::to_string(size) + ") into shape " +
                                      written() + " (size " + std::to_string(shape_size(shape)) +
                                      ")");
  return reshape_to(cx, x, shape);
}

Tensor reshape_order(OpContext& cx, const Tensor& x, const Shape& shape, const std::string& order,
                     const ShapeText& shown) {
  if (order == "C") return reshape(cx, x, shape, shown);
  if (order == "A") throw Error(ErrCode::Unsupported, "np.reshape order=A is not implemented.");
  if (order != "F")
    throw Error(ErrCode::Value, "Unexpected value for 'order' argument: " + order + ".");
  Shape rev(shape.rbegin(), shape.rend());
  return transpose(cx, reshape(cx, transpose(cx, x, std::nullopt), rev, shown), std::nullopt);
}

Tensor transpose(OpContext& cx, const Tensor& x, const std::optional<std::vector<int>>& perm) {
  int nd = av(x).ndim();
  std::vector<int64_t> p;
  if (!perm) {
    for (int i = nd - 1; i >= 0; --i) p.push_back(i);
  } else {
    // JAX's text for a wrong length or a repeated axis; an axis out of range
    // is canonicalize_axis's error.
    auto not_a_permutation = [&]() {
      std::vector<int64_t> given(perm->begin(), perm->end());
      return Error(
          ErrCode::Axis,
          "transpose permutation isn't a permutation of operand dimensions, got permutation " +
              dims_str(given) + " for operand shape " + shape_str(av(x).shape) + ".");
    };
    if (static_cast<int>(perm->size()) != nd) throw not_a_permutation();
    for (int a : *perm) p.push_back(norm_axis(a, nd));
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) throw not_a_permutation();
  }
  return transpose_to(cx, x, p);
}

Tensor swapaxes(OpContext& cx, const Tensor& x, int a, int b) {
  int nd = av(x).ndim();
  std::vector<int64_t> p;
  for (int i = 0; i < nd; ++i) p.push_back(i);
  std::swap(p[static_cast<size_t>(swapaxes_axis(a, nd))],
            p[static_cast<size_t>(swapaxes_axis(b, nd))]);
  return transpose_to(cx, x, p);
}

Tensor moveaxis(OpContext& cx, const Tensor& x, int src, int dst) {
  return moveaxis(cx, x, std::vector<int>{src}, std::vector<int>{dst});
}

// JAX's _moveaxis: the axes not moved keep their order and each moved axis is inserted at
// its destination, in order of destination. Like JAX it does not check for repeats: a
// repeated destination still gives a permutation, a repeated source fails in transpose.
Tensor moveaxis(OpContext& cx, const Tensor& x, const std::vector<int>& src,
                const std::vector<int>& dst) {
  int nd = av(x).ndim();
  if (src.size() != dst.size())
    throw Error(ErrCode::Value, "Inconsistent number of elements: " + std::to_string(src.size()) +
                                    " vs " + std::to_string(dst.size()));
  std::vector<std::pair<int64_t, int64_t>> moves; // (destination, source)
  std::vector<bool> moved(static_cast<size_t>(nd), false);
  for (size_t i = 0; i < src.size(); ++i) {
    // JAX's text names no function: "axis 2 is out of bounds for array of dimension 2".
    int64_t s = norm_axis(src[i], nd), d = norm_axis(dst[i], nd);
    moved[static_cast<size_t>(s)] = true;
    moves.push_back({d, s});
  }
  std::sort(moves.begin(), moves.end());
  std::vector<int64_t> p;
  for (int i = 0; i < nd; ++i)
    if (!moved[static_cast<size_t>(i)]) p.push_back(i);
  for (auto [d, s] : moves)
    p.insert(p.begin() + std::min<int64_t>(d, static_cast<int64_t>(p.size())), s);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ||
      static_cast<int>(p.size()) != nd)
    throw Error(
        ErrCode::Type,
        "transpose permutation isn't a permutation of operand dimensions, got permutation " +
            dims_str(p) + " for operand shape " + shape_str(av(x).shape) + ".");
  return transpose_to(cx, x, p);
}

Tensor expand_dims(OpContext& cx, const Tensor& x, const std::vector<int>& axes) {
  int out_nd = av(x).ndim() + static_cast<int>(axes.size());
  std::vector<bool> is_new(static_cast<size_t>(out_nd), false);
  std::vector<int64_t> canon;
  for (int a : axes) canon.push_back(norm_axis(a, out_nd));
  for (int64_t n : canon) {
    if (is_new[static_cast<size_t>(n)]) // JAX's text (the axes made non-negative)
      throw Error(ErrCode::Value, "repeated axis in lax.expand_dims: " + dims_str(canon));
    is_new[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> new_dims;
  for (int i = 0; i < out_nd; ++i)
    if (is_new[static_cast<size_t>(i)]) new_dims.push_back(i);
  return expand_dims_at(cx, x, new_dims);
}

Tensor squeeze(OpContext& cx, const Tensor& x, const Axes& axes) {
  const Shape& s = av(x).shape;
  std::vector<bool> drop(s.size(), false);
  if (!axes) {
    for (size_t i = 0; i < s.size(); ++i) drop[i] = s[i] == 1;
  } else {
    std::vector<int64_t> dims = norm_axes(axes, av(x).ndim());
    for (int64_t a : dims) {
      if (s[static_cast<size_t>(a)] != 1) { // JAX's (lax.squeeze's) text
        Shape d(dims.begin(), dims.end());
        throw Error(ErrCode::Value,
                    "cannot select an axis to squeeze out which has size not equal to one, "
                    "got shape=" +
                        shape_str(s) + " and dimensions=" + shape_str(d));
      }
      drop[static_cast<size_t>(a)] = true;
    }
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.size(); ++i)
    if (drop[i]) dims.push_back(static_cast<int64_t>(i));
  return squeeze_dims(cx, x, dims);
}

Tensor broadcast_to(OpContext& cx, const Tensor& x, const Shape& shape) {
  const Shape& s = av(x).shape;
  if (s.size() > shape.size())
    throw Error(ErrCode::Value, "Cannot broadcast to shape with fewer dimensions: arr_shape=" +
                                    shape_str(s) + " shape=" + shape_str(shape));
  bool ok = true;
  for (int64_t d : shape) ok = ok && d >= 0;
  for (size_t i = 0; ok && i < s.size(); ++i) {
    int64_t t = shape[shape.size() - s.size() + i];
    ok = s[i] == 1 || s[i] == t;
  }
  if (!ok) { // JAX's text: the types as dtype[dims]
    throw Error(ErrCode::Value, "Incompatible types for broadcasting: input type=" +
                                    array_type_str(av(x).dtype, s) +
                                    " and requested type=" + array_type_str(av(x).dtype, shape));
  }
  if (s == shape) return x;
  OpAttrs a; // (the program's own broadcast_in_dim, not a binary op's: OpAttrs::filled)
  a.shape = shape;
  a.filled = true;
  for (size_t i = 0; i < s.size(); ++i)
    a.axes.push_back(static_cast<int64_t>(shape.size() - s.size() + i));
  return bind(cx, Op::BroadcastInDim, a, {x});
}

Tensor concatenate(OpContext& cx, const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw Error(ErrCode::Value, "Need at least one array to concatenate.");
  int nd = av(xs[0]).ndim();
  if (nd == 0) throw Error(ErrCode::Shape, "Zero-dimensional arrays cannot be concatenated.");
  int64_t ax = norm_axis(axis, nd);
  auto all_shapes = [&]() {
    std::string out;
    for (const Tensor& x : xs) out += (out.empty() ? "" : ", ") + shape_str(av(x).shape);
    return out;
  };
  for (const Tensor& x : xs)
    if (av(x).ndim() != nd)
      throw Error(ErrCode::Shape,
                  "Cannot concatenate arrays with different numbers of dimensions: got " +
                      all_shapes() + ".");
  for (const Tensor& x : xs)
    for (int i = 0; i < nd; ++i)
      if (i != ax && av(x).shape[static_cast<size_t>(i)] != av(xs[0]).shape[static_cast<size_t>(i)])
        throw Error(ErrCode::Shape,
                    "Cannot concatenate arrays with shapes that differ in dimensions other than "
                    "the one being concatenated: concatenating along dimension " +
                        std::to_string(ax) + " for shapes " + all_shapes() + ".");
  if (xs.size() == 1) return xs[0];
  PromotedType p = result_type(xs);
  std::vector<Tensor> conv;
  for (const Tensor& x : xs) conv.push_back(convert(cx, x, p.dtype, p.weak));
  OpAttrs a;
  a.axis = ax;
  return cx.bind(Op::Concatenate, a, conv);
}

Tensor stack(OpContext& cx, const std::vector<Tensor>& xs, int axis, bool as_primitive) {
  if (xs.empty()) throw Error(ErrCode::Value, "Need at least one array to stack.");
  for (const Tensor& x : xs)
    if (av(x).shape != av(xs[0]).shape) {
      std::string shapes;
      for (const Tensor& y : xs) shapes += (shapes.empty() ? "" : ", ") + shape_str(av(y).shape);
      throw Error(ErrCode::Shape, "All input arrays must have the same shape. Got " + shapes + ".");
    }
  int64_t ax = norm_axis(axis, av(xs[0]).ndim() + 1);
  std::vector<Tensor> expanded;
  if (as_primitive) { // one dtype first, as JAX's stack converts its operands
    PromotedType p = result_type(xs);
    for (const Tensor& x : xs)
      expanded.push_back(expand_dims(cx, convert(cx, x, p.dtype, p.weak), {static_cast<int>(ax)}));
    OpAttrs a;
    a.axis = ax;
    a.stacked = true;
    return cx.bind(Op::Concatenate, a, expanded);
  }
  for (const Tensor& x : xs) expanded.push_back(expand_dims(cx, x, {static_cast<int>(ax)}));
  if (expanded.size() == 1) return expanded[0];
  return concatenate(cx, expanded, static_cast<int>(ax));
}

namespace {

Tensor slice_axis(OpContext& cx, const Tensor& x, int64_t axis, int64_t start, int64_t stop) {
  OpAttrs a;
  const Shape& s = av(x).shape;
  for (size_t i = 0; i < s.size(); ++i) {
    bool on = static_cast<int64_t>(i) == axis;
    a.starts.push_back(on ? start : 0);
    a.limits.push_back(on ? stop : s[i]);
    a.strides.push_back(1);
  }
  return bind(cx, Op::Slice, a, {x});
}

} // namespace

std::vector<Tensor> split_sections(OpContext& cx, const Tensor& x, int64_t sections, int axis) {
  int64_t ax = split_axis(axis, av(x).ndim());
  int64_t n = av(x).shape[static_cast<size_t>(ax)];
  // JAX's texts: its `size % sections` (a Python remainder, with the sign of
  // `sections`) and, for no sections, Python's ZeroDivisionError.
  if (sections == 0) throw Error(ErrCode::ZeroDivision, "integer division or modulo by zero");
  int64_t rest = ((n % sections) + sections) % sections;
  if (rest != 0)
    throw Error(ErrCode::Value, "array split does not result in an equal division: rest is " +
                                    std::to_string(rest));
  if (sections < 0)
    throw Error(ErrCode::Value, "Sum of sizes 0.0 must be equal to dimension " +
                                    std::to_string(ax) + " of the operand shape [" +
                                    std::to_string(n) + "]");
  std::vector<int64_t> idx;
  for (int64_t i = 1; i < sections; ++i) idx.push_back(i * (n / sections));
  return split_indices(cx, x, idx, static_cast<int>(ax));
}

std::vector<Tensor> split_indices(OpContext& cx, const Tensor& x,
                                  const std::vector<int64_t>& indices, int axis) {
  int64_t ax = split_axis(axis, av(x).ndim());
  int64_t n = av(x).shape[static_cast<size_t>(ax)];
  // numpy's rules: negative indices count from the end, all are clipped to [0, n].
  auto clip = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  // Piece k is x[indices[k-1]:indices[k]] (empty when they are out of order).
  std::vector<Tensor> out;
  for (size_t k = 0; k <= indices.size(); ++k) {
    int64_t start = k == 0 ? 0 : clip(indices[k - 1]);
    int64_t stop = k < indices.size() ? clip(indices[k]) : n;
    out.push_back(slice_axis(cx, x, ax, start, std::max(stop, start)));
  }
  return out;
}

} // namespace pxl::np
