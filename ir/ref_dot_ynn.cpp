// XLA's CPU backend hands a row-major matrix product to YNNPACK (its
// IsDotSupportedByYnn: float32/float64, m and n at least 2, max(m, k, n) at
// least 8). YNNPACK picks a kernel by a cost model and the kernel's tile_k
// fixes the order of each output's sum (measured against JAX 0.10.2 and read
// from XLA's and YNNPACK's sources):
// - T lanes over k (T = tile_k: 1, 2 or 4), lane l a chain of fused
//   multiply-adds over kk = l, l + T, ... from 0, the lanes combined by
//   adjacent pairs ((l0 + l1) + (l2 + l3));
// - a tail of k mod T elements runs the same kernel on zero-padded lanes and
//   is added to the main part with one rounded add.
// The model picks among the float32 kernels jaxlib builds for x86-64 (AVX-512
// among them), with m taken as 2048 when YNNPACK builds its graph; B stays
// unpacked (a tile_k = 1 kernel) when that costs at most twice the best and A
// is at most 10 row blocks. Float64 kernels all have tile_k = 1.
// Without AVX-512 only the fma3/avx2 (and older) kernels are there, and the
// float32 products XLA keeps from YNNPACK take eigen_gemm_avx2's order.
#include "ir/ref_dot_ynn.hpp"

#include <cmath>
#include <cstddef>

