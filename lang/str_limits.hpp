// The largest width or precision that formatting (f-strings, format(), str.format,
// %-formatting) and the padding str methods (center, ljust, rjust, zfill, expandtabs)
// accept. Python allows any that fits in memory; a bigger one here is an error
// (E0105), never a silently smaller result.
#pragma once

#include <cstdint>

namespace pxl {

inline constexpr int64_t kMaxStrWidth = int64_t{1} << 26;

} // namespace pxl
