#include "lang/utf8.hpp"

namespace pxl {

std::string utf8_encode(uint32_t cp) {
  std::string out;
  auto cont = [&](int shift) { out += static_cast<char>(0x80 | ((cp >> shift) & 0x3F)); };
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    cont(0);
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    cont(6), cont(0);
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    cont(12), cont(6), cont(0);
  }
  return out;
}

std::optional<uint32_t> utf8_single(const std::string& s) {
  if (s.empty()) return std::nullopt;
  unsigned char c = static_cast<unsigned char>(s[0]);
  uint32_t cp = c < 0x80 ? c : c < 0xE0 ? c & 0x1F : c < 0xF0 ? c & 0x0F : c & 0x07;
  size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (s.size() != n) return std::nullopt;
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
  return cp;
}

} // namespace pxl
