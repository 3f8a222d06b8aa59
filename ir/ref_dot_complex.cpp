// See ref_dot_complex.hpp. Measured against JAX 0.10.2 (jnp.matmul of random
// complex64 matrices, m and n in 1..12 with k in 2..20, and larger shapes up
// to k = 2000): equal bit for bit on this machine's kind of CPU. The choices
// that depend on the machine (cache sizes, threads) are read from it as
// Eigen reads them.
#include "ir/ref_dot_complex.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <unistd.h>
#include <vector>

#include "ir/reduce_tree.hpp"    // kReduceWindow
#include "ir/ref_reduce_ynn.hpp" // xla_cpu_threads

namespace pxl::ref::cplx {

namespace {

C add(C x, C y) { return {x.real() + y.real(), x.imag() + y.imag()}; }

// x * y with its four products rounded, then subtracted and added (Eigen's
// scalar complex product without FMA).
C rounded_product(C x, C y) {
  return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
}

// Eigen's four real sums of a complex dot, each a chain of rounded products:
// sum ar c, sum ai c, sum ar d, sum ai d (a = ar + ai i, b = c + d i).
struct Sums {
  float rc = 0, ic = 0, rd = 0, id = 0;
  void add_term(C x, C y) {
    rc = rc + x.real() * y.real();
    ic = ic + x.imag() * y.real();
    rd = rd + x.real() * y.imag();
    id = id + x.imag() * y.imag();
  }
  Sums operator+(const Sums& o) const { return {rc + o.rc, ic + o.ic, rd + o.rd, id + o.id}; }
  C value() const { return {rc - id, ic + rd}; }
};

// How one of Eigen's kernels (gebp, for the transposed product: its rows are
// the output's columns) accumulates an output over a depth block.
enum class Kernel {
  Chain,  // the 8-column and 1-packet kernels: every sum in order
  Halves, // the leftover pairs of columns: even and odd terms apart, then the rest
  Fours,  // the last, odd column: four partial sums by term mod 4, then the rest
  Scalar  // the last rows of that column: one complex sum of rounded products
};

Kernel kernel_of(int64_t i, int64_t j, int64_t m, int64_t n) {
  const int64_t rows4 = m / 4 * 4, cols8 = n / 8 * 8;
  const int64_t cols4 = cols8 + (n - cols8) / 4 * 4, cols2 = cols4 + (n - cols4) / 2 * 2;
  if (j < cols8) return Kernel::Chain;
  if (j < cols2) return i < rows4 ? Kernel::Halves : Kernel::Chain;
  return i < rows4 ? Kernel::Fours : Kernel::Scalar;
}

// a[i, t] b[t, j] summed over t in [t0, t1) by `kind`.
C block(const C* a, const C* b, int64_t k, int64_t n, int64_t i, int64_t j, int64_t t0, int64_t t1,
        Kernel kind) {
  auto x = [&](int64_t t) { return a[i * k + t]; };
  auto y = [&](int64_t t) { return b[t * n + j]; };
  const int64_t depth = t1 - t0;
  Sums s;
  int64_t done = 0;
  switch (kind) {
  case Kernel::Scalar: {
    C acc(0.0f, 0.0f);
    for (int64_t t = t0; t < t1; ++t) acc = add(acc, rounded_product(x(t), y(t)));
    return acc;
  }
  case Kernel::Chain:
    break;
  case Kernel::Halves: {
    done = depth & ~int64_t{7};
    Sums part[2];
    for (int64_t u = 0; u < done; ++u) part[u % 2].add_term(x(t0 + u), y(t0 + u));
    s = part[0] + part[1];
    break;
  }
  case Kernel::Fours: {
    done = depth & ~int64_t{3};
    Sums part[4];
    for (int64_t u = 0; u < done; ++u) part[u % 4].add_term(x(t0 + u), y(t0 + u));
    s = (part[0] + part[1]) + (part[2] + part[3]);
    break;
  }
  }
  for (int64_t u = done; u < depth; ++u) s.add_term(x(t0 + u), y(t0 + u));
  return s.value();
}

// The depth range [t_begin, t_end) in blocks of kc, each block's result added
// to out (row-major m x n).
void gebp(const C* a, const C* b, int64_t m, int64_t k, int64_t n, int64_t t_begin, int64_t t_end,
          int64_t kc, C* out) {
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kc) {
    const int64_t t1 = std::min(t0 + kc, t_end);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] =
            add(out[i * n + j], block(a, b, k, n, i, j, t0, t1, kernel_of(i, j, m, n)));
  }
}

