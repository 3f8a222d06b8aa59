// Worker threads that run the outermost loop of a big kernel in pieces, as
// XLA's CPU backend splits large loops. Owned by the CodeCache (so by the
// Platform): nothing global. The caller always works too, and a second caller
// while the pool is busy (another device thread) simply runs its kernel
// alone, so device threads never oversubscribe the cores or wait on each
// other. The pieces a range is split into do not affect results: kernels
// write disjoint outputs per index, and split reductions use a partition
// fixed by the kernel (plan.hpp, kernel_split), combined in a fixed order.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace pxl {

class KernelPool {
public:
  // `workers` extra threads (started on first use); 0 runs everything inline.
  explicit KernelPool(int workers);
  ~KernelPool();
  KernelPool(const KernelPool&) = delete;
  KernelPool& operator=(const KernelPool&) = delete;

  // Calls fn(begin, end) on disjoint ranges covering [0, n), on the caller
  // and the workers, and returns when all are done. Each call runs with the
  // kernels' floating-point environment (flush-to-zero, as the reference).
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
  int workers() const;

  // Workers for this machine: one fewer than its hardware threads, at most 15.
  static int default_workers();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace pxl
