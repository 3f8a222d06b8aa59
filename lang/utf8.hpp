// UTF-8, the encoding of pxl's str values: encoding one code point and
// decoding a string that holds exactly one (chr, ord and the 'c' formats).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pxl {

// The UTF-8 bytes of code point `cp` (0 <= cp <= 0x10FFFF).
std::string utf8_encode(uint32_t cp);

// The code point of `s` when it is exactly one UTF-8 character.
std::optional<uint32_t> utf8_single(const std::string& s);

} // namespace pxl