// The caches Eigen sizes its blocks by (it asks the CPU; sysconf reports the same).
struct Caches {
  double l1, l2, l3;
};
Caches caches() {
  auto get = [](int name, double fallback) {
    long v = sysconf(name);
    return v > 0 ? static_cast<double>(v) : fallback;
  };
  return {get(_SC_LEVEL1_DCACHE_SIZE, 32 * 1024), get(_SC_LEVEL2_CACHE_SIZE, 256 * 1024),
          get(_SC_LEVEL3_CACHE_SIZE, 2 * 1024 * 1024)};
}

// Eigen's register blocking for complex<float> on AVX: 8 x 4 kernels of
// 8-byte scalars, packets of 4.
constexpr double kMr = 8, kNr = 4, kSize = 8, kPacket = 4;

// The depth block of a single-threaded product (Eigen's
// evaluateProductBlockingSizesHeuristic); rows/cols are Eigen's (the
// output's columns and rows).
int64_t single_thread_kc(int64_t k, int64_t rows, int64_t cols, const Caches& c) {
  if (std::max({k, rows, cols}) < 48) return k;
  const int64_t max_kc = std::max<int64_t>(
      (static_cast<int64_t>(c.l1 - kMr * kNr * kSize) / static_cast<int64_t>((kMr + kNr) * kSize)) &
          ~int64_t{7},
      1);
  if (k <= max_kc) return k;
  if (k % max_kc == 0) return max_kc;
  return max_kc - 8 * ((max_kc - 1 - k % max_kc) / (8 * (k / max_kc + 1)));
}

// Eigen's thread-pool contraction: how it splits a product of Eigen's
// rows x cols over `threads` (TensorContractionThreadPool's cost model).
struct Split {
  enum Kind { Single, Parallel, ByDepth } kind = Single;
  int blocks = 1;
};

Split split_of(double rows, double cols, double k, int threads, const Caches& cc) {
  const double load = 11.0 / 64, store = 11.0 / 64;
  auto total = [&](double count, double bytes_loaded, double bytes_stored, double compute) {
    return count * (load * bytes_loaded + store * bytes_stored + compute);
  };
  auto shard_by_col = [&](double m, double n, double nt) {
    double mt = std::floor(m / nt), ntc = std::floor(n / nt);
    if (mt >= kNr && (ntc < kNr || (ntc < 4 * kNr && std::fmod(n, nt * kNr) != 0 &&
                                    (std::fmod(m, nt * kNr) == 0 || std::floor(m / n) >= 6))))
      return false;
    return !(ntc < 16 * kNr && m > n * 32);
  };
  // Blocking sizes (k, m, n) of the multi-threaded heuristic.
  auto blocking = [&](double bk, double bm, double bn, double nt) {
    double k_cache = std::max(
        8.0, std::min(std::floor((cc.l1 - kMr * kNr * kSize) / ((kMr + kNr) * kSize)), 320.0));
    if (k_cache < bk) bk = k_cache - std::fmod(k_cache, 8);
    double n_cache = std::floor((cc.l2 - cc.l1) / (kNr * kSize * bk));
    double npt = std::ceil(bn / nt);
    if (n_cache <= npt)
      bn = n_cache - std::fmod(n_cache, kNr);
    else
      bn = std::min(bn, (npt + kNr - 1) - std::fmod(npt + kNr - 1, kNr));
    if (cc.l3 > cc.l2) {
      double m_cache = std::floor((cc.l3 - cc.l2) / (kSize * bk * nt));
      double mpt = std::ceil(bm / nt);
      if (m_cache < mpt && m_cache >= kMr)
        bm = m_cache - std::fmod(m_cache, kMr);
      else
        bm = std::min(bm, (mpt + kMr - 1) - std::fmod(mpt + kMr - 1, kMr));
    }
    return std::array<double, 3>{bk, bm, bn};
  };
  auto bandwidth = [&](bool by_col, double bm, double bn, double bk) {
    if (bk == 1) return 4.0;
    return ((by_col ? bn : bm) < kNr || (by_col ? bm : bn) < kMr) ? 2.0 : 1.0;
  };
  const double nt2 = static_cast<double>(threads);
  bool by_col = shard_by_col(rows, cols, nt2);
  double bk, bm, bn;
  if (by_col) {
    auto b = blocking(k, rows, cols, nt2);
    bk = b[0], bm = b[1], bn = b[2];
  } else {
    auto b = blocking(k, cols, rows, nt2);
    bk = b[0], bn = b[1], bm = b[2];
  }
  double compute = bk * bandwidth(false, bm, bn, bk) / kPacket;
  double loaded = by_col ? kSize * bk / rows : kSize * bk / cols;
  double per_output = total(1, loaded, kSize, compute);
  double wanted = (rows * cols * per_output - 100000) / 100000 + 0.9;
  int nt = std::min(threads, std::max(1, static_cast<int>(wanted)));
  // Sharding by the contraction: the threads that pays for.
  double inner =
      total(k, kSize * cols, kSize, bandwidth(true, rows, cols, k) * rows * cols / kPacket);
  double reduce = total(rows * cols, 2, 1, 1 / kPacket);
  int ntk = 1;
  double best = inner;
  for (int t = 2; t <= threads; t += 2) {
    double c = inner / t + 100000 + t * (reduce + 3000);
    if (c < best) ntk = t, best = c;
  }
  bool by_depth = !(cols == 1 || ntk < 2 || ntk < nt || rows * cols * kSize > cc.l3 / ntk ||
                    std::floor(k / ntk) < 2 * kNr) &&
                  (std::floor(std::max(rows, cols) / nt) < kNr ||
                   (std::floor(k / ntk) > 8 * kNr && (std::min(rows, cols) < 2 * kNr || ntk > nt)));
  if (by_depth) return {Split::ByDepth, ntk};
  if (cols == 1) nt = 1;
  return {nt == 1 ? Split::Single : Split::Parallel, nt};
}

