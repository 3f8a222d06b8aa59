// Diagnostics. A user mistake is a pxl::Error (with a code from errors.def, a
// message, an optional span and hint); an internal bug is PXL_ASSERT. Errors
// raised below the interpreter (array kernels, shape rules) carry no span; the
// interpreter attaches the span of the call that failed before it reaches the user.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "lang/source.hpp"

namespace pxl {

enum class ErrCode {
#define ERR(name, code, title) name,
#include "lang/errors.def"
#undef ERR
};

const char* err_code_str(ErrCode c);
const char* err_code_title(ErrCode c);

struct TraceEntry {
  Span span;        // call site
  std::string name; // function being called
};

class Error : public std::exception {
public:
  Error(ErrCode code, std::string message, Span span = {}, std::string hint = {})
      : code_(code), message_(std::move(message)), span_(std::move(span)), hint_(std::move(hint)) {}
  ErrCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const Span& span() const { return span_; }
  const std::string& hint() const { return hint_; }
  const std::vector<TraceEntry>& trace() const { return trace_; }
  bool has_span() const { return span_.valid(); }
  void set_span_if_missing(const Span& s) {
    if (!span_.valid()) span_ = s;
  }
  void set_hint(std::string h) { hint_ = std::move(h); }
  void add_trace(TraceEntry e) { trace_.push_back(std::move(e)); }
  const char* what() const noexcept override { return message_.c_str(); }
  // "file:line:col: error[E0200]: message\n <source line>\n <caret>\n  hint: ...\n"
  std::string render() const;

private:
  ErrCode code_;
  std::string message_;
  Span span_;
  std::string hint_;
  std::vector<TraceEntry> trace_;
};

// Renders a source excerpt with a caret line (^~~~) under [span.begin, span.end).
std::string render_excerpt(const Span& span);

[[noreturn]] void internal_error(const char* file, int line, const std::string& what);
#define PXL_ASSERT(cond, msg)                                                                      \
  do {                                                                                             \
    if (!(cond)) ::pxl::internal_error(__FILE__, __LINE__, (msg));                                 \
  } while (0)

} // namespace pxl