namespace pxl::ref {

namespace {

// dot_fp32_{bm}x{bn}x{bk}_{tm}x{tn}x{tk}_{isa}, the kernels jaxlib builds for
// x86-64, in the order YNNPACK tries them (avx512, fma3, avx2_fma3, then avx,
// avx2 and sse2; the portable one first). The avx, avx2 and sse2 kernels
// multiply and add (_mm_add_ps(c, _mm_mul_ps(a, b))), each product rounded;
// the others fuse.
struct YnnKernel {
  int bm, bn, bk, tm, tn, tk;
  bool generic; // the portable kernel: its cost counts 100 times
  bool fused;
};
constexpr YnnKernel kKernels[] = {
    {1, 128, 1, 1, 1, 1, true, false}, {1, 64, 1, 1, 16, 1, false, true},
    {2, 64, 1, 1, 16, 1, false, true}, {3, 64, 1, 1, 16, 1, false, true},
    {4, 64, 1, 1, 16, 1, false, true}, {5, 64, 1, 1, 16, 1, false, true},
    {1, 32, 1, 1, 16, 1, false, true}, {2, 32, 1, 1, 16, 1, false, true},
    {3, 32, 1, 1, 16, 1, false, true}, {4, 32, 1, 1, 16, 1, false, true},
    {5, 32, 1, 1, 16, 1, false, true}, {5, 16, 1, 1, 16, 1, false, true},
    {1, 32, 2, 1, 8, 2, false, true},  {2, 32, 2, 1, 8, 2, false, true},
    {3, 32, 2, 1, 8, 2, false, true},  {4, 32, 2, 1, 8, 2, false, true},
    {5, 32, 2, 1, 8, 2, false, true},  {1, 16, 2, 1, 8, 2, false, true},
    {4, 16, 2, 1, 8, 2, false, true},  {4, 8, 2, 1, 8, 2, false, true},
    {8, 8, 2, 1, 8, 2, false, true},   {1, 32, 4, 1, 4, 4, false, true},
    {2, 32, 4, 1, 4, 4, false, true},  {1, 16, 4, 1, 4, 4, false, true},
    {3, 16, 4, 1, 4, 4, false, true},  {4, 16, 4, 1, 4, 4, false, true},
    {5, 16, 4, 1, 4, 4, false, true},  {2, 8, 4, 1, 4, 4, false, true},
    {4, 8, 4, 1, 4, 4, false, true},   {6, 8, 4, 1, 4, 4, false, true},
    {4, 4, 4, 1, 4, 4, false, true},   {8, 4, 4, 1, 4, 4, false, true},
    {1, 32, 1, 1, 8, 1, false, true},  {2, 32, 1, 1, 8, 1, false, true},
    {1, 16, 1, 1, 8, 1, false, true},  {2, 16, 1, 1, 8, 1, false, true},
    {3, 16, 1, 1, 8, 1, false, true},  {4, 16, 1, 1, 8, 1, false, true},
    {5, 16, 1, 1, 8, 1, false, true},  {6, 16, 1, 1, 8, 1, false, true},
    {8, 8, 1, 1, 8, 1, false, true},   {1, 16, 2, 1, 4, 2, false, true},
    {2, 16, 2, 1, 4, 2, false, true},  {1, 8, 2, 1, 4, 2, false, true},
    {3, 8, 2, 1, 4, 2, false, true},   {4, 8, 2, 1, 4, 2, false, true},
    {5, 8, 2, 1, 4, 2, false, true},   {6, 8, 2, 1, 4, 2, false, true},
    {4, 4, 2, 1, 4, 2, false, true},   {5, 4, 2, 1, 4, 2, false, true},
    {6, 4, 2, 1, 4, 2, false, true},   {8, 4, 2, 1, 4, 2, false, true},
    {1, 32, 1, 1, 8, 1, false, false}, {2, 32, 1, 1, 8, 1, false, false},
    {1, 16, 1, 1, 8, 1, false, false}, {2, 16, 1, 1, 8, 1, false, false},
    {3, 16, 1, 1, 8, 1, false, false}, {4, 16, 1, 1, 8, 1, false, false},
    {4, 8, 1, 1, 8, 1, false, false},  {6, 8, 1, 1, 8, 1, false, false},
    {8, 8, 1, 1, 8, 1, false, false},  {1, 16, 2, 1, 4, 2, false, false},
    {2, 16, 2, 1, 4, 2, false, false}, {1, 8, 2, 1, 4, 2, false, false},
    {3, 8, 2, 1, 4, 2, false, false},  {4, 8, 2, 1, 4, 2, false, false},
    {5, 8, 2, 1, 4, 2, false, false},  {6, 8, 2, 1, 4, 2, false, false},
    {4, 4, 2, 1, 4, 2, false, false},  {5, 4, 2, 1, 4, 2, false, false},
    {6, 4, 2, 1, 4, 2, false, false},  {8, 4, 2, 1, 4, 2, false, false},
    {1, 16, 1, 1, 4, 1, false, false}, {2, 16, 1, 1, 4, 1, false, false},
    {3, 16, 1, 1, 4, 1, false, false}, {1, 8, 1, 1, 4, 1, false, false},
    {2, 8, 1, 1, 4, 1, false, false},  {3, 8, 1, 1, 4, 1, false, false},
    {4, 8, 1, 1, 4, 1, false, false},  {4, 4, 1, 1, 4, 1, false, false},
    {6, 4, 1, 1, 4, 1, false, false},  {8, 4, 1, 1, 4, 1, false, false}};

// YNNPACK's cost of running `kn` over an m x k by k x n product; the graph
// build counts the tile size too (`tile_term`), the runtime pick does not.
double kernel_cost(const YnnKernel& kn, int64_t m, int64_t n, int64_t k, bool tile_term) {
  auto blocks = [](int64_t x, int b) { return static_cast<double>((x + b - 1) / b); };
  double count = blocks(m, kn.bm) * blocks(n, kn.bn) * blocks(k, kn.bk);
  double la = (kn.bm * kn.bk) / (kn.tm * kn.tk), lb = (kn.bn * kn.bk) / (kn.tn * kn.tk);
  double tile = tile_term ? kn.tm * kn.tn * kn.tk * 1e-4 : 0;
  double c = count * (la * 5 + lb * 11 + 9 + tile);
  return kn.generic ? c * 100 : c;
}

// The first kernel of lowest cost among those of `tile_k` (any, when 0).
// (The avx512f kernels are the fused ones of 16 lanes, tn x tk.)
const YnnKernel& cheapest(int64_t m, int64_t n, int64_t k, int tile_k, bool tile_term, YnnIsa isa) {
  const YnnKernel* best = nullptr;
  double best_cost = 0;
  for (const YnnKernel& kn : kKernels) {
    if (tile_k != 0 && kn.tk != tile_k) continue;
    if (kn.fused && kn.tn * kn.tk == 16 && isa != YnnIsa::Avx512) continue;
    double c = kernel_cost(kn, m, n, k, tile_term);
    if (!best || c < best_cost) best = &kn, best_cost = c;
  }
  return *best;
}

} // namespace

YnnIsa host_ynn_isa() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const YnnIsa isa = __builtin_cpu_supports("avx512f") ? YnnIsa::Avx512 : YnnIsa::Avx2;
  return isa;
#else
  return YnnIsa::Avx2;
#endif
}

