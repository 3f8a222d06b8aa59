#include "lang/args.hpp"

#include <cmath>

#include "lang/bigint.hpp"
#include "lang/name_list.hpp"

namespace pxl {

ArgReader::ArgReader(const std::string& fname, CallArgs& args,
                     std::initializer_list<const char*> names, size_t required)
    : fname_(fname) {
  for (const char* n : names) names_.push_back(n);
  values_.resize(names_.size());
  given_.assign(names_.size(), false);
  size_t star = names_.size();
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i][0] == '*') star = i;
  size_t npos_params = star;
  for (size_t i = 0; i < args.pos.size(); ++i) {
    if (i < npos_params) {
      values_[i] = args.pos[i];
      given_[i] = true;
    } else if (star < names_.size()) {
      rest_.push_back(args.pos[i]);
    } else {
      throw Error(ErrCode::Arguments, fname + "() takes at most " + std::to_string(npos_params) +
                                          " positional argument" + (npos_params == 1 ? "" : "s") +
                                          " but " + std::to_string(args.pos.size()) +
                                          " were given");
    }
  }
  for (auto& [k, v] : args.kw) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != k) ++i;
    if (i == names_.size() || i == star)
      throw Error(ErrCode::Arguments, fname + "() got an unexpected keyword argument '" + k + "'");
    if (given_[i])
      throw Error(ErrCode::Arguments, fname + "() got multiple values for argument '" + k + "'");
    values_[i] = v;
    given_[i] = true;
  }
  // Python's text for a function's missing arguments, naming them all.
  std::vector<std::string> missing;
  for (size_t i = 0; i < required && i < names_.size(); ++i)
    if (!given_[i]) missing.push_back("'" + names_[i] + "'");
  if (!missing.empty()) {
    throw Error(ErrCode::Arguments, fname + "() missing " + std::to_string(missing.size()) +
                                        " required positional argument" +
                                        (missing.size() == 1 ? "" : "s") + ": " +
                                        python_and_list(missing));
  }
}

int64_t ArgReader::get_int(size_t i) const {
  return value_to_int(values_[i], fname_ + "() argument '" + names_[i] + "'");
}
double ArgReader::get_float(size_t i) const {
  return value_to_float(values_[i], fname_ + "() argument '" + names_[i] + "'");
}
bool ArgReader::get_bool(size_t i, bool dflt) const {
  if (!has(i) || values_[i].is_none()) return dflt;
  const Value& v = values_[i];
  if (v.is_number()) return v.as_float() != 0;
  throw Error(ErrCode::Type,
              fname_ + "() argument '" + names_[i] + "' must be a bool, not " + type_name(v));
}
std::string ArgReader::get_str(size_t i) const {
  return value_to_str(values_[i], fname_ + "() argument '" + names_[i] + "'");
}

int64_t value_to_int(const Value& v, const std::string& what) {
  if (v.is_intlike()) return v.as_int();
  if (v.is_obj(ObjKind::Array)) {
    const Tensor& t = v.as<ArrayObj>()->tensor;
    if (t->concrete && t->aval.shape.empty() && !is_floating(t->aval.dtype))
      return t->concrete->get(0).i;
  }
  if (is_bigint(v)) throw Error(ErrCode::Value, "Python int too large to convert to C ssize_t");
  // Python's operator.index text, which JAX's integer arguments raise.
  (void)what;
  throw Error(ErrCode::Type, "'" + type_name(v) + "' object cannot be interpreted as an integer");
}

double value_to_float(const Value& v, const std::string& what) {
  if (v.is_number()) return v.as_float();
  if (is_bigint(v)) return bigint_to_double(v.as<BigIntObj>()->value);
  if (v.is_obj(ObjKind::Array)) {
    const Tensor& t = v.as<ArrayObj>()->tensor;
    if (t->concrete && t->aval.size() == 1) return t->concrete->get_f64(0);
  }
  throw Error(ErrCode::Type, what + " must be a number, not " + type_name(v));
}

const ValueList* sequence_items(const Value& v) {
  if (v.is_obj(ObjKind::Tuple)) return &v.as<TupleObj>()->items;
  if (v.is_obj(ObjKind::List)) return &v.as<ListObj>()->items;
  if (v.is_obj(ObjKind::Opaque)) return v.as<OpaqueObj>()->tuple_items();
  return nullptr;
}

std::vector<int64_t> value_to_int_list(const Value& v, const std::string& what) {
  if (v.is_intlike() || v.is_obj(ObjKind::Array)) {
    if (v.is_obj(ObjKind::Array) && !v.as<ArrayObj>()->tensor->aval.shape.empty()) {
      const Tensor& t = v.as<ArrayObj>()->tensor;
      if (!t->concrete || t->aval.ndim() != 1 || is_floating(t->aval.dtype))
        throw Error(ErrCode::Type, what + " must be a tuple of integers");
      std::vector<int64_t> out;
      for (int64_t i = 0; i < t->aval.size(); ++i) out.push_back(t->concrete->get(i).i);
      return out;
    }
    return {value_to_int(v, what)};
  }
  const ValueList* items = sequence_items(v);
  if (!items)
    throw Error(ErrCode::Type,
                what + " must be an integer or a tuple of integers, not " + type_name(v));
  std::vector<int64_t> out;
  for (const auto& x : *items) out.push_back(value_to_int(x, what));
  return out;
}

std::string written_int_list(const Value& v, const std::string& what) {
  if (v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple) || v.is_intlike()) return repr(v);
  std::vector<int64_t> ints = value_to_int_list(v, what);
  if (v.is_obj(ObjKind::Array) && v.as<ArrayObj>()->tensor->aval.shape.empty())
    return std::to_string(ints.at(0));
  return shape_str(ints);
}

std::optional<std::vector<int>> value_to_axes(const Value& v, const std::string& what) {
  if (v.is_none()) return std::nullopt;
  std::vector<int> out;
  for (int64_t a : value_to_int_list(v, what))
    out.push_back(static_cast<int>(std::clamp<int64_t>(a, -1000000, 1000000)));
  return out;
}

const std::string& value_to_str(const Value& v, const std::string& what) {
  if (!v.is_obj(ObjKind::Str))
    throw Error(ErrCode::Type, what + " must be a string, not " + type_name(v));
  return v.as<StrObj>()->value;
}

} // namespace pxl
