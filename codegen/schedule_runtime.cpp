// The runtime entry points of compiled schedules (schedule.hpp): plain
// functions the JIT links by name, forwarding to the ScheduleHost the
// schedule was given.
#include "codegen/schedule.hpp"

namespace pxl {

namespace {

int host_step(ScheduleHost* h, int64_t instr) { return h->host_step(instr); }
void* alloc(ScheduleHost* h, int64_t participant, int64_t value) {
  return h->alloc(participant, value);
}
int big_kernel(ScheduleHost* h, int64_t kernel, void* const* args, int64_t extent, int64_t finish) {
  return h->big_kernel(kernel, args, extent, finish);
}

void* addr(auto* fn) { return reinterpret_cast<void*>(fn); }

} // namespace

std::span<const RuntimeSymbol> schedule_runtime_symbols() {
  static const RuntimeSymbol table[] = {
      {"pxl.sched.host", addr(&host_step)},
      {"pxl.sched.alloc", addr(&alloc)},
      {"pxl.sched.kernel", addr(&big_kernel)},
  };
  return table;
}

} // namespace pxl
