// Collectives among the device threads of one SPMD execution: real concurrent
// rendezvous over shared memory (no serial emulation), a fixed reduction order
// so float results never depend on thread timing, barriers that block (futex)
// instead of spinning when devices outnumber cores, and a watchdog that turns a
// stuck collective into an error naming the collective, its .pxl line and the
// devices that never arrived.
//
// Terms. A *participant* is one logical instance of the SPMD program (a pmap
// element or a shard_map device), numbered 0..P-1. A *thread* is a device thread;
// thread t runs participants [t*k, (t+1)*k) (k = P / T, k > 1 only for pmap with
// more elements than devices). Every collective is called by *every* thread of
// the world, in the same program order, once per call, passing its k local
// participants' buffers together. Participants are partitioned into *groups*
// (the devices that share every mesh coordinate except the collective's axes);
// a group lists participant ids in rank order (mixed-radix over the named axes,
// first name major).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.hpp"

namespace pxl {

struct GroupLayout {
  int num_participants = 0;
  std::vector<std::vector<int>> groups; // each: participant ids in rank order; all same size
};

// What an error about a collective names: "psum over ('x',) at train.pxl:12:9".
struct CollectiveSite {
  std::string what;     // e.g. "psum over 'batch'"
  std::string location; // e.g. "train.pxl:12:9" (may be empty)
};

enum class ReduceKind : uint8_t { Sum, Max, Min };

// One local participant's buffers for a collective call. `in` holds `in_count`
// elements; `out` has room for the result (sizes per collective below). `out`
// must not overlap any input of the call, except that all_reduce allows
// out == in (in place).
struct LocalBuffers {
  const void* in = nullptr;
  void* out = nullptr;
};

class CommWorld {
public:
  // num_threads device threads, each running participants_per_thread participants.
  // A collective not completed by every thread within `timeout` fails on all threads.
  CommWorld(int num_threads, int participants_per_thread,
            std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~CommWorld();
  int num_threads() const;
  int participants_per_thread() const;

  // Marks the world failed (a thread hit an error): every thread waiting in or
  // later entering a collective throws instead of waiting for it.
  void abort(const std::string& why);

  // The collectives. `thread` is the caller's thread index; `mine` has
  // participants_per_thread() entries (this thread's participants in order).
  // `count` is the element count of each participant's input. All throw
  // pxl::Error(ErrCode::Device, ...) on timeout/abort, naming `site` and (on
  // timeout) the threads that never arrived.
  //
  // all_reduce: out[count] = reduction over the group, in rank order. bool Sum is
  //   logical or; f16/bf16 accumulate in f32 and round once per element.
  void all_reduce(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                  ReduceKind kind, DType dtype, int64_t count, const CollectiveSite& site);
  // all_gather: out[G*count] = concatenation of every rank's input, rank order.
  void all_gather(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g, DType dtype,
                  int64_t count, const CollectiveSite& site);
  // reduce_scatter: the group sum (in rank order) of inputs of `count` elements,
  //   split into G equal chunks; rank r gets chunk r: out[count / G].
  void reduce_scatter(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                      DType dtype, int64_t count, const CollectiveSite& site);
  // all_to_all: each input is G equal chunks; rank r's chunk j goes to rank j,
  //   which stores it at position r: out[count].
  void all_to_all(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g, DType dtype,
                  int64_t count, const CollectiveSite& site);
  // ppermute: pairs (source rank, destination rank) within each group; a rank
  //   that receives nothing gets zeros: out[count].
  void ppermute(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                const std::vector<std::pair<int, int>>& perm, DType dtype, int64_t count,
                const CollectiveSite& site);
  // A plain barrier (used by jax.debug.print for ordered output).
  void barrier(int thread, const CollectiveSite& site);

private:
  struct Impl;
  // Made at the first collective or abort: most calls have no collective, and
  // the staging buffers cost a one-element call more than its kernel launch.
  Impl& impl();
  int num_threads_, per_thread_;
  std::chrono::milliseconds timeout_;
  std::once_flag made_;
  std::unique_ptr<Impl> impl_;
};

// Runs fn(thread) on `num_threads` device threads concurrently and waits for all.
// If any call throws, the first error (by thread index) is rethrown here after
// every thread has returned. Threads are owned by the pool and reused.
class DeviceThreads {
public:
  explicit DeviceThreads(int num_devices);
  ~DeviceThreads();
  int size() const;
  void run(int num_threads, const std::function<void(int thread)>& fn);

private:
  struct Impl;
  // Made at the first collective or abort: most calls have no collective, and
  // the staging buffers cost a one-element call more than its kernel launch.
  Impl& impl();
  int num_threads_, per_thread_;
  std::chrono::milliseconds timeout_;
  std::once_flag made_;
  std::unique_ptr<Impl> impl_;
};

} // namespace pxl
