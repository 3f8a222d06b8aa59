// The order in which a long float sum or product is accumulated: XLA's.
//
// XLA's CPU compiler rewrites every reduction with a reduced axis longer than
// 32 (its TreeReductionRewriter): each reduced axis is cut into windows of
// min(extent, 32) elements, padded "SAME"-style (half the padding before the
// first window, the rest after the last), each window is reduced in row-major
// order from the initial value, and the reduction of the window results is
// rewritten again while an axis is still longer than 32. What is left is
// reduced in row-major order. pxl accumulates float and complex sums and
// products in exactly that order, in the reference kernels and in compiled
// code, so their last bits are JAX's. (Max, min and integer or bool
// reductions give the same value in any order: they keep their faster one.)
#pragma once
#include <cstdint>
#include <vector>

#include "ir/dtype.hpp"

namespace pxl {

inline constexpr int64_t kReduceWindow = 32;

// One level of the tree over the reduced axes (in axis order). Level 0 is the
// reduced elements themselves; node p of level L > 0 reduces the nodes
// c = p * window - lo + t (0 <= t < window, c inside level L-1's extent) of
// level L-1, in row-major order of t. The last level is reduced whole.
struct ReduceTreeLevel {
  std::vector<int64_t> extent, window, lo;
};

inline std::vector<ReduceTreeLevel> reduce_tree(const std::vector<int64_t>& reduced) {
  std::vector<ReduceTreeLevel> levels{{reduced, {}, {}}};
  for (;;) {
    const std::vector<int64_t>& e = levels.back().extent;
    bool longer = false;
    for (int64_t n : e) longer |= n > kReduceWindow;
    if (!longer) return levels;
    ReduceTreeLevel next;
    for (int64_t n : e) {
      int64_t w = n < kReduceWindow ? n : kReduceWindow;
      int64_t out = w == 0 ? 0 : (n + w - 1) / w;
      next.extent.push_back(out);
      next.window.push_back(w);
      next.lo.push_back((out * w - n) / 2);
    }
    levels.push_back(std::move(next));
  }
}

// The sum of the terms of one reduced axis in XLA's tree order: each level's
// windows summed from zero (the padding adds nothing), then the last level in
// order. `add` rounds as the element type does.
template <class T, class Add> T tree_sum(std::vector<T> level, T zero, Add add) {
  std::vector<ReduceTreeLevel> levels = reduce_tree({static_cast<int64_t>(level.size())});
  for (size_t l = 1; l < levels.size(); ++l) {
    const ReduceTreeLevel& lv = levels[l];
    std::vector<T> next(static_cast<size_t>(lv.extent[0]), zero);
    for (size_t i = 0; i < level.size(); ++i) {
      T& node = next[static_cast<size_t>((static_cast<int64_t>(i) + lv.lo[0]) / lv.window[0])];
      node = add(node, level[i]);
    }
    level = std::move(next);
  }
  T acc = zero;
  for (const T& v : level) acc = add(acc, v);
  return acc;
}

// The level whose nodes a reduction split over threads computes one by one:
// the last with at least `min_nodes` nodes (level 0, the elements, has all).
// The levels above it are then the tree of its extent.
inline size_t reduce_tree_split_level(const std::vector<ReduceTreeLevel>& levels,
                                      int64_t min_nodes) {
  size_t best = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    int64_t n = 1;
    for (int64_t e : levels[l].extent) n *= e;
    if (n >= min_nodes) best = l;
  }
  return best;
}
inline constexpr int64_t kReduceSplitNodes = 256;

// The last level of a reduction over an input's minor-most axes is emitted
// by XLA as a loop nest that LLVM vectorizes across the rows when the box is
// `rows` x `cols` (its non-unit extents): lanes 32 bytes wide (8 float32, 4
// float64), lane l accumulating rows l, l + lanes, ... (each row's elements
// in order) of the first rows / lanes * lanes rows, then combined by halving
// (lane i with lane i + lanes/2, ...); the rows left over (row_lanes_tail)
// are then added to that sum one by one, in order (LLVM's scalar epilogue).
// Measured against JAX 0.10's CPU backend: it happens for `rows` a multiple
// of the lane count and 2 <= cols <= 6 (7 or 8 columns: half the lanes), or
// `rows` a power of two below it (then that many lanes) and 2 <= cols <= 8,
// and for float32 for any rows from 16 on (the trip count from which LLVM
// vectorizes a loop that needs an epilogue): see row_loop_lanes.
// (More axes: reduce_box_lanes.)
// Returns the lanes, 0 where the loop nest stays in row-major order.
//
// row_loop_lanes: for float32 rows >= 16, LLVM picks the vector width of
// lowest cost for the known trip count, (rows / w) vector iterations plus
// (rows % w) scalar ones: 8 lanes (7 or 8 columns: 4), but 4 where 8 would
// leave 4 or more rows to the scalar epilogue (from 24 rows on, only for 3 or
// more columns). Products of two different factors over 7 or 8 columns take
// 2 lanes for 18 or 19 rows (`pairs`; 8 columns only where the row loop is
// nested in others: more reduced or kept axes, or across outputs).
inline int64_t row_loop_lanes(int64_t rows, int64_t cols, bool pairs = false) {
  if (pairs && (rows == 18 || rows == 19)) return 2;
  if (cols > 6) return 4;
  return rows % 8 >= 4 && (rows < 24 || cols >= 3) ? 4 : 8;
}
inline int64_t reduce_row_lanes(int64_t rows, int64_t cols, int64_t elem_bytes) {
  int64_t lanes = 32 / elem_bytes;
  if (cols < 2 || rows < 2 || cols > 8) return 0;
  if (elem_bytes == 4 && rows >= 16) return row_loop_lanes(rows, cols);
  if (rows >= lanes) return rows % lanes != 0 ? 0 : cols <= 6 ? lanes : lanes / 2;
  return (rows & (rows - 1)) == 0 ? rows : 0;
}

