// numpy indexing: x[items] and x.at[items].set/add/... . Basic indices become
// slice/rev/reshape; integer arrays (and ints mixed with them) become one take;
// updates index an iota of flat positions the same way and scatter into them.
#include <algorithm>
#include <limits>
#include <optional>

#include "lang/tracer.hpp"
#include "stdlib/checkify.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jaxpr_spmd.hpp"
#include "stdlib/np_index.hpp"
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

IndexItem array_item(const Tensor& t) {
  IndexItem it;
  it.kind = Kind::Array;
  it.array = t;
  return it;
}

bool is_mask(const IndexItem& it) {
  return it.kind == Kind::Array && av(it.array).dtype == DType::Bool;
}
// A 0-d boolean (x[True], x[..., np.array(False)]): a new axis of size 1 that an
// index array arange(b) then indexes, as JAX's expand_scalar_bool_indices.
bool is_scalar_bool(const IndexItem& it) { return is_mask(it) && av(it.array).ndim() == 0; }

int consumed(const IndexItem& it) {
  switch (it.kind) {
  case Kind::Int:
  case Kind::Slice:
    return 1;
  case Kind::Array:
    return is_mask(it) ? av(it.array).ndim() : 1;
  case Kind::Ellipsis:
  case Kind::NewAxis:
    return 0;
  }
  return 0;
}

// A `...` of no width between advanced indices still separates them (numpy
// then puts the broadcast index dims first): it becomes a size-1 new axis that
// index_clamped drops again, marked by its `index`.
constexpr int64_t kSeparator = 1;
bool is_separator(const IndexItem& it) {
  return it.kind == Kind::NewAxis && it.index == kSeparator;
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
    index_error("Too many indices: array is " + std::to_string(ndim) + "-dimensional, but " +
                std::to_string(used) + " were indexed");
  auto advanced = [](const IndexItem& it) {
    return it.kind == Kind::Array || it.kind == Kind::Int;
  };
  bool any_array = std::any_of(items.begin(), items.end(),
                               [](const IndexItem& it) { return it.kind == Kind::Array; });
  std::vector<IndexItem> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const IndexItem& it = items[i];
    if (it.kind != Kind::Ellipsis) {
      out.push_back(it);
    } else if (ndim > used) {
      out.insert(out.end(), static_cast<size_t>(ndim - used), full_slice());
    } else if (any_array &&
               std::any_of(items.begin(), items.begin() + static_cast<long>(i), advanced) &&
               std::any_of(items.begin() + static_cast<long>(i) + 1, items.end(), advanced)) {
      IndexItem sep;
      sep.kind = Kind::NewAxis;
      sep.index = kSeparator;
      out.push_back(sep);
    }
  }
  if (!ellipses) out.insert(out.end(), static_cast<size_t>(ndim - used), full_slice());
  return out;
}

// The host value of a boolean index, or JAX's NonConcreteBooleanIndexError.
const Array& concrete_mask(OpContext& cx, const Tensor& m) {
  try {
    return cx.concrete(m);
  } catch (const Error& e) {
    if (e.code() != ErrCode::ConcreteValue) throw;
    std::string type = dtype_name(av(m).dtype) + std::string("[");
    for (size_t i = 0; i < av(m).shape.size(); ++i)
      type += (i ? "," : "") + std::to_string(av(m).shape[i]);
    throw Error(ErrCode::ConcreteValue, "Array boolean indices must be concrete; got " + type +
                                            "]\n\nSee https://docs.jax.dev/en/latest/errors.html"
                                            "#jax.errors.NonConcreteBooleanIndexError");
  }
}

// Checks each boolean mask of the user's index against the axes it covers
// (JAX's message numbers the entry of the index tuple); a mask axis of size 0
// matches any axis, as in JAX.
void check_masks(OpContext& cx, const std::vector<IndexItem>& items, const Shape& shape) {
  int used = 0;
  for (const IndexItem& it : items) used += consumed(it);
  size_t dim = 0;
  for (size_t pos = 0; pos < items.size(); ++pos) {
    const IndexItem& it = items[pos];
    if (it.kind == Kind::Ellipsis) {
      dim += static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(shape.size()) - used, 0));
      continue;
    }
    if (is_mask(it)) {
      concrete_mask(cx, it.array);
      const Shape& ms = av(it.array).shape;
      bool ok = true;
      std::string want = "[";
      for (size_t k = 0; k < ms.size(); ++k) {
        int64_t n = shape[dim + k];
        want += (k ? ", " : "") + std::to_string(n);
        ok = ok && (ms[k] == 0 || ms[k] == n);
      }
      if (!ok)
        index_error("boolean index did not match shape of indexed array in index " +
                    std::to_string(pos) + ": got " + shape_str(ms) + ", expected " + want + "]");
    }
    dim += static_cast<size_t>(consumed(it));
  }
}

// Boolean masks become one int32 index array per mask dimension (their nonzero
// coordinates); this needs the mask's value, so masks only work eagerly (as in JAX).
// 0-d booleans stay (index_clamped gives them their axis).
std::vector<IndexItem> expand_masks(OpContext& cx, const std::vector<IndexItem>& items) {
  std::vector<IndexItem> out;
  for (const IndexItem& it : items) {
    if (!is_mask(it) || is_scalar_bool(it)) {
      if (is_scalar_bool(it)) concrete_mask(cx, it.array);
      out.push_back(it);
      continue;
    }
    const Array& m = concrete_mask(cx, it.array);
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
    for (Array& c : coords) out.push_back(array_item(cx.constant(std::move(c))));
  }
  return out;
}

std::vector<IndexItem> normalize(OpContext& cx, const std::vector<IndexItem>& items0,
                                 const Shape& shape) {
  std::vector<IndexItem> items = expand_ellipsis(items0, static_cast<int>(shape.size()));
  check_masks(cx, items0, shape);
  return expand_masks(cx, items);
}

