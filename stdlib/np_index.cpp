// numpy indexing: x[items] and x.at[items].set/add/... . Basic indices become
// slice/rev/reshape; integer arrays (and ints mixed with them) become one take;
// updates index an iota of flat positions the same way and scatter into them.
#include <algorithm>

#include "stdlib/np_internal.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl::np {

using namespace detail;

namespace {

using Kind = IndexItem::Kind;

[[noreturn]] void index_error(const std::string& msg) { throw Error(ErrCode::ArrayIndex, msg); }

IndexItem full_slice() {
  IndexItem it;
  it.kind = Kind::Slice;
  return it;
}

int consumed(const IndexItem& it) {
  switch (it.kind) {
  case Kind::Int:
  case Kind::Slice:
    return 1;
  case Kind::Array:
    return av(it.array).dtype == DType::Bool ? av(it.array).ndim() : 1;
  case Kind::Ellipsis:
  case Kind::NewAxis:
    return 0;
  }
  return 0;
}

// Replaces `...` (or the implicit trailing one) by full slices.
std::vector<IndexItem> expand_ellipsis(const std::vector<IndexItem>& items, int ndim) {
  int used = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    used += consumed(it);
    ellipses += it.kind == Kind::Ellipsis;
  }
  if (ellipses > 1) index_error("an index can only have a single ellipsis ('...')");
  if (used > ndim)
    index_error("too many indices for array: array is " + std::to_string(ndim) +
                "-dimensional, but " + std::to_string(used) + " were indexed");
  std::vector<IndexItem> out;
  for (const IndexItem& it : items) {
    if (it.kind != Kind::Ellipsis)
      out.push_back(it);
    else
      out.insert(out.end(), static_cast<size_t>(ndim - used), full_slice());
  }
  if (!ellipses) out.insert(out.end(), static_cast<size_t>(ndim - used), full_slice());
  return out;
}

// Boolean masks become one int32 index array per mask dimension (their nonzero
// coordinates); this needs the mask's value, so masks only work eagerly (as in JAX).
std::vector<IndexItem> expand_masks(OpContext& cx, const std::vector<IndexItem>& items,
                                    const Shape& shape) {
  std::vector<IndexItem> out;
  size_t dim = 0;
  for (const IndexItem& it : items) {
    if (it.kind != Kind::Array || av(it.array).dtype != DType::Bool) {
      out.push_back(it);
      dim += static_cast<size_t>(consumed(it));
      continue;
    }
    const Array& m = cx.concrete(it.array);
    if (m.ndim() == 0)
      throw Error(ErrCode::Unsupported, "indexing with a 0-d boolean is not supported");
    for (int k = 0; k < m.ndim(); ++k)
      if (m.shape()[static_cast<size_t>(k)] != shape[dim + static_cast<size_t>(k)])
        index_error("boolean index did not match indexed array along axis " +
                    std::to_string(dim + static_cast<size_t>(k)) + "; size of axis is " +
                    std::to_string(shape[dim + static_cast<size_t>(k)]) +
                    " but size of corresponding boolean axis is " +
                    std::to_string(m.shape()[static_cast<size_t>(k)]));
    int64_t count = 0;
    for (int64_t i = 0; i < m.size(); ++i) count += m.get(i).i != 0;
    std::vector<Array> coords;
    for (int k = 0; k < m.ndim(); ++k) coords.emplace_back(DType::Int32, Shape{count});
    std::vector<int64_t> st(static_cast<size_t>(m.ndim()), 1);
    for (int k = m.ndim() - 1; k > 0; --k)
      st[static_cast<size_t>(k - 1)] =
          st[static_cast<size_t>(k)] * m.shape()[static_cast<size_t>(k)];
    int64_t j = 0;
    for (int64_t i = 0; i < m.size(); ++i) {
      if (m.get(i).i == 0) continue;
      for (int k = 0; k < m.ndim(); ++k)
        coords[static_cast<size_t>(k)].set(
            j, Scalar::of_int(i / st[static_cast<size_t>(k)] % m.shape()[static_cast<size_t>(k)]));
      ++j;
    }
    for (Array& c : coords) {
      IndexItem a;
      a.kind = Kind::Array;
      a.array = cx.constant(std::move(c));
      out.push_back(a);
    }
    dim += static_cast<size_t>(m.ndim());
  }
  return out;
}

int64_t checked_int(int64_t i, int64_t axis, int64_t n) {
  if (i < -n || i >= n)
    index_error("index " + std::to_string(i) + " is out of bounds for axis " +
                std::to_string(axis) + " with size " + std::to_string(n));
  return i < 0 ? i + n : i;
}

