// Array printing, a port of numpy's arrayprint (numpy 2.4, the version JAX 0.10
// pulls in) with JAX's Array repr wrapped around it. Everything here mirrors a
// specific piece of numpy so that printed output can be compared byte for byte:
// FloatingFormat (every floatmode, precision, suppress, sign), IntegerFormat, BoolFormat,
// _formatArray's line wrapping and summarisation, and Dragon4's digit generation
// (shortest round-trip digits of the element's own dtype).
#include "runtime/format.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <complex>
#include <functional>

namespace pxl {

namespace {

const PrintOptions kDefaults;          // object arrays (of devices) always print with these
constexpr int kUniquePrecision = 1000; // floatmode 'unique': the shortest digits, always

// A non-negative finite decimal: digits d0 d1 d2 ... meaning d0.d1d2... × 10^exp.
// Normalised: no leading or trailing zeros, except zero itself which is "0", exp 0.
struct Dec {
  std::string digits = "0";
  int exp = 0;
};

// Parses to_chars output in fixed ("0.0012") or scientific ("1.2e-03") form.
Dec parse_dec(std::string_view s) {
  Dec d;
  std::string digits;
  int point = -1; // number of digits before the decimal point
  size_t i = 0;
  for (; i < s.size() && s[i] != 'e'; ++i) {
    if (s[i] == '.')
      point = static_cast<int>(digits.size());
    else
      digits += s[i];
  }
  if (point < 0) point = static_cast<int>(digits.size());
  int e = 0;
  if (i < s.size())
    std::from_chars(s.data() + i + (s[i + 1] == '+' ? 2 : 1), s.data() + s.size(), e);
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) return d; // zero
  digits.erase(0, lead);
  point -= static_cast<int>(lead);
  digits.erase(digits.find_last_not_of('0') + 1);
  d.digits = digits;
  d.exp = point - 1 + e;
  return d;
}

template <class T, class... Args> Dec to_dec(T v, Args... args) {
  std::array<char, 400> buf;
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, args...);
  return parse_dec(std::string_view(buf.data(), r.ptr - buf.data()));
}

double round_half(double v) { return half_to_float(float_to_half(static_cast<float>(v))); }
double round_bf16(double v) { return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v))); }

// Shortest round-trip digits for the 16-bit formats, which to_chars lacks. For each
// length p the closest p-digit decimals on either side of v are the only
// candidates (the rounding interval is asymmetric at powers of two, so the
// nearest one may miss while the one across v still round-trips).
Dec shortest_small(double v, double (*round_trip)(double)) {
  for (int p = 1; p <= 9; ++p) {
    Dec near = to_dec(v, std::chars_format::scientific, p - 1);
    int64_t mant = 0;
    for (char c : near.digits) mant = mant * 10 + (c - '0');
    for (size_t k = near.digits.size(); k < static_cast<size_t>(p); ++k) mant *= 10;
    int scale = near.exp - (p - 1); // value = mant × 10^scale
    bool found = false;
    Dec best;
    double best_err = 0;
    for (int64_t m : {mant - 1, mant, mant + 1}) {
      if (m <= 0) continue;
      std::string s = std::to_string(m) + "e" + std::to_string(scale);
      double c = std::strtod(s.c_str(), nullptr);
      if (round_trip(c) != v) continue;
      double err = std::fabs(c - v);
      // Dragon4 rounds a digit exactly halfway to the even one (300.75 -> "300.8").
      if (!found || err < best_err || (err == best_err && m % 2 == 0)) {
        found = true;
        best_err = err;
        best = parse_dec(s);
      }
    }
    if (found) return best;
  }
  return to_dec(v, std::chars_format::scientific);
}

