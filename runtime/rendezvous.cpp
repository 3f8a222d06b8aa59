#include "runtime/rendezvous.hpp"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <climits>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pxl {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

} // namespace

#if defined(__linux__)
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

void futex_wait_until(std::atomic<uint32_t>& word, uint32_t expected,
                      std::chrono::steady_clock::time_point deadline) {
  auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
  // Relative timeout on CLOCK_MONOTONIC, the clock steady_clock uses.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr,
          0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}
#else
// No futex: short sleeps bounded by the deadline. Correct, only slower.
void futex_wait_until(std::atomic<uint32_t>& word, uint32_t expected,
                      std::chrono::steady_clock::time_point deadline) {
  if (word.load(std::memory_order_acquire) != expected) return;
  auto until = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::microseconds(50));
  std::this_thread::sleep_until(until);
}
void futex_wake_all(std::atomic<uint32_t>&) {}
#endif

namespace {
// Spinning only pays while every thread has a core of its own; with more
// threads than cores the thread we wait for may need this very core, so we go
// to sleep almost at once (a futex wake costs a few microseconds).
int spin_budget(int num_threads) {
  // Read once: glibc reads /sys on every call, and a world is made per launch.
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return unsigned(num_threads) <= cores ? 100 : 20;
}
} // namespace

Rendezvous::Rendezvous(int num_threads, std::chrono::milliseconds timeout)
    : num_threads_(num_threads), timeout_(timeout), spin_iterations_(spin_budget(num_threads)),
      arrivals_(new Counter[size_t(num_threads)]) {}

void Rendezvous::abort(const std::string& message, bool from_outside) {
  {
    std::lock_guard<std::mutex> lock(message_mu_);
    if (!aborted_.load(std::memory_order_relaxed)) failure_ = {message, from_outside};
    aborted_.store(true, std::memory_order_seq_cst);
  }
  // Changing the futex word is what makes the wake reliable: a waiter that
  // checked `aborted_` just before we set it sees a different generation and
  // does not go to sleep.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(generation_);
}

Rendezvous::Failure Rendezvous::failure() const {
  std::lock_guard<std::mutex> lock(message_mu_);
  return failure_;
}

bool Rendezvous::wait_slow(int thread, uint32_t gen, uint64_t my_arrival,
                           std::string (*describe)(const void*, const std::vector<int>&),
                           const void* ctx) {
  (void)thread;
  for (int i = 0; i < spin_iterations_; ++i) {
    if (generation_.load(std::memory_order_acquire) != gen) return !aborted();
    cpu_relax();
  }
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    // abort() sets the flag before bumping the generation, so a waiter that
    // read the bumped generation on entry still notices the abort here.
    if (generation_.load(std::memory_order_seq_cst) == gen && !aborted())
      futex_wait_until(generation_, gen, deadline);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    if (generation_.load(std::memory_order_acquire) != gen) return !aborted();
    if (aborted()) return false;
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  // Timed out: the threads that have not arrived as often as we have are the
  // ones the group is stuck on.
  std::vector<int> missing;
  for (int t = 0; t < num_threads_; ++t)
    if (arrivals_[t].value.load(std::memory_order_relaxed) < my_arrival) missing.push_back(t);
  if (missing.empty()) {
    // Everyone arrived after all (we lost a race with the release).
    if (generation_.load(std::memory_order_acquire) != gen) return !aborted();
  }
  abort(describe(ctx, missing));
  return false;
}

} // namespace pxl
