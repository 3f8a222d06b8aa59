// A range object whose length RangeObj::size() can compute. size() works in int64
// ((stop - start + step - 1) / step), which overflows for spans near 2**63 (UBSan:
// signed overflow); Python's len() refuses those ranges too ("too large to convert
// to C ssize_t"), so they are refused when made, from range() or a range's slice.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>

#include "lang/diag.hpp"
#include "lang/value.hpp"

namespace pxl {

inline Value make_range(__int128 start, __int128 stop, __int128 step, const Span& where = {}) {
  constexpr __int128 lo = std::numeric_limits<int64_t>::min(),
                     hi = std::numeric_limits<int64_t>::max();
  __int128 n = step > 0 ? (start < stop ? stop - start + step - 1 : 0)
                        : (start > stop ? start - stop - step - 1 : 0);
  if (start < lo || start > hi || stop < lo || stop > hi || step < lo || step > hi || -step > hi ||
      n > hi)
    throw Error(ErrCode::Value, "Python int too large to convert to C ssize_t", where);
  return Value::object(std::make_shared<RangeObj>(
      static_cast<int64_t>(start), static_cast<int64_t>(stop), static_cast<int64_t>(step)));
}

} // namespace pxl