// Dragon4's unique (shortest round-trip) digits of |v| as a value of dtype `dt`.
Dec shortest(double v, DType dt) {
  v = std::fabs(v);
  if (v == 0) return Dec{};
  switch (dt) {
  case DType::Float32:
    return to_dec(static_cast<float>(v), std::chars_format::scientific);
  case DType::Float16:
    return shortest_small(v, round_half);
  case DType::BFloat16:
    return shortest_small(v, round_bf16);
  default:
    return to_dec(v, std::chars_format::scientific);
  }
}

std::string exponent_str(int e, int min_digits) {
  std::string s = std::to_string(std::abs(e));
  if (static_cast<int>(s.size()) < min_digits) s.insert(0, min_digits - s.size(), '0');
  return (e < 0 ? "e-" : "e+") + s;
}

// dragon4_positional(unique=True, fractional=True, precision=8): the shortest
// digits, or the exact value rounded to `precision` fraction digits when those are
// longer; trailing zeros trimmed; min_digits pads the fraction with zeros.
// Returns {integer part with sign, fraction part}.
// With unique=false (floatmode 'fixed') the exact value is rounded to `precision`.
std::pair<std::string, std::string> positional_parts(double v, DType dt, int precision,
                                                     int min_digits, bool plus = false,
                                                     bool unique = true) {
  Dec d = unique ? shortest(v, dt) : to_dec(std::fabs(v), std::chars_format::fixed, precision);
  int nfrac = std::max(0, static_cast<int>(d.digits.size()) - 1 - d.exp);
  // Dragon4 stops at `precision`, rounding the exact value; below min_digits it keeps
  // generating exact digits (7.389056f with 7 digits prints 7.3890562, not 7.3890560).
  if (nfrac > precision || nfrac < min_digits)
    d = to_dec(std::fabs(v), std::chars_format::fixed, nfrac > precision ? precision : min_digits);
  std::string ip, fp;
  int n = static_cast<int>(d.digits.size());
  if (d.exp >= 0) {
    ip = d.digits.substr(0, std::min(n, d.exp + 1));
    if (n < d.exp + 1) ip.append(d.exp + 1 - n, '0');
    if (n > d.exp + 1) fp = d.digits.substr(d.exp + 1);
  } else {
    ip = "0";
    fp = std::string(-d.exp - 1, '0') + d.digits;
  }
  if (static_cast<int>(fp.size()) < min_digits) fp.append(min_digits - fp.size(), '0');
  if (std::signbit(v) || plus) ip.insert(0, std::signbit(v) ? "-" : "+");
  return {ip, fp};
}

// dragon4_scientific(unique=True, precision): at most precision+1 significant digits.
// Returns {"-d", "ddd", "e+XX"}.
std::array<std::string, 3> scientific_parts(double v, DType dt, int precision, int min_digits,
                                            int exp_digits, bool plus = false, bool unique = true) {
  Dec d = unique ? shortest(v, dt) : to_dec(std::fabs(v), std::chars_format::scientific, precision);
  int nfrac = static_cast<int>(d.digits.size()) - 1;
  if (nfrac > precision || nfrac < min_digits)
    d = to_dec(std::fabs(v), std::chars_format::scientific,
               nfrac > precision ? precision : min_digits);
  std::string ip = (std::signbit(v) ? "-" : plus ? "+" : "") + d.digits.substr(0, 1);
  std::string fp = d.digits.substr(1);
  if (static_cast<int>(fp.size()) < min_digits) fp.append(min_digits - fp.size(), '0');
  return {ip, fp, exponent_str(d.exp, exp_digits < 0 ? 2 : exp_digits)};
}

// numpy's float scalar str / Python's repr: positional for 1e-4 <= |v| < 1e16 ("1.0"),
// else scientific without a bare '.' ("1e-05", "1.5e+20"). `sci` decides the mode.
std::string scalar_float_str(double v, DType dt, bool sci) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (!sci) {
    auto [ip, fp] = positional_parts(v, dt, 1000, 1);
    return ip + "." + fp;
  }
  auto [ip, fp, ex] = scientific_parts(v, dt, 1000, 0, 2);
  return ip + (fp.empty() ? "" : "." + fp) + ex;
}

