// Single-device jax.debug.print: an instruction that runs outside a pmap or
// shard_map (eagerly, in a jitted function, in a loop) prints when it runs,
// through the printer the interpreter installs (it formats the values as
// Python's str.format does). SPMD programs collect DebugRecords instead and
// print them after the run (stdlib/spmd.cpp).
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "ir/op.hpp"
#include "runtime/array.hpp"

namespace pxl {

struct DebugRecord;

using DebugPrinter = std::function<void(const DebugFormat&, std::span<const Array>)>;
void set_debug_printer(DebugPrinter p);

// Prints one debug_print's values now (nothing when no printer is installed).
void print_debug_now(const DebugFormat& f, std::span<const Array> values);

// Prints the records a single-device run collected, in the order they ran.
void print_debug_records(std::vector<DebugRecord>& records);

// The records of an SPMD run in the order they print: statement by statement
// (format), each in participant (device) order.
void sort_debug_records(std::vector<DebugRecord>& records);

} // namespace pxl