// Python slice semantics: (first element, count, step); first, stop and step
// are Python's slice.indices(n).
struct SliceRange {
  int64_t first, count, step, stop;
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
    // (ceil((stop - start) / step) without forming stop - start + step, which
    // overflows for a step near 2**63)
    return {start, stop > start ? (stop - start - 1) / step + 1 : 0, step, stop};
  }
  start = it.start ? *it.start : n - 1;
  stop = it.stop ? *it.stop : -1 - n; // "before the first element"
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, -1, n - 1);
  stop = std::clamp<int64_t>(stop, -1, n - 1);
  return {start, start > stop ? 1 - (start - stop - 1) / step : 0, step,
          stop}; // (no -step: -2**63)
}

// Integer index arrays (already one per dim of y at `dims`) gathered with one take.
Tensor gather(OpContext& cx, const Tensor& y, const std::vector<int64_t>& dims,
              std::vector<Tensor> idx, bool wrap_negative, const std::vector<int64_t>& x_axis) {
  const Shape& ys = av(y).shape;
  // An empty axis has nothing to gather (JAX's errors: a scalar index's, the gather's).
  for (size_t j = 0; j < idx.size(); ++j) {
    if (ys[static_cast<size_t>(dims[j])] != 0 || av(idx[j]).size() == 0) continue;
    std::string axis = std::to_string(x_axis[static_cast<size_t>(dims[j])]);
    if (av(idx[j]).ndim() == 0)
      index_error("index is out of bounds for axis " + axis + " with size 0");
    throw Error(ErrCode::Type,
                "Slice size at index " + axis +
                    " in gather op is out of range, must be within [0, 0 + 1), got 1.");
  }
  Shape b = av(idx[0]).shape;
  for (size_t j = 1; j < idx.size(); ++j) {
    try {
      b = broadcast_shapes("index", b, av(idx[j]).shape);
    } catch (const Error&) {
      std::string shapes;
      for (const Tensor& t : idx) shapes += (shapes.empty() ? "" : ", ") + shape_str(av(t).shape);
      throw Error(ErrCode::Value, "Incompatible shapes for broadcasting: shapes=[" + shapes + "]");
    }
  }
  // Negative indices count from the end; out-of-range ones are clamped (JAX's gather).
  std::vector<Tensor> wrapped; // (for checkify's index check: before the clamp)
  std::vector<int64_t> wrapped_axes;
  for (size_t j = 0; j < idx.size(); ++j) {
    Tensor t = idx[j];
    if (!is_integer(av(t).dtype))
      throw Error(ErrCode::Type,
                  std::string("Indexer must have integer or boolean type, got indexer with type ") +
                      dtype_name(av(t).dtype));
    t = convert(cx, t, DType::Int32, false);
    int64_t n = ys[static_cast<size_t>(dims[j])];
    Tensor nn = scalar(cx, Scalar::of_int(n));
    if (wrap_negative)
      t = where(cx, binary(cx, BinOp::Lt, t, scalar(cx, Scalar::of_int(0))),
                binary(cx, BinOp::Add, t, nn), t);
    if (tracing_under_checkify(cx)) {
      wrapped.push_back(broadcast(cx, t, b, "index"));
      wrapped_axes.push_back(dims[j]);
    }
    // Out-of-range entries are clamped here, so their cotangents land on the
    // clamped element where JAX's drop them (a gap; leaving the clamp to the
    // take changed the CUDA path's fusions and so its rounding).
    t = clip(cx, t, scalar(cx, Scalar::of_int(0)),
             scalar(cx, Scalar::of_int(std::max<int64_t>(n - 1, 0))));
    idx[j] = broadcast(cx, convert(cx, t, DType::Int32, false), b, "index");
  }
  if (!wrapped.empty()) record_index_check(cx, ys, wrapped, wrapped_axes);
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

// JAX's "fill or drop" indexing: `x` with one more element (`fill`, a 0-d
// tensor of x's dtype) at the end of every dimension an index can leave, and
// `items` with each out-of-range entry (a static int or an index array's;
// negative ones from -n count from the end first when wrapping) pointing at it.
// Indexing the result reads `fill` where an index was out of range.
std::pair<Tensor, std::vector<IndexItem>> route_out_of_range(OpContext& cx, const Tensor& x,
                                                             const std::vector<IndexItem>& items0,
                                                             const Tensor& fill, bool wrap) {
  std::vector<IndexItem> items = normalize(cx, items0, av(x).shape);
  OpAttrs pad;
  pad.lo.assign(av(x).shape.size(), 0);
  pad.hi.assign(av(x).shape.size(), 0);
  pad.interior.assign(av(x).shape.size(), 0);
  size_t d = 0;
  bool any = false;
  std::vector<Tensor> wrapped_all; // (for checkify's index check)
  std::vector<int64_t> wrapped_axes;
  for (IndexItem& it : items) {
    if (it.kind == Kind::NewAxis || is_scalar_bool(it)) continue;
    int64_t n = av(x).shape[d];
    if (it.kind == Kind::Int) {
      if (n == 0)
        index_error("index is out of bounds for axis " + std::to_string(d) + " with size 0");
      int64_t k = wrap && it.index < 0 ? it.index + n : it.index;
      if (k >= 0 && k < n) {
        it.index = k;
      } else {
        if (tracing_under_checkify(cx)) {
          Tensor kt = scalar(cx, Scalar::of_int(k), DType::Int32, false);
          int64_t axis = static_cast<int64_t>(d);
          record_index_check(cx, av(x).shape, std::span(&kt, 1), std::span(&axis, 1));
        }
        it = array_item(scalar(cx, Scalar::of_int(n), DType::Int32, false));
        any = true;
        pad.hi[d] = 1;
      }
    } else if (it.kind == Kind::Array) {
      any = true;
      if (!is_integer(av(it.array).dtype))
        throw Error(
            ErrCode::Type,
            std::string("Indexer must have integer or boolean type, got indexer with type ") +
                dtype_name(av(it.array).dtype));
      Tensor t = convert(cx, it.array, DType::Int32, false);
      Tensor nn = scalar(cx, Scalar::of_int(n), DType::Int32, false);
      Tensor zero = scalar(cx, Scalar::of_int(0), DType::Int32, false);
      Tensor wrapped =
          wrap ? where(cx, binary(cx, BinOp::Lt, t, zero), binary(cx, BinOp::Add, t, nn), t) : t;
      Tensor inside = binary(cx, BinOp::BitAnd, binary(cx, BinOp::Ge, wrapped, zero),
                             binary(cx, BinOp::Lt, wrapped, nn));
      it.array = where(cx, inside, wrapped, nn);
      pad.hi[d] = 1;
      if (tracing_under_checkify(cx)) {
        wrapped_all.push_back(wrapped);
        wrapped_axes.push_back(static_cast<int64_t>(d));
      }
    }
    ++d;
  }
  if (!wrapped_all.empty()) {
    bool same = std::all_of(wrapped_all.begin(), wrapped_all.end(), [&](const Tensor& t) {
      return av(t).shape == av(wrapped_all[0]).shape;
    });
    if (same) {
      record_index_check(cx, av(x).shape, wrapped_all, wrapped_axes);
    } else {
      for (size_t j = 0; j < wrapped_all.size(); ++j)
        record_index_check(cx, av(x).shape, std::span(&wrapped_all[j], 1),
                           std::span(&wrapped_axes[j], 1));
    }
  }
  if (!any) return {x, items}; // nothing can be out of range
  return {bind(cx, Op::Pad, pad, {x, fill}), items};
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
  Shape arrays, strided; // (JAX indexes a slice of another step with an arange)
  int64_t k = 0;
  size_t d = 0;
  r.updates = av(x);
  r.updates.shape.clear();
  for (const IndexItem& it : items) {
    if (is_separator(it)) continue;
    int n = consumed(it);
    bool touched = it.kind == Kind::Int || it.kind == Kind::Array;
    if (it.kind == Kind::Slice) {
      SliceRange sr = resolve(it, av(x).shape[d]);
      touched = sr.count != av(x).shape[d] || sr.step != 1;
      if (sr.step != 1) strided.push_back(sr.count);
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
  r.indices.insert(r.indices.end(), strided.begin(), strided.end());
  r.indices.push_back(k);
  return r;
}

} // namespace

Tensor index_clamped(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items0,
                     bool wrap_negative) {
  std::vector<IndexItem> items = normalize(cx, items0, av(x).shape);

  // Basic indexing (ints and slices) inserts the None dims after slicing, as
  // JAX's static slice does: at each None's place among the result's dims.
  const bool basic = std::none_of(items.begin(), items.end(), [](const IndexItem& it) {
    return it.kind == Kind::Array || is_scalar_bool(it);
  });
  std::vector<int64_t> late_new_dims;
  if (basic) {
    int64_t kept_dims = 0;
    for (const IndexItem& it : items) {
      if (it.kind == Kind::NewAxis) late_new_dims.push_back(kept_dims);
      kept_dims += it.kind == Kind::Int ? 0 : consumed(it) + (it.kind == Kind::NewAxis);
    }
    std::erase_if(items, [](const IndexItem& it) { return it.kind == Kind::NewAxis; });
  }
  // Otherwise None inserts a size-1 dim first, indexed by a full slice; a 0-d
  // boolean also inserts one, indexed by arange(0) or arange(1).
  Shape with_new;
  std::vector<int64_t> new_dims;
  std::vector<int64_t> x_axis; // each item's axis of x (for errors)
  size_t d = 0;
  int64_t separator = -1;
  for (IndexItem& it : items) {
    x_axis.push_back(static_cast<int64_t>(d));
    if (is_separator(it)) separator = static_cast<int64_t>(with_new.size());
    if (it.kind == Kind::NewAxis) {
      new_dims.push_back(static_cast<int64_t>(with_new.size()));
      with_new.push_back(1);
      it = full_slice();
    } else if (is_scalar_bool(it)) {
      new_dims.push_back(static_cast<int64_t>(with_new.size()));
      with_new.push_back(1);
      int64_t b = cx.concrete(it.array).get(0).i != 0;
      it = array_item(iota(cx, DType::Int32, {b}, 0));
    } else {
      with_new.push_back(av(x).shape[d++]);
    }
  }
  Tensor y = with_new.size() == av(x).shape.size() + new_dims.size()
                 ? expand_dims_at(cx, x, new_dims)
                 : reshape_to(cx, x, with_new);
  const Shape& s = with_new;

  bool advanced = std::any_of(items.begin(), items.end(),
                              [](const IndexItem& it) { return it.kind == Kind::Array; });
  OpAttrs sl;
  std::vector<int64_t> rev_axes, adv_dims;
  std::vector<Tensor> adv;
  Shape kept;
  std::vector<int64_t> dropped; // the dims of basic int indices
  bool sliced = false;
  for (size_t i = 0; i < items.size(); ++i) {
    const IndexItem& it = items[i];
    int64_t n = s[i], start = 0, limit = n, stride = 1;
    switch (it.kind) {
    case Kind::Int: {
      // JAX clamps a static index into range (after wrapping negative ones) as
      // its gather does; only an empty axis has nothing to read.
      if (n == 0)
        index_error("index is out of bounds for axis " + std::to_string(x_axis[i]) +
                    " with size 0");
      int64_t k = wrap_negative && it.index < 0 ? it.index + n : it.index;
      if ((k < 0 || k >= n) && tracing_under_checkify(cx)) {
        Tensor kt = scalar(cx, Scalar::of_int(k), DType::Int32, false);
        record_index_check(cx, av(x).shape, std::span(&kt, 1), std::span(&x_axis[i], 1));
      }
      k = std::clamp<int64_t>(k, 0, n - 1);
      if (advanced) { // numpy: an int among index arrays acts as a 0-d index array
        adv_dims.push_back(static_cast<int64_t>(i));
        adv.push_back(scalar(cx, Scalar::of_int(k), DType::Int32, false));
        kept.push_back(n);
      } else {
        start = k, limit = k + 1;
        dropped.push_back(static_cast<int64_t>(i));
      }
      break;
    }
    case Kind::Slice: {
      // JAX's static slice (indexing.py): the bounds of slice.indices(n), a
      // negative step as the positive one from the last element taken, then rev.
      SliceRange r = resolve(it, n);
      if (r.step > 0) {
        start = r.first, limit = std::max(r.first, r.stop), stride = r.step;
      } else if (r.step == std::numeric_limits<int64_t>::min()) { // (no -step: one element)
        start = r.count ? r.first : 0, limit = r.count ? r.first + 1 : 0;
      } else {
        const int64_t abs_step = -r.step;
        start = std::min(n, r.stop + 1 + std::abs(r.first - r.stop - 1) % abs_step);
        limit = std::max(start, r.first + 1), stride = abs_step;
        rev_axes.push_back(static_cast<int64_t>(i));
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
  y = squeeze_dims(cx, y, dropped); // drops the dims of basic int indices
  if (!late_new_dims.empty()) y = expand_dims_at(cx, y, late_new_dims);
  if (adv.empty()) return y;
  Tensor r = gather(cx, y, adv_dims, adv, wrap_negative, x_axis);
  if (separator < 0) return r;
  // The separator's dim follows the index dims and the basic dims before it.
  int64_t at =
      av(r).ndim() - (static_cast<int64_t>(items.size()) - static_cast<int64_t>(adv.size()));
  for (int64_t i = 0; i < separator; ++i)
    if (items[static_cast<size_t>(i)].kind != Kind::Array &&
        !(advanced && items[static_cast<size_t>(i)].kind == Kind::Int))
      ++at;
  Shape rs = av(r).shape;
  rs.erase(rs.begin() + at);
  return reshape_to(cx, r, rs);
}

namespace {
// Eagerly JAX reads x[items] of an array spanning devices with a gather when
// the index cuts a dimension (an int, an index array, or a slice other than the
// whole dimension in either direction: indexing.py's has_partial_slices); the
// gather indexes the dimensions split_index finds, and its sharding rule
// refuses one split over Explicit axes.
void check_eager_gather(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items0) {
  if (x->trace || !x->sharded || !x->sharded->spans_devices()) return;
  std::optional<DimSpec> spec = explicit_mesh_type(x);
  if (!spec) return;
  std::vector<IndexItem> items = expand_ellipsis(items0, av(x).ndim());
  bool partial = false;
  for (size_t i = 0, d = 0; i < items.size(); d += static_cast<size_t>(consumed(items[i++]))) {
    const IndexItem& it = items[i];
    if (it.kind == Kind::Int || it.kind == Kind::Array) partial = true;
    if (it.kind != Kind::Slice) continue;
    SliceRange r = resolve(it, av(x).shape[d]);
    partial = partial || !((r.step == 1 || r.step == -1) && r.count == av(x).shape[d]);
  }
  if (!partial) return;
  SplitIndex si = split_index(x, *spec, items0);
  if (si.split) explicit_gather_error(av(x), *spec, si.indices, cx.loc);
}
} // namespace

namespace {

// Whether every item after the first is `:` or `...` (x[i], x[i, :], x[idx, ...]).
bool only_full_after_first(const std::vector<IndexItem>& items) {
  return std::all_of(items.begin() + 1, items.end(), [](const IndexItem& it) {
    return it.kind == Kind::Ellipsis ||
           (it.kind == Kind::Slice && !it.start && !it.stop && !it.step);
  });
}

// Opens the region of one JAX primitive whose instructions here make_jaxpr
// does not show (a gather, scatter or dynamic slice pxl computes otherwise).
int begin_opaque(TraceContext& tc, std::string prim, std::vector<int> inputs,
                 std::vector<std::pair<std::string, std::string>> params) {
  int region = jaxpr_begin_region(tc, std::move(prim), std::move(inputs), std::move(params));
  tc.jaxpr_record->regions[static_cast<size_t>(region)].opaque = true;
  return region;
}

} // namespace

// x[items] as make_jaxpr shows JAX's indexing of integers, slices of step 1
// and `...` with at least one traced 0-d integer (JAX's dynamic-slice route):
// the starts (converted to int32 when there are several), each normalized as
// `select_n(i < 0, i, i + n)`, one `dynamic_slice[slice_sizes=]` equation
// (its instructions, the clamped take pxl computes, hidden) and a `squeeze`
// of the integers' dimensions. Empty when not recording or not of that form.
std::optional<Tensor> index_as_dynamic_slice(OpContext& cx, const Tensor& x,
                                             const std::vector<IndexItem>& items0) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc || !tc->jaxpr_record || tracing_under_checkify(cx)) return std::nullopt;
  const Shape& shape = av(x).shape;
  size_t used = 0, ellipses = 0;
  bool traced = false;
  for (const IndexItem& it : items0) {
    bool scalar_array =
        it.kind == Kind::Array && av(it.array).shape.empty() && is_integer(av(it.array).dtype);
    if (it.kind == Kind::Slice && it.step.value_or(1) != 1) return std::nullopt;
    if (!scalar_array && it.kind != Kind::Int && it.kind != Kind::Slice &&
        it.kind != Kind::Ellipsis)
      return std::nullopt;
    traced = traced || scalar_array;
    used += it.kind != Kind::Ellipsis;
    ellipses += it.kind == Kind::Ellipsis;
  }
  if (!traced || used > shape.size() || ellipses > 1) return std::nullopt;
  std::vector<IndexItem> items = expand_ellipsis(items0, static_cast<int>(shape.size()));
  if (items.size() != shape.size()) return std::nullopt;
  auto i32 = [&](int64_t k) { return scalar(cx, Scalar::of_int(k), DType::Int32, false); };
  std::vector<Tensor> starts;
  std::vector<int64_t> sizes, squeezed;
  for (size_t d = 0; d < items.size(); ++d) {
    const IndexItem& it = items[d];
    const int64_t n = shape[d];
    if (it.kind == Kind::Slice) {
      SliceRange r = resolve(it, n);
      starts.push_back(i32(r.first));
      sizes.push_back(r.count);
      continue;
    }
    if (n == 0 || (it.kind == Kind::Int && (it.index < -n || it.index >= n))) return std::nullopt;
    starts.push_back(it.kind == Kind::Int ? i32(it.index) : it.array);
    sizes.push_back(1);
    squeezed.push_back(static_cast<int64_t>(d));
  }
  // (JAX converts several starts to one int32 type, constants too.)
  if (starts.size() > 1)
    for (Tensor& s : starts) s = convert(cx, s, DType::Int32, false);
  for (size_t d = 0; d < starts.size(); ++d) {
    Tensor& s = starts[d];
    if (is_unsigned_int(av(s).dtype) || (starts.size() == 1 && items[d].kind != Kind::Array))
      continue; // (one static start is normalized in Python: a literal)
    // (JAX's `i < 0` compares with a weak 0; `i + d` adds a strong d, so a
    // weak i is converted; lax.select does not promote.)
    Tensor negative = binary(cx, BinOp::Lt, s, scalar(cx, Scalar::of_int(0), av(s).dtype, true));
    Tensor wrapped =
        binary(cx, BinOp::Add, s, scalar(cx, Scalar::of_int(shape[d]), av(s).dtype, false));
    s = bind(cx, Op::Select, OpAttrs{}, {negative, wrapped, s});
  }
  std::vector<int> ids{tc->value_of(x)};
  for (const Tensor& s : starts) ids.push_back(tc->value_of(s));
  int region = begin_opaque(*tc, "dynamic_slice", ids, {{"slice_sizes", py_seq(sizes)}});
  Tensor out =
      reshape_to(cx, index_clamped(cx, x, items0, true), Shape(sizes.begin(), sizes.end()));
  jaxpr_end_region(*tc, region, {tc->value_of(out)});
  return squeezed.empty() ? out : squeeze_dims(cx, out, squeezed);
}

// A traced signed index counted from the end when negative, as jnp's
// normalize_index shows it: `select_n(i < 0, i, i + n)` with weak 0 and n.
static Tensor wrapped_index(OpContext& cx, const Tensor& i, int64_t n) {
  const DType dt = av(i).dtype;
  Tensor negative = binary(cx, BinOp::Lt, i, scalar(cx, Scalar::of_int(0), dt, true));
  Tensor wrapped = binary(cx, BinOp::Add, i, scalar(cx, Scalar::of_int(n), dt, true));
  return bind(cx, Op::Select, OpAttrs{}, {negative, wrapped, i});
}

// x[idx] (one integer index array, then only full slices or `...`) as
// make_jaxpr shows JAX's gather: the index normalized (signed:
// `select_n(i < 0, i, i + n)`; unsigned: converted to int32), given a
// trailing index-vector axis, and one `gather[dimension_numbers=...]`
// equation whose instructions (pxl's clamped take) are hidden. Empty when
// not recording or not of that form.
std::optional<Tensor> index_as_gather(OpContext& cx, const Tensor& x,
                                      const std::vector<IndexItem>& items) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  const Shape& shape = av(x).shape;
  if (!tc || !tc->jaxpr_record || tracing_under_checkify(cx) || shape.empty() || items.empty())
    return std::nullopt;
  const IndexItem& first = items[0];
  if (first.kind != Kind::Array || av(first.array).shape.empty() ||
      !is_integer(av(first.array).dtype) || av(first.array).weak)
    return std::nullopt;
  if (!only_full_after_first(items)) return std::nullopt;
  const Tensor& b = first.array;
  const DType dt = av(b).dtype;
  Tensor idx;
  if (is_unsigned_int(dt)) {
    idx = convert(cx, b, DType::Int32, false);
  } else {
    idx = convert(cx, wrapped_index(cx, b, shape[0]), DType::Int32, false);
  }
  const Shape& is = av(idx).shape;
  OpAttrs vec;
  vec.shape = is;
  vec.shape.push_back(1);
  for (size_t k = 0; k < is.size(); ++k) vec.axes.push_back(static_cast<int64_t>(k));
  Tensor starts = bind(cx, Op::BroadcastInDim, vec, {idx});
  std::vector<int64_t> sizes(shape.begin(), shape.end()), offset_dims;
  sizes[0] = 1;
  for (size_t k = 0; k + 1 < shape.size(); ++k)
    offset_dims.push_back(static_cast<int64_t>(is.size() + k));
  int region = begin_opaque(
      *tc, "gather", {tc->value_of(x), tc->value_of(starts)},
      {{"dimension_numbers", "GatherDimensionNumbers(offset_dims=" + py_seq(offset_dims) +
                                 ", collapsed_slice_dims=(0,), start_index_map=(0,), "
                                 "operand_batching_dims=(), start_indices_batching_dims=())"},
       {"fill_value", "None"},
       {"indices_are_sorted", "False"},
       {"mode", "GatherScatterMode.PROMISE_IN_BOUNDS"},
       {"slice_sizes", py_seq(sizes)},
       {"unique_indices", "False"}});
  Tensor out = index_clamped(cx, x, items, true);
  jaxpr_end_region(*tc, region, {tc->value_of(out)});
  return out;
}

Tensor index(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items) {
  check_eager_gather(cx, x, items);
  if (auto sliced = index_as_dynamic_slice(cx, x, items)) return *sliced;
  if (auto gathered = index_as_gather(cx, x, items)) return *gathered;
  return index_clamped(cx, x, items, true);
}

Tensor index_fill(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                  const Tensor& fill, bool wrap_negative) {
  auto [padded, routed] =
      route_out_of_range(cx, x, items, convert(cx, fill, av(x).dtype, false), wrap_negative);
  return index_clamped(cx, padded, routed, true);
}

Tensor index_fill(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                  const Tensor& fill) {
  return index_fill(cx, x, items, fill, true);
}

// The flat positions x[items] refers to when every item is an integer (a
// constant or a 0-d traced array), a slice or `...`: the integers' offset
// plus an iota grid over the sliced axes (in order, as numpy's basic indexing
// shapes the result). An integer out of range (after wrapping negative ones)
// sends the whole block to the out-of-range position n, which the scatter
// drops, or, with `clip`, is clamped. The same positions the general route
// finds by indexing an iota of all of x, at the block's cost rather than x's:
// a scan's `ys.at[i].set(y)` or a loop's `x.at[i, :].set(row)` runs once per
// step. Empty when the items are not of that form.
std::optional<Tensor> basic_index_positions(OpContext& cx, const Tensor& x,
                                            const std::vector<IndexItem>& items0,
                                            const IndexOptions& opts) {
  const Shape& shape = av(x).shape;
  if (items0.empty() || tracing_under_checkify(cx)) return std::nullopt;
  size_t used = 0, ellipses = 0;
  for (const IndexItem& it : items0) {
    bool scalar_int =
        it.kind == Kind::Int ||
        (it.kind == Kind::Array && av(it.array).shape.empty() && is_integer(av(it.array).dtype));
    if (!scalar_int && it.kind != Kind::Slice && it.kind != Kind::Ellipsis) return std::nullopt;
    used += it.kind != Kind::Ellipsis;
    ellipses += it.kind == Kind::Ellipsis;
  }
  if (used > shape.size() || ellipses > 1) return std::nullopt; // the general route's errors
  std::vector<IndexItem> items = expand_ellipsis(items0, static_cast<int>(shape.size()));
  if (items.size() != shape.size()) return std::nullopt; // (a separator axis)
  auto i32 = [&](int64_t k) { return scalar(cx, Scalar::of_int(k), DType::Int32, false); };
  Shape block;
  std::vector<std::pair<SliceRange, int64_t>> sliced; // each sliced axis' range and stride
  Tensor offset = i32(0), inside = scalar(cx, Scalar::of_bool(true), DType::Bool, false);
  int64_t stride = av(x).size();
  for (size_t d = 0; d < items.size(); ++d) {
    const int64_t n = shape[d];
    stride = n ? stride / n : 0;
    const IndexItem& it = items[d];
    if (it.kind == Kind::Slice) {
      sliced.push_back({resolve(it, n), stride});
      block.push_back(sliced.back().first.count);
      continue;
    }
    Tensor k = it.kind == Kind::Int ? i32(it.index) : convert(cx, it.array, DType::Int32, false);
    if (opts.wrap_negative)
      k = where(cx, binary(cx, BinOp::Lt, k, i32(0)), binary(cx, BinOp::Add, k, i32(n)), k);
    if (opts.clip)
      k = binary(cx, BinOp::Minimum, binary(cx, BinOp::Maximum, k, i32(0)),
                 i32(std::max<int64_t>(n - 1, 0)));
    else
      inside = binary(cx, BinOp::BitAnd, inside,
                      binary(cx, BinOp::BitAnd, binary(cx, BinOp::Ge, k, i32(0)),
                             binary(cx, BinOp::Lt, k, i32(n))));
    offset = binary(cx, BinOp::Add, offset, binary(cx, BinOp::Mul, k, i32(stride)));
  }
  const int64_t total = av(x).size();
  if (shape_size(block) == 0 && !block.empty()) return std::nullopt;
  Tensor pos = offset;
  if (!block.empty()) {
    pos = broadcast(cx, offset, block, "at[].update");
    for (size_t j = 0; j < sliced.size(); ++j) {
      const auto& [r, st] = sliced[j];
      Tensor along = iota(cx, DType::Int32, block, static_cast<int64_t>(j));
      if (r.step * st != 1) along = binary(cx, BinOp::Mul, along, i32(r.step * st));
      if (r.first * st != 0) along = binary(cx, BinOp::Add, along, i32(r.first * st));
      pos = binary(cx, BinOp::Add, pos, along);
    }
  }
  if (opts.clip) return pos;
  return where(cx, broadcast(cx, inside, block, "at[].update"), pos,
               broadcast(cx, i32(total), block, "at[].update"));
}

// The flat positions of x[idx] for one integer index array in the leading
// axis: idx * stride plus an iota over the trailing block, wrapped, then
// clamped (`clip`) or routed to the out-of-range position n. As above, at
// the cost of the indexed blocks, not of x: `x.at[idx].add(v)` (and
// lax.dynamic_update_slice with traced starts) in a loop stays O(update).
std::optional<Tensor> array_index_positions(OpContext& cx, const Tensor& x,
                                            const std::vector<IndexItem>& items,
                                            const IndexOptions& opts) {
  const Shape& shape = av(x).shape;
  if (items.size() != 1 || items[0].kind != Kind::Array || shape.empty() ||
      !is_integer(av(items[0].array).dtype) || av(items[0].array).dtype == DType::Bool ||
      tracing_under_checkify(cx))
    return std::nullopt;
  auto i32 = [&](int64_t k) { return scalar(cx, Scalar::of_int(k), DType::Int32, false); };
  const int64_t n = shape[0], total = av(x).size();
  Shape block(shape.begin() + 1, shape.end());
  const int64_t stride = n ? total / n : 0;
  Tensor k = convert(cx, items[0].array, DType::Int32, false);
  if (opts.wrap_negative)
    k = where(cx, binary(cx, BinOp::Lt, k, i32(0)), binary(cx, BinOp::Add, k, i32(n)), k);
  std::optional<Tensor> inside;
  if (opts.clip)
    k = binary(cx, BinOp::Minimum, binary(cx, BinOp::Maximum, k, i32(0)),
               i32(std::max<int64_t>(n - 1, 0)));
  else
    inside = binary(cx, BinOp::BitAnd, binary(cx, BinOp::Ge, k, i32(0)),
                    binary(cx, BinOp::Lt, k, i32(n)));
  Tensor first = binary(cx, BinOp::Mul, k, i32(stride));
  Shape out = av(k).shape, lead = av(k).shape;
  out.insert(out.end(), block.begin(), block.end());
  lead.insert(lead.end(), block.size(), 1);
  Tensor pos = first;
  if (!block.empty()) {
    Tensor within = reshape_to(cx, iota(cx, DType::Int32, {stride}, 0), block);
    pos = binary(cx, BinOp::Add, broadcast(cx, reshape_to(cx, first, lead), out, "at[].update"),
                 broadcast(cx, within, out, "at[].update"));
  }
  if (!inside) return pos;
  return where(cx, broadcast(cx, reshape_to(cx, *inside, lead), out, "at[].update"), pos,
               broadcast(cx, i32(total), out, "at[].update"));
}

Tensor index_update_flat(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items0,
                         const Tensor& v, UpdateMode mode, const IndexOptions& opts);

namespace {

// The scatter primitive JAX's x.at[].<mode>() binds, and its update_jaxpr
// (a placeholder the jaxpr printer fills with fresh names; None for set).
std::pair<std::string, std::string> scatter_prim(UpdateMode mode, DType dtype) {
  const char* op = mode == UpdateMode::Add   ? "add"
                   : mode == UpdateMode::Sub ? "sub"
                   : mode == UpdateMode::Mul ? "mul"
                   : mode == UpdateMode::Min ? "min"
                   : mode == UpdateMode::Max ? "max"
                                             : nullptr;
  if (!op) return {"scatter", "None"};
  return {std::string("scatter-") + op, jaxpr_binary_update_param(op, dtype)};
}

// x.at[items].<mode>(v) as make_jaxpr shows JAX's scatter (jnp's
// _scatter_impl over _index_to_gather), for basic indices (integers, traced
// 0-d signed integers, slices of step 1, one `...`) or one integer array among
// such slices: the traced indices normalized (`select_n(i < 0, i, i + n)`)
// and converted to int32; the index components (an integer, an array, a
// slice's start unless the slice is full) broadcast to one index array and
// concatenated; x and v promoted to their common type; v broadcast to the
// slice's shape; one `scatter[dimension_numbers=...]` equation (scatter-add,
// -sub, -mul, -min, -max with its update_jaxpr) whose instructions, the flat
// scatter pxl computes, are hidden; the result converted back to x's type.
// Empty when not recording or not of that form.
std::optional<Tensor> update_as_scatter(OpContext& cx, const Tensor& x,
                                        const std::vector<IndexItem>& items0, const Tensor& v,
                                        UpdateMode mode, const IndexOptions& opts) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  const Shape& shape = av(x).shape;
  const int rank = static_cast<int>(shape.size());
  if (!tc || !tc->jaxpr_record || tracing_under_checkify(cx) || shape.empty() || items0.empty())
    return std::nullopt;
  if (mode != UpdateMode::Set && av(x).dtype == DType::Bool) return std::nullopt;
  auto int_array = [](const IndexItem& it) {
    return it.kind == Kind::Array && is_integer(av(it.array).dtype) &&
           av(it.array).dtype != DType::Bool;
  };
  int used = 0, ellipses = 0, arrays = 0, scalars = 0;
  for (const IndexItem& it : items0) {
    if (it.kind == Kind::Slice && it.step.value_or(1) != 1) return std::nullopt;
    if (it.kind == Kind::Array && !int_array(it)) return std::nullopt;
    if (it.kind == Kind::NewAxis) return std::nullopt;
    const bool scalar_index = it.kind == Kind::Int || (int_array(it) && av(it.array).shape.empty());
    scalars += scalar_index;
    arrays += it.kind == Kind::Array && !scalar_index;
    used += it.kind != Kind::Ellipsis;
    ellipses += it.kind == Kind::Ellipsis;
  }
  // (An array among integers broadcasts with them: JAX's advanced indexing, not done.)
  if (used > rank || ellipses > 1 || arrays > 1 || (arrays && scalars)) return std::nullopt;
  std::vector<IndexItem> items = expand_ellipsis(items0, rank);
  if (static_cast<int>(items.size()) != rank) return std::nullopt;
  for (const IndexItem& it : items)
    if (it.kind == Kind::Array && av(it.array).shape.empty() && !is_signed_int(av(it.array).dtype))
      return std::nullopt;

  // _index_to_gather's bookkeeping: the index components by axis (static, or
  // a traced scalar or array), the dimensions they remove, the shape v
  // broadcasts to and where its window dimensions are in it.
  struct Component {
    int64_t axis, start;
    const Tensor* index;
  };
  std::vector<Component> components;
  std::vector<int64_t> inserted, operand_dims, window_dims;
  Shape slice_shape, gather_shape; // gather_shape: the index array's, less its last axis
  bool empty = false;
  for (int k = 0; k < rank; ++k) {
    const IndexItem& it = items[static_cast<size_t>(k)];
    const int64_t n = shape[static_cast<size_t>(k)];
    if (it.kind == Kind::Slice) {
      const SliceRange r = resolve(it, n); // (step 1)
      const int64_t start = r.first, size = r.count;
      empty = empty || size == 0; // JAX then returns x, unscattered
      if (size != n) components.push_back({k, start, nullptr}), operand_dims.push_back(k);
      window_dims.push_back(static_cast<int64_t>(slice_shape.size()));
      slice_shape.push_back(size);
      continue;
    }
    if (n == 0) return std::nullopt; // an error, JAX's IndexError
    int64_t start = 0;
    if (it.kind == Kind::Int) {
      start = it.index < 0 && opts.wrap_negative ? it.index + n : it.index;
      if (start < 0 || start >= n) return std::nullopt;
    } else if (!av(it.array).shape.empty()) {
      gather_shape = av(it.array).shape;
      slice_shape.insert(slice_shape.end(), gather_shape.begin(), gather_shape.end());
    }
    components.push_back({k, start, it.kind == Kind::Int ? nullptr : &it.array});
    inserted.push_back(k);
    operand_dims.push_back(k);
  }
  const Shape& vs = av(v).shape;
  if (!empty) {
    if (vs.size() > slice_shape.size()) return std::nullopt;
    for (size_t k = 0; k < vs.size(); ++k)
      if (vs[k] != 1 && vs[k] != slice_shape[slice_shape.size() - vs.size() + k])
        return std::nullopt;
  }

  // The traced indices normalized first, then each component converted.
  std::vector<Tensor> normalized;
  for (const Component& c : components) {
    if (!c.index) continue;
    const Tensor& b = *c.index;
    const DType dt = av(b).dtype;
    if (!opts.wrap_negative || !is_signed_int(dt)) {
      normalized.push_back(b);
      continue;
    }
    normalized.push_back(wrapped_index(cx, b, shape[static_cast<size_t>(c.axis)]));
  }
  std::vector<Tensor> starts;
  size_t next = 0;
  for (const Component& c : components)
    starts.push_back(c.index ? convert(cx, normalized[next++], DType::Int32, false)
                             : scalar(cx, Scalar::of_int(c.start), DType::Int32, false));
  Shape index_shape = gather_shape;
  index_shape.push_back(1);
  std::vector<Tensor> columns;
  for (const Tensor& s : starts) {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < av(s).shape.size(); ++d) dims.push_back(static_cast<int64_t>(d));
    columns.push_back(dims.empty() ? broadcast(cx, s, index_shape, "at[].update")
                                   : expand_dims_at(cx, s, {static_cast<int64_t>(dims.size())}));
  }
  // (No components, all slices full: JAX's index is a constant i32[0].)
  Tensor index_vector = columns.empty() ? cx.constant(Array(DType::Int32, {0}))
                        : columns.size() == 1
                            ? columns[0]
                            : concatenate(cx, columns, static_cast<int>(gather_shape.size()));
  if (empty) return x;

  const PromotedType pt = result_type({x, v});
  const bool promoted = pt.dtype != av(x).dtype || pt.weak != av(x).weak;
  Tensor operand = promoted ? convert(cx, x, pt.dtype, pt.weak) : x;
  Tensor update = convert(cx, v, pt.dtype, pt.weak);
  if (av(update).shape != slice_shape) update = broadcast(cx, update, slice_shape, "at[].update");
  const std::string scatter_mode = opts.clip                ? "CLIP"
                                   : opts.promise_in_bounds ? "PROMISE_IN_BOUNDS"
                                                            : "FILL_OR_DROP";
  const std::string basic = arrays ? "False" : "True"; // sorted and unique
  auto [prim, update_jaxpr] = scatter_prim(mode, pt.dtype);
  int region = begin_opaque(
      *tc, prim, {tc->value_of(operand), tc->value_of(index_vector), tc->value_of(update)},
      {{"dimension_numbers", "ScatterDimensionNumbers(update_window_dims=" + py_seq(window_dims) +
                                 ", inserted_window_dims=" + py_seq(inserted) +
                                 ", scatter_dims_to_operand_dims=" + py_seq(operand_dims) +
                                 ", operand_batching_dims=(), scatter_indices_batching_dims=())"},
       {"indices_are_sorted", basic},
       {"mode", "GatherScatterMode." + scatter_mode},
       {"unique_indices", basic},
       {"update_consts", "()"},
       {"update_jaxpr", update_jaxpr}});
  Tensor out = index_update_flat(cx, operand, items0, v, mode, opts);
  jaxpr_end_region(*tc, region, {tc->value_of(out)});
  return promoted ? convert(cx, out, av(x).dtype, av(x).weak) : out;
}

} // namespace

Tensor index_update(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                    const Tensor& v, UpdateMode mode, const IndexOptions& opts) {
  if (auto shown = update_as_scatter(cx, x, items, v, mode, opts)) return *shown;
  return index_update_flat(cx, x, items, v, mode, opts);
}

Tensor index_update_flat(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items0,
                         const Tensor& v, UpdateMode mode, const IndexOptions& opts) {
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
  Tensor pos;
  // Integers and slices, or one leading index array, take a direct route;
  // the others index an iota of all of x.
  auto all_positions = [&] { return reshape_to(cx, iota(cx, DType::Int32, {n}, 0), av(x).shape); };
  std::optional<Tensor> direct = basic_index_positions(cx, x, items0, opts);
  if (!direct) direct = array_index_positions(cx, x, items0, opts);
  if (direct) {
    pos = *direct;
  } else if (opts.clip) {
    pos = index_clamped(cx, all_positions(), items0, opts.wrap_negative);
  } else {
    auto [padded, routed] =
        route_out_of_range(cx, all_positions(), items0,
                           scalar(cx, Scalar::of_int(n), DType::Int32, false), opts.wrap_negative);
    pos = index_clamped(cx, padded, routed, true);
  }
  // As JAX: the update runs in the promoted type of x and v, and the result
  // converts back to x's type (an int array's .add(0.5) rounds after adding).
  PromotedType pt = result_type({x, v});
  Tensor vp = convert(cx, v, pt.dtype, pt.weak);
  const Shape& ps = av(pos).shape;
  const Shape& vs = av(v).shape;
  auto type_of = [&](const Shape& sh) { return array_type_str(pt.dtype, sh); };
  if (vs.size() > ps.size())
    throw Error(ErrCode::Shape, "Cannot broadcast to shape with fewer dimensions: arr_shape=" +
                                    shape_str(vs) + " shape=" + shape_str(ps));
  for (size_t i = 0; i < vs.size(); ++i)
    if (vs[i] != 1 && vs[i] != ps[ps.size() - vs.size() + i])
      throw Error(ErrCode::Shape, "Incompatible types for broadcasting: input type=" + type_of(vs) +
                                      " and requested type=" + type_of(ps));
  Tensor upd = broadcast(cx, vp, ps, "at[].update");
  OpAttrs a;
  a.axis = 0;
  switch (mode) {
  case UpdateMode::Set:
    a.mode = ScatterMode::Set;
    break;
  case UpdateMode::Add:
    a.mode = ScatterMode::Add;
    break;
  case UpdateMode::Sub: // adds -v (in the promoted type, as JAX's scatter-sub)
    a.mode = ScatterMode::Add;
    upd = unary(cx, UnOp::Neg, upd);
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
  Tensor flat = bind(cx, Op::Scatter, a, {ravel(cx, convert(cx, x, pt.dtype, pt.weak)), pos, upd});
  return convert(cx, reshape_to(cx, flat, av(x).shape), av(x).dtype, av(x).weak);
}

Tensor index_update(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                    const Tensor& v, UpdateMode mode, bool clip) {
  IndexOptions opts;
  opts.clip = clip;
  return index_update(cx, x, items, v, mode, opts);
}

Tensor index_counts(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                    const IndexOptions& opts) {
  Tensor zeros = fill(cx, av(x).shape, Scalar::of_int(0), DType::Int32, false);
  return index_update(cx, zeros, items, scalar(cx, Scalar::of_int(1), DType::Int32, false),
                      UpdateMode::Add, opts);
}

} // namespace pxl::np
