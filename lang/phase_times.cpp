#include "lang/phase_times.hpp"

#include <algorithm>
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
  int width = 24;
  for (const Entry& e : entries_) width = std::max(width, static_cast<int>(e.phase.size()));
  char numbers[64];
  auto row = [&](const std::string& name, const char* cells) {
    out += "  " + name + std::string(static_cast<size_t>(width) - name.size(), ' ') + cells;
  };
  std::snprintf(numbers, sizeof numbers, " %11s %8s\n", "total ms", "count");
  row("phase", numbers);
  for (const Entry& e : entries_) {
    std::snprintf(numbers, sizeof numbers, " %11.3f %8lld\n", e.seconds * 1e3,
                  static_cast<long long>(e.count));
    row(e.phase, numbers);
  }
  return out;
}

} // namespace pxl