// bfloat16 is not a numpy floating type, so numpy prints it with repr(), which
// ml_dtypes implements as C++ `ostream << float` (printf "%g").
std::string bf16_str(double v) {
  if (std::isnan(v)) return "nan";
  std::array<char, 64> buf; // to_chars: printf's "%g" without its locale dependence
  auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general, 6);
  return std::string(buf.data(), r.ptr);
}

double elem(const Array& a, int64_t i) {
  switch (a.dtype()) {
  case DType::Bool:
    return a.as<uint8_t>()[i] != 0;
  case DType::Int8:
  case DType::Int2:
  case DType::Int4:
    return a.as<int8_t>()[i];
  case DType::UInt8:
  case DType::UInt2:
  case DType::UInt4:
    return a.as<uint8_t>()[i];
  case DType::Int16:
    return a.as<int16_t>()[i];
  case DType::UInt16:
    return a.as<uint16_t>()[i];
  case DType::Int32:
    return a.as<int32_t>()[i];
  case DType::UInt32:
    return a.as<uint32_t>()[i];
  case DType::Float16:
    return half_to_float(a.as<uint16_t>()[i]);
  case DType::BFloat16:
    return bfloat16_to_float(a.as<uint16_t>()[i]);
  PXL_SMALL_FLOAT_CASES:
    return small_to_float(a.dtype(), a.as<uint8_t>()[i]);
  case DType::Float32:
    return a.as<float>()[i];
  case DType::Float64:
    return a.as<double>()[i];
  case DType::Complex64: // the real part (complex formatting reads both parts itself)
    return a.as<std::complex<float>>()[i].real();
  }
  return 0;
}

// Rounds a double to the dtype's arithmetic, since numpy 2 (NEP 50) evaluates
// `min_val < 0.0001` and `max_val / min_val > 1000.` in the array's own dtype.
double in_dtype(double v, DType dt) {
  switch (dt) {
  case DType::Float32:
    return static_cast<float>(v);
  case DType::Float16:
    return round_half(v);
  default:
    return v;
  }
}

