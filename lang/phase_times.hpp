// --time-passes: wall time spent in each phase of turning text into results
// (parse, trace, check, fusion plan, LLVM optimisation, codegen, disk cache,
// run), summed over the session. One per interpreter; thread-safe because
// compilation can happen on device threads.
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace pxl {

class PhaseTimes {
public:
  void add(const std::string& phase, double seconds);
  // One line per phase in first-seen order: name, total ms, count, share.
  std::string report() const;
  bool empty() const;

private:
  struct Entry {
    std::string phase;
    double seconds = 0;
    int64_t count = 0;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

// Adds the time from construction to destruction to `phase` (nothing when
// `times` is null, so call sites need no branch).
class ScopedPhase {
public:
  ScopedPhase(PhaseTimes* times, const char* phase)
      : times_(times), phase_(phase), start_(std::chrono::steady_clock::now()) {}
  ~ScopedPhase() {
    if (times_)
      times_->add(phase_,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

private:
  PhaseTimes* times_;
  const char* phase_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace pxl
