#include "lang/diag.hpp"

#include <sstream>

namespace pxl {

const char* err_code_str(ErrCode c) {
  switch (c) {
#define ERR(name, code, title)                                                                     \
  case ErrCode::name:                                                                              \
    return code;
#include "lang/errors.def"
#undef ERR
  }
  return "E????";
}

const char* err_code_title(ErrCode c) {
  switch (c) {
#define ERR(name, code, title)                                                                     \
  case ErrCode::name:                                                                              \
    return title;
#include "lang/errors.def"
#undef ERR
  }
  return "";
}

static size_t display_width(std::string_view s) {
  size_t n = 0;
  for (unsigned char ch : s)
    if ((ch & 0xC0) != 0x80) ++n;
  return n;
}

std::string render_excerpt(const Span& span) {
  if (!span.valid()) return {};
  const SourceFile& f = *span.file;
  int line = f.line_of(span.begin);
  std::string_view text = f.line_text(line);
  int col = f.column_of(span.begin);
  // The caret covers the span, clipped to the first line.
  uint32_t line_start = f.line_start(line);
  uint32_t line_end = line_start + static_cast<uint32_t>(text.size());
  uint32_t end = std::min(std::max(span.end, span.begin + 1), std::max(line_end, span.begin + 1));
  size_t width = span.begin < line_end
                     ? display_width(std::string_view(f.text().data() + span.begin,
                                                      std::min(end, line_end) - span.begin))
                     : 1;
  if (width == 0) width = 1;
  std::ostringstream os;
  std::string gutter = std::to_string(line);
  os << " " << gutter << " | ";
  for (char ch : text) os << (ch == '\t' ? ' ' : ch);
  os << "\n " << std::string(gutter.size(), ' ') << " | " << std::string(col - 1, ' ') << '^'
     << std::string(width - 1, '~') << "\n";
  return os.str();
}

std::string Error::render() const {
  std::ostringstream os;
  if (span_.valid()) {
    const SourceFile& f = *span_.file;
    os << f.path() << ":" << f.line_of(span_.begin) << ":" << f.column_of(span_.begin) << ": ";
  } else {
    os << "pxl: ";
  }
  os << "error[" << err_code_str(code_) << "]: " << message_ << "\n";
  os << render_excerpt(span_);
  if (!hint_.empty()) os << "  hint: " << hint_ << "\n";
  // Innermost call last, as Python does: each entry is a call that led here.
  for (auto it = trace_.rbegin(); it != trace_.rend(); ++it) {
    if (!it->span.valid()) continue;
    const SourceFile& f = *it->span.file;
    os << "  note: in call to '" << it->name << "' at " << f.path() << ":"
       << f.line_of(it->span.begin) << ":" << f.column_of(it->span.begin) << "\n";
  }
  return os.str();
}

void internal_error(const char* file, int line, const std::string& what) {
  throw Error(ErrCode::Internal,
              "internal error at " + std::string(file) + ":" + std::to_string(line) + ": " + what +
                  " (this is a bug in pxl)");
}

} // namespace pxl
