// Array printing against real JAX 0.10 / numpy 2.4 output. The expected strings in
// test_format_cases.inc were produced by repr() and str() of the JAX expression
// named in each case, so any difference is a deviation from JAX.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/format.hpp"

using namespace pxl;

namespace {

constexpr double INF = std::numeric_limits<double>::infinity();

struct FormatCase {
  const char* expr;
  DType dtype;
  Shape shape;
  bool weak;
  bool iota; // values are 0, 1, 2, ... (too many to list)
  std::vector<double> values;
  const char* repr;
  const char* str;
};

const FormatCase kCases[] = {
#include "test_format_cases.inc"
};

Array build(const FormatCase& c) {
  Array a(c.dtype, c.shape, c.weak);
  for (int64_t i = 0; i < a.size(); ++i) {
    double v = c.iota ? static_cast<double>(i) : c.values.at(i);
    if (c.dtype == DType::Bool)
      a.set(i, Scalar::of_bool(v != 0));
    else if (is_integer(c.dtype))
      a.set(i, Scalar::of_int(static_cast<int64_t>(v)));
    else
      a.set(i, Scalar::of_float(v));
  }
  return a;
}

} // namespace

TEST_CASE("array repr and str match JAX", "[format]") {
  for (const FormatCase& c : kCases) {
    INFO(c.expr);
    Array a = build(c);
    CHECK(array_repr(a) == c.repr);
    CHECK(array_str(a) == c.str);
  }
}

TEST_CASE("python_float_repr matches Python's repr", "[format]") {
  struct {
    double v;
    const char* want;
  } cases[] = {
      {0x0.0p+0, "0.0"},
      {-0x0.0p+0, "-0.0"},
      {0x1.0000000000000p+0, "1.0"},
      {0x1.999999999999ap-4, "0.1"},
      {0x1.0000000000000p-2, "0.25"},
      {0x1.5555555555555p-2, "0.3333333333333333"},
      {0x1.1c37937e08000p+53, "1e+16"},
      {0x1.c6bf526340000p+49, "1000000000000000.0"},
      {0x1.1c37937e07fffp+53, "9999999999999998.0"},
      {0x1.a36e2eb1c432dp-14, "0.0001"},
      {0x1.a36371ea531a8p-14, "9.999e-05"},
      {0x1.4f8b588e368f1p-17, "1e-05"},
      {0x1.1eb2d66005835p+997, "1.5e+300"},
      {0x0.0000000000001p-1022, "5e-324"},
      {0x1.fffffffffffffp+1023, "1.7976931348623157e+308"},
      {0x1.d6f3454000000p+26, "123456789.0"},
      {-0x1.4000000000000p+1, "-2.5"},
      {0x1.0f0cf064dd592p+73, "1e+22"},
      {0x1.3333333333334p-2, "0.30000000000000004"},
      {0x1.9000000000000p+6, "100.0"},
      {INF, "inf"},
      {-INF, "-inf"},
      {std::nan(""), "nan"},
      {0x1.0000000000000p+53, "9007199254740992.0"},
      {0x1.421f5f40d8376p-23, "1.5e-07"},
  };
  for (const auto& c : cases) {
    INFO(c.want);
    CHECK(python_float_repr(c.v) == c.want);
  }
}
