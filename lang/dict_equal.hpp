// Python's == of two dicts, shared by value equality (lang/value.cpp) and the
// interpreter's `==` (lang/operators.cpp), which differ only in how items compare.
#pragma once

#include <functional>

#include "lang/value.hpp"

namespace pxl {

// Same size, the same keys (in the same order when both are OrderedDicts),
// and item_equal true for each key's two values.
bool dicts_equal(const DictObj& x, const DictObj& y,
                 const std::function<bool(const Value&, const Value&)>& item_equal);

} // namespace pxl
