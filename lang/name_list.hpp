// Python's way of listing names in its argument errors: "'a'", "'a' and 'b'",
// "'a', 'b', and 'c'" (CPython's missing-arguments text).
#pragma once
#include <string>
#include <vector>

namespace pxl {

inline std::string python_and_list(const std::vector<std::string>& items) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k)
    out += (k == 0                 ? ""
            : k + 1 < items.size() ? ", "
            : items.size() == 2    ? " and "
                                   : ", and ") +
           items[k];
  return out;
}

} // namespace pxl
