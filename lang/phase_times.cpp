#include "lang/phase_times.hpp"

#include <cstdio>

namespace pxl {

void PhaseTimes::add(const std::string& phase, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_)
    if (e.phase == phase) {
      e.seconds += seconds;
      ++e.count;
      return;
    }
  entries_.push_back({phase, seconds, 1});
}

bool PhaseTimes::empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.empty();
}

std::string PhaseTimes::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Phases nest (a trace includes its checks), so there is no grand total.
  std::string out = "pxl --time-passes (wall time per phase, summed over the run):\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-24s %11s %8s\n", "phase", "total ms", "count");
  out += line;
  for (const Entry& e : entries_) {
    std::snprintf(line, sizeof line, "  %-24s %11.3f %8lld\n", e.phase.c_str(), e.seconds * 1e3,
                  static_cast<long long>(e.count));
    out += line;
  }
  return out;
}

} // namespace pxl
