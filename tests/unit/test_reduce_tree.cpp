// The geometry of XLA's reduction order (ir/reduce_tree.hpp): the windows its
// TreeReductionRewriter makes (read off JAX 0.10.2's optimized HLO, e.g. a
// sum of f32[100] is reduce-window size=32 pad=14_14 into f32[4], then a
// reduce) and the row lanes of the last level.
#include <catch2/catch.hpp>

#include "ir/reduce_tree.hpp"

using namespace pxl;

TEST_CASE("reduce_tree: windows of 32, SAME padding, level after level", "[reduce]") {
  // Up to 32 elements per axis: reduced whole, in order.
  CHECK(reduce_tree({32}).size() == 1);
  CHECK(reduce_tree({7, 32}).size() == 1);

  // f32[100]: window=32 stride=32 pad=14_14 -> f32[4].
  auto l100 = reduce_tree({100});
  REQUIRE(l100.size() == 2);
  CHECK(l100[1].extent == std::vector<int64_t>{4});
  CHECK(l100[1].window == std::vector<int64_t>{32});
  CHECK(l100[1].lo == std::vector<int64_t>{14});

  // f32[33,33]: window=32x32 pad=15_16x15_16 -> f32[2,2] (odd padding: the extra after).
  auto l33 = reduce_tree({33, 33});
  REQUIRE(l33.size() == 2);
  CHECK(l33[1].extent == std::vector<int64_t>{2, 2});
  CHECK(l33[1].lo == std::vector<int64_t>{15, 15});

  // An axis of 32 or less next to a long one gets one whole window.
  auto l3 = reduce_tree({3, 100});
  REQUIRE(l3.size() == 2);
  CHECK(l3[1].extent == std::vector<int64_t>{1, 4});
  CHECK(l3[1].window == std::vector<int64_t>{3, 32});

  // 2000 -> 63 -> 2: rewritten again while an axis is longer than 32.
  auto l2000 = reduce_tree({2000});
  REQUIRE(l2000.size() == 3);
  CHECK(l2000[1].extent == std::vector<int64_t>{63});
  CHECK(l2000[2].extent == std::vector<int64_t>{2});
  CHECK(l2000[2].lo == std::vector<int64_t>{0});

  // The split level: the last one with enough nodes for the threads.
  auto big = reduce_tree({int64_t{1} << 24});
  size_t s = reduce_tree_split_level(big, kReduceSplitNodes);
  CHECK(big[s].extent == std::vector<int64_t>{512});
}

TEST_CASE("reduce_row_lanes: where XLA's loops vectorize across rows", "[reduce]") {
  // float32: 8 lanes when the rows are a multiple of 8 and 2..6 columns.
  CHECK(reduce_row_lanes(8, 3, 4) == 8);
  CHECK(reduce_row_lanes(24, 6, 4) == 8);
  CHECK(reduce_row_lanes(8, 7, 4) == 4); // 7 or 8 columns: half the lanes
  CHECK(reduce_row_lanes(16, 8, 4) == 4);
  CHECK(reduce_row_lanes(8, 8, 8) == 2);
  CHECK(reduce_row_lanes(8, 9, 4) == 0);
  CHECK(reduce_row_lanes(12, 4, 4) == 0);
  // Fewer rows than lanes: a power of two of them, up to 8 columns.
  CHECK(reduce_row_lanes(2, 8, 4) == 2);
  CHECK(reduce_row_lanes(4, 4, 4) == 4);
  CHECK(reduce_row_lanes(3, 4, 4) == 0);
  CHECK(reduce_row_lanes(4, 9, 4) == 0);
  // float64: 4 lanes.
  CHECK(reduce_row_lanes(4, 4, 8) == 4);
  CHECK(reduce_row_lanes(12, 3, 8) == 4);
  CHECK(reduce_row_lanes(2, 3, 8) == 2);
  // float32 from 16 rows on: LLVM's width of least cost for the trip count,
  // the rows left over added one by one after the lanes.
  CHECK(reduce_row_lanes(17, 3, 4) == 8);
  CHECK(row_lanes_tail(17, 8) == 1);
  CHECK(reduce_row_lanes(21, 3, 4) == 4); // 8 lanes would leave 5 rows
  CHECK(reduce_row_lanes(29, 2, 4) == 8);
  CHECK(reduce_row_lanes(29, 3, 4) == 4);
  CHECK(reduce_row_lanes(19, 7, 4) == 4);
  CHECK(reduce_row_lanes(13, 3, 4) == 0); // below 16 only without a tail
  CHECK(row_lanes_tail(24, 8) == 0);
  // One column or one row: a plain in-order sum.
  CHECK(reduce_row_lanes(8, 1, 4) == 0);
  CHECK(reduce_row_lanes(1, 8, 4) == 0);

  // A window vectorizes only when its level needs no padding.
  size_t rows = 0, cols = 0;
  auto padded = reduce_tree({40, 4});
  CHECK(reduce_window_lanes(padded, 1, 4, rows, cols) == 0);
  auto exact = reduce_tree({64, 4});
  CHECK(reduce_window_lanes(exact, 1, 4, rows, cols) == 8);
  CHECK(rows == 0);
  CHECK(cols == 1);

  // Minor-most axes, size-1 axes dropped.
  CHECK(reduces_minor_axes({2, 1, 4}, {0, 2}));
  CHECK(reduces_minor_axes({4, 4, 1}, {0, 1}));
  CHECK_FALSE(reduces_minor_axes({4, 4, 3}, {0, 1}));
  CHECK(reduces_minor_axes({3, 4, 4}, {1, 2}));
}

