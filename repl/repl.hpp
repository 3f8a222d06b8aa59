// The interactive REPL on a terminal: GNU readline editing, persistent history
// (~/.pxl_history), tab completion, Ctrl-C clears the input, Ctrl-D quits.
#pragma once

#include "lang/interp.hpp"

namespace pxl {

// Runs until :quit or Ctrl-D; returns the exit status (0).
int run_interactive(Interpreter& interp);

} // namespace pxl
