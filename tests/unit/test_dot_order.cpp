// XLA's order for a row-major matrix product through YNNPACK
// (ir/ref_dot_ynn.hpp): the kernel its cost model picks, as measured
// against JAX 0.10.2 on an AVX-512 machine (and on AMD Zen 3, without
// AVX-512), and the sum that kernel forms.
#include <catch2/catch.hpp>

#include <cmath>

#include "ir/ref_dot_ynn.hpp"
#include "ir/ref_util.hpp"

using namespace pxl::ref;

constexpr YnnIsa kAvx512 = YnnIsa::Avx512;

TEST_CASE("ynn dot: which products, which kernel", "[dot]") {
  CHECK(ynn_dot_applies(8, 8, 8));
  CHECK(ynn_dot_applies(2, 8, 3));
  CHECK(!ynn_dot_applies(3, 4, 5)); // max(m, k, n) < 8
  CHECK(!ynn_dot_applies(1, 8, 8)); // a vector
  CHECK(!ynn_dot_applies(8, 8, 1));
  // (m, k, n) -> tile_k, from JAX's results.
  CHECK(ynn_tile_k(8, 8, 8, false, false, kAvx512) == 4);
  CHECK(ynn_tile_k(16, 256, 16, false, false, kAvx512) == 4);
  CHECK(ynn_tile_k(2, 8, 17, false, false, kAvx512) == 1); // small m: B stays unpacked
  CHECK(ynn_tile_k(8, 5, 8, false, false, kAvx512) == 1);
  CHECK(ynn_tile_k(16, 13, 16, false, false, kAvx512) == 1);
  CHECK(ynn_tile_k(64, 8, 32, false, false, kAvx512) == 2);
  CHECK(ynn_tile_k(64, 13, 20, false, false, kAvx512) == 2);
  CHECK(ynn_tile_k(64, 8, 48, false, false, kAvx512) == 4);
  CHECK(ynn_tile_k(64, 64, 64, false, false, kAvx512) == 1);
  CHECK(ynn_tile_k(8, 8, 8, true, false, kAvx512) == 1); // float64 kernels are all tile_k 1
  // B given as (n, k) (`a @ w.T`) is always packed: the cheapest kernel's tile_k.
  CHECK(ynn_tile_k(3, 10, 32, false, false, kAvx512) == 1);
  CHECK(ynn_tile_k(3, 10, 32, false, true, kAvx512) == 2);
  CHECK(ynn_tile_k(3, 10, 16, false, true, kAvx512) == 4);
  CHECK(ynn_tile_k(2, 8, 17, false, true, kAvx512) != 1);
  CHECK(ynn_tile_k(64, 64, 64, false, true, kAvx512) == 1); // tile_k 1 is cheapest anyway
  // Without AVX-512 the fma3 kernels have tile_k 1 or 2 (measured on Zen 3).
  for (int64_t m : {8, 16, 64})
    for (int64_t n : {8, 16, 32, 48}) CHECK(ynn_tile_k(m, 8, n, false, false, YnnIsa::Avx2) != 4);
  CHECK(ynn_tile_k(8, 8, 8, false, false, YnnIsa::Avx2) !=
        ynn_tile_k(8, 8, 8, false, false, kAvx512));
}

TEST_CASE("ynn dot: lanes over k, adjacent pairs, the tail added", "[dot]") {
  // One output, k = 6, tile_k 4: ((p0 + p1) + (p2 + p3)) + (p4 + p5).
  float a[6] = {1.0f + 0x1p-12f, 3.0f, -2.0f, 0.1f, 7.0f, -0.3f};
  float b[6] = {1.0f - 0x1p-12f, 0.5f, 0.25f, 3.3f, 0.01f, 1.7f};
  float p[6];
  for (int i = 0; i < 6; ++i) p[i] = a[i] * b[i];
  float want = ((p[4] + p[5]) + ((p[0] + p[1]) + (p[2] + p[3])));
  float out = 0;
  ynn_gemm(a, b, 1, 6, 1, 4, &out);
  CHECK(out == want);
  // tile_k 1: one chain of fused multiply-adds.
  float chain = 0;
  for (int i = 0; i < 6; ++i) chain = std::fma(a[i], b[i], chain);
  ynn_gemm(a, b, 1, 6, 1, 1, &out);
  CHECK(out == chain);
}

