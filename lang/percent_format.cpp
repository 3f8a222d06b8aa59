// printf-style string formatting, `"%5.2f %s" % (x, name)`: Python's
// str.__mod__. Each conversion is translated to a format spec and handed to
// format_value (lang/format_spec.cpp), so both spellings format numbers alike.
#include <cmath>

#include "lang/bigint.hpp"
#include "lang/interp_impl.hpp"
#include "lang/methods.hpp"
#include "lang/str_limits.hpp"
#include "lang/utf8.hpp"

namespace pxl {

namespace {

// One parsed conversion: %[(key)][flags][width][.precision][length]type.
struct Conversion {
  std::string key;
  bool has_key = false;
  bool left = false, zero = false, alt = false;
  char sign = 0; // '+' or ' '
  int width = -1, precision = -1;
  bool star_width = false, star_precision = false;
  char type = 0;
};

// The arguments, consumed left to right (or looked up by key in a mapping).
class Args {
public:
  Args(const Value& v, const Span& where) : where_(where) {
    if (v.is_obj(ObjKind::Tuple)) {
      items_ = v.as<TupleObj>()->items;
    } else {
      items_ = {v};
      if (v.is_obj(ObjKind::Dict)) mapping_ = v;
    }
  }
  Value next() {
    if (pos_ >= items_.size())
      throw Error(ErrCode::Type, "not enough arguments for format string", where_);
    return items_[pos_++];
  }
  Value lookup(const std::string& key) {
    if (!mapping_.is_obj(ObjKind::Dict))
      throw Error(ErrCode::Type, "format requires a mapping", where_);
    const Value* v = mapping_.as<DictObj>()->find(make_str(key));
    if (!v) throw Error(ErrCode::Key, "'" + key + "'", where_);
    return *v;
  }
  // Python complains about leftovers unless the argument is a mapping.
  void check_all_used() const {
    if (pos_ < items_.size() && !mapping_.is_obj(ObjKind::Dict))
      throw Error(ErrCode::Type, "not all arguments converted during string formatting", where_);
  }

private:
  std::vector<Value> items_;
  size_t pos_ = 0;
  Value mapping_;
  Span where_;
};

Conversion parse_conversion(const std::string& fmt, size_t& i, const Span& where) {
  Conversion c;
  auto incomplete = [&]() { return Error(ErrCode::Value, "incomplete format", where); };
  if (i < fmt.size() && fmt[i] == '(') {
    int depth = 1;
    size_t start = ++i;
    while (i < fmt.size() && depth > 0) {
      if (fmt[i] == '(') ++depth;
      if (fmt[i] == ')') --depth;
      ++i;
    }
    if (depth > 0) throw Error(ErrCode::Value, "incomplete format key", where);
    c.key = fmt.substr(start, i - 1 - start);
    c.has_key = true;
  }
  for (; i < fmt.size(); ++i) {
    char f = fmt[i];
    if (f == '-')
      c.left = true;
    else if (f == '0')
      c.zero = true;
    else if (f == '#')
      c.alt = true;
    else if (f == '+')
      c.sign = '+';
    else if (f == ' ')
      c.sign = c.sign ? c.sign : ' ';
    else
      break;
  }
  auto number = [&](bool& star) {
    if (i < fmt.size() && fmt[i] == '*') {
      star = true;
      ++i;
      return -1;
    }
    int v = -1;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
      v = (v < 0 ? 0 : v) * 10 + (fmt[i++] - '0');
      if (v > kMaxStrWidth) throw Error(ErrCode::Value, "width or precision too big", where);
    }
    return v;
  };
  c.width = number(c.star_width);
  if (i < fmt.size() && fmt[i] == '.') {
    ++i;
    c.precision = number(c.star_precision);
    if (c.precision < 0 && !c.star_precision) c.precision = 0;
  }
  while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
  if (i >= fmt.size()) throw incomplete();
  c.type = fmt[i++];
  return c;
}

std::string hex_byte(unsigned char ch) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[ch >> 4] + digits[ch & 15];
}

} // namespace

