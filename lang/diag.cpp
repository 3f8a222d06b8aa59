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
  // Long lines are shown as a window around the caret so a diagnostic stays readable.
  std::string shown;
  for (char ch : text) shown += (ch == '\t' ? ' ' : ch);
  size_t caret_col = static_cast<size_t>(col - 1);
  constexpr size_t kWindow = 100;
  if (display_width(shown) > 2 * kWindow && caret_col > kWindow / 2) {
    // Cut at a code-point boundary kWindow/2 columns before the caret.
    size_t skip_cols = caret_col - kWindow / 2, bytes = 0, cols = 0;
    while (bytes < shown.size() && cols < skip_cols) {
      ++bytes;
      while (bytes < shown.size() && (static_cast<unsigned char>(shown[bytes]) & 0xC0) == 0x80)
        ++bytes;
      ++cols;
    }
    shown = "..." + shown.substr(bytes);
    caret_col = caret_col - skip_cols + 3;
  }
  if (display_width(shown) > 2 * kWindow) {
    size_t bytes = 0, cols = 0;
    while (bytes < shown.size() && cols < 2 * kWindow) {
      ++bytes;
      while (bytes < shown.size() && (static_cast<unsigned char>(shown[bytes]) & 0xC0) == 0x80)
        ++bytes;
      ++cols;
    }
    shown = shown.substr(0, bytes) + "...";
  }
  width = std::min(width, kWindow);
  std::ostringstream os;
  std::string gutter = std::to_string(line);
  os << " " << gutter << " | " << shown << "\n " << std::string(gutter.size(), ' ') << " | "
     << std::string(caret_col, ' ') << '^' << std::string(width - 1, '~') << "\n";
  return os.str();
}

namespace {

bool in_stdlib(const Span& s) { return s.valid() && s.file->path().rfind("<stdlib>/", 0) == 0; }

} // namespace

std::string Error::render() const {
  // An error raised inside pxl's standard library (.pxl code) points at the
  // user's call into it, as JAX's tracebacks leave out its internal frames;
  // the library file is named in a note.
  Span primary = span_;
  size_t first_note = 0;
  std::string library;
  if (in_stdlib(span_))
    for (size_t i = 0; i < trace_.size(); ++i)
      if (trace_[i].span.valid() && !in_stdlib(trace_[i].span)) {
        library = span_.file->path();
        primary = trace_[i].span;
        first_note = i + 1;
        break;
      }
  std::ostringstream os;
  if (primary.valid()) {
    const SourceFile& f = *primary.file;
    os << f.path() << ":" << f.line_of(primary.begin) << ":" << f.column_of(primary.begin) << ": ";
  } else {
    os << "pxl: ";
  }
  os << "error[" << err_code_str(code_) << "]: " << message_ << "\n";
  os << render_excerpt(primary);
  if (!hint_.empty()) os << "  hint: " << hint_ << "\n";
  if (!library.empty()) os << "  note: raised in pxl's standard library (" << library << ")\n";
  // The call chain, innermost first; runs of the same call (deep recursion) are folded.
  for (size_t i = first_note; i < trace_.size();) {
    size_t j = i;
    while (j < trace_.size() && trace_[j].name == trace_[i].name &&
           trace_[j].span.begin == trace_[i].span.begin &&
           trace_[j].span.file == trace_[i].span.file)
      ++j;
    const TraceEntry& t = trace_[i];
    if (t.span.valid()) {
      const SourceFile& f = *t.span.file;
      os << "  note: in call to '" << t.name << "' at " << f.path() << ":"
         << f.line_of(t.span.begin) << ":" << f.column_of(t.span.begin);
      if (j - i > 1) os << " (" << (j - i) << " times)";
      os << "\n";
    }
    i = j;
  }
  return os.str();
}

void internal_error(const char* file, int line, const std::string& what) {
  throw Error(ErrCode::Internal, "internal error at " + std::string(file) + ":" +
                                     std::to_string(line) + ": " + what +
                                     " (this is a bug in pxl)");
}

} // namespace pxl
