#include "repl/repl.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <readline/readline.h>

#include "codegen/llvm_info.hpp"
#include "repl/commands.hpp"
#include "repl/history.hpp"
#include "repl/session.hpp"

#ifndef PXL_VERSION
#define PXL_VERSION "unknown"
#endif

namespace pxl {

namespace {

constexpr const char* kPrompt = ">>> ";
constexpr const char* kContinuation = "... ";

// Readline drives us through plain C callbacks (line handler, completion, TAB)
// and signals arrive in handlers; both can only find the REPL through a static.
// This pointer is pxl's single piece of global mutable state: it is set for the
// lifetime of the one Repl that owns the terminal and cleared when it ends.
class Repl;
Repl* g_repl = nullptr;

class Repl {
public:
  explicit Repl(Interpreter& interp) : session_(interp, std::cout, std::cerr) {}
  ~Repl() { teardown(); } // also on an exception (out of memory) leaving run()
  Repl(const Repl&) = delete;
  Repl& operator=(const Repl&) = delete;
  int run();

  // Called from the readline callbacks and signal handlers, via g_repl.
  void on_line(char* line);
  char** complete(const char* text, int start);
  void on_signal(char code) { // async-signal-safe: one write(2)
    if (pipe_[1] >= 0 && ::write(pipe_[1], &code, 1) < 0) {
      // a full pipe already holds a pending signal; nothing to add
    }
  }
  bool at_prompt() const { return at_prompt_.load(); }
  void interrupt_running() { session_.interp().interrupt(); } // async-signal-safe

private:
  bool setup();
  void teardown();
  void prompt(Session::Status status);
  void process(const std::string& line);
  void interrupt();
  void drain_signals();