// numpy's FloatingFormat: decides the shared layout from the displayed values.
// `sign` is numpy's: '-', '+' (also a complex number's imaginary parts) or ' '.
class FloatFormat {
public:
  FloatFormat(const std::vector<double>& vals, DType dt, const PrintOptions& o, char sign)
      : dt_(dt), plus_(sign == '+'), nanstr_(o.nanstr), infstr_(o.infstr) {
    bool unique = o.floatmode != "fixed";
    int precision = o.floatmode == "unique" ? kUniquePrecision : o.precision;
    std::vector<double> finite;
    double max_val = 0, min_val = 0;
    bool any_nonzero = false, any_signbit = false;
    for (double v : vals) {
      if (!std::isfinite(v)) continue;
      finite.push_back(v);
      any_signbit |= std::signbit(v);
      if (v == 0) continue;
      double av = std::fabs(v);
      max_val = any_nonzero ? std::max(max_val, av) : av;
      min_val = any_nonzero ? std::min(min_val, av) : av;
      any_nonzero = true;
    }
    if (any_nonzero) {
      // numpy >= 2.3: 10**min(8, finfo(dtype).precision).
      double cutoff = dt == DType::Float16 ? 1e3 : dt == DType::Float32 ? 1e6 : 1e8;
      exp_format_ = max_val >= cutoff || (!o.suppress && (min_val < in_dtype(0.0001, dt) ||
                                                          in_dtype(max_val / min_val, dt) > 1000.));
    }
    unique_ = unique;
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
    } else if (exp_format_) {
      int exp_len = 0;
      for (double v : finite) {
        // Without `unique`, Dragon4 keeps the trailing zeros (trim='k').
        auto [ip, fp, ex] =
            scientific_parts(v, dt, precision, unique ? 0 : precision, -1, plus_, unique);
        pad_left_ = std::max(pad_left_, static_cast<int>(ip.size()));
        precision_ = std::max(precision_, static_cast<int>(fp.size()));
        exp_len = std::max(exp_len, static_cast<int>(ex.size()) - 1);
      }
      exp_size_ = exp_len - 1;
      min_digits_ = precision_;
      pad_right_ = exp_size_ + 2 + precision_;
    } else {
      for (double v : finite) {
        auto [ip, fp] = positional_parts(v, dt, precision, unique ? 0 : precision, plus_, unique);
        pad_left_ = std::max(pad_left_, static_cast<int>(ip.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(fp.size()));
      }
      bool equal = o.floatmode == "fixed" || o.floatmode == "maxprec_equal";
      precision_ = equal ? pad_right_ : precision;
      min_digits_ = equal ? pad_right_ : 0;
    }
    if (sign == ' ' && !any_signbit) ++pad_left_; // room for the sign
    if (finite.size() != vals.size()) {
      bool neginf = sign != '-';
      for (double v : vals) neginf |= std::isinf(v) && v < 0;
      int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, static_cast<int>(nanstr_.size()) - offset,
                            static_cast<int>(infstr_.size()) + (neginf ? 1 : 0) - offset});
    }
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      std::string r = std::isnan(v) ? (plus_ ? "+" : "") + nanstr_
                                    : (v < 0   ? "-"
                                       : plus_ ? "+"
                                               : "") +
                                          infstr_;
      return pad(r, pad_left_ + pad_right_ + 1);
    }
    if (exp_format_) {
      auto [ip, fp, ex] =
          scientific_parts(v, dt_, precision_, min_digits_, exp_size_, plus_, unique_);
      return pad(ip, pad_left_) + "." + fp + ex;
    }
    auto [ip, fp] = positional_parts(v, dt_, precision_, min_digits_, plus_, unique_);
    if (fp.size() < static_cast<size_t>(pad_right_)) fp.append(pad_right_ - fp.size(), ' ');
    return pad(ip, pad_left_) + "." + fp;
  }

private:
  static std::string pad(const std::string& s, int width) {
    return s.size() >= static_cast<size_t>(width) ? s : std::string(width - s.size(), ' ') + s;
  }
  DType dt_;
  bool plus_ = false, unique_ = true;
  std::string nanstr_, infstr_;
  bool exp_format_ = false;
  int precision_ = 0, min_digits_ = 0, pad_left_ = 0, pad_right_ = 0, exp_size_ = -1;
};

using ElemFormat = std::function<std::string(int64_t)>;

// numpy's _get_format_function over the displayed elements `shown`.
ElemFormat make_formatter(const Array& a, const std::vector<int64_t>& shown,
                          const PrintOptions& o) {
  DType dt = a.dtype();
  if (dt == DType::Bool) {
    std::string t = a.ndim() == 0 ? "True" : " True";
    return [&a, t](int64_t i) { return elem(a, i) != 0 ? t : std::string("False"); };
  }
  // ml_dtypes' narrow integers print each value's str(), unpadded (as bfloat16).
  if (is_narrow_int(dt)) return [&a](int64_t i) { return std::to_string(int64_t(elem(a, i))); };
  if (is_integer(dt)) {
    // numpy's IntegerFormat: sign '+' or ' ' marks non-negative values too
    // (' ' only when no value is negative).
    char sign = o.sign;
    for (int64_t i : shown)
      if (sign == ' ' && elem(a, i) < 0) sign = '-';
    auto text = [&a, sign](int64_t i) {
      int64_t v = int64_t(elem(a, i));
      return (v >= 0 && sign != '-' ? std::string(1, sign) : std::string()) + std::to_string(v);
    };
    size_t width = 0;
    for (int64_t i : shown) width = std::max(width, text(i).size());
    return [text, width](int64_t i) {
      std::string s = text(i);
      return std::string(width - std::min(width, s.size()), ' ') + s;
    };
  }
  if (dt == DType::BFloat16 || is_small_float(dt))
    return [&a](int64_t i) { return bf16_str(elem(a, i)); };
  if (is_complex(dt)) {
    // numpy's ComplexFloatingFormat: the real and imaginary parts each get a
    // FloatingFormat (the imaginary one signed), and 'j' goes before the
    // imaginary part's padding.
    const auto* cs = a.as<std::complex<float>>();
    std::vector<double> re, im;
    for (int64_t i : shown) {
      re.push_back(cs[i].real());
      im.push_back(cs[i].imag());
    }
    return [cs, fr = FloatFormat(re, DType::Float32, o, o.sign),
            fi = FloatFormat(im, DType::Float32, o, '+')](int64_t i) {
      std::string r = fr(cs[i].real()), m = fi(cs[i].imag());
      size_t end = m.find_last_not_of(' ') + 1;
      return r + m.substr(0, end) + "j" + m.substr(end);
    };
  }
  std::vector<double> vals;
  vals.reserve(shown.size());
  for (int64_t i : shown) vals.push_back(elem(a, i));
  return [&a, f = FloatFormat(vals, dt, o, o.sign)](int64_t i) { return f(elem(a, i)); };
}

