#include "lang/source.hpp"

#include <algorithm>

namespace pxl {

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

int SourceFile::line_of(uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<int>(it - line_starts_.begin());
}

int SourceFile::column_of(uint32_t offset) const {
  uint32_t start = line_starts_[line_of(offset) - 1];
  int col = 1;
  for (uint32_t i = start; i < offset && i < text_.size(); ++i)
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++col; // count code points
  return col;
}

std::string_view SourceFile::line_text(int line) const {
  if (line < 1 || line > line_count()) return {};
  uint32_t start = line_starts_[line - 1];
  uint32_t end = line < line_count() ? line_starts_[line] : static_cast<uint32_t>(text_.size());
  std::string_view v(text_.data() + start, end - start);
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

} // namespace pxl
