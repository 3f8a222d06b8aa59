// lang/bigint: Python's int arithmetic beyond 64 bits (values checked against
// CPython), and the double conversions' rounding.
#include <catch2/catch.hpp>

#include "lang/bigint.hpp"

using pxl::BigInt;

namespace {

BigInt big(const char* s) {
  bool neg = s[0] == '-';
  BigInt v = *BigInt::parse(s + (neg ? 1 : 0), 10);
  return neg ? -v : v;
}

} // namespace

TEST_CASE("bigint: arithmetic agrees with Python", "[bigint]") {
  BigInt a = BigInt::pow(BigInt(2), 100), q, r;
  CHECK(a.to_string() == "1267650600228229401496703205376");
  CHECK((a * a - BigInt(1)).to_string() ==
        "1606938044258990275541962092341162602522202993782792835301375");
  BigInt::divmod(-BigInt::pow(BigInt(10), 30), BigInt(7), q, r);
  CHECK(q.to_string() == "-142857142857142857142857142858");
  CHECK(r.to_string() == "6");
  // A multi-limb divisor (Knuth's algorithm D, including its add-back step).
  BigInt::divmod(big("340282366920938463463374607431768211455"), big("18446744073709551617"), q, r);
  CHECK(q.to_string() == "18446744073709551615");
  CHECK(r.is_zero());
  CHECK((-a).shr(200).to_string() == "-1");
  CHECK((-a | BigInt(12345)).to_string() == "-1267650600228229401496703193031");
  CHECK((~a).to_string() == "-1267650600228229401496703205377");
  CHECK(a.to_string(16) == "10000000000000000000000000");
  CHECK(BigInt(INT64_MIN).to_int64() == INT64_MIN);
  CHECK_FALSE((-BigInt(INT64_MIN)).to_int64());
  CHECK(a.py_hash() == 549755813888);
}

TEST_CASE("bigint: conversions to and from double round as Python", "[bigint]") {
  // 2**53 + 1 is a tie: half to even gives 2**53; 2**54 + 3 rounds up.
  CHECK(*(BigInt::pow(BigInt(2), 53) + BigInt(1)).to_double() == 9007199254740992.0);
  CHECK(*(BigInt::pow(BigInt(2), 54) + BigInt(3)).to_double() == 18014398509481988.0);
  CHECK_FALSE(BigInt::pow(BigInt(2), 1024).to_double());
  CHECK(BigInt::from_double(1e30).to_string() == "1000000000000000019884624838656");
  CHECK(pxl::compare_with_double(BigInt::pow(BigInt(2), 53) + BigInt(1), 9007199254740992.0) == 1);
}