std::string rstrip(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

// numpy's _formatArray: nested brackets, wrapping of the last axis at `width`,
// "..." for summarised axes.
class Printer {
public:
  Printer(const Shape& shape, ElemFormat fmt, std::string sep, bool summary, int64_t edgeitems)
      : shape_(shape), fmt_(std::move(fmt)), sep_(std::move(sep)), summary_(summary),
        edgeitems_(edgeitems), strides_(shape.size(), 1) {
    for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
      strides_[d] = strides_[d + 1] * shape[d + 1];
  }

  std::string print(const std::string& hanging, int width) { return rec(0, 0, hanging, width); }

private:
  static void extend_line(std::string& s, std::string& line, const std::string& word, int width,
                          const std::string& next_prefix) {
    // (signed: a narrow max_line_width leaves a negative width, which always wraps)
    bool wrap = static_cast<int64_t>(line.size() + word.size()) > width;
    if (line.size() <= next_prefix.size()) wrap = false; // wrapping would not help
    if (wrap) {
      s += rstrip(line) + "\n";
      line = next_prefix;
    }
    line += word;
  }

  std::string rec(int axis, int64_t offset, const std::string& hanging, int width) {
    int axes_left = static_cast<int>(shape_.size()) - axis;
    if (axes_left == 0) return fmt_(offset);
    std::string next_hanging = hanging + " ";
    int next_width = width - 1; // the closing ']'
    int64_t n = shape_[axis];
    bool show_summary = summary_ && 2 * edgeitems_ < n;
    int64_t leading = show_summary ? edgeitems_ : 0;
    int64_t trailing = show_summary ? edgeitems_ : n;
    auto item = [&](int64_t i) {
      return rec(axis + 1, offset + i * strides_[axis], next_hanging, next_width);
    };
    std::string s;
    if (axes_left == 1) {
      std::string sep_r = rstrip(sep_);
      int elem_width = width - static_cast<int>(std::max<size_t>(sep_r.size(), 1));
      std::string line = hanging;
      for (int64_t i = 0; i < leading; ++i) {
        extend_line(s, line, item(i), elem_width, hanging);
        line += sep_;
      }
      if (show_summary) {
        extend_line(s, line, "...", elem_width, hanging);
        line += sep_;
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend_line(s, line, item(n - i), elem_width, hanging);
        line += sep_;
      }
      extend_line(s, line, item(n - 1), elem_width, hanging);
      s += line;
    } else {
      std::string line_sep = rstrip(sep_) + std::string(axes_left - 1, '\n');
      for (int64_t i = 0; i < leading; ++i) s += hanging + item(i) + line_sep;
      if (show_summary) s += hanging + "..." + line_sep;
      for (int64_t i = trailing; i > 1; --i) s += hanging + item(n - i) + line_sep;
      s += hanging + item(n - 1);
    }
    return "[" + s.substr(hanging.size()) + "]";
  }

  Shape shape_;
  ElemFormat fmt_;
  std::string sep_;
  bool summary_;
  int64_t edgeitems_;
  std::vector<int64_t> strides_;
};

// Flat indices of the elements numpy shows (its _leading_trailing), in order.
std::vector<int64_t> shown_indices(const Array& a, bool summary, int64_t edgeitems) {
  std::vector<int64_t> out{0};
  for (int d = 0; d < a.ndim(); ++d) {
    int64_t n = a.shape()[d];
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < n; ++i)
      if (!summary || n <= 2 * edgeitems || i < edgeitems || i >= n - edgeitems) idx.push_back(i);
    std::vector<int64_t> next;
    next.reserve(out.size() * idx.size());
    for (int64_t base : out)
      for (int64_t i : idx) next.push_back(base * n + i);
    out = std::move(next);
  }
  return out;
}

