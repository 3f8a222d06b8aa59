// DeviceThreads: one persistent OS thread per device, so device t's program
// always runs on the same thread (its thread-local state and first-touched
// memory stay put) and a run costs a wake-up, not a thread creation.
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "lang/diag.hpp"
#include "runtime/collectives.hpp"

namespace pxl {

struct DeviceThreads::Impl {
  explicit Impl(int n) : size(n), go(new Go[size_t(n)]) {}
  ~Impl() {
    stop.store(true, std::memory_order_relaxed);
    for (size_t i = 0; i < threads.size(); ++i) {
      go[i].gen.fetch_add(1, std::memory_order_release);
      go[i].gen.notify_one();
    }
    for (std::thread& t : threads) t.join();
  }

  // `seen` is the go word's value when the thread was created: the first job
  // may be posted before the thread gets to run at all.
  void worker(int index, uint32_t seen) {
    std::atomic<uint32_t>& mine = go[size_t(index)].gen;
    for (;;) {
      mine.wait(seen, std::memory_order_acquire);
      uint32_t gen = mine.load(std::memory_order_acquire);
      if (gen == seen) continue;
      seen = gen;
      if (stop.load(std::memory_order_relaxed)) return;
      // Everything is caught: an escaping exception would terminate the
      // process, and the caller must learn about it after all threads return.
      try {
        (*job)(index);
      } catch (...) {
        errors[size_t(index)] = std::current_exception();
      }
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining.notify_all();
    }
  }

  const int size;
  std::mutex run_mu; // one run at a time
  std::vector<std::thread> threads;
  std::mutex ids_mu; // guards ids, read by run() before it takes run_mu
  std::vector<std::thread::id> ids;
  // The current job, written under run_mu before the workers' go words are
  // bumped (release) and read by them after they observe it (acquire). Only
  // the job's threads are woken, so an idle thread never reads a job that the
  // next run may be rewriting.
  const std::function<void(int)>* job = nullptr;
  std::vector<std::exception_ptr> errors;
  struct alignas(64) Go {
    std::atomic<uint32_t> gen{0};
  };
  std::unique_ptr<Go[]> go;
  std::atomic<int> remaining{0};
  std::atomic<bool> stop{false};
};

DeviceThreads::DeviceThreads(int num_devices) {
  if (num_devices < 1) throw Error(ErrCode::Internal, "DeviceThreads needs at least one device");
  impl_ = std::make_unique<Impl>(num_devices);
}

DeviceThreads::~DeviceThreads() = default;

int DeviceThreads::size() const { return impl_->size; }

void DeviceThreads::run(int num_threads, const std::function<void(int thread)>& fn) {
  Impl& m = *impl_;
  if (num_threads < 0 || num_threads > m.size)
    throw Error(ErrCode::Internal, "DeviceThreads::run: " + std::to_string(num_threads) +
                                       " threads requested, the pool has " +
                                       std::to_string(m.size));
  if (num_threads == 0) return;
  {
    // A job that launches again on its own pool would wait forever for
    // run_mu (held by the run it is part of): refuse it instead.
    std::lock_guard<std::mutex> ids(m.ids_mu);
    for (const std::thread::id& id : m.ids)
      if (id == std::this_thread::get_id())
        throw Error(ErrCode::Unsupported,
                    "an SPMD program cannot launch another one from a device thread (a pmap or "
                    "shard_map call inside code that already runs on the devices)");
  }
  std::lock_guard<std::mutex> lock(m.run_mu);
  // Threads are created on first use, so a pool sized for 8 devices that only
  // ever runs 1 costs one thread.
  while (int(m.threads.size()) < num_threads) {
    int index = int(m.threads.size());
    uint32_t seen = m.go[size_t(index)].gen.load(std::memory_order_relaxed);
    m.threads.emplace_back([&m, index, seen] { m.worker(index, seen); });
    std::lock_guard<std::mutex> ids(m.ids_mu);
    m.ids.push_back(m.threads.back().get_id());
  }
  m.job = &fn;
  m.errors.assign(size_t(num_threads), nullptr);
  m.remaining.store(num_threads, std::memory_order_relaxed);
  for (int i = 0; i < num_threads; ++i) {
    m.go[size_t(i)].gen.fetch_add(1, std::memory_order_release);
    m.go[size_t(i)].gen.notify_one();
  }
  for (int left; (left = m.remaining.load(std::memory_order_acquire)) != 0;)
    m.remaining.wait(left, std::memory_order_acquire);
  m.job = nullptr;
  for (std::exception_ptr& e : m.errors)
    if (e) std::rethrow_exception(e);
}

} // namespace pxl
