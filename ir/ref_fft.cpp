// lax.fft's reference kernel: every 1-D transform of the trailing axes is a
// DFT computed in double precision (mixed radix, Bluestein's chirp-z for
// long prime lengths), rounded to float32 once at the end.
#include <cmath>
#include <numbers>

#include "ir/ref_util.hpp"

namespace pxl::ref {

namespace {

using Cd = std::complex<double>;

// exp(sign * 2*pi*i * k / n), exact at multiples of a quarter turn and
// symmetric (the roots for k and n - k are exact conjugates, those for k and
// n/2 - k mirror images), so that sums which cancel in exact arithmetic, such
// as the imaginary parts of a real signal's DC and Nyquist terms or the
// transform of a constant, cancel exactly here too. k is reduced mod n so
// that large k keep their precision.
Cd root(int64_t k, int64_t n, int sign) {
  k %= n;
  if (k < 0) k += n;
  if (2 * k > n) return std::conj(root(n - k, n, sign)); // the lower half turn
  if ((4 * k) % n == 0) {
    switch ((4 * k) / n) {
    case 0:
      return {1, 0};
    case 1:
      return {0, double(sign)};
    default:
      return {-1, 0};
    }
  }
  if (4 * k > n) { // the second quarter: exp(i(pi - t)) = -conj(exp(it))
    Cd r = root(n - 2 * k, 2 * n, sign);
    return {-r.real(), r.imag()};
  }
  // 30, 45 and 60 degrees: cosines and sines of exactly 0.5 (or one value for
  // both), so that the radix-3, -4 and -6 sums of equal terms cancel exactly.
  if ((12 * k) % n == 0 || (8 * k) % n == 0) {
    double half = 0.5, r3 = std::sqrt(0.75), r2 = std::sqrt(0.5);
    if (12 * k == n) return {r3, sign * half};
    if (8 * k == n) return {r2, sign * r2};
    if (6 * k == n) return {half, sign * r3};
  }
  double t = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
  return {std::cos(t), sign * std::sin(t)};
}

// Above this prime length a DFT is Bluestein's convolution, not a direct sum.
constexpr size_t kDirectPrime = 1024;

void dft(std::vector<Cd>& a, int sign);

// Bluestein: X[k] = conj(w[k]) * sum_j (a[j] conj(w[j])) w[k-j], w[j] =
// exp(-sign*pi*i*j^2/n), a convolution done with power-of-two DFTs.
void bluestein(std::vector<Cd>& a, int sign) {
  size_t n = a.size();
  size_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  std::vector<Cd> w(n);
  for (size_t j = 0; j < n; ++j) {
    // j^2 mod 2n keeps the angle exact for large j.
    auto jj = static_cast<int64_t>((static_cast<unsigned __int128>(j) * j) % (2 * n));
    w[j] = root(jj, static_cast<int64_t>(2 * n), -sign);
  }
  std::vector<Cd> x(m), y(m);
  for (size_t j = 0; j < n; ++j) x[j] = a[j] * std::conj(w[j]);
  y[0] = w[0];
  for (size_t j = 1; j < n; ++j) y[j] = y[m - j] = w[j];
  dft(x, -1);
  dft(y, -1);
  for (size_t j = 0; j < m; ++j) x[j] *= y[j];
  dft(x, 1);
  double inv_m = 1.0 / static_cast<double>(m);
  for (size_t k = 0; k < n; ++k) a[k] = x[k] * inv_m * std::conj(w[k]);
}

size_t smallest_factor(size_t n) {
  for (size_t p = 2; p * p <= n; ++p)
    if (n % p == 0) return p;
  return n;
}

// Mixed-radix decimation in time (pocketfft's structure): n = p * m with p
// the smallest prime factor; the p interleaved subsequences are transformed,
// twiddled by exp(sign 2 pi i r k / n), and combined by a p-point butterfly
// that pairs terms r and p - r (their sum times a cosine, their difference
// times a sine), so equal inputs cancel exactly as in pocketfft.
void dft(std::vector<Cd>& a, int sign) {
  size_t n = a.size();
  if (n <= 1) return;
  size_t p = smallest_factor(n);
  if (p == n && n > kDirectPrime) return bluestein(a, sign);
  size_t m = n / p;
  std::vector<std::vector<Cd>> sub(p, std::vector<Cd>(m));
  for (size_t r = 0; r < p; ++r) {
    for (size_t j = 0; j < m; ++j) sub[r][j] = a[j * p + r];
    dft(sub[r], sign);
  }
  auto N = static_cast<int64_t>(n), P = static_cast<int64_t>(p);
  std::vector<Cd> z(p);
  for (size_t k = 0; k < m; ++k) {
    z[0] = sub[0][k];
    for (size_t r = 1; r < p; ++r)
      z[r] = k == 0 ? sub[r][k] : sub[r][k] * root(static_cast<int64_t>(r * k), N, sign);
    if (p == 2) {
      a[k] = z[0] + z[1];
      a[k + m] = z[0] - z[1];
      continue;
    }
    for (size_t q = 0; q < p; ++q) {
      Cd sum = z[0];
      for (size_t r = 1; 2 * r < p; ++r) {
        Cd w = root(static_cast<int64_t>(r * q) % P, P, sign); // w.imag() carries the sign
        Cd plus = z[r] + z[p - r], minus = z[r] - z[p - r];
        sum += Cd(plus.real() * w.real() - minus.imag() * w.imag(),
                  plus.imag() * w.real() + minus.real() * w.imag());
      }
      a[k + q * m] = sum;
    }
  }
}

// Applies the DFT along axis `ax` of the row-major array `data` of `shape`.
void dft_axis(std::vector<Cd>& data, const Shape& shape, size_t ax, int sign) {
  int64_t n = shape[ax], inner = 1, outer = 1;
  for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
  for (size_t d = 0; d < ax; ++d) outer *= shape[d];
  std::vector<Cd> line(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k)
        line[static_cast<size_t>(k)] = data[static_cast<size_t>((o * n + k) * inner + i)];
      dft(line, sign);
      for (int64_t k = 0; k < n; ++k)
        data[static_cast<size_t>((o * n + k) * inner + i)] = line[static_cast<size_t>(k)];
    }
}

} // namespace