std::string InterpreterImpl::percent_format(const std::string& fmt, const Value& args_value,
                                            const Span& where) {
  Args args(args_value, where);
  std::string out;
  size_t i = 0;
  while (i < fmt.size()) {
    size_t pct = fmt.find('%', i);
    if (pct == std::string::npos) {
      out += fmt.substr(i);
      break;
    }
    out += fmt.substr(i, pct - i);
    i = pct + 1;
    if (i < fmt.size() && fmt[i] == '%') {
      out += '%';
      ++i;
      continue;
    }
    Conversion c = parse_conversion(fmt, i, where);
    size_t type_at = i - 1;
    if (c.star_width) {
      Value w = args.next();
      if (!w.is_intlike()) throw Error(ErrCode::Type, "* wants int", where);
      if (w.as_int() > kMaxStrWidth || w.as_int() < -kMaxStrWidth)
        throw Error(ErrCode::Value, "width or precision too big", where);
      c.width = static_cast<int>(std::abs(w.as_int()));
      if (w.as_int() < 0) c.left = true;
    }
    if (c.star_precision) {
      Value p = args.next();
      if (!p.is_intlike()) throw Error(ErrCode::Type, "* wants int", where);
      if (p.as_int() > kMaxStrWidth)
        throw Error(ErrCode::Value, "width or precision too big", where);
      c.precision = static_cast<int>(std::max<int64_t>(p.as_int(), 0));
    }
    Value v = c.has_key ? args.lookup(c.key) : args.next();
    if (v.is_obj(ObjKind::Array) && std::string("diouxXeEfFgGc").find(c.type) != std::string::npos)
      v = array_to_python_scalar(*this, v, where);
    std::string width = c.width >= 0 ? std::to_string(c.width) : "";
    std::string precision = c.precision >= 0 ? "." + std::to_string(c.precision) : "";
    std::string number_flags = std::string(c.left ? "<" : "") +
                               (c.sign ? std::string(1, c.sign) : "") + (c.alt ? "#" : "") +
                               (c.zero && !c.left ? "0" : "");
    std::string text_spec = std::string(c.left ? "<" : ">") + width;
    switch (c.type) {
    case 's':
    case 'r':
    case 'a': {
      std::string s = c.type == 's' ? str(v, print_options_) : repr(v, print_options_);
      out += format_value(make_str(s), text_spec + precision, where);
      break;
    }
    case 'd':
    case 'i':
    case 'u':
    case 'o':
    case 'x':
    case 'X': {
      bool integral = c.type == 'd' || c.type == 'i' || c.type == 'u';
      if (v.is_float() && integral) {
        if (!std::isfinite(v.f))
          throw Error(ErrCode::Value,
                      std::string("cannot convert float ") +
                          (std::isnan(v.f) ? "NaN" : "infinity") + " to integer",
                      where);
        v = make_int(BigInt::from_double(v.f));
      }
      if (is_bigint(v)) { // (a precision: its digits are all there anyway)
        out += format_value(v, number_flags + width + (integral ? 'd' : c.type), where);
        break;
      }
      if (!v.is_intlike())
        throw Error(ErrCode::Type,
                    std::string("%") + c.type +
                        " format: " + (integral ? "a real number" : "an integer") +
                        " is required, not " + type_name(v),
                    where);
      char type = integral ? 'd' : c.type;
      if (c.precision < 0) {
        out += format_value(v, number_flags + width + type, where);
        break;
      }
      // A precision is the minimum number of digits (zero-padded).
      int64_t n = v.as_int();
      std::string digits =
          format_value(Value::integer(n < 0 ? -n : n), std::string(c.alt ? "#" : "") + type, where);
      size_t body = digits.size() - (c.alt && type != 'd' ? 2 : 0);
      if (body < static_cast<size_t>(c.precision))
        digits.insert(digits.size() - body, static_cast<size_t>(c.precision) - body, '0');
      std::string sign = n < 0 ? "-" : c.sign ? std::string(1, c.sign) : "";
      out += format_value(make_str(sign + digits), text_spec, where);
      break;
    }
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
      if (!v.is_intlike() && !v.is_float() && !is_bigint(v))
        throw Error(ErrCode::Type, "must be real number, not " + type_name(v), where);
      Value f =
          Value::number(is_bigint(v) ? bigint_to_double(v.as<BigIntObj>()->value) : v.as_float());
      out += format_value(f, number_flags + width + (precision.empty() ? ".6" : precision) + c.type,
                          where);
      break;
    }
    case 'c': {
      std::string ch;
      if (v.is_intlike()) {
        int64_t code = v.as_int();
        if (code < 0 || code > 0x10FFFF)
          throw Error(ErrCode::Value, "%c arg not in range(0x110000)", where);
        ch = format_value(v, "c", where);
      } else if (v.is_obj(ObjKind::Str) && utf8_single(v.as<StrObj>()->value)) {
        ch = v.as<StrObj>()->value;
      } else {
        throw Error(ErrCode::Type, "%c requires int or char", where);
      }
      out += format_value(make_str(ch), text_spec, where);
      break;
    }
    default: {
      unsigned char ch = static_cast<unsigned char>(c.type);
      throw Error(ErrCode::Value,
                  std::string("unsupported format character '") + c.type + "' (" + hex_byte(ch) +
                      ") at index " + std::to_string(type_at),
                  where);
    }
    }
  }
  args.check_all_used();
  return out;
}

} // namespace pxl
