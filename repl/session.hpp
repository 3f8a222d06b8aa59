// The REPL's logic, independent of where lines come from: the interactive
// terminal (repl.cpp, readline) and stdin script mode both feed lines here, so
// both accept exactly the same input (multi-line blocks, :commands, echo).
#pragma once
#include <iosfwd>
#include <string>

#include "lang/interp.hpp"

namespace pxl {

// Prints the diagnostic for the exception being handled (call inside catch):
// pxl::Error's render(), "out of memory" for std::bad_alloc, an internal-error
// line for anything else. Flushes std::cout first so output stays in order.
void report_current_exception(std::ostream& err);

class Session {
public:
  enum class Status {
    Ready,    // the next line starts a new input (">>> ")
    NeedMore, // the next line continues a block or bracket ("... ")
    Quit,     // :quit, or the input called exit() / sys.exit()
  };

  Session(Interpreter& interp, std::ostream& out, std::ostream& err)
      : interp_(interp), out_(out), err_(err) {}

  // Feeds one line (without its newline); runs the input once it is complete.
  // Never throws: errors are printed to err and the session continues.
  Status feed(const std::string& line);
  // End of input: runs a pending, still incomplete input so its error shows.
  void finish();
  // Ctrl-C: forgets the lines of a pending input.
  void discard_pending() { pending_.clear(); }
  bool has_pending() const { return !pending_.empty(); }
  // Whether any input or command failed (stdin mode's exit status).
  bool had_error() const { return had_error_; }
  // The session's exit status: exit(n)'s n once the input called it, else 1
  // if any input failed, else 0.
  int exit_status() const { return exit_status_ >= 0 ? exit_status_ : had_error_ ? 1 : 0; }
  // Whether the input called exit() / sys.exit().
  bool exit_called() const { return exit_status_ >= 0; }

  Interpreter& interp() { return interp_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  // Reports the exception being handled and remembers that an error happened.
  void report_error();
  // Reports a usage mistake in a :command (not a pxl::Error: there is no span).
  void report_usage(const std::string& message);

private:
  void run(const std::string& code);
  Status run_command(const std::string& line);

  Interpreter& interp_;
  std::ostream& out_;
  std::ostream& err_;
  std::string pending_; // lines of an incomplete input, each ending in '\n'
  bool had_error_ = false;
  int exit_status_ = -1; // set by exit() / sys.exit()
};

// Stdin script mode: every line of `in` through a Session, no prompts, no
// banner. Returns Session::exit_status().
int run_lines(Interpreter& interp, std::istream& in);

} // namespace pxl
