// Persistent REPL history in $HOME/.pxl_history. Every failure (no $HOME, a
// read-only home) is silent: history is a convenience, never a reason to fail.
#pragma once
#include <string>

namespace pxl {

class History {
public:
  History();  // reads the file, if any
  ~History(); // trims the file to the last kMaxEntries lines
  History(const History&) = delete;
  History& operator=(const History&) = delete;
  // Adds a line to readline's history and appends it to the file at once, so
  // a killed session loses nothing.
  void add(const std::string& line);

private:
  static constexpr int kMaxEntries = 1000;
  std::string path_; // empty: no persistent history
};

} // namespace pxl