// Python slice semantics: (first element, count, step).
struct SliceRange {
  int64_t first, count, step;
};
SliceRange resolve(const IndexItem& it, int64_t n) {
  int64_t step = it.step.value_or(1);
  if (step == 0) throw Error(ErrCode::Value, "slice step cannot be zero");
  int64_t start, stop;
  if (step > 0) {
    start = it.start ? *it.start : 0;
    stop = it.stop ? *it.stop : n;
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    start = std::clamp<int64_t>(start, 0, n);
    stop = std::clamp<int64_t>(stop, 0, n);
    return {start, stop > start ? (stop - start + step - 1) / step : 0, step};
  }
  start = it.start ? *it.start : n - 1;
  stop = it.stop ? *it.stop : -1 - n; // "before the first element"
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, -1, n - 1);
  stop = std::clamp<int64_t>(stop, -1, n - 1);
  return {start, start > stop ? (start - stop - step - 1) / (-step) : 0, step};
}

// Integer index arrays (already one per dim of y at `dims`) gathered with one take.
Tensor gather(OpContext& cx, const Tensor& y, const std::vector<int64_t>& dims,
              std::vector<Tensor> idx) {
  const Shape& ys = av(y).shape;
  Shape b = av(idx[0]).shape;
  for (size_t j = 1; j < idx.size(); ++j) {
    try {
      b = broadcast_shapes("index", b, av(idx[j]).shape);
    } catch (const Error&) {
      std::string shapes;
      for (const Tensor& t : idx) shapes += " " + shape_str(av(t).shape);
      index_error("shape mismatch: indexing arrays could not be broadcast together with shapes" +
                  shapes);
    }
  }
  // Negative indices count from the end; out-of-range ones are clamped (JAX's gather).
  for (size_t j = 0; j < idx.size(); ++j) {
    Tensor t = idx[j];
    if (!is_integer(av(t).dtype))
      throw Error(ErrCode::DType, std::string("indexer must be an integer or boolean array, got ") +
                                      dtype_name(av(t).dtype));
    t = convert(cx, t, DType::Int32, false);
    int64_t n = ys[static_cast<size_t>(dims[j])];
    Tensor nn = scalar(cx, Scalar::of_int(n));
    t = where(cx, binary(cx, BinOp::Lt, t, scalar(cx, Scalar::of_int(0))),
              binary(cx, BinOp::Add, t, nn), t);
    t = clip(cx, t, scalar(cx, Scalar::of_int(0)),
             scalar(cx, Scalar::of_int(std::max<int64_t>(n - 1, 0))));
    idx[j] = broadcast(cx, convert(cx, t, DType::Int32, false), b, "index");
  }
  OpAttrs take;
  if (idx.size() == 1) {
    take.axis = dims[0];
    return bind(cx, Op::Take, take, {y, idx[0]});
  }
  // Several arrays: move their dims to the front, merge them, and index the
  // merged dim with the combined flat index.
  std::vector<int64_t> perm = dims;
  for (int64_t d = 0; d < static_cast<int64_t>(ys.size()); ++d)
    if (!std::count(dims.begin(), dims.end(), d)) perm.push_back(d);
  Tensor yt = transpose_to(cx, y, perm);
  Shape merged{1};
  for (int64_t d : dims) merged[0] *= ys[static_cast<size_t>(d)];
  for (size_t k = dims.size(); k < perm.size(); ++k)
    merged.push_back(ys[static_cast<size_t>(perm[k])]);
  yt = reshape_to(cx, yt, merged);
  Tensor flat = idx.back();
  int64_t stride = ys[static_cast<size_t>(dims.back())];
  for (size_t j = idx.size() - 1; j-- > 0;) {
    Tensor scaled = binary(cx, BinOp::Mul, idx[j], scalar(cx, Scalar::of_int(stride)));
    flat = binary(cx, BinOp::Add, flat, scaled);
    stride *= ys[static_cast<size_t>(dims[j])];
  }
  take.axis = 0;
  Tensor r = bind(cx, Op::Take, take, {yt, flat});
  // numpy: adjacent advanced indices put their dims where the first one was.
  bool adjacent = true;
  for (size_t j = 1; j < dims.size(); ++j) adjacent = adjacent && dims[j] == dims[j - 1] + 1;
  if (!adjacent || dims[0] == 0) return r;
  int64_t nb = static_cast<int64_t>(b.size()), rank = av(r).ndim();
  std::vector<int64_t> back;
  for (int64_t i = 0; i < dims[0]; ++i) back.push_back(nb + i);
  for (int64_t i = 0; i < nb; ++i) back.push_back(i);
  for (int64_t i = nb + dims[0]; i < rank; ++i) back.push_back(i);
  return transpose_to(cx, r, back);
}

