// The order in which XLA's CPU backend (through YNNPACK) sums a row-major
// matrix product (ir/ref_dot_ynn.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace pxl::ref {

// Whether XLA hands an (m, k) x (k, n) product to YNNPACK.
bool ynn_dot_applies(int64_t m, int64_t k, int64_t n);
// The kernels YNNPACK may pick from: its avx512f ones (16 float lanes) only
// where the CPU has AVX-512; the fma3, avx2, avx and sse2 ones everywhere.
enum class YnnIsa { Avx512, Avx2 };
YnnIsa host_ynn_isa(); // this CPU's
// The kernel's tile_k YNNPACK picks: each output sums k in that many lanes.
// `packed_b`: B comes as (n, k) (a transpose XLA folded into the dot), which
// YNNPACK must pack whatever it costs, so keeping it unpacked is no option.
int ynn_tile_k(int64_t m, int64_t k, int64_t n, bool f64, bool packed_b = false,
               YnnIsa isa = host_ynn_isa());
// The float32 kernel that computes it when the program runs: its tile_k
// (ynn_tile_k's) and whether it fuses each multiply-add (FMA instruction
// sets) or rounds each product before adding it (avx, avx2, sse2).
struct YnnKernelChoice {
  int tile_k;
  bool fused;
};
YnnKernelChoice ynn_kernel(int64_t m, int64_t k, int64_t n, bool packed_b = false,
                           YnnIsa isa = host_ynn_isa());
// The float32 products XLA does not give YNNPACK (too small, or the left
// operand not row-major, as `a.T @ b` in a jit) on a CPU without AVX-512, as
// measured against JAX 0.10.2 on AMD Zen 3 (every m, k, n in 2..7; m, n, k up
// to 40 with the left operand transposed): rows in tiles of 6, columns in
// tiles of 16. k <= 3 is one chain of fused multiply-adds; the last m % 6 rows
// (m % 6 of 1 to 3) sum the even and odd terms in two lanes, added, an odd
// last term after (fused for m % 6 = 3, each product rounded for 1 and 2;
// m <= 3 with n < 4 a chain); other rows two fused lanes where n <= 8 or in
// the last n % 16 columns (when at most 8), else a chain.
void eigen_gemm_avx2(const float* a, const float* b, int64_t m, int64_t k, int64_t n, float* out);
// out (m x n) = a (m x k) . b (k x n), all row-major, in that order.
template <class T>
void ynn_gemm(const T* a, const T* b, int64_t m, int64_t k, int64_t n, int tile_k, T* out,
              bool fused = true);

} // namespace pxl::ref
