// See kernel_pool.hpp. One job at a time: the caller publishes it under the
// mutex with a new generation number, workers and caller take pieces with an
// atomic counter, and the last piece to finish wakes the caller.
#include "codegen/kernel_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "ir/ref_math.hpp"

namespace pxl {

struct KernelPool::Impl {
  int nworkers = 0;
  std::mutex busy; // held by the one caller whose job is running
  std::mutex mu;
  std::condition_variable wake, done_cv;
  std::vector<std::thread> threads;
  bool stop = false;
  uint64_t generation = 0;
  // The current job.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0, piece = 1, pieces = 0;
  std::atomic<int64_t> next{0};
  int64_t finished = 0; // pieces done, under mu
  int active = 0;       // workers inside the job, under mu

  // Takes pieces until none are left; returns how many it ran.
  int64_t work() {
    int64_t ran = 0;
    ref::xla::ScopedFlushDenormal ftz;
    for (int64_t p; (p = next.fetch_add(1)) < pieces; ++ran)
      (*fn)(p * piece, std::min(n, (p + 1) * piece));
    return ran;
  }

  // Adds a thread's pieces; the caller waits for all pieces and for every
  // worker that joined the job to be out of it (so the next job's fields
  // are never written while a worker reads them).
  void finish(int64_t ran, bool joined) {
    std::lock_guard<std::mutex> lock(mu);
    finished += ran;
    if (joined) --active;
    if (finished == pieces && active == 0) done_cv.notify_all();
  }

  void worker() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
        if (!fn) continue; // that job is already over
        ++active;
      }
      finish(work(), true);
    }
  }
};

KernelPool::KernelPool(int workers) : impl_(std::make_unique<Impl>()) {
  impl_->nworkers = std::max(0, workers);
}

KernelPool::~KernelPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  for (std::thread& t : impl_->threads) t.join();
}

int KernelPool::workers() const { return impl_->nworkers; }

int KernelPool::default_workers() {
  unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::min(15u, hw > 1 ? hw - 1 : 0u));
}

void KernelPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  Impl& I = *impl_;
  std::unique_lock<std::mutex> busy(I.busy, std::try_to_lock);
  if (n <= 1 || I.nworkers == 0 || !busy.owns_lock()) {
    ref::xla::ScopedFlushDenormal ftz;
    if (n > 0) fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(I.mu);
    if (I.threads.empty())
      for (int i = 0; i < I.nworkers; ++i) I.threads.emplace_back([&I] { I.worker(); });
    // A few pieces per thread, so a slow thread does not hold up the rest.
    int64_t want = std::min<int64_t>(n, int64_t{4} * (I.nworkers + 1));
    I.fn = &fn;
    I.n = n;
    I.piece = (n + want - 1) / want;
    I.pieces = (n + I.piece - 1) / I.piece;
    I.next.store(0);
    I.finished = 0;
    ++I.generation;
  }
  I.wake.notify_all();
  I.finish(I.work(), false);
  std::unique_lock<std::mutex> lock(I.mu);
  I.done_cv.wait(lock, [&] { return I.finished == I.pieces && I.active == 0; });
  I.fn = nullptr;
}

} // namespace pxl
