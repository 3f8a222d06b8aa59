// Reference reductions and scans. Half types accumulate in float and round once
// at the end (jnp upcasts float16 for sums); ints wrap.
#include <algorithm>
#include <limits>

#include "ir/reduce_tree.hpp"
#include "ir/ref_complex.hpp"
#include "ir/ref_reduce_ynn.hpp"
#include "ir/ref_util.hpp"

namespace pxl::ref {

namespace {

template <class C> C reduce_init(Reduction r) {
  if constexpr (is_complex_v<C>) { // sums, products, lexicographic max/min (the shape rule)
    constexpr float inf = std::numeric_limits<float>::infinity();
    if (r == Reduction::Max) return C(-inf, -inf);
    if (r == Reduction::Min) return C(inf, inf);
    return r == Reduction::Prod ? C(1) : C(0);
  } else
    switch (r) {
    case Reduction::Sum:
      return C(0);
    case Reduction::Prod:
      return C(1);
    case Reduction::Max:
      if constexpr (std::is_same_v<C, bool>)
        return false;
      else if constexpr (is_float_v<C>)
        return -std::numeric_limits<C>::infinity();
      else
        return std::numeric_limits<C>::lowest();
    case Reduction::Min:
      if constexpr (std::is_same_v<C, bool>)
        return true;
      else if constexpr (is_float_v<C>)
        return std::numeric_limits<C>::infinity();
      else
        return std::numeric_limits<C>::max();
    case Reduction::And:
      if constexpr (is_int_v<C>)
        return static_cast<C>(~C(0)); // all bits set
      else
        return C(1);
    case Reduction::Or:
      return C(0);
    }
  return C(0);
}

template <class C> C reduce_step(Reduction r, C acc, C v) {
  switch (r) {
  case Reduction::Sum:
    if constexpr (is_int_v<C>)
      return wrap_add(acc, v);
    else
      return static_cast<C>(acc + v);
  case Reduction::Prod:
    if constexpr (is_int_v<C>)
      return wrap_mul(acc, v);
    else if constexpr (std::is_same_v<C, cplx::C>)
      return cplx::mul(acc, v); // XLA's products, fused as LLVM fuses them
    else
      return static_cast<C>(acc * v);
  case Reduction::Max:
    return nan_max(acc, v);
  case Reduction::Min:
    return nan_min(acc, v);
  case Reduction::And:
    if constexpr (is_float_v<C> || is_complex_v<C>)
      return acc; // rejected by the shape rule
    else
      return static_cast<C>(acc & v);
  case Reduction::Or:
    if constexpr (is_float_v<C> || is_complex_v<C>)
      return acc;
    else
      return static_cast<C>(acc | v);
  }
  return acc;
}

// The identity of addition: a sum of one element is that element, -0.0 included, as XLA
// turns a reduction (or cumulative sum) over size-1 axes into a reshape. Longer sums start
// from XLA's +0.0, so [-0.0, -0.0] sums to 0.0 as there.
template <class C> C neg_zero() {
  if constexpr (is_complex_v<C>)
    return C(-0.0f, -0.0f);
  else if constexpr (is_float_v<C>)
    return C(-0.0);
  else
    return C(0);
}

// Out-index stride of each input axis (0 for reduced axes).
std::vector<int64_t> out_strides(const Shape& in, const std::vector<int64_t>& axes,
                                 const Shape& out) {
  std::vector<int64_t> os = strides_of(out), res(in.size(), 0);
  size_t k = 0;
  for (size_t d = 0; d < in.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
      res[d] = os[k++];
  return res;
}

// A float sum XLA hands to YNNPACK (ref_reduce_ynn.hpp); float16 is summed
// in float32 and rounded once, as XLA converts it first.
Array ynn_reduce_sum(const Array& x, std::vector<int64_t> axes, const AVal& oa) {
  Array out(oa.dtype, oa.shape, oa.weak);
  std::sort(axes.begin(), axes.end());
  int threads = xla_cpu_threads();
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
      const auto* xs = x.as<typename E::S>();
      std::vector<C> wide;
      const C* p = nullptr;
      if constexpr (std::is_same_v<typename E::S, C>) {
        p = xs;
      } else {
        wide.resize(static_cast<size_t>(x.size()));
        for (size_t i = 0; i < wide.size(); ++i) wide[i] = E::load(xs[i]);
        p = wide.data();
      }
      std::vector<C> sums(static_cast<size_t>(out.size()));
      ynn_sum<C>(p, x.shape(), axes, threads, sums.data());
      auto* os = out.as<typename E::S>();
      for (size_t i = 0; i < sums.size(); ++i) os[i] = E::store(sums[i]);
    }
  });
  return out;
}