  Session session_;
  History history_;
  int pipe_[2] = {-1, -1}; // self-pipe: signal handlers -> poll loop
  std::atomic<bool> at_prompt_{false};
  std::optional<std::string> line_; // set by on_line
  bool eof_ = false;
  bool quit_ = false;
  using SigAction = struct sigaction;
  SigAction old_int_{}; // restored by teardown()
  SigAction old_winch_{};
};

// --- C callbacks -----------------------------------------------------------

void line_handler(char* line) { g_repl->on_line(line); }

char** attempted_completion(const char* text, int start, int /*end*/) {
  return g_repl ? g_repl->complete(text, start) : nullptr;
}

// TAB indents at the start of a line (typing a block body), completes elsewhere.
int tab_key(int count, int key) {
  for (int i = 0; i < rl_point; ++i)
    if (rl_line_buffer[i] != ' ' && rl_line_buffer[i] != '\t') {
      // rl_complete lists the candidates on a second TAB only when it was the
      // last command, and readline recorded this function instead.
      if (rl_last_func == tab_key) rl_last_func = rl_complete;
      return rl_complete(count, key);
    }
  rl_insert_text("    ");
  return 0;
}

void signal_handler(int sig) {
  Repl* repl = g_repl;
  if (sig == SIGWINCH) {
    if (repl) repl->on_signal('w');
  } else if (repl && repl->at_prompt()) {
    repl->on_signal('i');
  } else if (repl) {
    // Running code: ask the interpreter to stop; the session continues.
    repl->interrupt_running();
  } else {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

// A readline match list: [common prefix, match..., NULL], malloc'ed.
char** to_matches(std::vector<std::string> cands) {
  std::sort(cands.begin(), cands.end());
  cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
  if (cands.empty()) return nullptr;
  size_t lcp = cands.front().size();
  for (const std::string& c : cands) {
    size_t i = 0;
    while (i < lcp && i < c.size() && c[i] == cands.front()[i]) ++i;
    lcp = i;
  }
  bool single = cands.size() == 1;
  auto** m = static_cast<char**>(std::malloc((cands.size() + 2) * sizeof(char*)));
  if (!m) return nullptr;
  m[0] = strdup(cands.front().substr(0, single ? std::string::npos : lcp).c_str());
  size_t k = 1;
  if (!single)
    for (const std::string& c : cands) m[k++] = strdup(c.c_str());
  m[k] = nullptr;
  return m;
}

// --- Repl --------------------------------------------------------------------

char** Repl::complete(const char* text, int start) {
  rl_attempted_completion_over = 1; // no fallback to file names...
  rl_completion_append_character = '\0';
  std::string before(rl_line_buffer, static_cast<size_t>(start));
  size_t first = before.find_first_not_of(" \t");
  try {
    if (first != std::string::npos && before[first] == ':') {
      if (before.find_first_not_of(" \t", first + 1) == std::string::npos) {
        std::vector<std::string> names; // ":ty<TAB>": the word after the colon
        for (const Command& c : commands())
          if (c.name.substr(1).starts_with(text)) names.emplace_back(c.name.substr(1));
        return to_matches(std::move(names));
      }
      if (before.compare(first, 5, ":load") == 0) {
        rl_attempted_completion_over = 0; // ...except after :load
        return nullptr;
      }
    }
    return to_matches(session_.interp().complete(text));
  } catch (...) {
    return nullptr; // a failing completion must not disturb the line being edited
  }
}

void Repl::on_line(char* line) {
  // Removing the handler here keeps readline from re-prompting before we have
  // run the input; prompt() installs it again with the right prompt.
  rl_callback_handler_remove();
  if (!line) {
    eof_ = true;
    return;
  }
  try { // no exception may unwind through readline's C frames
    line_ = std::string(line);
  } catch (...) {
    line_.reset(); // out of memory: drop the line, keep the session
  }
  std::free(line);
}

void Repl::prompt(Session::Status status) {
  std::cout.flush();
  at_prompt_ = true;
  rl_callback_handler_install(status == Session::Status::NeedMore ? kContinuation : kPrompt,
                              line_handler);
}

void Repl::process(const std::string& line) {
  history_.add(line);
  at_prompt_ = false;
  Session::Status status = session_.feed(line);
  if (status == Session::Status::Quit) {
    quit_ = true;
    return;
  }
  prompt(status);
}

void Repl::interrupt() {
  rl_callback_sigcleanup();     // leaves incremental search and the like
  rl_callback_handler_remove(); // restores the terminal; the typed text stays visible
  std::fputs("\nKeyboardInterrupt\n", stdout);
  std::fflush(stdout);
  rl_free_line_state();   // undo list, history position
  rl_replace_line("", 0); // the next prompt starts empty
  session_.discard_pending();
  prompt(Session::Status::Ready);
}

void Repl::drain_signals() {
  char codes[64];
  ssize_t n = ::read(pipe_[0], codes, sizeof codes);
  bool interrupted = false, resized = false;
  for (ssize_t i = 0; i < n; ++i) (codes[i] == 'i' ? interrupted : resized) = true;
  if (resized) rl_resize_terminal();
  if (interrupted) interrupt();
}

bool Repl::setup() {
  if (::pipe(pipe_) != 0) return false;
  for (int fd : pipe_) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  g_repl = this;
  rl_readline_name = "pxl"; // for $if pxl in ~/.inputrc
  rl_catch_signals = 0;     // we own SIGINT and SIGWINCH
  rl_catch_sigwinch = 0;
  // Dots stay inside the word so "np.aran" completes whole; a colon breaks it,
  // so ":ty" completes "ty" against the command names (see complete()).
  rl_basic_word_break_characters = const_cast<char*>(" \t\n\"\\'`@$><=;:|&{(,[)]}+-*/%^~!");
  rl_completer_word_break_characters = rl_basic_word_break_characters;
  rl_attempted_completion_function = attempted_completion;
  rl_initialize();
  rl_bind_key('\t', tab_key);
  struct sigaction sa {};
  sa.sa_handler = signal_handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGWINCH, &sa, &old_winch_);
  return true;
}

void Repl::teardown() {
  if (g_repl != this) return; // never set up, or already torn down
  rl_callback_handler_remove();
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGWINCH, &old_winch_, nullptr);
  g_repl = nullptr;
  for (int& fd : pipe_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

int Repl::run() {
  if (!setup()) {
    std::cerr << "pxl: error: cannot set up the terminal: " << std::strerror(errno) << "\n";
    return 1;
  }
  std::cout << "pxl " PXL_VERSION " (LLVM " << llvm_version() << ") on "
            << session_.interp().planned_num_devices()
            << " CPU devices. Type :help for commands, Ctrl-D to quit.\n";
  prompt(Session::Status::Ready);
  while (!quit_) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents & POLLIN) drain_signals();
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    rl_callback_read_char();
    if (eof_) {
      // Ctrl-D: end the prompt's line, unless readline did already (it does
      // when bracketed paste is on).
      const char* paste = rl_variable_value("enable-bracketed-paste");
      if (!paste || std::strcmp(paste, "on") != 0) std::fputs("\n", stdout);
      break;
    }
    if (line_) {
      std::string line = std::move(*line_);
      line_.reset();
      process(line);
    }
  }
  teardown();
  std::cout.flush();
  return session_.exit_called() ? session_.exit_status() : 0;
}

} // namespace

int run_interactive(Interpreter& interp) {
  Repl repl(interp);
  return repl.run();
}

} // namespace pxl