// What XLA's loop computes from its one loaded element before adding it, for
// a float32 sum of all of a rows x cols array (ir/contract.cpp classifies the
// elementwise ops XLA fuses into the reduce). LLVM weighs that work against
// the cost of gathering a row's elements into lanes, so it picks other
// widths than for a plain load (Load, reduce_row_lanes). The classes group
// producers that take the same widths, measured against JAX 0.10's CPU
// backend over 2..32 rows and 2..16 columns (ir/contract.cpp: loop_body;
// 10 to 16 columns take 9's widths, more are left to reduce_row_lanes):
//   Light    one cheap op (add, multiply or divide by a scalar, floor, round)
//   Abs      abs, max/min with a scalar, two cheap ops
//   Tanh     tanh, expm1, log1p, abs then a cheap op, clip
//   Exp      exp, log, arctan, and chains with more work
//   Sqrt     sqrt alone; Recip: a divide by the element, or sqrt and a cheap
//            op; Logistic: logistic, erf, or sqrt with more work
//   Sign     sign alone; Sine: sin or cos alone
//   Pair     |a - b| of two loaded arrays (an L1 loss); a square of a - b
//            marks its mul_reduce_sum (a squared error), ref_mul_reduce.cpp
enum class LoopBody : int8_t {
  Load,
  Light,
  Abs,
  Tanh,
  Exp,
  Sqrt,
  Recip,
  Logistic,
  Sign,
  Sine,
  Pair
};

// OpAttrs::loop_body as a LoopBody (Load where out of range).
inline LoopBody loop_body_from(int64_t code) {
  return code > 0 && code <= static_cast<int64_t>(LoopBody::Pair) ? static_cast<LoopBody>(code)
                                                                  : LoopBody::Load;
}

// reduce_row_lanes for a float32 box whose elements are computed as `body`.
inline int64_t computed_row_lanes(int64_t rows, int64_t cols, LoopBody body) {
  using B = LoopBody;
  auto plain = [&](int64_t c) { return reduce_row_lanes(rows, c, 4); };
  if (body == B::Load || rows < 2 || cols < 2 || cols > 16) return plain(cols);
  if (rows < 16 && rows != 2 && rows != 4 && rows != 8) return 0; // a scalar loop
  if (body == B::Pair) { // two loads: 2 rows stay scalar, wider rows vectorize
    if (cols <= 8) return rows == 2 ? 0 : plain(cols);
    return rows < 8 ? 0 : cols <= (rows == 8 ? 13 : 11) ? 8 : 0;
  }
  bool tail4 = rows >= 16 && rows % 8 >= 4; // 8 lanes would leave 4..7 rows over
  switch (body) {
  case B::Sign:
    return rows < 8 ? rows : 8;
  case B::Sine:
    if (cols >= 9) return 0;
    if (cols >= 5) return 2;
    if ((cols == 4 && rows == 8) || (cols >= 3 && rows >= 16 && !tail4)) return 4;
    return plain(cols);
  case B::Light:
    return rows == 8 && cols >= 7 && cols <= 8 ? 8 : plain(cols);
  case B::Sqrt:
    if (cols >= 9) return rows == 2 ? 2 : 4;
    return cols == 2 && rows >= 28 && tail4 ? 4 : plain(cols);
  default:
    break;
  }
  // Abs, Tanh, Exp, Recip, Logistic.
  bool divides = body == B::Recip || body == B::Logistic;
  if (cols <= 6) return cols == 2 && divides && rows >= 28 && tail4 ? 4 : plain(cols);
  if (rows < 16) return rows == 2 && body == B::Exp && cols >= 9 ? 0 : rows;
  if (cols <= 8) return body == B::Recip ? plain(cols) : tail4 ? 4 : 8;
  if (!tail4) return 8;
  if (rows < 24) return body == B::Abs ? 8 : 4;
  return divides ? 4 : 8;
}

