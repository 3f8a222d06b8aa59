#pragma once
// NumPy's other spellings of dtype names (type codes such as 'f4' and 'i8',
// Python's 'float', 'int', 'complex', C names such as 'double'), mapped to the
// dtype's name; shared by np.dtype(str) and dtype == str.

#include <string>

namespace pxl {

// The dtype name `s` stands for ("f4" -> "float32"); `s` itself when it is no alias.
std::string canonical_dtype_name(const std::string& s);

} // namespace pxl
