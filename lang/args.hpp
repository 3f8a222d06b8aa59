// Binding CallArgs of a native function to named parameters, with Python's
// error messages ("f() missing required argument 'x'", ...).
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "lang/value.hpp"

namespace pxl {

class ArgReader {
public:
  // `names`: parameter names in positional order; the first `required` must be given.
  // A name starting with '*' collects the remaining positional arguments (get_rest()).
  ArgReader(const std::string& fname, CallArgs& args, std::initializer_list<const char*> names,
            size_t required = 0);
  bool has(size_t i) const { return given_[i]; }
  const Value& operator[](size_t i) const { return values_[i]; }
  const ValueList& rest() const { return rest_; }

  int64_t get_int(size_t i) const;
  int64_t get_int(size_t i, int64_t dflt) const {
    return has(i) && !values_[i].is_none() ? get_int(i) : dflt;
  }
  double get_float(size_t i) const;
  double get_float(size_t i, double dflt) const {
    return has(i) && !values_[i].is_none() ? get_float(i) : dflt;
  }
  bool get_bool(size_t i, bool dflt) const;
  std::string get_str(size_t i) const;
  const std::string& fname() const { return fname_; }
  std::string param(size_t i) const { return names_[i]; }

private:
  std::string fname_;
  std::vector<std::string> names_;
  ValueList values_;
  std::vector<bool> given_;
  ValueList rest_;
};

// Argument conversions shared by builtins and stdlib.
int64_t value_to_int(const Value& v, const std::string& what);
double value_to_float(const Value& v, const std::string& what);
std::vector<int64_t> value_to_int_list(const Value& v, const std::string& what); // int or sequence
// Such an int list as the caller wrote it, for errors that quote it as Python
// does: 5, [5], (5, 1) (an array as the ints it holds).
std::string written_int_list(const Value& v, const std::string& what);
std::optional<std::vector<int>> value_to_axes(const Value& v,
                                              const std::string& what); // None/int/tuple
const std::string& value_to_str(const Value& v, const std::string& what);
const ValueList* sequence_items(const Value& v); // tuple or list items, else nullptr

} // namespace pxl