// A float8/float4 sum or product: XLA accumulates in the type itself, so each
// step rounds (twenty ones sum to 16 in float8_e4m3fn); row-major order.
Array small_float_reduce(Reduction r, const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out(oa.dtype, oa.shape, oa.weak);
  const DType d = x.dtype();
  std::vector<float> acc(static_cast<size_t>(out.size()), r == Reduction::Prod ? 1.0f : 0.0f);
  std::vector<bool> started(acc.size(), false);
  const std::vector<int64_t> to = out_strides(x.shape(), a.axes, oa.shape);
  for_each_index(x.shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    size_t o = 0;
    for (size_t k = 0; k < idx.size(); ++k) o += static_cast<size_t>(idx[k] * to[k]);
    const float v = static_cast<float>(small_to_float(d, x.as<uint8_t>()[flat]));
    float s = !started[o] ? v : r == Reduction::Prod ? acc[o] * v : acc[o] + v;
    acc[o] = static_cast<float>(small_to_float(d, float_to_small(d, s)));
    started[o] = true;
  });
  for (size_t o = 0; o < acc.size(); ++o)
    out.as<uint8_t>()[o] = float_to_small(d, acc[o]); // (an empty sum: 0, product: 1)
  return out;
}

} // namespace

Array reduce(Reduction r, const Array& x, const OpAttrs& a, const AVal& oa) {
  if (is_small_float(x.dtype()) && (r == Reduction::Sum || r == Reduction::Prod))
    return small_float_reduce(r, x, a, oa);
  if (r == Reduction::Sum && ynn_sum_applies(x.dtype(), x.shape(), a.axes))
    return ynn_reduce_sum(x, a.axes, oa);
  Array out(oa.dtype, oa.shape, oa.weak);
  std::vector<int64_t> reduced_extents;
  for (int64_t ax : a.axes) reduced_extents.push_back(x.shape()[static_cast<size_t>(ax)]);
  std::vector<ReduceTreeLevel> levels;
  if (reduce_order_matters(r == Reduction::Sum || r == Reduction::Prod, x.dtype()))
    levels = reduce_tree(reduced_extents);
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    const auto* xs = x.as<typename E::S>();
    // Accumulates every element of `shape` (read by `get`) into its output
    // under `to` (a flat output index per input index), in row-major order.
    auto accumulate = [&](const Shape& shape, auto get, auto to, std::vector<C>& acc) {
      for_each_index(shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
        size_t o = static_cast<size_t>(to(idx));
        acc[o] = reduce_step<C>(r, acc[o], get(flat));
      });
    };
    // XLA's tree (ir/reduce_tree.hpp): each level's windows, accumulated
    // over the whole array by one row-major walk, which visits every
    // window's elements in its row-major order.
    Shape shape = x.shape();
    // Over the minor-most axes XLA's loops vectorize (reduce_row_lanes).
    bool trailing = reduces_minor_axes(shape, a.axes);
    std::vector<C> level;
    // Lanes combined by halving: lane i with lane i + n/2, ... (LLVM's vector reduction).
    auto halve = [&](std::vector<C>& lane) {
      for (size_t h = lane.size() / 2; h >= 1; h /= 2)
        for (size_t i = 0; i < h; ++i) lane[i] = reduce_step<C>(r, lane[i], lane[i + h]);
      return lane[0];
    };
    auto get = [&](int64_t flat) {
      return level.empty() ? E::load(xs[flat]) : level[static_cast<size_t>(flat)];
    };
    for (size_t l = 1; l < levels.size(); ++l) {
      Shape next = shape;
      for (size_t k = 0; k < a.axes.size(); ++k)
        next[static_cast<size_t>(a.axes[k])] = levels[l].extent[k];
      std::vector<int64_t> ns = strides_of(next);
      std::vector<int64_t> window(shape.size(), 1), lo(shape.size(), 0);
      for (size_t k = 0; k < a.axes.size(); ++k) {
        window[static_cast<size_t>(a.axes[k])] = levels[l].window[k];
        lo[static_cast<size_t>(a.axes[k])] = levels[l].lo[k];
      }
      int64_t size = 1;
      for (int64_t e : next) size *= e;
      std::vector<C> acc(static_cast<size_t>(size), reduce_init<C>(r));
      size_t rows = 0, cols = 0;
      int64_t lanes = 0;
      if constexpr (is_float_v<C>)
        if (trailing)
          lanes = reduce_window_lanes(levels, l, static_cast<int64_t>(sizeof(C)), rows, cols);
      if constexpr (is_float_v<C>)
        if (lanes > 0) {
          // Node by node: its window's rows go to lanes, then halving.
          std::vector<int64_t> st = strides_of(shape);
          Shape box(shape.size(), 1);
          for (size_t k = 0; k < a.axes.size(); ++k)
            box[static_cast<size_t>(a.axes[k])] = levels[l].window[k];
          size_t row_dim = static_cast<size_t>(a.axes[rows]);
          int64_t body = box[row_dim] - row_lanes_tail(box[row_dim], lanes);
          for_each_index(next, [&](const std::vector<int64_t>& idx, int64_t flat) {
            int64_t base = 0;
            for (size_t d = 0; d < idx.size(); ++d) base += idx[d] * window[d] * st[d];
            // The rows of the vector loop (tail = false), then the epilogue's.
            auto visit = [&](bool tail, auto add) {
              for_each_index(box, [&](const std::vector<int64_t>& t, int64_t) {
                if ((t[row_dim] >= body) != tail) return;
                int64_t src = base;
                for (size_t d = 0; d < t.size(); ++d) src += t[d] * st[d];
                add(t[row_dim], get(src));
              });
            };
            std::vector<C> lane(static_cast<size_t>(lanes), reduce_init<C>(r));
            visit(false, [&](int64_t row, C v) {
              C& l = lane[static_cast<size_t>(row % lanes)];
              l = reduce_step<C>(r, l, v);
            });
            C sum = halve(lane);
            visit(true, [&](int64_t, C v) { sum = reduce_step<C>(r, sum, v); });
            acc[static_cast<size_t>(flat)] = sum;
          });
        }
      if (lanes == 0)
        accumulate(
            shape, get,
            [&](const std::vector<int64_t>& idx) {
              int64_t o = 0;
              for (size_t d = 0; d < idx.size(); ++d) o += (idx[d] + lo[d]) / window[d] * ns[d];
              return o;
            },
            acc);
      level = std::move(acc);
      shape = std::move(next);
    }
    auto* os = out.as<typename E::S>();
    // The last level over the minor-most axes, vectorized across rows as
    // XLA's CPU code is (reduce_row_lanes).
    if constexpr (is_float_v<C>) {
      std::vector<int64_t> box;
      for (int64_t ax : a.axes)
        if (shape[static_cast<size_t>(ax)] != 1) box.push_back(shape[static_cast<size_t>(ax)]);
      int64_t lanes =
          !levels.empty() && trailing
              ? reduce_box_lanes(box, levels.size(), static_cast<int64_t>(sizeof(C)),
                                 r == Reduction::Sum ? loop_body_from(a.loop_body) : LoopBody::Load)
              : 0;
      if (lanes > 0) {
        // Boxes of the last two axes; the loops outside them (more reduced
        // axes, none longer than 32) carry the sum into lane 0 of the next.
        int64_t rows = box[box.size() - 2], cols = box.back(), outer = 1;
        int64_t body = rows - row_lanes_tail(rows, lanes);
        for (size_t k = 0; k + 2 < box.size(); ++k) outer *= box[k];
        for (int64_t o = 0; o < out.size(); ++o) {
          C carry = reduce_init<C>(r);
          for (int64_t q = 0; q < outer; ++q) {
            auto elem = [&](int64_t i, int64_t j) {
              return get(((o * outer + q) * rows + i) * cols + j);
            };
            std::vector<C> acc(static_cast<size_t>(lanes), reduce_init<C>(r));
            acc[0] = carry;
            for (int64_t i = 0; i < body; ++i)
              for (int64_t j = 0; j < cols; ++j) {
                C& l = acc[static_cast<size_t>(i % lanes)];
                l = reduce_step<C>(r, l, elem(i, j));
              }
            carry = halve(acc);
            for (int64_t i = body; i < rows; ++i)
              for (int64_t j = 0; j < cols; ++j) carry = reduce_step<C>(r, carry, elem(i, j));
          }
          os[o] = E::store(carry);
        }
        return;
      }
    }
    std::vector<int64_t> st = out_strides(shape, a.axes, oa.shape);
    bool single = r == Reduction::Sum && x.size() == out.size();
    std::vector<C> acc(static_cast<size_t>(out.size()), single ? neg_zero<C>() : reduce_init<C>(r));
    accumulate(
        shape, get,
        [&](const std::vector<int64_t>& idx) {
          int64_t o = 0;
          for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * st[d];
          return o;
        },
        acc);
    for (size_t i = 0; i < acc.size(); ++i) os[i] = E::store(acc[i]);
  });
  return out;
}

