// YNNPACK's summation order (ir/ref_reduce_ynn.hpp), checked against sums that
// JAX 0.10.2's CPU backend gives. The inputs are exact in float32 (24-bit
// mantissas, exponents over 32 binades) so every rounding shows; the expected
// values were computed by a model of the order that matched JAX bit for bit
// on these shapes and others (1-D, 2-D and 3-D, every axis subset).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "ir/ref_reduce_ynn.hpp"

using namespace pxl;

namespace {

template <class T> std::vector<T> hashed(int64_t n) {
  std::vector<T> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t h = (static_cast<uint64_t>(i) * 2654435761u) % (uint64_t{1} << 32);
    int64_t mantissa = static_cast<int64_t>(h >> 8) - (int64_t{1} << 23);
    int exponent = static_cast<int>(h % 32) - 16 - 23;
    x[static_cast<size_t>(i)] = static_cast<T>(std::ldexp(static_cast<double>(mantissa), exponent));
  }
  return x;
}

template <class T>
std::vector<T> sum(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes,
                   int threads) {
  int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  int64_t out = n;
  for (int64_t a : axes) out /= shape[static_cast<size_t>(a)];
  std::vector<T> x = hashed<T>(n), r(static_cast<size_t>(out));
  ref::ynn_sum<T>(x.data(), shape, axes, threads, r.data());
  return r;
}

} // namespace

TEST_CASE("YNNPACK sums: which reductions XLA hands over", "[reduce]") {
  CHECK(ref::ynn_sum_applies(DType::Float32, {4096}, {0}));
  CHECK_FALSE(ref::ynn_sum_applies(DType::Float32, {4095}, {0}));
  CHECK(ref::ynn_sum_applies(DType::Float64, {64, 64}, {1}));
  CHECK(ref::ynn_sum_applies(DType::Float16, {64, 64}, {0, 1}));
  CHECK_FALSE(ref::ynn_sum_applies(DType::BFloat16, {64, 64}, {0, 1})); // a kernel of its own
  CHECK_FALSE(ref::ynn_sum_applies(DType::Int32, {64, 64}, {0, 1}));
  CHECK_FALSE(ref::ynn_sum_applies(DType::Float32, {4096, 1}, {1})); // a reshape to XLA
}

TEST_CASE("YNNPACK sums: one long run, tiles and the thread count", "[reduce]") {
  // 100003 float32: 4 tiles of 32768 summed apart, then their sums. With one
  // thread the tile loop is dropped and the run is summed whole.
  CHECK(sum<float>({100003}, {0}, 2)[0] == -0x1.c7fa02p+15f);
  CHECK(sum<float>({100003}, {0}, 1)[0] == -0x1.c7fa04p+15f);
  CHECK(sum<double>({5000}, {0}, 2)[0] == -0x1.befdf5fd09ce0p+11);
}

TEST_CASE("YNNPACK sums: rows, columns and axis pairs", "[reduce]") {
  std::vector<float> rows = sum<float>({128, 4096}, {1}, 1);
  CHECK(rows[0] == -0x1.00d6b0p+15f);
  CHECK(rows[1] == -0x1.ae488cp+15f);
  CHECK(rows[2] == -0x1.74f934p+15f);
  std::vector<float> cols = sum<float>({130, 4001}, {0}, 2); // split rows: partial sums
  CHECK(cols[0] == 0x1.6c45a0p+11f);
  CHECK(cols[1] == -0x1.251b1ap+13f);
  CHECK(cols[2] == -0x1.a929ccp+15f);
  std::vector<float> small = sum<float>({64, 100}, {0}, 2); // one call: blocks of 4 rows
  CHECK(small[0] == -0x1.3a8410p+7f);
  CHECK(small[1] == -0x1.a73618p+13f);
  CHECK(small[2] == 0x1.9b4d46p+14f);
  std::vector<double> pair = sum<double>({40, 3, 700}, {0, 2}, 2); // runs added in order
  CHECK(pair[0] == 0x1.64e4e7b42b1f0p+15);
  CHECK(pair[1] == 0x1.0fdd694f5a75ap+17);
  CHECK(pair[2] == -0x1.a08938388cc5ep+17);
}
