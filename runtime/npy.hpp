// .npy files (format version 1.0/2.0/3.0, little-endian, C order).
#pragma once
#include <string>

#include "runtime/array.hpp"

namespace pxl {

void save_npy(const std::string& path, const Array& a); // throws pxl::Error(IO)
Array load_npy(const std::string& path);                // throws pxl::Error(IO / DType)

} // namespace pxl