Array arg_reduce(bool is_max, const Array& x, const OpAttrs& a, const AVal& oa) {
  // First occurrence wins; a NaN beats everything (its first occurrence), as in JAX.
  Array out(oa.dtype, oa.shape, oa.weak);
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1, n = x.shape()[ax];
  for (size_t d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (size_t d = ax + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    const auto* xs = x.as<typename E::S>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best_k = 0;
        C best = E::load(xs[o * n * inner + i]);
        for (int64_t k = 1; k < n && !is_complex_v<C>; ++k) { // complex: rejected by the shape rule
          if constexpr (is_float_v<C>)
            if (std::isnan(best)) break;
          C v = E::load(xs[(o * n + k) * inner + i]);
          bool better = false;
          if constexpr (!is_complex_v<C>) better = is_max ? v > best : v < best;
          if constexpr (is_float_v<C>) better = better || std::isnan(v);
          if (better) best = v, best_k = k;
        }
        out.set(o * inner + i, Scalar::of_int(best_k));
      }
  });
  return out;
}

namespace {

// The inclusive prefix sums of `w` lanes of n elements each (suffix sums when
// `reverse`) as XLA's CPU pipeline adds them: v[s * w + lane] is element s of
// a lane, and every lane is added in the same order, so neighbouring lanes
// (a cumsum over a leading axis) are scanned together, in cache order. A
// cumulative sum is a reduce-window whose windows reach back to the start
// (forward to the end), each added left to right from zero: in order for
// prefixes, each suffix on its own. Longer axes go through XLA's
// ReduceWindowRewriter (base 16): rows of 16 from the start, zero-padded at
// the end, each row scanned as above, the row totals scanned the same way
// (recursively), and each element plus the sum of the rows before it (after
// it). `add` rounds like the element type.
template <class C, class Add>
std::vector<C> xla_scan(const std::vector<C>& v, size_t w, bool reverse, Add add) {
  constexpr size_t kBase = 16;
  const size_t n = w ? v.size() / w : 0;
  // out[j] for j in [lo, hi) (element indices): the window sums of src.
  auto window = [&](const std::vector<C>& src, size_t lo, size_t hi, std::vector<C>& out) {
    for (size_t j = lo; j < hi; ++j)
      for (size_t l = 0; l < w; ++l) {
        if (!reverse) {
          C prev = j == lo ? C(0) : out[(j - 1) * w + l];
          out[j * w + l] = add(prev, src[j * w + l]);
          continue;
        }
        C suffix = C(0);
        for (size_t k = j; k < hi; ++k) suffix = add(suffix, src[k * w + l]);
        out[j * w + l] = suffix;
      }
  };
  std::vector<C> out(n * w);
  if (n <= kBase) {
    window(v, 0, n, out);
    return out;
  }
  size_t rows = (n + kBase - 1) / kBase;
  std::vector<C> padded(rows * kBase * w, C(0)), inner(rows * kBase * w), totals(rows * w);
  std::copy(v.begin(), v.end(), padded.begin());
  for (size_t r = 0; r < rows; ++r) {
    window(padded, r * kBase, (r + 1) * kBase, inner);
    size_t last = reverse ? r * kBase : (r + 1) * kBase - 1;
    std::copy_n(inner.begin() + static_cast<long>(last * w), w,
                totals.begin() + static_cast<long>(r * w));
  }
  std::vector<C> others = xla_scan(totals, w, reverse, add);
  for (size_t k = 0; k < n; ++k) {
    size_t r = k / kBase;
    bool none = reverse ? r + 1 == rows : r == 0;
    size_t from = reverse ? r + 1 : r - 1;
    for (size_t l = 0; l < w; ++l)
      out[k * w + l] = add(inner[k * w + l], none ? C(0) : others[from * w + l]);
  }
  return out;
}

} // namespace

