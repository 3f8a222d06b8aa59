// Python ints beyond 64 bits. The interpreter keeps ints that fit int64 inline
// (Value::Int, the fast path); an operation whose result does not fit makes a
// BigIntObj, and one whose result fits again gives a Value::Int (make_int), so
// each int has exactly one representation.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lang/value.hpp"

namespace pxl {

// Sign and magnitude (base 2^32 limbs, least significant first, no leading
// zero limbs; zero has no limbs and is never negative).
class BigInt {
public:
  BigInt() = default;
  explicit BigInt(int64_t v);
  // Digits in `base` (2..36), no sign, prefix or underscores; nullopt if empty
  // or a digit is out of range.
  static std::optional<BigInt> parse(std::string_view digits, int base);
  // A finite double's exact integer value (truncated toward zero).
  static BigInt from_double(double d);

  bool negative() const { return neg_; }
  bool is_zero() const { return mag_.empty(); }
  std::optional<int64_t> to_int64() const;
  // Rounded half-to-even as Python's float(int); nullopt when it overflows.
  std::optional<double> to_double() const;
  // In `base` (2, 8, 10 or 16), lower-case digits, '-' when negative.
  std::string to_string(int base = 10) const;
  uint64_t bit_length() const;
  // Python's hash(int): the value modulo 2**61 - 1, with -1 mapped to -2.
  int64_t py_hash() const;

  BigInt operator-() const;
  friend BigInt operator+(const BigInt& a, const BigInt& b);
  friend BigInt operator-(const BigInt& a, const BigInt& b);
  friend BigInt operator*(const BigInt& a, const BigInt& b);
  // Python's floor division and modulo (the remainder takes the divisor's
  // sign); b must not be zero.
  static void divmod(const BigInt& a, const BigInt& b, BigInt& q, BigInt& r);
  static BigInt pow(BigInt base, uint64_t exp);
  BigInt shl(uint64_t n) const;
  BigInt shr(uint64_t n) const; // floor(a / 2**n), as Python's >>
  // Two's complement bitwise operations over the infinite sign extension.
  friend BigInt operator&(const BigInt& a, const BigInt& b);
  friend BigInt operator|(const BigInt& a, const BigInt& b);
  friend BigInt operator^(const BigInt& a, const BigInt& b);
  BigInt operator~() const { return -*this - BigInt(1); }
  // -1, 0 or 1.
  static int compare(const BigInt& a, const BigInt& b);
  bool operator==(const BigInt& o) const { return neg_ == o.neg_ && mag_ == o.mag_; }

private:
  using Mag = std::vector<uint32_t>;
  static int cmp_mag(const Mag& a, const Mag& b);
  static Mag add_mag(const Mag& a, const Mag& b);
  static Mag sub_mag(const Mag& a, const Mag& b); // |a| >= |b|
  static Mag mul_mag(const Mag& a, const Mag& b);
  static void divmod_mag(const Mag& a, const Mag& b, Mag& q, Mag& r);
  static void trim(Mag& m);
  static BigInt make(bool neg, Mag m);
  std::vector<uint32_t> twos(size_t limbs) const;
  static BigInt from_twos(std::vector<uint32_t> w);
  template <class F> static BigInt bitwise(const BigInt& a, const BigInt& b, F f);

  bool neg_ = false;
  Mag mag_;
};

struct BigIntObj : Object {
  explicit BigIntObj(BigInt v) : Object(ObjKind::BigInt), value(std::move(v)) {}
  BigInt value;
};

// A Python int as the interpreter stores it: inline when it fits int64.
Value make_int(BigInt v);
inline bool is_bigint(const Value& v) { return v.is_obj(ObjKind::BigInt); }
// int, bool or big int: Python's numbers.Integral.
inline bool is_py_int(const Value& v) { return v.is_intlike() || is_bigint(v); }
// The value of an int, bool or big int.
BigInt to_bigint(const Value& v);
// Exact comparison of an int with a float, as Python's (-1, 0 or 1; nullopt
// for NaN).
std::optional<int> compare_with_double(const BigInt& a, double d);
// A big int's double, or Python's OverflowError ("int too large to convert to float").
double bigint_to_double(const BigInt& v);

// Python's binary operators on ints of any size (lang/bigint_ops.cpp); the
// result is a Value::Int when it fits.
Value bigint_binary(BinOpKind op, const BigInt& a, const BigInt& b, const Span& where);
// Python's int / int: correctly rounded, or its OverflowError.
double int_true_divide(const BigInt& a, const BigInt& b, const Span& where);

} // namespace pxl
