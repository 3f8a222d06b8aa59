#include "lang/dtype_names.hpp"

#include <utility>

namespace pxl {

std::string canonical_dtype_name(const std::string& s) {
  static const std::pair<const char*, const char*> kAliases[] = {
      {"?", "bool"},         {"b1", "bool"},        {"bool_", "bool"},        {"i1", "int8"},
      {"int8_", "int8"},     {"i2", "int16"},       {"i4", "int32"},          {"i8", "int64"},
      {"int", "int64"},      {"u1", "uint8"},       {"u2", "uint16"},         {"u4", "uint32"},
      {"u8", "uint64"},      {"f2", "float16"},     {"half", "float16"},      {"f4", "float32"},
      {"single", "float32"}, {"f8", "float64"},     {"float", "float64"},     {"double", "float64"},
      {"c8", "complex64"},   {"c16", "complex128"}, {"complex", "complex128"}};
  for (const auto& [alias, name] : kAliases)
    if (s == alias) return name;
  return s;
}

} // namespace pxl
