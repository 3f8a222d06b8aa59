// `pxl --batch`: many programs, one after another, in one process, each in a
// fresh interpreter with its own output, all sharing the CUDA driver and
// contexts (runtime/platform.hpp SharedDevices): a test runner pays the CUDA
// start-up once instead of once a program.
#pragma once
#include <functional>
#include <memory>

#include "repl/cli.hpp"

namespace pxl {

class SharedDevices;

namespace cli {

// Runs one program as `pxl` would and returns its exit status.
using RunProgram = std::function<int(const Options&, std::shared_ptr<SharedDevices>)>;

// Reads requests from stdin, one a line: the directory to run in, a TAB,
// PXL_DEVICES for it (empty: unset), then TAB-separated arguments as on the
// command line (options and a script file, or -c code). For each writes to
// stdout "pxl-batch STATUS OUT-BYTES ERR-BYTES\n", then what the program
// wrote to stdout and to stderr. The programs read /dev/null as stdin.
// Returns 0 at the end of the requests, 1 when stdin or stdout fails.
int run_batch(const RunProgram& run);

} // namespace cli
} // namespace pxl