void eigen_gemm(const C* a, const C* b, int64_t m, int64_t k, int64_t n, C* out) {
  std::fill(out, out + m * n, C(0.0f, 0.0f));
  const Caches cc = caches();
  Split split = split_of(static_cast<double>(n), static_cast<double>(m), static_cast<double>(k),
                         xla_cpu_threads(), cc);
  if (split.kind == Split::Single)
    return gebp(a, b, m, k, n, 0, k, single_thread_kc(k, n, m, cc), out);
  if (split.kind == Split::Parallel)
    return gebp(a, b, m, k, n, 0, k, std::min<int64_t>(k, 320), out);
  // By depth: each range from zero, then the partial products added in order
  // (measured for two ranges).
  const int64_t nb = split.blocks;
  const int64_t per = ((k + nb - 1) / nb + 7) / 8 * 8;
  const int64_t size = std::min(k, std::max<int64_t>(48, per));
  std::vector<C> part(static_cast<size_t>(m * n));
  for (int64_t bi = 0, s0 = 0; bi < nb && s0 < k; ++bi, s0 += size) {
    const int64_t s1 = bi == nb - 1 ? k : std::min(k, s0 + size);
    std::fill(part.begin(), part.end(), C(0.0f, 0.0f));
    gebp(a, b, m, k, n, s0, s1, std::min<int64_t>(s1 - s0, 320), part.data());
    for (int64_t e = 0; e < m * n; ++e)
      out[e] = bi == 0 ? part[static_cast<size_t>(e)] : add(out[e], part[static_cast<size_t>(e)]);
  }
}

// Eigen's matrix-vector kernel for a row vector times a matrix: one complex
// sum of rounded products per output, in blocks of 16 terms from 128 terms.
void eigen_gemv(const C* a, const C* b, int64_t k, int64_t n, C* out) {
  const int64_t step = k < 128 ? k : (static_cast<double>(n) * 8 < caches().l1 ? 16 : 4);
  for (int64_t j = 0; j < n; ++j) {
    C acc(0.0f, 0.0f);
    for (int64_t t0 = 0; t0 < k; t0 += step) {
      C part(0.0f, 0.0f);
      for (int64_t t = t0; t < std::min(k, t0 + step); ++t)
        part = add(part, rounded_product(a[t], b[t * n + j]));
      acc = add(acc, part);
    }
    out[j] = acc;
  }
}

} // namespace

// XLA's multiply and reduce: up to 32 terms the multiply is fused into the
// reduction loop, where LLVM keeps the real part's sum apart from its fused
// product (acc + (ac - bd)) but folds the imaginary part's two products into
// the accumulator (fma(b, c, fma(a, d, acc))). Longer ones are cut into
// XLA's windows (reduce_tree.hpp), after which the products are computed on
// their own (cplx::mul) and the windows summed in order.
C vector_dot(const C* x, const C* y, int64_t k) {
  if (k <= kReduceWindow) {
    float re = 0.0f, im = 0.0f;
    for (int64_t i = 0; i < k; ++i) {
      float a = x[i].real(), b = x[i].imag(), c = y[i].real(), d = y[i].imag();
      re = re + std::fma(a, c, -(b * d));
      im = std::fma(b, c, std::fma(a, d, im));
    }
    return {re, im};
  }
  std::vector<C> level(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) level[static_cast<size_t>(i)] = mul(x[i], y[i]);
  return tree_sum(std::move(level), C(0.0f, 0.0f), add);
}

void matmul(const C* a, const C* b, int64_t m, int64_t k, int64_t n, C* out) {
  if (m == 1 && n == 1) {
    std::vector<C> col(b, b + k);
    out[0] = vector_dot(a, col.data(), k);
  } else if (m == 1) {
    eigen_gemv(a, b, k, n, out);
  } else {
    eigen_gemm(a, b, m, k, n, out);
  }
}

} // namespace pxl::ref::cplx