TEST_CASE("a convolution's contraction sums in its library's order", "[dot]") {
  // (1 x k) . (k x 1) with DotOrder::Chain: Eigen's chain of fused
  // multiply-adds from zero, in blocks of at most 320 terms (as even as
  // multiples of 8 allow: k = 600 is 304 + 296), the blocks' sums added.
  const int64_t k = 600;
  pxl::Array a(pxl::DType::Float32, {1, k}), b(pxl::DType::Float32, {k, 1});
  for (int64_t i = 0; i < k; ++i) {
    a.as<float>()[i] = std::sin(static_cast<float>(i)) * 3.0f;
    b.as<float>()[i] = std::cos(static_cast<float>(i) * 0.7f);
  }
  auto chain = [&](int64_t from, int64_t to) {
    float acc = 0;
    for (int64_t i = from; i < to; ++i) acc = std::fma(a.as<float>()[i], b.as<float>()[i], acc);
    return acc;
  };
  pxl::OpAttrs at;
  at.dot.lhs_contract = {1};
  at.dot.rhs_contract = {0};
  at.dot.order = pxl::DotOrder::Chain;
  pxl::AVal out{pxl::DType::Float32, {1, 1}, false};
  CHECK(dot_general(a, b, at, out).as<float>()[0] == chain(0, 304) + chain(304, 600));
  // Up to 320 terms: one chain.
  pxl::Array a2(pxl::DType::Float32, {1, 320}), b2(pxl::DType::Float32, {320, 1});
  std::copy(a.as<float>(), a.as<float>() + 320, a2.as<float>());
  std::copy(b.as<float>(), b.as<float>() + 320, b2.as<float>());
  CHECK(dot_general(a2, b2, at, out).as<float>()[0] == chain(0, 320));
}

TEST_CASE("a vector times a matrix sums in XLA's matrix-vector emitters' orders", "[dot]") {
  // k = 5, n = 2: the column-major emitter rounds the first output's
  // products (its first tile), the second output is a chain of fused
  // multiply-adds; an elemental dot (a transposed matrix) fuses both.
  const int64_t k = 5, n = 2;
  pxl::Array v(pxl::DType::Float32, {k}), w(pxl::DType::Float32, {k, n}),
      wt(pxl::DType::Float32, {n, k});
  for (int64_t i = 0; i < k; ++i) {
    v.as<float>()[i] = std::sin(static_cast<float>(i) + 1.0f) * 3.0f;
    for (int64_t j = 0; j < n; ++j)
      w.as<float>()[i * n + j] = wt.as<float>()[j * k + i] =
          std::cos(static_cast<float>(i * n + j) * 0.6f);
  }
  auto sum = [&](int64_t j, bool fused) {
    float acc = 0;
    for (int64_t i = 0; i < k; ++i) {
      float x = v.as<float>()[i], y = w.as<float>()[i * n + j];
      acc = fused ? std::fma(x, y, acc) : acc + x * y;
    }
    return acc;
  };
  // The inputs tell the orders apart.
  REQUIRE(sum(0, true) != sum(0, false));
  REQUIRE(sum(1, true) != sum(1, false));
  pxl::OpAttrs at;
  at.dot.lhs_contract = {0};
  at.dot.rhs_contract = {0};
  pxl::AVal out{pxl::DType::Float32, {n}, false};
  pxl::Array cm = dot_general(v, w, at, out);
  CHECK(cm.as<float>()[0] == sum(0, false));
  CHECK(cm.as<float>()[1] == sum(1, true));
  at.dot.rhs_contract = {1};
  at.dot.order = pxl::DotOrder::Elemental;
  pxl::Array el = dot_general(v, wt, at, out);
  CHECK(el.as<float>()[0] == sum(0, true));
  CHECK(el.as<float>()[1] == sum(1, true));
}

TEST_CASE("small products without AVX-512: Eigen's chains", "[dot]") {
  // (m, 5) x (5, 1) per row: terms p0..p4 of a row with b.
  const float a[] = {1.0f + 0x1p-12f, 3.0f, -2.0f, 0.1f, 7.0f};
  const float b[] = {1.0f - 0x1p-12f, 0.5f, 0.25f, 3.3f, 0.01f};
  auto two_lanes = [&](bool fused) {
    auto step = [fused](float acc, float x, float y) {
      return fused ? std::fma(x, y, acc) : acc + static_cast<float>(x * y);
    };
    float even = step(step(0.0f, a[0], b[0]), a[2], b[2]);
    float odd = step(step(0.0f, a[1], b[1]), a[3], b[3]);
    return step(even + odd, a[4], b[4]);
  };
  float chain = 0;
  for (int t = 0; t < 5; ++t) chain = std::fma(a[t], b[t], chain);
  // m = 4: every row two fused lanes (here four copies of the row, n = 1).
  float a4[20], out4[4];
  for (int i = 0; i < 4; ++i)
    for (int t = 0; t < 5; ++t) a4[i * 5 + t] = a[t];
  eigen_gemm_avx2(a4, b, 4, 5, 1, out4);
  CHECK(out4[0] == two_lanes(true));
  CHECK(out4[3] == two_lanes(true));
  // m = 2, n = 1 (< 4): one fused chain; m = 2, n = 4: two lanes, products rounded.
  float out2[8];
  eigen_gemm_avx2(a4, b, 2, 5, 1, out2);
  CHECK(out2[1] == chain);
  float b4[20];
  for (int t = 0; t < 5; ++t)
    for (int j = 0; j < 4; ++j) b4[t * 4 + j] = b[t];
  eigen_gemm_avx2(a4, b4, 2, 5, 4, out2);
  CHECK(out2[5] == two_lanes(false));
}
