// Class values (what type(x) returns and names like jax.Array are bound to)
// whose printed, module-qualified path differs from pxl's type name.
#pragma once

#include <string>

#include "lang/value.hpp"

namespace pxl {

// A class pxl knows as `name` (isinstance and equality compare it) that
// prints as <class 'path'> and whose __name__ is path's last component.
Value make_type_at(std::string name, std::string path);

// type(v): also what v.__class__ reads.
Value type_of(const Value& v);

} // namespace pxl
