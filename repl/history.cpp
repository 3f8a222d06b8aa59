#include "repl/history.hpp"

#include <cstdio>
#include <cstdlib>

#include <readline/history.h>

namespace pxl {

History::History() {
  using_history();
  stifle_history(kMaxEntries);
  const char* home = std::getenv("HOME");
  if (home && *home) path_ = std::string(home) + "/.pxl_history";
  if (!path_.empty()) read_history(path_.c_str());
}

History::~History() {
  if (!path_.empty()) history_truncate_file(path_.c_str(), kMaxEntries);
}

void History::add(const std::string& line) {
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  HIST_ENTRY* last = history_length > 0 ? history_get(history_base + history_length - 1) : nullptr;
  if (last && line == last->line) return; // no consecutive duplicates
  add_history(line.c_str());
  if (path_.empty()) return;
  // append_history needs an existing file; write_history creates it.
  if (append_history(1, path_.c_str()) != 0) write_history(path_.c_str());
}

} // namespace pxl
