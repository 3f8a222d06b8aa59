// The order in which XLA's CPU backend (through YNNPACK) sums a row-major
// matrix product (ir/ref_dot_ynn.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace pxl::ref {

// Whether XLA hands an (m, k) x (k, n) product to YNNPACK.
bool ynn_dot_applies(int64_t m, int64_t k, int64_t n);
// The kernel's tile_k YNNPACK picks: each output sums k in that many lanes.
int ynn_tile_k(int64_t m, int64_t k, int64_t n, bool f64);
// out (m x n) = a (m x k) . b (k x n), all row-major, in that order.
template <class T>
void ynn_gemm(const T* a, const T* b, int64_t m, int64_t k, int64_t n, int tile_k, T* out);

} // namespace pxl::ref
