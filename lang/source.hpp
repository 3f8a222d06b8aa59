// Source text and spans: every token, AST node and (later) IR node carries a Span
// so that any diagnostic can point at the user's line and column.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pxl {

class SourceFile {
public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  // 1-based line and column (column counts UTF-8 code points, as editors do).
  int line_of(uint32_t offset) const;
  int column_of(uint32_t offset) const;
  std::string_view line_text(int line) const; // without the newline
  uint32_t line_start(int line) const { return line_starts_[line - 1]; }
  int line_count() const { return static_cast<int>(line_starts_.size()); }

private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

using SourceRef = std::shared_ptr<const SourceFile>;

struct Span {
  SourceRef file;
  uint32_t begin = 0;
  uint32_t end = 0; // exclusive
  bool valid() const { return file != nullptr; }
  Span to(const Span& other) const { return Span{file, begin, other.end > end ? other.end : end}; }
};

} // namespace pxl
