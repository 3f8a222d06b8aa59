// dtype promotion (checked against JAX 0.10.2, x64 disabled), half/bfloat16
// conversions, shape printing and the Array buffer guards.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <tuple>

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
  for (DType d : kAllDTypes) CHECK(dtype_from_name(dtype_name(d)) == d);
  CHECK_FALSE(dtype_from_name("int64").has_value());
  CHECK(dtype_size(DType::BFloat16) == 2);
  CHECK(dtype_size(DType::Bool) == 1);
  CHECK(dtype_size(DType::Int8) == 1);
  CHECK(dtype_size(DType::UInt16) == 2);
}

TEST_CASE("integer dtype ranges and wrapping", "[dtype]") {
  CHECK(int_min(DType::Int8) == -128);
  CHECK(int_max(DType::Int8) == 127);
  CHECK(int_max(DType::UInt8) == 255);
  CHECK(int_min(DType::Int16) == -32768);
  CHECK(int_max(DType::UInt16) == 65535);
  CHECK(int_min(DType::Int32) == INT32_MIN);
  CHECK(int_max(DType::UInt32) == UINT32_MAX);
  CHECK(wrap_to(DType::Int8, 128) == -128);
  CHECK(wrap_to(DType::Int8, 300) == 44);
  CHECK(wrap_to(DType::UInt8, -1) == 255);
  CHECK(wrap_to(DType::Int16, 40000) == -25536);
  CHECK(wrap_to(DType::UInt32, -1) == UINT32_MAX);
  CHECK(int_dtype(true, 16) == DType::Int16);
  CHECK(int_dtype(false, 8) == DType::UInt8);
  CHECK(int_dtype(true, 64) == DType::Int32); // int64 canonicalised (x64 off)
  // The narrow integers: one byte each, their own widths.
  CHECK(int_min(DType::Int4) == -8);
  CHECK(int_max(DType::Int4) == 7);
  CHECK(int_max(DType::UInt4) == 15);
  CHECK(int_min(DType::Int2) == -2);
  CHECK(int_max(DType::UInt2) == 3);
  CHECK(wrap_to(DType::Int4, 9) == -7);
  CHECK(wrap_to(DType::UInt4, -1) == 15);
  CHECK(wrap_to(DType::Int2, 2) == -2);
  CHECK(dtype_size(DType::Int4) == 1);
  CHECK(dtype_bits(DType::UInt2) == 2);
  CHECK(int_dtype(true, 4) == DType::Int4);
  CHECK(int_dtype(false, 2) == DType::UInt2);
}

TEST_CASE("float8 and float4 conversions round as XLA's", "[dtype]") {
  using D = DType;
  auto rt = [](D d, double x) { return small_to_float(d, float_to_small(d, x)); };
  CHECK(rt(D::Float8E4M3FN, 0.3) == 0.3125);
  CHECK(rt(D::Float8E4M3FN, 464) == 448); // a tie goes to the even mantissa
  CHECK(std::isnan(rt(D::Float8E4M3FN, 470)));   // past the largest finite: NaN
  CHECK(std::isinf(rt(D::Float8E5M2, 61440)));   // ... or inf where the type has it
  CHECK(rt(D::Float4E2M1FN, 100) == 6);          // ... or the largest (no NaN, no inf)
  CHECK(rt(D::Float4E2M1FN, 0.25) == 0);
  CHECK(rt(D::Float8E8M0FNU, 3.0) == 4); // powers of two, halfway rounds up
  CHECK(std::isnan(rt(D::Float8E8M0FNU, 0.0)));
  CHECK(float_to_small(D::Float8E4M3FNUZ, -0.0) == 0); // no -0
  CHECK(std::isnan(small_to_float(D::Float8E4M3FNUZ, 0x80)));
  CHECK(float_to_small(D::Float8E4M3FN, 1.0) == 0x38);
  CHECK(small_float_max(D::Float8E4M3B11FNUZ) == 30);
  CHECK(small_float_max(D::Float8E3M4) == 15.5);
  // Every code's value converts back to the same code (NaNs aside).
  for (D d : kAllDTypes) {
    if (!is_small_float(d)) continue;
    for (unsigned c = 0; c < (1u << dtype_bits(d)); ++c) {
      double v = small_to_float(d, static_cast<uint8_t>(c));
      INFO(dtype_name(d) << " code " << c);
      if (!std::isnan(v)) CHECK(float_to_small(d, v) == c);
    }
  }
  CHECK(promo(D::Float8E4M3FN, false, D::Float32, true) == "float8_e4m3fn");
  CHECK_THROWS_WITH(promote_types(D::Float8E4M3FN, false, D::Float32, false),
                    Catch::Contains("8-bit floats do not support"));
  CHECK_THROWS_WITH(promote_types(D::Float4E2M1FN, false, D::Int8, false),
                    Catch::Contains("4-bit floats do not support"));
}

