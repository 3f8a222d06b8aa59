// A range object whose length fits in int64 (RangeObj::size() returns it). Python's
// len() refuses a longer range ("too large to convert to C ssize_t"); pxl refuses it
// when made, from range() or a range's slice, since every use of a range needs its
// length. Bounds and step must be int64 themselves.
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
  if (step == 0) step = 1; // range() rejects a zero step before calling this
  __int128 count = step > 0 ? (start < stop ? (stop - start + step - 1) / step : 0)
                            : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (start < lo || start > hi || stop < lo || stop > hi || step < lo || step > hi || count > hi)
    throw Error(ErrCode::Value, "Python int too large to convert to C ssize_t", where);
  return Value::object(std::make_shared<RangeObj>(
      static_cast<int64_t>(start), static_cast<int64_t>(stop), static_cast<int64_t>(step)));
}

} // namespace pxl
