// Runs a function on a thread with a large stack, so that deep pxl recursion
// reaches the interpreter's recursion limit (a clean diagnostic) long before it
// could overflow the native stack (a segfault).
#pragma once
#include <cstddef>
#include <functional>

namespace pxl {

constexpr size_t kInterpreterStackBytes = size_t(512) << 20; // 512 MiB, reserved lazily

// Returns body's result. If such a thread cannot be created (e.g. a tight
// ulimit -v), runs body on the calling thread instead.
int run_on_big_stack(const std::function<int()>& body, size_t stack_bytes = kInterpreterStackBytes);

} // namespace pxl