bool ynn_dot_applies(int64_t m, int64_t k, int64_t n) {
  return m >= 2 && n >= 2 && std::max({m, k, n}) >= 8;
}

int ynn_tile_k(int64_t m, int64_t k, int64_t n, bool f64, bool packed_b, YnnIsa isa) {
  if (f64) return 1;
  constexpr int64_t kGraphM = 2048; // m is unknown when YNNPACK builds its graph
  const YnnKernel& best = cheapest(kGraphM, n, k, 0, true, isa);
  if (best.tk == 1 || packed_b) return best.tk;
  const YnnKernel& unpacked = cheapest(kGraphM, n, k, 1, true, isa);
  bool keep_b =
      kernel_cost(unpacked, kGraphM, n, k, true) <= 2 * kernel_cost(best, kGraphM, n, k, true) &&
      (m + unpacked.bm - 1) / unpacked.bm <= 10;
  return keep_b ? 1 : best.tk;
}

YnnKernelChoice ynn_kernel(int64_t m, int64_t k, int64_t n, bool packed_b, YnnIsa isa) {
  // When the program runs, m is known: YNNPACK picks again, among the kernels
  // of the tile_k B was packed for, the first of lowest cost for the real
  // shape, without the tile-size term (measured against JAX 0.10.2 over 2503
  // shapes with m, n up to 24 and k up to 29).
  int tile_k = ynn_tile_k(m, k, n, false, packed_b, isa);
  return {tile_k, cheapest(m, n, k, tile_k, false, isa).fused};
}

