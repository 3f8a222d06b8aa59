// Python's format-spec mini-language: f"{x:>8.3f}", "{:,}".format(n), format(x, spec).
#include <cmath>
#include <cstdio>

#include "lang/bigint.hpp"
#include "lang/interp_impl.hpp"
#include "lang/methods.hpp"
#include "lang/str_limits.hpp"
#include "lang/utf8.hpp"
#include "runtime/format.hpp"

namespace pxl {

namespace {

struct Spec {
  char fill = ' ';
  char align = 0; // < > ^ =
  char sign = '-';
  bool alt = false;
  bool zero = false;
  int width = -1;
  char grouping = 0;
  int precision = -1;
  char type = 0;
};

Spec parse_spec(const std::string& s) {
  Spec sp;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (s.size() >= 2 && is_align(s[1])) {
    sp.fill = s[0];
    sp.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    sp.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp.sign = s[i++];
  if (i < s.size() && s[i] == '#') sp.alt = true, ++i;
  if (i < s.size() && s[i] == '0') sp.zero = true, ++i;
  auto number = [&]() {
    int v = 0;
    bool any = false;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = v * 10 + (s[i++] - '0');
      if (v > kMaxStrWidth) throw Error(ErrCode::Value, "format width or precision too large");
      any = true;
    }
    return any ? v : -1;
  };
  sp.width = number();
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) sp.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    sp.precision = number();
    if (sp.precision < 0) throw Error(ErrCode::Value, "format specifier missing precision");
  }
  if (i < s.size()) sp.type = s[i++];
  if (i != s.size()) throw Error(ErrCode::Value, "invalid format specifier '" + s + "'");
  return sp;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    out += digits[i];
    if ((n - i - 1) % 3 == 0 && i != n - 1) out += sep;
  }
  return out;
}

// Applies sign, grouping, width and alignment to a formatted number body.
// `prefix` (0x, 0o, 0b) stays before '=' padding, as Python's f"{255:#06x}" == "0x00ff".
std::string finish_number(std::string body, bool negative, const Spec& sp,
                          const std::string& prefix = "") {
  if (sp.grouping) {
    size_t end = body.find_first_not_of("0123456789");
    if (end == std::string::npos) end = body.size();
    body = group_digits(body.substr(0, end), sp.grouping) + body.substr(end);
  }
  std::string sign = negative ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
  sign += prefix;
  char align = sp.align ? sp.align : (sp.zero ? '=' : '>');
  char fill = sp.zero && !sp.align ? '0' : sp.fill;
  int len = static_cast<int>(sign.size() + body.size());
  if (sp.width <= len) return sign + body;
  int pad = sp.width - len;
  switch (align) {
  case '<':
    return sign + body + std::string(pad, fill);
  case '^':
    return std::string(pad / 2, fill) + sign + body + std::string(pad - pad / 2, fill);
  case '=':
    return sign + std::string(pad, fill) + body;
  default:
    return std::string(pad, fill) + sign + body;
  }
}

std::string pad_text(const std::string& s, const Spec& sp) {
  int len = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++len;
  if (sp.width <= len) return s;
  int pad = sp.width - len;
  switch (sp.align ? sp.align : '<') {
  case '>':
    return std::string(pad, sp.fill) + s;
  case '^':
    return std::string(pad / 2, sp.fill) + s + std::string(pad - pad / 2, sp.fill);
  default:
    return s + std::string(pad, sp.fill);
  }
}

// printf of one double with a precision, however long the result (f of 1e300 has 301
// digits, a precision may be in the millions).
std::string c_format(const char* fmt, int prec, double a) {
  int n = std::snprintf(nullptr, 0, fmt, prec, a);
  if (n < 0) throw Error(ErrCode::Value, "format width or precision too large");
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), fmt, prec, a);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string format_float(double v, const Spec& sp) {
  char type = sp.type;
  int prec = sp.precision;
  bool neg = std::signbit(v) && !std::isnan(v);
  double a = std::fabs(v);
  std::string body;
  if (std::isnan(a) || std::isinf(a)) {
    body = std::isnan(a) ? "nan" : "inf";
    if (type == 'E' || type == 'F' || type == 'G') body = std::isnan(a) ? "NAN" : "INF";
    if (type == '%') body += "%";
    return finish_number(body, neg, sp);
  }
  if (type == 0) {
    if (prec < 0) {
      body = python_float_repr(a);
    } else {
      body = c_format("%.*g", std::max(prec, 1), a);
      if (body.find_first_of(".e") == std::string::npos) body += ".0";
    }
  } else if (type == '%') {
    body = c_format(sp.alt ? "%#.*f" : "%.*f", prec < 0 ? 6 : prec, a * 100) + "%";
  } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' ||
             type == 'G') {
    std::string fmt = std::string("%") + (sp.alt ? "#" : "") + ".*" + type;
    body = c_format(fmt.c_str(), prec < 0 ? 6 : prec, a);
  } else if (type == 'n') {
    body = c_format("%.*g", prec < 0 ? 6 : prec, a);
  } else {
    throw Error(ErrCode::Value,
                std::string("Unknown format code '") + type + "' for object of type 'float'");
  }
  return finish_number(body, neg, sp);
}

