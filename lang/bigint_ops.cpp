// Python's operators on ints once an operand or the result leaves 64 bits
// (lang/operators.cpp keeps the int64 fast path and comes here on overflow).
#include <cmath>

#include "lang/bigint.hpp"

namespace pxl {

namespace {

// The most bits a result may have (about 315,000 decimal digits): Python has
// no limit, but schoolbook arithmetic past it takes seconds, and a script
// asking for more is better told than left to hang.
constexpr uint64_t kMaxBits = uint64_t{1} << 20;

[[noreturn]] void too_many_digits(const Span& where) {
  throw Error(ErrCode::Value, "too many digits in integer", where);
}

// An int operand that must fit int64 (a shift count, an exponent).
std::optional<int64_t> small(const BigInt& v) { return v.to_int64(); }

} // namespace

double int_true_divide(const BigInt& a, const BigInt& b, const Span& where) {
  if (b.is_zero()) throw Error(ErrCode::ZeroDivision, "division by zero", where);
  if (a.is_zero()) return (a.negative() != b.negative()) ? -0.0 : 0.0;
  // Correctly rounded, as Python: scale so that the quotient has 60+ bits, and
  // fold the remainder into its lowest bit (the double conversion rounds it).
  BigInt x = a.negative() ? -a : a, y = b.negative() ? -b : b;
  int64_t shift =
      62 - (static_cast<int64_t>(x.bit_length()) - static_cast<int64_t>(y.bit_length()));
  if (shift > 0) x = x.shl(static_cast<uint64_t>(shift));
  if (shift < 0) y = y.shl(static_cast<uint64_t>(-shift));
  BigInt q, r;
  BigInt::divmod(x, y, q, r);
  uint64_t m = static_cast<uint64_t>(*q.to_int64()) | (r.is_zero() ? 0 : 1);
  double d = std::ldexp(static_cast<double>(m), static_cast<int>(-shift));
  if (std::isinf(d))
    throw Error(ErrCode::Value, "integer division result too large for a float", where);
  return a.negative() != b.negative() ? -d : d;
}

Value bigint_binary(BinOpKind op, const BigInt& a, const BigInt& b, const Span& where) {
  switch (op) {
  case BinOpKind::Add:
    return make_int(a + b);
  case BinOpKind::Sub:
    return make_int(a - b);
  case BinOpKind::Mul:
    if (a.bit_length() + b.bit_length() > kMaxBits) too_many_digits(where);
    return make_int(a * b);
  case BinOpKind::Div:
    return Value::number(int_true_divide(a, b, where));
  case BinOpKind::FloorDiv:
  case BinOpKind::Mod: {
    if (b.is_zero())
      throw Error(ErrCode::ZeroDivision,
                  op == BinOpKind::Mod ? "integer modulo by zero"
                                       : "integer division or modulo by zero",
                  where);
    BigInt q, r;
    BigInt::divmod(a, b, q, r);
    return make_int(op == BinOpKind::Mod ? r : q);
  }
  case BinOpKind::Pow: {
    if (b.negative()) {
      if (a.is_zero())
        throw Error(ErrCode::ZeroDivision, "0 cannot be raised to a negative power", where);
      double x = bigint_to_double(a), y = bigint_to_double(b);
      return Value::number(std::pow(x, y));
    }
    // 0, 1 and -1 stay small whatever the exponent.
    auto base = small(a);
    if (base && (*base == 0 || *base == 1)) return Value::integer(b.is_zero() ? 1 : *base);
    if (base && *base == -1) return Value::integer((b & BigInt(1)).is_zero() ? 1 : -1);
    auto e = small(b);
    if (!e || static_cast<uint64_t>(*e) > kMaxBits ||
        a.bit_length() * static_cast<uint64_t>(*e) > kMaxBits)
      too_many_digits(where);
    return make_int(BigInt::pow(a, static_cast<uint64_t>(*e)));
  }
  case BinOpKind::LShift: {
    if (b.negative()) throw Error(ErrCode::Value, "negative shift count", where);
    if (a.is_zero()) return Value::integer(0);
    auto n = small(b);
    if (!n || static_cast<uint64_t>(*n) > kMaxBits) too_many_digits(where);
    return make_int(a.shl(static_cast<uint64_t>(*n)));
  }
  case BinOpKind::RShift: {
    if (b.negative()) throw Error(ErrCode::Value, "negative shift count", where);
    auto n = small(b);
    if (!n || static_cast<uint64_t>(*n) > a.bit_length())
      return Value::integer(a.negative() ? -1 : 0);
    return make_int(a.shr(static_cast<uint64_t>(*n)));
  }
  case BinOpKind::BitAnd:
    return make_int(a & b);
  case BinOpKind::BitOr:
    return make_int(a | b);
  case BinOpKind::BitXor:
    return make_int(a ^ b);
  case BinOpKind::MatMul:
    break;
  }
  throw Error(ErrCode::Type, "unsupported operand type(s) for @: 'int' and 'int'", where);
}

} // namespace pxl