// numpy's array2string(a, separator, prefix, suffix) for a non-empty array.
std::string array2string(const Array& a, const std::string& sep, const std::string& prefix,
                         const std::string& suffix, const PrintOptions& o) {
  bool summary = a.size() > o.threshold;
  ElemFormat fmt = make_formatter(a, shown_indices(a, summary, o.edgeitems), o);
  Printer p(a.shape(), std::move(fmt), sep, summary, o.edgeitems);
  return p.print(" " + std::string(prefix.size(), ' '),
                 o.linewidth - static_cast<int>(suffix.size()));
}

std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// str() of a float scalar of dtype `dt`: numpy 2 switches float16/float32
// scalars to scientific at 1e3/1e6 (their decimal precision); float64 at 1e16
// like Python.
std::string float_scalar_str(double v, DType dt) {
  double av = std::fabs(v);
  double hi = dt == DType::Float16 ? 1e3 : dt == DType::Float32 ? 1e6 : 1e16;
  return scalar_float_str(v, dt, !(av == 0 || (1e-4 <= av && av < hi)));
}

// Python's (and numpy's) complex repr from its parts' reprs: no ".0" on the
// parts, no real part when it is +0.
std::string complex_str(std::string re, std::string im, double re_value) {
  auto trim = [](std::string& s) {
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  };
  trim(re);
  trim(im);
  if (re_value == 0 && !std::signbit(re_value)) return im + "j";
  if (im[0] != '-') im.insert(0, "+");
  return "(" + re + im + "j)";
}

// str() of a numpy scalar of dtype `dt`.
std::string scalar_str(const Array& a) {
  if (is_complex(a.dtype())) {
    std::complex<float> z = a.as<std::complex<float>>()[0];
    return complex64_scalar_str(z.real(), z.imag());
  }
  double v = elem(a, 0);
  if (is_integer(a.dtype())) return std::to_string(int64_t(v));
  if (is_small_float(a.dtype())) return bf16_str(v); // ml_dtypes' repr, as bfloat16's
  switch (a.dtype()) {
  case DType::Bool:
    return v != 0 ? "True" : "False";
  case DType::BFloat16:
    return bf16_str(v);
  default:
    return float_scalar_str(v, a.dtype());
  }
}

} // namespace

std::string python_complex_repr(double re, double im) {
  return complex_str(python_float_repr(re), python_float_repr(im), re);
}

std::string complex64_scalar_str(float re, float im) {
  return complex_str(float_scalar_str(re, DType::Float32), float_scalar_str(im, DType::Float32),
                     re);
}

