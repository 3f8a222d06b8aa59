// Methods of Python's str: "a,b".split(","), "{:>4}".format(x), ...
#pragma once
#include <string>
#include <vector>

#include "lang/interp_impl.hpp"

namespace pxl {

// Calls str method `name` on `self` (a str value); `name` is one of str_method_names().
Value str_method(InterpreterImpl& in, const std::string& name, const Value& self, CallArgs& a);
const std::vector<std::string>& str_method_names();

} // namespace pxl
