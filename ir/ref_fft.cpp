// lax.fft's reference kernel: the transforms XLA's CPU runtime runs (DUCC's
// pocketfft, ir/ref_fft_pocket.cpp) over the trailing axes in its order: a
// complex transform goes over the axes innermost first, the 1/n of an inverse
// scaling the first of them; a real forward transform does the last axis
// first (real to complex), an inverse one the last axis last.
#include <optional>

#include "ir/ref_fft_pocket.hpp"
#include "ir/ref_util.hpp"

namespace pxl::ref {

namespace {

using Cf = std::complex<float>;

// The extent of axis `ax` and the strides around it in a row-major `shape`.
struct Lines {
  int64_t n, inner, outer;
  Lines(const Shape& shape, size_t ax) : n(shape[ax]), inner(1), outer(1) {
    for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
    for (size_t d = 0; d < ax; ++d) outer *= shape[d];
  }
  size_t at(int64_t o, int64_t k, int64_t i) const {
    return static_cast<size_t>((o * n + k) * inner + i);
  }
};

// Complex transforms of every line along axis `ax`, scaled by `fct`.
void c2c_axis(std::vector<Cf>& data, const Shape& shape, size_t ax, bool fwd, float fct) {
  Lines l(shape, ax);
  if (l.n == 0) return;
  // DUCC runs the lines eight at a time in SIMD lanes with the plain plan;
  // the lines left over go one by one through its plan for single lines.
  auto n = static_cast<size_t>(l.n);
  int64_t lines = l.outer * l.inner, in_lanes = lines / 8 * 8, t = 0;
  // Each plan is built only if some line uses it (a plan computes n roots).
  std::optional<pocket::ComplexPlan> lanes, single;
  if (in_lanes > 0) lanes.emplace(n, false);
  if (in_lanes < lines) single.emplace(n, true);
  std::vector<Cf> line(n);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i, ++t) {
      for (int64_t k = 0; k < l.n; ++k) line[static_cast<size_t>(k)] = data[l.at(o, k, i)];
      (t < in_lanes ? *lanes : *single).exec(line.data(), fwd, fct);
      for (int64_t k = 0; k < l.n; ++k) data[l.at(o, k, i)] = line[static_cast<size_t>(k)];
    }
}

// 1 / (the product of the transformed lengths), in double as XLA computes it.
float inverse_scale(const Shape& full, size_t first_axis) {
  double n = 1.0;
  for (size_t ax = first_axis; ax < full.size(); ++ax) n *= static_cast<double>(full[ax]);
  return static_cast<float>(1.0 / n);
}

} // namespace

Array fft(const Array& x, const OpAttrs& a, const AVal& oa) {
  int type = static_cast<int>(a.axis); // 0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT
  size_t rank = oa.shape.size(), k = a.shape.size(), first = rank - k;
  Array out(oa.dtype, oa.shape, oa.weak);
  if (type <= 1) {
    const auto* xs = x.as<Cf>();
    std::vector<Cf> data(xs, xs + x.size());
    float fct = type == 1 ? inverse_scale(oa.shape, first) : 1.0f;
    for (size_t ax = rank; ax-- > first; fct = 1.0f) c2c_axis(data, oa.shape, ax, type == 0, fct);
    std::copy(data.begin(), data.end(), out.as<Cf>());
    return out;
  }
  if (type == 2) {
    // Real to complex along the last axis, then the complex ones.
    Shape in = x.shape();
    int64_t n = in.back(), h = oa.shape.back(), rows = n ? x.size() / n : 0;
    std::vector<Cf> data(static_cast<size_t>(out.size()));
    if (n > 0) {
      pocket::RealPlan plan(static_cast<size_t>(n));
      const float* xs = x.as<float>();
      for (int64_t r = 0; r < rows; ++r) plan.r2c(xs + r * n, data.data() + r * h, 1.0f);
    }
    for (size_t ax = first; ax + 1 < rank; ++ax) c2c_axis(data, oa.shape, ax, true, 1.0f);
    std::copy(data.begin(), data.end(), out.as<Cf>());
    return out;
  }
  // IRFFT: the complex inverse transforms of the half spectrum, then complex
  // to real along the last axis with the whole 1/n.
  const auto* xs = x.as<Cf>();
  std::vector<Cf> data(xs, xs + x.size());
  for (size_t ax = first; ax + 1 < rank; ++ax) c2c_axis(data, x.shape(), ax, false, 1.0f);
  int64_t n = oa.shape.back(), h = x.shape().back(), rows = n ? out.size() / n : 0;
  if (n > 0) {
    pocket::RealPlan plan(static_cast<size_t>(n));
    float fct = inverse_scale(oa.shape, first);
    for (int64_t r = 0; r < rows; ++r) plan.c2r(data.data() + r * h, out.as<float>() + r * n, fct);
  }
  return out;
}

} // namespace pxl::ref