// CPython's complex.__format__: each part as a float (the imaginary part with its
// sign always shown), then the width applied to the whole. Without a type the
// parts are shortest reprs in parentheses, as str(z), and a +0 real part is left
// out; a precision without a type is 'g'.
std::string format_complex(double re, double im, const Spec& sp) {
  char type = sp.type;
  auto bad_code = [&] {
    throw Error(ErrCode::Value,
                std::string("Unknown format code '") + type + "' for object of type 'complex'");
  };
  if (type && std::string("eEfFgGn").find(type) == std::string::npos) bad_code();
  if (sp.zero)
    throw Error(ErrCode::Value, "Zero padding is not allowed in complex format specifier");
  if (sp.align == '=')
    throw Error(ErrCode::Value, "'=' alignment flag is not allowed in complex format specifier");
  bool repr_parts = type == 0 && sp.precision < 0;
  bool skip_re = false, parens = false;
  if (type == 0) {
    skip_re = re == 0 && !std::signbit(re);
    parens = !skip_re;
    type = 'g';
  }
  if (type == 'n') type = 'g';
  Spec part_spec;
  part_spec.type = type;
  part_spec.precision = sp.precision;
  part_spec.alt = sp.alt;
  part_spec.grouping = sp.grouping;
  auto part = [&](double v, char sign) {
    bool neg = std::signbit(v) && !std::isnan(v);
    std::string body;
    if (repr_parts && std::isfinite(v)) {
      body = python_float_repr(std::fabs(v));
      if (body.size() > 2 && body.compare(body.size() - 2, 2, ".0") == 0)
        body.resize(body.size() - 2);
    } else {
      body = format_float(std::fabs(v), part_spec);
    }
    return (neg ? std::string("-") : sign == '-' ? std::string() : std::string(1, sign)) + body;
  };
  std::string out = (parens ? "(" : "") + (skip_re ? "" : part(re, sp.sign)) +
                    part(im, skip_re ? sp.sign : '+') + "j" + (parens ? ")" : "");
  Spec pad = sp;
  if (!pad.align) pad.align = '>';
  return pad_text(out, pad);
}

// An int of any size (a big int's digits come from lang/bigint.hpp).
std::string format_int(const Value& x, const Spec& sp) {
  if (sp.type && std::string("eEfFgG%").find(sp.type) != std::string::npos)
    return format_float(is_bigint(x) ? bigint_to_double(x.as<BigIntObj>()->value) : x.as_float(),
                        sp);
  const BigInt* big = is_bigint(x) ? &x.as<BigIntObj>()->value : nullptr;
  int64_t v = big ? 0 : x.as_int();
  if (sp.precision >= 0)
    throw Error(ErrCode::Value, "precision not allowed in integer format specifier");
  bool neg = big ? big->negative() : v < 0;
  uint64_t a = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string body;
  int base = 10;
  std::string prefix;
  switch (sp.type) {
  case 0:
  case 'd':
  case 'n':
    break;
  case 'b':
    base = 2;
    prefix = "0b";
    break;
  case 'o':
    base = 8;
    prefix = "0o";
    break;
  case 'x':
    base = 16;
    prefix = "0x";
    break;
  case 'X':
    base = 16;
    prefix = "0X";
    break;
  case 'c':
    if (big || v < 0 || v > 0x10FFFF) throw Error(ErrCode::Value, "%c arg not in range(0x110000)");
    return pad_text(utf8_encode(static_cast<uint32_t>(v)), sp);
  default:
    throw Error(ErrCode::Value,
                std::string("Unknown format code '") + sp.type + "' for object of type 'int'");
  }
  const char* digits = sp.type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  if (big) {
    body = (neg ? -*big : *big).to_string(base);
    if (sp.type == 'X')
      for (char& c : body) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  } else {
    do {
      body.insert(body.begin(), digits[a % base]);
      a /= base;
    } while (a);
  }
  if (sp.grouping) body = group_digits(body, sp.grouping);
  Spec no_group = sp;
  no_group.grouping = 0;
  return finish_number(body, neg, no_group, sp.alt ? prefix : "");
}

} // namespace

std::string InterpreterImpl::format_value(const Value& v, const std::string& spec,
                                          const Span& where) {
  try {
    // A 0-d array formats as the Python scalar it holds, as JAX's (and
    // numpy's scalars) do: f"{jnp.float32(0.1)}" is 0.10000000149011612.
    if (v.is_obj(ObjKind::Array) && v.as<ArrayObj>()->tensor->aval.shape.empty() &&
        !v.as<ArrayObj>()->tensor->trace)
      return format_value(array_to_python_scalar(*this, v, where), spec, where);
    if (spec.empty()) return str(v, print_options_);
    Spec sp = parse_spec(spec);
    if (v.is_obj(ObjKind::Array))
      return format_value(array_to_python_scalar(*this, v, where), spec, where);
    if (v.is_bool()) return format_int(Value::integer(v.b ? 1 : 0), sp); // (Python's bool: an int)
    if (is_py_int(v)) return format_int(v, sp);
    if (v.is_float()) {
      if (sp.type == 'd' || sp.type == 'x' || sp.type == 'b' || sp.type == 'o' || sp.type == 'c')
        throw Error(ErrCode::Value, std::string("Unknown format code '") + sp.type +
                                        "' for object of type 'float'");
      return format_float(v.f, sp);
    }
    if (v.is_obj(ObjKind::Complex))
      return format_complex(v.as<ComplexObj>()->re, v.as<ComplexObj>()->im, sp);
    if (sp.type && sp.type != 's')
      throw Error(ErrCode::Value, std::string("Unknown format code '") + sp.type +
                                      "' for object of type '" + type_name(v) + "'");
    std::string s = str(v, print_options_);
    if (sp.precision >= 0 && static_cast<size_t>(sp.precision) < s.size())
      s = s.substr(0, sp.precision);
    return pad_text(s, sp);
  } catch (Error& e) {
    e.set_span_if_missing(where);
    throw;
  }
}

} // namespace pxl