// The rows of a box vectorized in `lanes` lanes that the scalar epilogue adds.
inline int64_t row_lanes_tail(int64_t rows, int64_t lanes) { return lanes ? rows % lanes : 0; }

// The lanes of the last level of a reduction over minor-most axes whose
// non-unit extents there are `box` (of a tree with `levels` levels): the last
// two axes vectorized by reduce_row_lanes, the ones outside them (only
// without a tree) carrying the sum into lane 0 of the next box. 0: row-major.
// `body`: the work per element of a float32 sum over the whole box.
inline int64_t reduce_box_lanes(const std::vector<int64_t>& box, size_t levels, int64_t elem_bytes,
                                LoopBody body = LoopBody::Load) {
  if (box.size() < 2 || (box.size() > 2 && levels != 1)) return 0;
  if (box.size() == 2 && levels == 1 && elem_bytes == 4 && body != LoopBody::Load)
    return computed_row_lanes(box[0], box[1], body);
  return reduce_row_lanes(box[box.size() - 2], box.back(), elem_bytes);
}

// Whether `axes` (sorted) are an array's minor-most axes once its size-1 axes
// are dropped (XLA's layout normalization drops them).
inline bool reduces_minor_axes(const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& axes) {
  bool kept_seen = false;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    bool reduced = false;
    for (int64_t a : axes) reduced |= a == static_cast<int64_t>(d);
    if (reduced && kept_seen) return false;
    kept_seen |= !reduced;
  }
  return true;
}

// The lanes of a node's window at tree level `level` > 0 of a reduction over
// minor-most axes: XLA's reduce-window loops vectorize like the last level
// when the level needs no padding (with padding they stay in row-major
// order). `rows`/`cols` get the window's two non-unit axes.
inline int64_t reduce_window_lanes(const std::vector<ReduceTreeLevel>& levels, size_t level,
                                   int64_t elem_bytes, size_t& rows, size_t& cols) {
  const ReduceTreeLevel& lv = levels[level];
  const std::vector<int64_t>& below = levels[level - 1].extent;
  std::vector<size_t> box;
  for (size_t i = 0; i < lv.window.size(); ++i) {
    if (lv.lo[i] != 0 || lv.extent[i] * lv.window[i] != below[i]) return 0;
    if (lv.window[i] != 1) box.push_back(i);
  }
  if (box.size() != 2) return 0;
  rows = box[0], cols = box[1];
  return reduce_row_lanes(lv.window[rows], lv.window[cols], elem_bytes);
}

// Whether a sum (or product) of `d` depends on the order of its terms.
inline bool reduce_order_matters(bool sum_or_prod, DType d) { return sum_or_prod && is_inexact(d); }

// A sum of products whose multiply XLA fuses into the reduce (mul_reduce_sum:
// every reduced axis at most 32 long). Over a `rows` x `cols` box of an
// input's minor-most axes (its non-unit reduced extents), LLVM vectorizes
// the loop across rows like reduce_row_lanes, but with other bounds: when
// rows is a multiple of the lane count (8 float32, 4 float64), or a power of
// two below it from 4 (from 2 for a square x * x, whose one load is cheaper),
// then that many lanes. Lane l takes rows l, l + lanes, ... (each row in
// order), and the lanes are combined by halving. With cols <= 4 each lane
// accumulates fused multiply-adds; with 5 or 6 columns the products are
// rounded first (LLVM gathers them with shuffles, which keep the multiply
// apart from the add), and with 7 or 8 columns also, in half the lanes when
// rows exceed the lane count or the factors differ. From 16 float32 rows on
// the width is row_loop_lanes' (`nested`: other loops hold the box's, or
// the rows are outputs, the columns each one's reduced axis), and the rows
// past the last whole vector
// (row_lanes_tail) are LLVM's scalar epilogue: fused multiply-adds, added to
// the halved lanes in order (across outputs: each such output one chain).
// Measured against JAX 0.10's CPU backend. Returns lanes 0 where each output
// is one chain of fused multiply-adds in row-major order.
struct ProductLanes {
  int64_t lanes = 0;
  bool fused = false; // fused multiply-adds, else rounded products
};
inline ProductLanes product_sum_lanes(int64_t rows, int64_t cols, int64_t elem_bytes, bool squares,
                                      bool nested = false) {
  int64_t lanes = 32 / elem_bytes;
  if (rows < 2 || cols < 2 || cols > 8) return {};
  if (elem_bytes == 4 && rows >= 16)
    return {row_loop_lanes(rows, cols, !squares && cols >= (nested ? 8 : 7)), cols <= 4};
  int64_t base = rows % lanes == 0 ? lanes : 0;
  if (rows >= (squares ? 2 : 4) && rows < lanes && (rows & (rows - 1)) == 0) base = rows;
  if (base == 0) return {};
  if (cols <= 4) return {base, true};
  if (cols <= 6 || (squares && rows <= lanes)) return {base, false};
  return {lanes / 2, false};
}

} // namespace pxl
