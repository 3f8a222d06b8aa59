#include "repl/session.hpp"

#include <iostream>
#include <new>

#include "lang/system_exit.hpp"
#include "repl/commands.hpp"

namespace pxl {

void report_current_exception(std::ostream& err) {
  std::cout.flush(); // the script's output so far comes before its error
  try {
    throw;
  } catch (const Error& e) {
    err << e.render();
  } catch (const std::bad_alloc&) {
    err << "pxl: error: out of memory\n";
  } catch (const std::exception& e) {
    err << "pxl: internal error: " << e.what() << " (this is a bug in pxl)\n";
  } catch (...) {
    err << "pxl: internal error: unknown exception (this is a bug in pxl)\n";
  }
  err.flush();
}

void Session::report_error() {
  had_error_ = true;
  out_.flush();
  report_current_exception(err_);
}

void Session::report_usage(const std::string& message) {
  had_error_ = true;
  out_.flush();
  err_ << "pxl: error: " << message << "\n";
  err_.flush();
}

static std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

Session::Status Session::feed(const std::string& line) {
  if (pending_.empty()) {
    std::string t = trim(line);
    if (t.empty()) return Status::Ready;
    // ':' cannot start a pxl statement, so a leading colon is always a command.
    if (t[0] == ':') return run_command(t);
  }
  pending_ += line;
  pending_ += '\n';
  Completeness c;
  try {
    c = interp_.check_complete(pending_);
  } catch (...) {
    pending_.clear();
    report_error();
    return Status::Ready;
  }
  if (c == Completeness::Incomplete) return Status::NeedMore;
  // Complete, or Invalid: running invalid input reports its syntax error.
  std::string code = std::move(pending_);
  pending_.clear();
  run(code);
  return exit_status_ >= 0 ? Status::Quit : Status::Ready;
}

void Session::finish() {
  if (pending_.empty()) return;
  std::string code = std::move(pending_);
  pending_.clear();
  run(code);
}

void Session::run(const std::string& code) {
  try {
    interp_.run_repl_input(code);
  } catch (const SystemExit& e) {
    out_.flush();
    if (!e.message.empty()) err_ << e.message << "\n";
    exit_status_ = e.status;
  } catch (...) {
    report_error();
  }
  out_.flush();
}

Session::Status Session::run_command(const std::string& line) {
  size_t space = line.find_first_of(" \t");
  std::string word = line.substr(0, space);
  std::string arg = space == std::string::npos ? "" : trim(line.substr(space));
  const Command* cmd = find_command(word);
  if (!cmd) {
    report_usage("unknown command '" + word + "'; the commands are: " + command_names());
    return Status::Ready;
  }
  try {
    if (cmd->run(*this, arg) == CommandResult::Quit) return Status::Quit;
  } catch (...) {
    report_error();
  }
  out_.flush();
  return Status::Ready;
}

int run_lines(Interpreter& interp, std::istream& in) {
  Session session(interp, std::cout, std::cerr);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back(); // CRLF input
    if (session.feed(line) == Session::Status::Quit) return session.exit_status();
  }
  session.finish();
  return session.exit_status();
}

} // namespace pxl
