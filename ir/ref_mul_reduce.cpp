// The reference kernel of mul_reduce_sum: a sum of products with the multiply
// fused into the reduction, in the order XLA's CPU back end compiles a jitted
// reduce_sum(mul(a, b)) (ir/reduce_tree.hpp: product_sum_lanes).
#include <algorithm>
#include <cmath>

#include "ir/reduce_tree.hpp"
#include "ir/ref_util.hpp"

namespace pxl::ref {

namespace {

// How one output's products are summed.
enum class Order {
  Chain,   // one chain of fused multiply-adds, in row-major order
  Fold,    // ... starting fma(x0, x0, x1 * x1)
  Rounded, // the products rounded, then added in order
  Lanes    // in lanes over the rows of the box (ProductLanes)
};

template <class T>
T product_sum(const T* a, const T* b, const std::vector<int64_t>& offs, int64_t base,
              ProductLanes pl, int64_t rows, int64_t cols, Order order) {
  auto at = [&](size_t j, auto f) { return f(a[base + offs[j]], b[base + offs[j]]); };
  size_t n = offs.size();
  if (order == Order::Rounded) {
    T acc = 0;
    for (size_t j = 0; j < n; ++j)
      acc = at(j, [&](T x, T y) { return acc + static_cast<T>(x * y); });
    return acc;
  }
  if (order == Order::Lanes) {
    // Box by box (the reduced axes outside the last two are outer loops),
    // the sum so far carried into lane 0 of the next.
    size_t box = static_cast<size_t>(rows * cols);
    size_t body = static_cast<size_t>((rows - row_lanes_tail(rows, pl.lanes)) * cols);
    T carry = 0;
    for (size_t start = 0; start < n; start += box) {
      std::vector<T> lane(static_cast<size_t>(pl.lanes), T(0));
      lane[0] = carry;
      for (size_t e = 0; e < body; ++e) {
        T& acc = lane[e / static_cast<size_t>(cols) % lane.size()];
        acc = at(start + e, [&](T x, T y) {
          return pl.fused ? std::fma(x, y, acc) : static_cast<T>(acc + static_cast<T>(x * y));
        });
      }
      for (size_t h = lane.size() / 2; h >= 1; h /= 2)
        for (size_t i = 0; i < h; ++i) lane[i] = static_cast<T>(lane[i] + lane[i + h]);
      carry = lane[0];
      // LLVM's scalar epilogue: the rows left over, fused multiply-adds in order.
      for (size_t e = body; e < box; ++e)
        carry = at(start + e, [&](T x, T y) { return std::fma(x, y, carry); });
    }
    return carry;
  }
  // One chain. A float32 sum of squares over one axis starts as fma(x0, x0,
  // x1 * x1): LLVM drops the 0 + x0 * x0 of the unrolled loop (a square is
  // never -0) and fuses the first of the two products. (Not over two axes,
  // nor in float64: measured.)
  // (One element: XLA reshapes instead of reducing, which keeps a -0 product.)
  T acc = n == 1 ? T(-0.0) : T(0);
  size_t j = 0;
  if (order == Order::Fold && n >= 2) {
    acc = std::fma(a[base + offs[0]], b[base + offs[0]],
                   static_cast<T>(a[base + offs[1]] * b[base + offs[1]]));
    j = 2;
  }
  for (; j < n; ++j) acc = at(j, [&](T x, T y) { return std::fma(x, y, acc); });
  return acc;
}

} // namespace

Array mul_reduce_sum(const Array& a, const Array& b, const OpAttrs& at, const AVal& oa) {
  const Shape& shape = a.shape();
  std::vector<int64_t> axes = at.axes;
  std::sort(axes.begin(), axes.end());
  bool windowed = false; // XLA's tree rewrite comes first: the multiply is not fused then
  for (int64_t ax : axes) windowed |= shape[static_cast<size_t>(ax)] > kReduceWindow;
  if (windowed) {
    Array prod = eval_ref(Op::Mul, {}, std::vector<Array>{a, b});
    return reduce(Reduction::Sum, prod, at, oa);
  }
  Array out(oa.dtype, oa.shape, oa.weak);
  std::vector<int64_t> strides = strides_of(shape);
  std::vector<int64_t> kept, nonunit;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!reduced) kept.push_back(static_cast<int64_t>(d));
    if (reduced && shape[d] != 1) nonunit.push_back(static_cast<int64_t>(d));
  }
  std::vector<int64_t> offs = box_offsets(shape, axes, strides);
  std::vector<int64_t> outer = box_offsets(shape, kept, strides);
  int64_t bytes = static_cast<int64_t>(dtype_size(a.dtype()));
  ProductLanes pl;
  int64_t box_rows = 1, cols = 1;
  if (nonunit.size() >= 2 && reduces_minor_axes(shape, axes)) {
    box_rows = shape[static_cast<size_t>(nonunit[nonunit.size() - 2])];
    cols = shape[static_cast<size_t>(nonunit.back())];
    size_t loops = 0; // the array's non-unit axes: more than the box's are loops around it
    for (int64_t e : shape) loops += e != 1;
    // A product by a broadcast scalar loads one factor, as a square does, and
    // always fuses (measured).
    bool scaled = at.axis == 2;
    pl = product_sum_lanes(box_rows, cols, bytes, at.exponent == 2 || scaled, loops > 2);
    if (scaled) pl.fused = true;
    // A computed factor: the lanes of its work (a whole 2-D float32 sum).
    if (scaled && at.loop_body != 0 && nonunit.size() == 2 && loops == 2 && bytes == 4)
      pl.lanes = computed_row_lanes(box_rows, cols, loop_body_from(at.loop_body));
    // Factors computed in the loop: a square ((x - m) ** 2) keeps its lanes
    // fused for any number of columns, other products are rounded for any;
    // from 16 float32 rows on, such a square over 7 or 8 columns takes the
    // lanes of 6 (measured).
    // A square of a - b, two loaded arrays, summed whole (a squared error):
    // the lanes of a product of two factors (no pairs), the vector loop's
    // products rounded, the scalar epilogue's fused (measured).
    bool squared_error = at.axis == 1 && loop_body_from(at.loop_body) == LoopBody::Pair &&
                         nonunit.size() == 2 && loops == 2 && bytes == 4;
    if (squared_error) {
      pl = product_sum_lanes(box_rows, cols, bytes, false);
      if (box_rows >= 16 && pl.lanes > 0) pl.lanes = row_loop_lanes(box_rows, cols);
      pl.fused = false;
    } else if (at.axis == 1) {
      pl.fused = at.exponent == 2;
      if (pl.fused && bytes == 4 && box_rows >= 16 && pl.lanes > 0)
        pl.lanes = row_loop_lanes(box_rows, std::min<int64_t>(cols, 6));
    }
  }
  bool squares = at.exponent == 2;
  Order order = pl.lanes > 0                                                    ? Order::Lanes
                : squares && a.dtype() == DType::Float32 && nonunit.size() == 1 ? Order::Fold
                                                                                : Order::Chain;
  // One minor-most axis of at most 8, of factors loaded from memory: LLVM
  // vectorizes across the outputs (the innermost non-unit one as the rows),
  // each then its own sum; where product_sum_lanes rounds the products of such
  // a box, these are rounded too. (Factors computed in the loop keep it scalar.)
  // The outputs past the last whole vector (row_lanes_tail) are LLVM's
  // scalar epilogue, chains of fused multiply-adds.
  int64_t rows = 1, body = 0;
  if (nonunit.size() == 1 && reduces_minor_axes(shape, axes) && at.axis == 0) {
    for (size_t k = kept.size(); k-- > 0;)
      if (shape[static_cast<size_t>(kept[k])] != 1) {
        rows = shape[static_cast<size_t>(kept[k])];
        break;
      }
    ProductLanes across =
        product_sum_lanes(rows, shape[static_cast<size_t>(nonunit[0])], bytes, squares, true);
    if (across.lanes > 0 && !across.fused) {
      order = Order::Rounded;
      body = rows - row_lanes_tail(rows, across.lanes);
    }
  }
  auto run = [&](auto* o, const auto* x, const auto* y) {
    for (size_t k = 0; k < outer.size(); ++k) {
      bool tail = order == Order::Rounded && static_cast<int64_t>(k) % rows >= body;
      o[k] = product_sum(x, y, offs, outer[k], pl, box_rows, cols, tail ? Order::Chain : order);
    }
  };
  if (a.dtype() == DType::Float64)
    run(out.as<double>(), a.as<double>(), b.as<double>());
  else
    run(out.as<float>(), a.as<float>(), b.as<float>());
  return out;
}

} // namespace pxl::ref
