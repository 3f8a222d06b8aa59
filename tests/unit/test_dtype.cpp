// dtype promotion (checked against JAX 0.10.2, x64 disabled), half/bfloat16
// conversions, shape printing and the Array buffer guards.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ir/dtype.hpp"
#include "lang/diag.hpp"
#include "runtime/array.hpp"

using namespace pxl;

namespace {

std::string promo(DType a, bool aw, DType b, bool bw) {
  PromotedType p = promote_types(a, aw, b, bw);
  PromotedType q = promote_types(b, bw, a, aw);
  REQUIRE(p.dtype == q.dtype); // the lattice join is symmetric
  REQUIRE(p.weak == q.weak);
  return std::string(dtype_name(p.dtype)) + (p.weak ? "*" : "");
}

} // namespace

TEST_CASE("dtype names round-trip", "[dtype]") {
  for (DType d : {DType::Bool, DType::Int32, DType::UInt32, DType::Float16, DType::BFloat16,
                  DType::Float32, DType::Float64})
    CHECK(dtype_from_name(dtype_name(d)) == d);
  CHECK_FALSE(dtype_from_name("int64").has_value());
  CHECK(dtype_size(DType::BFloat16) == 2);
  CHECK(dtype_size(DType::Bool) == 1);
}

TEST_CASE("promotion follows JAX's lattice", "[dtype]") {
  using D = DType;
  CHECK(promo(D::Int32, false, D::Float32, true) == "float32*"); // jnp.int32(1) + 1.0
  CHECK(promo(D::UInt32, false, D::Int32, false) == "int32");    // int64, canonicalised
  CHECK(promo(D::Float16, false, D::BFloat16, false) == "float32");
  CHECK(promo(D::Int32, false, D::Float16, false) == "float16");
  CHECK(promo(D::Bool, false, D::Int32, true) == "int32*"); // [True] * 2
  CHECK(promo(D::Bool, false, D::Float32, true) == "float32*");
  CHECK(promo(D::Float32, false, D::Int32, true) == "float32");   // ones(3) * 2
  CHECK(promo(D::Float16, false, D::Float32, true) == "float16"); // weak float defers
  CHECK(promo(D::BFloat16, false, D::Int32, true) == "bfloat16");
  CHECK(promo(D::UInt32, false, D::Int32, true) == "uint32");
  CHECK(promo(D::Int32, true, D::Float32, true) == "float32*");
  CHECK(promo(D::Int32, true, D::Int32, true) == "int32*");
  CHECK(promo(D::Float32, false, D::Float64, false) == "float64");
  CHECK(promo(D::Float16, false, D::Float64, false) == "float64");
  CHECK(promo(D::Bool, false, D::Bool, false) == "bool");
  CHECK(promo(D::Int32, false, D::Int32, false) == "int32");
  CHECK(promo(D::Float16, true, D::Float16, true) == "float16*");
}

TEST_CASE("float16 conversions round to nearest even", "[dtype]") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65520.0f) == 0x7c00); // rounds up to inf
  CHECK(float_to_half(1e-8f) == 0x0000);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24)); // smallest subnormal
  CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000); // tie -> even (0)
  CHECK(float_to_half(std::ldexp(3.0f, -26)) == 0x0001); // above the tie
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1.0).
  CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(half_to_float(float_to_half(0.1f)) == Approx(0.0999755859375));
  CHECK(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  CHECK(std::isinf(half_to_float(0x7c00)));
  for (uint32_t h = 0; h < 0x7c00; ++h) // every finite half survives a round trip
    REQUIRE(float_to_half(half_to_float(static_cast<uint16_t>(h))) == h);
}

TEST_CASE("bfloat16 conversions", "[dtype]") {
  CHECK(float_to_bfloat16(1.0f) == 0x3f80);
  CHECK(bfloat16_to_float(float_to_bfloat16(0.1f)) == 0.10009765625f); // JAX's value
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  CHECK(std::isinf(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::max()))));
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even wins.
  CHECK(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
}

TEST_CASE("shape_str uses Python tuple syntax", "[aval]") {
  CHECK(shape_str({8, 3}) == "(8, 3)");
  CHECK(shape_str({4}) == "(4,)");
  CHECK(shape_str({}) == "()");
}

TEST_CASE("Array buffers are aligned, zeroed and guarded", "[array]") {
  Array a(DType::Float32, {3, 5});
  CHECK(reinterpret_cast<uintptr_t>(a.data()) % 64 == 0);
  for (int64_t i = 0; i < a.size(); ++i) CHECK(a.get_f64(i) == 0.0);
  CHECK_THROWS_AS(Array(DType::Float32, {-1}), Error);
  CHECK_THROWS_AS(Array(DType::Float64, {int64_t{1} << 40}), Error);
  CHECK_THROWS_AS(Array(DType::Float32, {int64_t{1} << 62, int64_t{1} << 62}), Error);
  Array empty(DType::Int32, {0, 4});
  CHECK(empty.size() == 0);
}

TEST_CASE("Array element access converts like JAX", "[array]") {
  Array f(DType::Int32, {4});
  f.set(0, Scalar::of_float(1e10));
  f.set(1, Scalar::of_float(std::nan("")));
  f.set(2, Scalar::of_float(-2.7));
  f.set(3, Scalar::of_int(int64_t{1} << 32 | 5)); // ints wrap
  CHECK(f.get(0).i == 2147483647);
  CHECK(f.get(1).i == 0);
  CHECK(f.get(2).i == -2);
  CHECK(f.get(3).i == 5);
  Array u(DType::UInt32, {1});
  u.set(0, Scalar::of_int(-1));
  CHECK(u.get(0).i == 4294967295);
  Array h = Array::scalar(Scalar::of_float(0.1), DType::Float16, true);
  CHECK(h.weak_type());
  CHECK(h.get_f64(0) == Approx(0.0999755859375));
  Array r = f.reshaped({2, 2});
  CHECK(r.shape() == Shape{2, 2});
  CHECK(r.data() == f.data());
}