std::string array_repr(const Array& a, const PrintOptions& o) {
  const std::string prefix = "Array(";
  std::string dtype_str = std::string("dtype=") + dtype_name(a.dtype());
  if (a.weak_type()) dtype_str += ", weak_type=True";
  std::string s =
      a.size() == 0 ? "[], shape=" + shape_tuple(a.shape()) : array2string(a, ", ", prefix, ",", o);
  size_t nl = s.rfind('\n');
  size_t last_line_len = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;
  // JAX pads with len(prefix) spaces (no newline) when the dtype would overflow.
  std::string sep =
      last_line_len + dtype_str.size() + 2 > static_cast<size_t>(o.linewidth) ? "      " : " ";
  return prefix + s + "," + sep + dtype_str + ")";
}

std::string numpy_array_repr(const Array& a, const std::string& class_name, const PrintOptions& o) {
  const std::string prefix = class_name + "(";
  std::string s = prefix + (a.size() == 0 ? "[]" : array2string(a, ", ", prefix, ")", o));
  // numpy's extras: what the digits do not imply (float64 and bool are
  // implied), and the shape of a summarised array or an empty one not (0,).
  std::vector<std::string> extras;
  if ((a.size() == 0 && a.shape() != Shape{0}) || a.size() > o.threshold)
    extras.push_back("shape=" + shape_tuple(a.shape()));
  DType dt = a.dtype();
  if (!(dt == DType::Float64 || dt == DType::Bool) || a.size() == 0)
    extras.push_back(std::string("dtype=") + dtype_name(dt));
  if (extras.empty()) return s + ")";
  s += ",";
  std::string extra = extras[0] + (extras.size() > 1 ? ", " + extras[1] : "") + ")";
  size_t nl = s.rfind('\n');
  size_t last_line_len = s.size() - (nl == std::string::npos ? 0 : nl + 1);
  bool wrap = last_line_len + extra.size() + 1 > static_cast<size_t>(o.linewidth);
  return s + (wrap ? "\n" + std::string(prefix.size(), ' ') : " ") + extra;
}

namespace {
// numpy's array2string of an object array: each element its repr, unpadded.
std::string object_array2string(const Shape& shape, const std::vector<std::string>& items,
                                const std::string& sep, const std::string& prefix,
                                const std::string& suffix) {
  bool summary = static_cast<int64_t>(items.size()) > kDefaults.threshold;
  ElemFormat fmt = [&items](int64_t i) { return items[i]; };
  Printer p(shape, std::move(fmt), sep, summary, kDefaults.edgeitems);
  return p.print(" " + std::string(prefix.size(), ' '),
                 kDefaults.linewidth - static_cast<int>(suffix.size()));
}
} // namespace

std::string object_array_str(const Shape& shape, const std::vector<std::string>& items) {
  if (items.empty()) return "[]";
  if (shape.empty()) return items[0];
  return object_array2string(shape, items, " ", "", "");
}

std::string object_array_repr(const Shape& shape, const std::vector<std::string>& items) {
  const std::string prefix = "array(";
  if (items.empty()) return prefix + "[], shape=" + shape_tuple(shape) + ", dtype=object)";
  std::string s =
      prefix + (shape.empty() ? items[0] : object_array2string(shape, items, ", ", prefix, ")")) +
      ",";
  // numpy puts the dtype on a new line when it would pass the line width.
  size_t nl = s.rfind('\n');
  size_t last_line_len = s.size() - (nl == std::string::npos ? 0 : nl + 1);
  const std::string extra = "dtype=object)";
  return s +
         (last_line_len + extra.size() + 1 > static_cast<size_t>(kDefaults.linewidth)
              ? "\n" + std::string(prefix.size(), ' ')
              : " ") +
         extra;
}

std::string array_str(const Array& a, const PrintOptions& o) {
  if (a.size() == 0) return "[]";
  if (a.ndim() == 0) return scalar_str(a);
  return array2string(a, " ", "", "", o);
}

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Python switches on the decimal exponent of the shortest digits: repr(1e16) is '1e+16'.
  int e = shortest(v, DType::Float64).exp;
  return scalar_float_str(v, DType::Float64, v != 0 && (e < -4 || e >= 16));
}

} // namespace pxl
