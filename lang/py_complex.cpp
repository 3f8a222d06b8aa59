// See py_complex.hpp. The algorithms are CPython's (Objects/complexobject.c).
#include "lang/py_complex.hpp"

#include <cmath>

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "lang/methods.hpp"
#include "stdlib/convert.hpp"

namespace pxl {

namespace {

using Cd = std::complex<double>;

Cd prod(Cd a, Cd b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

Cd quot(Cd a, Cd b, const Span& where) {
  double abs_br = std::fabs(b.real()), abs_bi = std::fabs(b.imag());
  if (abs_br >= abs_bi) {
    if (abs_br == 0) throw Error(ErrCode::ZeroDivision, "complex division by zero", where);
    double ratio = b.imag() / b.real(), denom = b.real() + b.imag() * ratio;
    return {(a.real() + a.imag() * ratio) / denom, (a.imag() - a.real() * ratio) / denom};
  }
  if (abs_bi >= abs_br) {
    double ratio = b.real() / b.imag(), denom = b.real() * ratio + b.imag();
    return {(a.real() * ratio + a.imag()) / denom, (a.imag() * ratio - a.real()) / denom};
  }
  return {NAN, NAN}; // a NaN in b
}

Cd powu(Cd x, int64_t n) {
  Cd r{1, 0}, p = x;
  for (int64_t mask = 1; mask > 0 && n >= mask; mask <<= 1) {
    if (n & mask) r = prod(r, p);
    p = prod(p, p);
  }
  return r;
}

Cd pow(Cd a, Cd b, const Span& where) {
  // Integer exponents up to 100 multiply exactly, as CPython does.
  if (b.imag() == 0 && b.real() == std::floor(b.real()) && std::fabs(b.real()) <= 100.0) {
    auto n = static_cast<int64_t>(b.real());
    if (n >= 0) return powu(a, n);
    if (a == Cd(0, 0))
      throw Error(ErrCode::ZeroDivision, "0.0 to a negative or complex power", where);
    return quot({1, 0}, powu(a, -n), where);
  }
  if (b == Cd(0, 0)) return {1, 0};
  if (a == Cd(0, 0)) {
    if (b.imag() != 0 || b.real() < 0)
      throw Error(ErrCode::ZeroDivision, "0.0 to a negative or complex power", where);
    return {0, 0};
  }
  double vabs = std::hypot(a.real(), a.imag());
  double len = std::pow(vabs, b.real());
  double at = std::atan2(a.imag(), a.real());
  double phase = at * b.real();
  if (b.imag() != 0) {
    len /= std::exp(at * b.imag());
    phase += b.imag() * std::log(vabs);
  }
  return {len * std::cos(phase), len * std::sin(phase)};
}

Value to_value(Cd z) { return make_complex(z.real(), z.imag()); }

} // namespace

std::optional<Cd> as_py_complex(const Value& v) {
  if (is_py_complex(v)) return Cd(v.as<ComplexObj>()->re, v.as<ComplexObj>()->im);
  if (v.is_number()) return Cd(v.as_float(), 0.0);
  return std::nullopt;
}

Value complex_binary(BinOpKind op, const Value& a, const Value& b, const Span& where) {
  auto x = as_py_complex(a), y = as_py_complex(b);
  if (x && y) {
    switch (op) {
    case BinOpKind::Add:
      return to_value(*x + *y);
    case BinOpKind::Sub:
      return to_value(*x - *y);
    case BinOpKind::Mul:
      return to_value(prod(*x, *y));
    case BinOpKind::Div:
      return to_value(quot(*x, *y, where));
    case BinOpKind::Pow:
      return to_value(pow(*x, *y, where));
    default:
      break;
    }
  }
  throw Error(ErrCode::Type,
              std::string("unsupported operand type(s) for ") + binop_symbol(op) + ": '" +
                  type_name(a) + "' and '" + type_name(b) + "'",
              where);
}

Value complex_builtin(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("complex", a, {"real", "imag"});
  auto part = [&](int i) -> Cd {
    Value v = r[i];
    if (v.is_obj(ObjKind::Array)) v = array_to_python_scalar(in, v, Span{});
    auto z = as_py_complex(v);
    if (!z)
      throw Error(ErrCode::Type, std::string("complex() ") + (i == 0 ? "first" : "second") +
                                     " argument must be a string or a number, not '" +
                                     type_name(r[i]) + "'");
    return *z;
  };
  // CPython's complex_new: a complex argument's other part is folded in
  // (complex(a, b) = a + b*1j), real arguments are taken as they are (so
  // complex(-1, -0.0) keeps its negative zero).
  Cd re = r.has(0) ? part(0) : Cd(0, 0);
  double out_re = re.real(), out_im = r.has(1) ? part(1).real() : re.imag();
  if (r.has(1) && is_py_complex(r[1])) out_re -= r[1].as<ComplexObj>()->im;
  if (r.has(0) && is_py_complex(r[0]) && r.has(1)) out_im += re.imag();
  return make_complex(out_re, out_im);
}

bool complex_attr(const Value& z, const std::string& name, Value& out) {
  const auto* c = z.as<ComplexObj>();
  if (name == "real") return out = Value::number(c->re), true;
  if (name == "imag") return out = Value::number(c->im), true;
  if (name == "conjugate") {
    out = Value::object(std::make_shared<BoundMethodObj>(
        z, make_builtin("conjugate", [](InterpreterImpl&, CallArgs& a) {
          ArgReader r("conjugate", a, {"self"}, 1);
          const auto* s = r[0].as<ComplexObj>();
          return make_complex(s->re, -s->im);
        })));
    return true;
  }
  return false;
}

} // namespace pxl