// Over Explicit mesh axes JAX updates with a scatter, whose sharding rule
// cannot type a result written into part of a split dimension. What
// x.at[items] touches: whether it indexes into a split dimension, the shape of
// JAX's index array, and the updated slice's type.
struct SplitIndex {
  bool split = false;
  Shape indices;
  AVal updates;
  DimSpec updates_spec;
};

SplitIndex split_index(const Tensor& x, const DimSpec& spec, const std::vector<IndexItem>& items0) {
  SplitIndex r;
  std::vector<IndexItem> items = expand_ellipsis(items0, av(x).ndim());
  Shape arrays;
  int64_t k = 0;
  size_t d = 0;
  r.updates = av(x);
  r.updates.shape.clear();
  for (const IndexItem& it : items) {
    int n = consumed(it);
    bool touched = it.kind == Kind::Int || it.kind == Kind::Array;
    if (it.kind == Kind::Slice) {
      SliceRange sr = resolve(it, av(x).shape[d]);
      touched = sr.count != av(x).shape[d] || sr.step != 1;
      r.updates.shape.push_back(sr.count);
      r.updates_spec.push_back(touched ? std::vector<std::string>{} : spec[d]);
    } else if (it.kind == Kind::NewAxis) {
      r.updates.shape.push_back(1);
      r.updates_spec.emplace_back();
    } else if (it.kind == Kind::Array && arrays.empty()) {
      arrays = av(it.array).shape;
    }
    for (int j = 0; j < n; ++j, ++d) {
      if (!touched) continue;
      ++k;
      r.split = r.split || !spec[d].empty();
    }
  }
  r.indices = arrays;
  r.indices.push_back(k);
  return r;
}

} // namespace

Tensor index(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items0) {
  std::vector<IndexItem> items = expand_ellipsis(items0, av(x).ndim());
  items = expand_masks(cx, items, av(x).shape);

  // None: insert size-1 dims, indexed by a full slice.
  Shape with_new;
  size_t d = 0;
  for (IndexItem& it : items) {
    if (it.kind == Kind::NewAxis) {
      with_new.push_back(1);
      it = full_slice();
    } else {
      with_new.push_back(av(x).shape[d++]);
    }
  }
  Tensor y = reshape_to(cx, x, with_new);
  const Shape& s = with_new;

  bool advanced = std::any_of(items.begin(), items.end(),
                              [](const IndexItem& it) { return it.kind == Kind::Array; });
  OpAttrs sl;
  std::vector<int64_t> rev_axes, adv_dims;
  std::vector<Tensor> adv;
  Shape kept;
  bool sliced = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const IndexItem& it = items[i];
    int64_t n = s[i], start = 0, limit = n, stride = 1;
    switch (it.kind) {
    case Kind::Int: {
      int64_t k = checked_int(it.index, static_cast<int64_t>(i), n);
      if (advanced) { // numpy: an int among index arrays acts as a 0-d index array
        adv_dims.push_back(static_cast<int64_t>(i));
        adv.push_back(scalar(cx, Scalar::of_int(k), DType::Int32, false));
        kept.push_back(n);
      } else {
        start = k, limit = k + 1;
      }
      break;
    }
    case Kind::Slice: {
      SliceRange r = resolve(it, n);
      int64_t abs_step = r.step > 0 ? r.step : -r.step;
      if (r.count == 0) {
        limit = 0;
      } else if (r.step > 0) {
        start = r.first, limit = r.first + (r.count - 1) * r.step + 1, stride = r.step;
      } else {
        start = r.first - (r.count - 1) * abs_step, limit = r.first + 1, stride = abs_step;
        if (r.count > 1) rev_axes.push_back(static_cast<int64_t>(i));
      }
      kept.push_back(r.count);
      break;
    }
    case Kind::Array:
      adv_dims.push_back(static_cast<int64_t>(i));
      adv.push_back(it.array);
      kept.push_back(n);
      break;
    case Kind::Ellipsis:
    case Kind::NewAxis:
      break; // already expanded
    }
    sl.starts.push_back(start);
    sl.limits.push_back(limit);
    sl.strides.push_back(stride);
    sliced = sliced || start != 0 || limit != n || stride != 1;
  }
  if (sliced) y = bind(cx, Op::Slice, sl, {y});
  if (!rev_axes.empty()) {
    OpAttrs r;
    r.axes = rev_axes;
    y = bind(cx, Op::Rev, r, {y});
  }
  y = reshape_to(cx, y, kept); // drops the dims of basic int indices
  if (adv.empty()) return y;
  return gather(cx, y, adv_dims, adv);
}

