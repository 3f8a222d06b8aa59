// The order in which XLA's CPU backend sums a big float array: it hands every
// add-reduction of 4096 or more float32/float64 elements to its YNNPACK
// library (float16 first converted to float32), whose kernels accumulate in
// 64-byte vectors with a clocked tree of accumulators (Kahan-compensated at
// the top) and cut big arrays into 128 KiB tiles whose partial sums are
// reduced again. Measured against JAX 0.10's CPU backend (SPEC.md, "Reduction
// order"); ir/ref_reduce_ynn.cpp has the algorithm.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/dtype.hpp"

namespace pxl::ref {

// Whether XLA sends a float sum of an array of `shape` over `axes` to
// YNNPACK: float32, float64 or float16 (not bfloat16, which has a kernel of
// its own), at least 4096 elements, and some reduced axis longer than 1 (a
// reduction over size-1 axes is a reshape to XLA).
bool ynn_sum_applies(DType d, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes);

// The number of threads of XLA's CPU thread pool: the CPUs this process may
// run on. YNNPACK's tiling keeps a loop over tiles only while the loops around
// it give fewer than 2 tasks per thread, so some results depend on it, in JAX
// as here.
int xla_cpu_threads();

// out[kept axes, row-major] = the sum of `x` (row-major `shape`) over `axes`
// (sorted, distinct) in YNNPACK's order, for a pool of `threads`. T is float
// or double.
template <class T>
void ynn_sum(const T* x, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes,
             int threads, T* out);

} // namespace pxl::ref