Array fft(const Array& x, const OpAttrs& a, const AVal& oa) {
  int type = static_cast<int>(a.axis); // 0 FFT, 1 IFFT, 2 RFFT, 3 IRFFT
  size_t rank = oa.shape.size(), k = a.shape.size();
  // The full complex shape the transforms run over (the real side's for RFFT/IRFFT).
  Shape full = (type == 3) ? oa.shape : x.shape();
  std::vector<Cd> data(static_cast<size_t>(shape_size(full)));
  if (type == 2) {
    const float* xs = x.as<float>();
    for (size_t i = 0; i < data.size(); ++i) data[i] = xs[i];
  } else if (type == 3) {
    // The leading axes' inverse transforms run on the half spectrum first;
    // then each row of the last axis is extended Hermitian, X[n-j] = conj(X[j]).
    const auto* xs = x.as<std::complex<float>>();
    std::vector<Cd> half(static_cast<size_t>(x.size()));
    for (size_t i = 0; i < half.size(); ++i) half[i] = Cd(xs[i]);
    for (size_t ax = rank - k; ax + 1 < rank; ++ax) dft_axis(half, x.shape(), ax, 1);
    int64_t n = full.back(), h = x.shape().back(),
            rows = shape_size(full) / std::max<int64_t>(n, 1);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        bool mirrored = j >= h;
        Cd v = half[static_cast<size_t>(r * h + (mirrored ? n - j : j))];
        data[static_cast<size_t>(r * n + j)] = mirrored ? std::conj(v) : v;
      }
      // Only the real parts of X[0] and X[n/2] enter a real signal.
      if (n > 0) data[static_cast<size_t>(r * n)].imag(0);
      if (n > 0 && n % 2 == 0) data[static_cast<size_t>(r * n + n / 2)].imag(0);
    }
  } else {
    const auto* xs = x.as<std::complex<float>>();
    for (size_t i = 0; i < data.size(); ++i) data[i] = Cd(xs[i]);
  }
  int sign = (type == 1 || type == 3) ? 1 : -1;
  for (size_t ax = (type == 3 ? rank - 1 : rank - k); ax < rank; ++ax)
    dft_axis(data, full, ax, sign);
  double scale = 1.0;
  if (sign == 1)
    for (size_t ax = rank - k; ax < rank; ++ax) scale /= static_cast<double>(full[ax]);
  Array out(oa.dtype, oa.shape, oa.weak);
  if (type == 3) {
    auto* os = out.as<float>();
    for (size_t i = 0; i < data.size(); ++i) os[i] = static_cast<float>(data[i].real() * scale);
    return out;
  }
  auto* os = out.as<std::complex<float>>();
  if (type == 2) { // keep the first n/2+1 of the last axis
    int64_t n = full.back(), h = oa.shape.back(),
            rows = shape_size(oa.shape) / std::max<int64_t>(h, 1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < h; ++j) {
        Cd v = data[static_cast<size_t>(r * n + j)];
        os[r * h + j] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
      }
    return out;
  }
  for (size_t i = 0; i < data.size(); ++i)
    os[i] = {static_cast<float>(data[i].real() * scale),
             static_cast<float>(data[i].imag() * scale)};
  return out;
}

} // namespace pxl::ref
