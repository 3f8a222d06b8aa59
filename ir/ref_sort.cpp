// The argsort kernel: a stable sort of each line's positions by lax.sort's
// comparator, O(n log n) per line.
#include <algorithm>
#include <numeric>

#include "ir/ref_util.hpp"

namespace pxl::ref {

namespace {

// lax.sort's order on one dtype's compute values: NaN after everything and
// equal to NaN (-0.0 == 0.0 as IEEE compares them); complex by real part, then
// imaginary part, a NaN in either part last.
template <class C> bool is_nan(const C& v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else if constexpr (std::is_same_v<C, std::complex<float>>)
    return std::isnan(v.real()) || std::isnan(v.imag());
  else
    return false;
}
template <class C> bool sorts_before(const C& a, const C& b) {
  bool na = is_nan(a), nb = is_nan(b);
  if (na || nb) return !na && nb;
  if constexpr (std::is_same_v<C, std::complex<float>>)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else
    return a < b;
}

} // namespace

Array argsort(const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out(oa.dtype, oa.shape, oa.weak);
  if (out.size() == 0) return out;
  auto ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1, n = x.shape()[ax];
  for (size_t d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (size_t d = ax + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  auto* os = out.as<int32_t>();
  visit_dtype(x.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    // (bools as bytes: std::vector<bool> packs bits)
    using C = std::conditional_t<std::is_same_v<typename E::C, bool>, uint8_t, typename E::C>;
    const auto* xs = x.as<typename E::S>();
    std::vector<C> line(static_cast<size_t>(n));
    std::vector<int32_t> perm(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t s = 0; s < n; ++s)
          line[static_cast<size_t>(s)] = E::load(xs[(o * n + s) * inner + i]);
        std::iota(perm.begin(), perm.end(), 0);
        std::stable_sort(perm.begin(), perm.end(), [&](int32_t p, int32_t q) {
          return sorts_before(line[static_cast<size_t>(p)], line[static_cast<size_t>(q)]);
        });
        for (int64_t s = 0; s < n; ++s) os[(o * n + s) * inner + i] = perm[static_cast<size_t>(s)];
      }
  });
  return out;
}

} // namespace pxl::ref
