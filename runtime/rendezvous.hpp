// The barrier every collective is built on: T device threads arrive, the last
// one releases the others. Waiting spins briefly (a collective among threads
// that each have a core usually completes within microseconds) and then sleeps
// on a futex, because device threads may outnumber cores and a spinning waiter
// would steal the core the last arriver needs. The wait is bounded by the
// world's timeout, and abort() wakes every sleeper at once.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pxl {

// Futex on a 32-bit atomic (Linux; a portable fallback elsewhere). wait returns
// when *word != expected, on a wake, on a spurious wake-up or at the deadline.
void futex_wait_until(std::atomic<uint32_t>& word, uint32_t expected,
                      std::chrono::steady_clock::time_point deadline);
void futex_wake_all(std::atomic<uint32_t>& word);

class Rendezvous {
public:
  Rendezvous(int num_threads, std::chrono::milliseconds timeout);

  // Blocks until all threads have called arrive() as often as this one.
  // Returns false if the rendezvous was aborted (before or while waiting),
  // including by this call's own timeout; failure() then says why.
  // On timeout the message is built by `describe_timeout(missing_threads)`.
  template <class Describe> bool arrive(int thread, const Describe& describe_timeout);

  // Marks the rendezvous failed and wakes every waiter. The first message wins;
  // `from_outside` records whether it came from abort() of the world (a device
  // failed elsewhere) rather than from a collective's own timeout or check.
  void abort(const std::string& message, bool from_outside = false);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  struct Failure {
    std::string message;
    bool from_outside = false;
  };
  Failure failure() const;

private:
  bool wait_slow(int thread, uint32_t gen, uint64_t my_arrival,
                 std::string (*describe)(const void*, const std::vector<int>&), const void* ctx);

  const int num_threads_;
  const std::chrono::milliseconds timeout_;
  const int spin_iterations_;
  // Separate cache lines: the counter is hammered by arrivals, the generation
  // is read by every spinner.
  alignas(64) std::atomic<uint32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> aborted_{false};
  // How many times each thread has arrived, so a timeout can name the threads
  // that never reached the barrier the others are waiting at.
  struct alignas(64) Counter {
    std::atomic<uint64_t> value{0};
  };
  std::unique_ptr<Counter[]> arrivals_;
  mutable std::mutex message_mu_;
  Failure failure_;
};

template <class Describe> bool Rendezvous::arrive(int thread, const Describe& describe_timeout) {
  if (aborted()) return false;
  uint64_t mine = arrivals_[thread].value.load(std::memory_order_relaxed) + 1;
  arrivals_[thread].value.store(mine, std::memory_order_relaxed);
  uint32_t gen = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == uint32_t(num_threads_ - 1)) {
    // Last arriver: everyone else is parked on `generation_`, so resetting the
    // counter before publishing the new generation cannot race with arrivals.
    arrived_.store(0, std::memory_order_relaxed);
    // fetch_add, not store(gen + 1): an abort may have bumped the generation
    // since we read it, and it must never move backwards.
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) != 0) futex_wake_all(generation_);
    return !aborted();
  }
  auto trampoline = [](const void* ctx, const std::vector<int>& missing) {
    return (*static_cast<const Describe*>(ctx))(missing);
  };
  return wait_slow(thread, gen, mine, trampoline, &describe_timeout);
}

} // namespace pxl