// JAX's "fill or drop" indexing: `x` with one more element (`fill`, a 0-d
// tensor of x's dtype) at the end of every dimension an integer array indexes,
// and `items` with each such array's out-of-range entries pointing at it
// (negative entries from -n count from the end first). Indexing the result
// reads `fill` where an index was out of range.
std::pair<Tensor, std::vector<IndexItem>> route_out_of_range(OpContext& cx, const Tensor& x,
                                                             const std::vector<IndexItem>& items0,
                                                             const Tensor& fill) {
  std::vector<IndexItem> items = expand_masks(cx, expand_ellipsis(items0, av(x).ndim()), av(x).shape);
  OpAttrs pad;
  pad.lo.assign(av(x).shape.size(), 0);
  pad.hi.assign(av(x).shape.size(), 0);
  pad.interior.assign(av(x).shape.size(), 0);
  size_t d = 0;
  bool any_array = false;
  for (IndexItem& it : items) {
    if (it.kind == Kind::NewAxis) continue;
    if (it.kind == Kind::Array) {
      any_array = true;
      Tensor n = scalar(cx, Scalar::of_int(av(x).shape[d]), av(it.array).dtype, false);
      Tensor zero = scalar(cx, Scalar::of_int(0), av(it.array).dtype, false);
      Tensor wrapped = where(cx, binary(cx, BinOp::Lt, it.array, zero),
                             binary(cx, BinOp::Add, it.array, n), it.array);
      Tensor inside = binary(cx, BinOp::BitAnd, binary(cx, BinOp::Ge, wrapped, zero),
                             binary(cx, BinOp::Lt, wrapped, n));
      it.array = where(cx, inside, wrapped, n);
      pad.hi[d] = 1;
    }
    ++d;
  }
  if (!any_array) return {x, items}; // basic indices only: nothing can be out of range
  return {bind(cx, Op::Pad, pad, {x, fill}), items};
}

Tensor index_fill(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                  const Tensor& fill) {
  auto [padded, routed] =
      route_out_of_range(cx, x, items, convert(cx, fill, av(x).dtype, false));
  return index(cx, padded, routed);
}

Tensor index_update(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items0,
                    const Tensor& v, UpdateMode mode, bool clip) {
  // The flat positions x[items] refers to, found by indexing an iota the same
  // way. Unless clipping, out-of-range indices read the position n, which the
  // scatter drops (JAX's default mode for updates).
  if (auto spec = explicit_mesh_type(x)) {
    SplitIndex si = split_index(x, *spec, items0);
    if (si.split)
      explicit_scatter_error(av(x), *spec, si.indices, si.updates, si.updates_spec, cx.loc);
  }
  int64_t n = av(x).size();
  if (n > (int64_t{1} << 31) - 1)
    throw Error(ErrCode::Unsupported, "index update of an array with 2^31 or more elements");
  Tensor positions = reshape_to(cx, iota(cx, DType::Int32, {n}, 0), av(x).shape);
  std::vector<IndexItem> items = items0;
  if (!clip)
    std::tie(positions, items) =
        route_out_of_range(cx, positions, items0, scalar(cx, Scalar::of_int(n), DType::Int32, false));
  Tensor pos = index(cx, positions, items);
  const Shape& ps = av(pos).shape;
  const Shape& vs = av(v).shape;
  bool ok = vs.size() <= ps.size();
  for (size_t i = 0; ok && i < vs.size(); ++i)
    ok = vs[i] == 1 || vs[i] == ps[ps.size() - vs.size() + i];
  if (!ok)
    throw Error(ErrCode::Shape, "at[].update: cannot broadcast update of shape " + shape_str(vs) +
                                    " into the indexed shape " + shape_str(ps));
  Tensor upd = broadcast(cx, convert(cx, v, av(x).dtype, av(x).weak), ps, "at[].update");
  OpAttrs a;
  a.axis = 0;
  switch (mode) {
  case UpdateMode::Set:
    a.mode = ScatterMode::Set;
    break;
  case UpdateMode::Add:
    a.mode = ScatterMode::Add;
    break;
  case UpdateMode::Mul:
    a.mode = ScatterMode::Mul;
    break;
  case UpdateMode::Min:
    a.mode = ScatterMode::Min;
    break;
  case UpdateMode::Max:
    a.mode = ScatterMode::Max;
    break;
  }
  Tensor flat = bind(cx, Op::Scatter, a, {ravel(cx, x), pos, upd});
  return reshape_to(cx, flat, av(x).shape);
}

} // namespace pxl::np
