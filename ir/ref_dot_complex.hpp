// complex64 dots in the order and roundings of XLA's CPU backend (JAX 0.10.2):
// a dot of two vectors is XLA's multiply-and-reduce loop (LLVM fuses its
// products), a product with a row vector is Eigen's matrix-vector kernel and
// every other matrix product Eigen's tensor contraction, as jaxlib builds
// Eigen (AVX packets of 4 complex values, no FMA: each product rounded, then
// added) with its kernels' accumulation orders and depth blocking. Internal
// to ir/.
#pragma once
#include <cstdint>

#include "ir/ref_complex.hpp"

namespace pxl::ref::cplx {

// x . y, k elements each.
C vector_dot(const C* x, const C* y, int64_t k);

// out (m x n) = a (m x k) . b (k x n), all row-major, k >= 2 (a one-term
// contraction is XLA's multiply, cplx::mul).
void matmul(const C* a, const C* b, int64_t m, int64_t k, int64_t n, C* out);

} // namespace pxl::ref::cplx
