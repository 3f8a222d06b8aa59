// Running a while instruction (ir/while_loop.hpp): its cond and body are
// compiled once per layout into executables of the loop's --exec mode, and
// the loop runs on the host -- cond, its bool read back, then body -- for
// every local participant of the device thread in lock step.
#pragma once
#include <span>
#include <vector>

#include "ir/function.hpp"
#include "ir/while_loop.hpp"
#include "runtime/executable.hpp"

namespace pxl {

class PhaseTimes;

// Runs the while f.body[index] for the local participants of device thread
// `thread` (env[j][v] is value v of local participant j). Participants whose
// predicate turns false keep their carry while the others go on; when cond or
// body run collectives, every participant of the layout must agree on the
// predicate at every step (checked with one all-reduce per step): otherwise
// their collectives would not match, and the loop fails with an error naming
// the while's source line instead of hanging.
void run_while_instr(const Function& f, const SpmdLayout& layout, int thread, size_t index,
                     std::vector<std::vector<Array>>& env, CommWorld& world,
                     std::vector<DebugRecord>& debug);

// Runs loop `w` once on one participant (eager code, e.g. a vmapped or
// differentiated function applied outside any trace): operands as the
// instruction's, results the final carry. `where` is blamed for errors.
std::vector<Array> run_while(const WhileLoop& w, std::span<const Array> operands,
                             const Span& where);

} // namespace pxl
