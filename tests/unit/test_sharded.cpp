// Blocks of arrays for sharding: contiguous blocks are views of the buffer,
// the others copies; both hold the right elements.
#include <catch2/catch.hpp>

#include "runtime/sharded.hpp"

using namespace pxl;

namespace {
Array iota(Shape shape) {
  Array a(DType::Int32, shape);
  for (int64_t i = 0; i < a.size(); ++i) a.as<int32_t>()[i] = static_cast<int32_t>(i);
  return a;
}
} // namespace

TEST_CASE("slice_block views contiguous blocks and copies the others", "[runtime]") {
  Array a = iota({4, 3, 2});
  SECTION("leading-axis rows are a view") {
    Array b = slice_block(a, {2, 0, 0}, {2, 3, 2});
    CHECK(b.data() == static_cast<const char*>(a.data()) + 2 * 6 * 4);
    CHECK(b.shape() == Shape{2, 3, 2});
    CHECK(b.nbytes() == 2 * 6 * 4);
    CHECK(b.as<int32_t>()[0] == 12);
    CHECK(b.as<int32_t>()[11] == 23);
  }
  SECTION("one index then a partial axis is a view") {
    Array b = slice_block(a, {1, 1, 0}, {1, 2, 2});
    CHECK(b.data() == static_cast<const char*>(a.data()) + (6 + 2) * 4);
    CHECK(b.as<int32_t>()[3] == 11);
  }
  SECTION("a partial inner axis is copied") {
    Array b = slice_block(a, {0, 0, 1}, {4, 3, 1});
    CHECK(b.data() != a.data());
    for (int64_t i = 0; i < 12; ++i) CHECK(b.as<int32_t>()[i] == 2 * i + 1);
  }
  SECTION("views of views") {
    Array b = slice_block(a, {2, 0, 0}, {2, 3, 2});
    Array c = slice_block(b, {1, 2, 0}, {1, 1, 2});
    CHECK(c.as<int32_t>()[0] == 22);
    CHECK(c.as<int32_t>()[1] == 23);
  }
}