namespace {

// Row i of out: per lane a row of n partial sums, so that the innermost loop
// runs along b's row (vector fused multiply-adds where the CPU has them).
template <class T, bool kFused = true>
inline __attribute__((always_inline)) void gemm_rows(const T* a, const T* b, int64_t m, int64_t k,
                                                     int64_t n, int tile_k, T* out) {
  const auto t = static_cast<size_t>(tile_k), un = static_cast<size_t>(n);
  int64_t main = k / tile_k * tile_k;
  std::vector<T> lanes(t * un), tail(t * un);
  // Lanes over [from, to) (kk - from picks the lane), combined by adjacent
  // pairs into lane 0.
  auto chunk = [&](const T* ai, int64_t from, int64_t to, T* acc) {
    std::fill(acc, acc + t * un, T(0));
    for (int64_t kk = from; kk < to; ++kk) {
      T* lane = acc + (static_cast<size_t>(kk - from) % t) * un;
      const T* bk = b + kk * n;
      const T x = ai[kk];
      if constexpr (kFused)
        for (int64_t j = 0; j < n; ++j) lane[j] = std::fma(x, bk[j], lane[j]);
      else // (the product rounded: ISO C++ mode does not contract it)
        for (int64_t j = 0; j < n; ++j) lane[j] = lane[j] + static_cast<T>(x * bk[j]);
    }
    for (size_t w = t; w > 1; w /= 2)
      for (size_t l = 0; l < w / 2; ++l)
        for (size_t j = 0; j < un; ++j)
          acc[l * un + j] = acc[2 * l * un + j] + acc[(2 * l + 1) * un + j];
  };
  for (int64_t i = 0; i < m; ++i) {
    const T* ai = a + i * k;
    T* oi = out + i * n;
    chunk(ai, 0, main, lanes.data());
    if (main < k) {
      chunk(ai, main, k, tail.data());
      for (int64_t j = 0; j < n; ++j)
        oi[j] = tail[static_cast<size_t>(j)] + lanes[static_cast<size_t>(j)];
    } else {
      std::copy(lanes.begin(), lanes.begin() + n, oi);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same loops compiled for CPUs with FMA (every one JAX's YNNPACK kernels
// above run on): std::fma becomes one instruction instead of a libm call.
__attribute__((target("avx2,fma"), optimize("O3"))) void
gemm_fma(const float* a, const float* b, int64_t m, int64_t k, int64_t n, int tile_k, float* out) {
  gemm_rows(a, b, m, k, n, tile_k, out);
}
__attribute__((target("avx2,fma"), optimize("O3"))) void gemm_fma(const double* a, const double* b,
                                                                  int64_t m, int64_t k, int64_t n,
                                                                  int tile_k, double* out) {
  gemm_rows(a, b, m, k, n, tile_k, out);
}
bool cpu_has_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

} // namespace

template <class T>
void ynn_gemm(const T* a, const T* b, int64_t m, int64_t k, int64_t n, int tile_k, T* out,
              bool fused) {
  if (!fused) return gemm_rows<T, false>(a, b, m, k, n, tile_k, out);
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_fma()) return gemm_fma(a, b, m, k, n, tile_k, out);
#endif
  gemm_rows(a, b, m, k, n, tile_k, out);
}

void eigen_gemm_avx2(const float* a, const float* b, int64_t m, int64_t k, int64_t n, float* out) {
  enum class Sum { Chain, Lanes, LanesRounded };
  // Rows in tiles of 6, columns in tiles of 16: the last m % 6 rows and the
  // last n % 16 columns (when at most 8) sum in two lanes over k.
  auto scheme = [&](int64_t i, int64_t j) {
    if (k <= 3) return Sum::Chain;
    const int64_t r = m % 6;
    if (r != 0 && i >= m - r && r <= 3) {
      if (m <= 3 && n < 4) return Sum::Chain;
      return r == 3 ? Sum::Lanes : Sum::LanesRounded;
    }
    const int64_t rn = n % 16;
    if (n <= 8 || (rn >= 1 && rn <= 8 && j >= n - rn)) return Sum::Lanes;
    return Sum::Chain;
  };
  for (int64_t i = 0; i < m; ++i) {
    const float* ai = a + i * k;
    for (int64_t j = 0; j < n; ++j) {
      auto bt = [&](int64_t t) { return b[t * n + j]; };
      const Sum how = scheme(i, j);
      float s = 0;
      if (how == Sum::Chain) {
        for (int64_t t = 0; t < k; ++t) s = std::fma(ai[t], bt(t), s);
      } else {
        const bool fused = how == Sum::Lanes;
        auto step = [fused](float acc, float x, float y) {
          return fused ? std::fma(x, y, acc) : acc + static_cast<float>(x * y);
        };
        float even = 0, odd = 0;
        for (int64_t t = 0; t + 1 < k; t += 2) {
          even = step(even, ai[t], bt(t));
          odd = step(odd, ai[t + 1], bt(t + 1));
        }
        s = even + odd;
        if (k % 2) s = step(s, ai[k - 1], bt(k - 1));
      }
      out[i * n + j] = s;
    }
  }
}

template void ynn_gemm<float>(const float*, const float*, int64_t, int64_t, int64_t, int, float*,
                              bool);
template void ynn_gemm<double>(const double*, const double*, int64_t, int64_t, int64_t, int,
                               double*, bool);

} // namespace pxl::ref
