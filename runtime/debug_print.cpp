#include "runtime/debug_print.hpp"

#include <algorithm>

#include "runtime/executable.hpp"

namespace pxl {

namespace {
DebugPrinter& printer() {
  static DebugPrinter p;
  return p;
}
} // namespace

void set_debug_printer(DebugPrinter p) { printer() = std::move(p); }

void print_debug_now(const DebugFormat& f, std::span<const Array> values) {
  if (printer()) printer()(f, values);
}

void print_debug_records(std::vector<DebugRecord>& records) {
  for (const DebugRecord& r : records)
    if (r.fmt) print_debug_now(*r.fmt, r.values);
  records.clear();
}

void sort_debug_records(std::vector<DebugRecord>& records) {
  std::stable_sort(records.begin(), records.end(), [](const DebugRecord& a, const DebugRecord& b) {
    return a.format != b.format ? a.format < b.format : a.participant < b.participant;
  });
}

} // namespace pxl