TEST_CASE("computed_row_lanes: widths LLVM picks for a sum of computed elements", "[reduce]") {
  using B = LoopBody;
  // A plain load keeps reduce_row_lanes; a cheap op widens 8 rows of 7 or 8.
  CHECK(computed_row_lanes(8, 7, B::Load) == 4);
  CHECK(computed_row_lanes(8, 7, B::Light) == 8);
  CHECK(computed_row_lanes(16, 8, B::Light) == 4);
  // |a - b|: 2 rows stay scalar; 9 to 13 columns of 8 rows (11 from 16 rows) vectorize.
  CHECK(computed_row_lanes(2, 4, B::Pair) == 0);
  CHECK(computed_row_lanes(4, 9, B::Pair) == 0);
  CHECK(computed_row_lanes(8, 13, B::Pair) == 8);
  CHECK(computed_row_lanes(16, 11, B::Pair) == 8);
  CHECK(computed_row_lanes(16, 12, B::Pair) == 0);
  CHECK(computed_row_lanes(20, 5, B::Pair) == 4);
  // Costlier work: 7 or 8 columns as 6, and 9 to 16 columns vectorized.
  CHECK(computed_row_lanes(16, 8, B::Exp) == 8);
  CHECK(computed_row_lanes(20, 8, B::Exp) == 4);
  CHECK(computed_row_lanes(4, 9, B::Abs) == 4);
  CHECK(computed_row_lanes(2, 9, B::Exp) == 0);
  CHECK(computed_row_lanes(2, 9, B::Tanh) == 2);
  CHECK(computed_row_lanes(20, 9, B::Abs) == 8);
  CHECK(computed_row_lanes(20, 9, B::Tanh) == 4);
  CHECK(computed_row_lanes(28, 12, B::Exp) == 8);
  CHECK(computed_row_lanes(28, 12, B::Logistic) == 4);
  CHECK(computed_row_lanes(28, 2, B::Recip) == 4);
  CHECK(computed_row_lanes(28, 2, B::Exp) == 8);
  CHECK(computed_row_lanes(8, 9, B::Sqrt) == 4);
  CHECK(computed_row_lanes(17, 40, B::Exp) == 0); // beyond what was measured
  CHECK(computed_row_lanes(5, 9, B::Exp) == 0);   // a scalar loop
  // sin and cos: narrower; sign: the widest.
  CHECK(computed_row_lanes(4, 5, B::Sine) == 2);
  CHECK(computed_row_lanes(16, 3, B::Sine) == 4);
  CHECK(computed_row_lanes(20, 3, B::Sine) == 4);
  CHECK(computed_row_lanes(8, 9, B::Sine) == 0);
  CHECK(computed_row_lanes(20, 6, B::Sign) == 8);
  // Only whole-box float32 sums use the class.
  CHECK(reduce_box_lanes({8, 7}, 1, 4, B::Light) == 8);
  CHECK(reduce_box_lanes({8, 7}, 1, 8, B::Light) == 2);
  CHECK(loop_body_from(99) == B::Load);
}