Array cumsum(const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out(oa.dtype, oa.shape, oa.weak);
  if (out.size() == 0) return out; // (an empty axis beside a huge one: nothing to add)
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1, n = x.shape()[ax];
  for (size_t d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (size_t d = ax + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    const auto* xs = x.as<typename E::S>();
    auto* os = out.as<typename E::S>();
    auto at_of = [&](int64_t o, int64_t i, int64_t s) { return (o * n + s) * inner + i; };
    if constexpr (!is_int_v<C>) {
      if (n > 16 || (a.reverse && n > 2)) { // XLA's order (xla_scan)
        auto add = [](C p, C q) { return E::load(E::store(static_cast<C>(p + q))); };
        // Up to kLanes neighbouring lines at a time, each element's lanes contiguous.
        constexpr int64_t kLanes = 64;
        std::vector<C> lines;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i0 = 0; i0 < inner; i0 += kLanes) {
            const int64_t w = std::min(kLanes, inner - i0);
            lines.resize(static_cast<size_t>(n * w));
            for (int64_t s = 0; s < n; ++s)
              for (int64_t l = 0; l < w; ++l)
                lines[static_cast<size_t>(s * w + l)] = E::load(xs[at_of(o, i0 + l, s)]);
            std::vector<C> sums = xla_scan(lines, static_cast<size_t>(w), a.reverse, add);
            for (int64_t s = 0; s < n; ++s)
              for (int64_t l = 0; l < w; ++l)
                os[at_of(o, i0 + l, s)] = E::store(sums[static_cast<size_t>(s * w + l)]);
          }
        return;
      }
    }
    // Rounded after every step, like a chain of adds; the lines of one outer
    // index advance together (s outside, so a leading axis is read in order).
    std::vector<typename E::S> acc(static_cast<size_t>(inner));
    for (int64_t o = 0; o < outer; ++o) {
      std::fill(acc.begin(), acc.end(), E::store(n == 1 ? neg_zero<C>() : C(0)));
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = a.reverse ? n - 1 - s : s;
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = at_of(o, i, k);
          C v = E::load(xs[at]);
          auto& c = acc[static_cast<size_t>(i)];
          if constexpr (is_int_v<C>)
            c = E::store(wrap_add(E::load(c), v));
          else
            c = E::store(static_cast<C>(E::load(c) + v));
          os[at] = c;
        }
      }
    }
  });
  return out;
}

} // namespace pxl::ref