TEST_CASE("narrow integers join only themselves, bool and Python ints", "[dtype]") {
  using D = DType;
  CHECK(promo(D::Int4, false, D::Int32, true) == "int4"); // int4 + 1
  CHECK(promo(D::Bool, false, D::UInt2, false) == "uint2");
  CHECK(promo(D::Int4, false, D::Int4, false) == "int4");
  for (auto [a, aw, b, bw] : {std::tuple{D::Int4, false, D::UInt4, false},
                              {D::Int4, false, D::Int8, false},
                              {D::UInt2, false, D::Float32, true},
                              {D::Int2, false, D::Int4, false},
                              {D::Float32, false, D::UInt4, false}}) {
    INFO(dtype_name(a) << " + " << dtype_name(b));
    CHECK_THROWS_WITH(promote_types(a, aw, b, bw),
                      Catch::Contains("4-bit integers do not support"));
  }
}

// jnp.promote_types over every pair, as printed by JAX 0.10.2 (x64 disabled):
// rows and columns in the order bool int8 int16 int32 uint8 uint16 uint32
// float16 bfloat16 float32.
TEST_CASE("the whole promotion table matches JAX", "[dtype]") {
  using D = DType;
  const D order[] = {D::Bool,   D::Int8,   D::Int16,   D::Int32,    D::UInt8,
                     D::UInt16, D::UInt32, D::Float16, D::BFloat16, D::Float32};
  const char* table[10][10] = {{"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32",
                                "float16", "bfloat16", "float32"},
                               {"int8", "int8", "int16", "int32", "int16", "int32", "int32",
                                "float16", "bfloat16", "float32"},
                               {"int16", "int16", "int16", "int32", "int16", "int32", "int32",
                                "float16", "bfloat16", "float32"},
                               {"int32", "int32", "int32", "int32", "int32", "int32", "int32",
                                "float16", "bfloat16", "float32"},
                               {"uint8", "int16", "int16", "int32", "uint8", "uint16", "uint32",
                                "float16", "bfloat16", "float32"},
                               {"uint16", "int32", "int32", "int32", "uint16", "uint16", "uint32",
                                "float16", "bfloat16", "float32"},
                               {"uint32", "int32", "int32", "int32", "uint32", "uint32", "uint32",
                                "float16", "bfloat16", "float32"},
                               {"float16", "float16", "float16", "float16", "float16", "float16",
                                "float16", "float16", "float32", "float32"},
                               {"bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16",
                                "bfloat16", "bfloat16", "float32", "bfloat16", "float32"},
                               {"float32", "float32", "float32", "float32", "float32", "float32",
                                "float32", "float32", "float32", "float32"}};
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      INFO(dtype_name(order[i]) << " + " << dtype_name(order[j]));
      CHECK(promo(order[i], false, order[j], false) == table[i][j]);
    }
  // A weak Python int keeps every strong type (int8 + 1 is int8); a weak float
  // makes integers float32 (weak) and keeps floats.
  for (D d : order) {
    INFO(dtype_name(d));
    std::string name = dtype_name(d);
    CHECK(promo(d, false, D::Int32, true) == (d == D::Bool ? "int32*" : name));
    CHECK(promo(d, false, D::Float32, true) == (is_floating(d) ? name : "float32*"));
  }
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

TEST_CASE("narrow integer elements wrap ints and saturate floats", "[array]") {
  // JAX: float -> int8 saturates, NaN -> 0, truncating toward zero.
  const double fs[] = {1.5, 300.0, -300.0, std::nan(""), INFINITY, -INFINITY, -0.7, 127.9};
  const int64_t want_i8[] = {1, 127, -128, 0, 127, -128, 0, 127};
  const int64_t want_u8[] = {1, 255, 0, 0, 255, 0, 0, 127};
  const int64_t want_i16[] = {1, 300, -300, 0, 32767, -32768, 0, 127};
  const int64_t want_u16[] = {1, 300, 0, 0, 65535, 0, 0, 127};
  for (auto [d, want] : {std::pair{DType::Int8, want_i8}, std::pair{DType::UInt8, want_u8},
                         std::pair{DType::Int16, want_i16}, std::pair{DType::UInt16, want_u16}}) {
    Array a(d, {8});
    for (int i = 0; i < 8; ++i) a.set(i, Scalar::of_float(fs[i]));
    for (int i = 0; i < 8; ++i) {
      INFO(dtype_name(d) << " " << fs[i]);
      CHECK(a.get(i).i == want[i]);
    }
  }
  // Integers wrap: 1000 -> -24 (int8), -1000 -> 64536 (uint16).
  Array b(DType::Int8, {2});
  b.set(0, Scalar::of_int(1000));
  b.set(1, Scalar::of_int(-129));
  CHECK(b.get(0).i == -24);
  CHECK(b.get(1).i == 127);
  Array w(DType::UInt16, {1});
  w.set(0, Scalar::of_int(-1000));
  CHECK(w.get(0).i == 64536);
  CHECK(w.nbytes() == 2);
}
