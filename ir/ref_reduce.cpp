// Reference reductions and scans. Half types accumulate in float and round once
// at the end (jnp upcasts float16 for sums); ints wrap.
#include <algorithm>
#include <limits>

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

} // namespace

Array reduce(Reduction r, const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out(oa.dtype, oa.shape, oa.weak);
  std::vector<int64_t> st = out_strides(x.shape(), a.axes, oa.shape);
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    bool single = r == Reduction::Sum && x.size() == out.size();
    std::vector<C> acc(static_cast<size_t>(out.size()), single ? neg_zero<C>() : reduce_init<C>(r));
    const auto* xs = x.as<typename E::S>();
    for_each_index(x.shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
      int64_t o = 0;
      for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * st[d];
      acc[static_cast<size_t>(o)] =
          reduce_step<C>(r, acc[static_cast<size_t>(o)], E::load(xs[flat]));
    });
    auto* os = out.as<typename E::S>();
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

Array cumsum(const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out(oa.dtype, oa.shape, oa.weak);
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1, n = x.shape()[ax];
  for (size_t d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (size_t d = ax + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    const auto* xs = x.as<typename E::S>();
    auto* os = out.as<typename E::S>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        // rounded after every step, like a chain of adds
        typename E::S acc = E::store(n == 1 ? neg_zero<C>() : C(0));
        for (int64_t s = 0; s < n; ++s) {
          int64_t k = a.reverse ? n - 1 - s : s;
          int64_t at = (o * n + k) * inner + i;
          C v = E::load(xs[at]);
          if constexpr (is_int_v<C>)
            acc = E::store(wrap_add(E::load(acc), v));
          else
            acc = E::store(static_cast<C>(E::load(acc) + v));
          os[at] = acc;
        }
      }
  });
  return out;
}

} // namespace pxl::ref
