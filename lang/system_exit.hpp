// sys.exit() / exit() / quit(): not an error but a request to stop. It unwinds
// the interpreter to its caller: the pxl program exits with `status` (after
// printing `message` to stderr, as Python does for sys.exit("text")), the REPL
// ends, and an embedding program sees it thrown from Runtime::run_file /
// run_string. Not derived from pxl::Error, so nothing that handles errors
// (the REPL's report, a transform's clean-up and retry) mistakes it for one.
#pragma once
#include <string>

namespace pxl {

struct SystemExit {
  int status = 0;
  std::string message; // printed to stderr when the program ends ("" for none)
};

} // namespace pxl
