// YNNPACK's summation order as XLA's CPU backend runs it (ref_reduce_ynn.hpp).
//
// Two kernels do the arithmetic. K1 sums one contiguous run: 64-byte vectors
// (V lanes), each lane adding a block's four vectors ((a + b) + c) + d, the
// block sums going into a tree of accumulators driven by a clock: acc0 takes
// every block, every 16 ticks it is added into acc1, every 256 ticks acc1 is
// added into acc2 with Kahan compensation; the lanes of acc2 are combined by
// halving. KN sums rows for each column the same way, a block being four
// rows and a tick a row. One kernel call reduces one tile: its reduced axes
// that are contiguous form K1's run, the next reduced axes the runs (added
// one after another) or KN's rows; further reduced axes are outer loops.
//
// Arrays larger than a 128 KiB tile are split, innermost axes first; when a
// reduced axis is split the reduction becomes two: the tiles of a split
// reduced axis are reduced into slots of an intermediate (stage 1), which is
// then reduced over the same axes (stage 2). The scheduler keeps a loop over
// tiles only while the loops outside it give fewer than 2 tasks per thread;
// a loop it drops is one call over the whole extent.
#include "ir/ref_reduce_ynn.hpp"

#include "ir/ref_util.hpp"

#include <sched.h>

#include <algorithm>
#include <array>
#include <system_error>
#include <thread>

namespace pxl::ref {

namespace {

constexpr int64_t kYnnMinElements = 4096;
constexpr int64_t kTileBytes = 131072;
// Reductions of this many elements share their independent tiles among threads.
constexpr int64_t kParallelElements = int64_t{1} << 20;

template <class T> constexpr int kLanes = static_cast<int>(64 / sizeof(T));

// acc0 collects block sums; tick(clock) moves acc0 into acc1 when the clock
// is a multiple of 16, and acc1 into acc2 (Kahan) when it is one of 256.
// tick(0) flushes both.
template <class T, class Lanes> struct ClockedSum {
  Lanes acc0, acc1, acc2, err;
  explicit ClockedSum(Lanes zero) : acc0(zero), acc1(zero), acc2(zero), err(zero) {}
  void tick(int64_t clock) {
    if (clock % 16 != 0) return;
    for (size_t i = 0; i < acc0.size(); ++i) acc1[i] = acc1[i] + acc0[i], acc0[i] = T(0);
    if (clock % 256 != 0) return;
    for (size_t i = 0; i < acc0.size(); ++i) {
      T y = acc1[i] - err[i];
      T t = acc2[i] + y;
      err[i] = (t - acc2[i]) - y;
      acc2[i] = t;
      acc1[i] = T(0);
    }
  }
};

// The sum of p[0, k) (kernel K1).
template <class T> T k1_sum(const T* p, int64_t k) {
  constexpr int V = kLanes<T>;
  using Lanes = std::array<T, V>;
  ClockedSum<T, Lanes> a(Lanes{});
  auto block = [&](const T* q) {
    for (int l = 0; l < V; ++l)
      a.acc0[l] = a.acc0[l] + (((q[l] + q[V + l]) + q[2 * V + l]) + q[3 * V + l]);
  };
  int64_t clock = 0;
  for (; k >= 16 * V; k -= 16 * V) {
    for (int b = 0; b < 4; ++b, p += 4 * V) block(p);
    clock += 4 * V;
    a.tick(clock);
  }
  for (; k >= 4 * V; k -= 4 * V, p += 4 * V) {
    block(p);
    clock += V;
    a.tick(clock);
  }
  if (k > 0) { // a short last block, padded with zeros
    std::array<T, 4 * V> padded{};
    std::copy(p, p + k, padded.begin());
    block(padded.data());
  }
  a.tick(0);
  Lanes v = a.acc2;
  for (int h = V / 2; h >= 1; h /= 2)
    for (int i = 0; i < h; ++i) v[i] = v[i] + v[i + h];
  return v[0];
}

// c[m] += the sum over rows r of base[cols[m] + rows[r]] (kernel KN).
template <class T>
void kn_sum(const T* base, const std::vector<int64_t>& cols, const std::vector<int64_t>& rows,
            T* c) {
  size_t m_count = cols.size();
  int64_t k = static_cast<int64_t>(rows.size());
  // Columns at consecutive addresses (the usual case) are read as rows.
  bool dense = true;
  for (size_t m = 1; m < m_count && dense; ++m)
    dense = cols[m] == cols[0] + static_cast<int64_t>(m);
  std::vector<T> part(m_count), row(m_count);
  auto load_row = [&](int64_t r) -> const T* {
    const T* p = base + rows[static_cast<size_t>(r)];
    if (dense) return p + cols[0];
    for (size_t m = 0; m < m_count; ++m) row[m] = p[cols[m]];
    return row.data();
  };
  // part = (((0 + row r) + row r+1) + row r+2) + row r+3, missing rows 0
  auto block = [&](int64_t r, int64_t cnt) {
    std::fill(part.begin(), part.end(), T(0));
    for (int64_t i = 0; i < 4; ++i) {
      if (i < cnt) {
        const T* x = load_row(r + i);
        for (size_t m = 0; m < m_count; ++m) part[m] = part[m] + x[m];
      } else {
        for (size_t m = 0; m < m_count; ++m) part[m] = part[m] + T(0);
      }
    }
  };
  if (k <= 4) {
    block(0, k);
    for (size_t m = 0; m < m_count; ++m) c[m] = c[m] + part[m];
    return;
  }
  ClockedSum<T, std::vector<T>> a(std::vector<T>(m_count, T(0)));
  int64_t r = 0;
  for (; k - r >= 4; r += 4) {
    block(r, 4);
    for (size_t m = 0; m < m_count; ++m) a.acc0[m] = a.acc0[m] + part[m];
    a.tick(r + 4);
  }
  if (r < k) {
    block(r, k - r);
    for (size_t m = 0; m < m_count; ++m) a.acc0[m] = a.acc0[m] + part[m];
  }
  a.tick(0);
  for (size_t m = 0; m < m_count; ++m) c[m] = c[m] + a.acc2[m];
}

// One kernel call on a tile (`extent`/`stride` per axis, strides of the whole
// buffer): c (its outputs, row-major over the kept axes) += the tile's sums.
// `c_stride` is each axis's stride in the output buffer (0 where reduced to
// one slot); it decides whether the outputs form one contiguous run.
template <class T>
void reduce_tile(const T* base, const std::vector<int64_t>& extent,
                 const std::vector<int64_t>& stride, const std::vector<bool>& reduced,
                 const std::vector<int64_t>& c_stride, T* c) {
  enum Role { One, K1, K2, Loop, Out };
  size_t rank = extent.size();
  std::vector<Role> role(rank);
  int64_t n = 1, k1 = 1, k2 = 1, n_stride = 0, k2_stride = 0;
  for (size_t i = rank; i-- > 0;) { // innermost first
    if (extent[i] == 1) {
      role[i] = One;
    } else if (reduced[i]) {
      if (k1 == stride[i]) {
        k1 *= extent[i], role[i] = K1;
      } else if (k2_stride * k2 == stride[i]) {
        k2 *= extent[i], role[i] = K2;
      } else if (k2 == 1) {
        k2 = extent[i], k2_stride = stride[i], role[i] = K2;
      } else {
        role[i] = Loop;
      }
    } else {
      role[i] = Out;
      if (c_stride[i] == n) {
        if (n_stride * n == stride[i])
          n *= extent[i];
        else if (n == 1)
          n = extent[i], n_stride = stride[i];
      }
    }
  }
  auto axes_of = [&](Role r) {
    std::vector<int64_t> out;
    for (size_t a = 0; a < rank; ++a)
      if (role[a] == r) out.push_back(static_cast<int64_t>(a));
    return out;
  };
  std::vector<int64_t> outs = box_offsets(extent, axes_of(Out), stride);
  std::vector<int64_t> loops = box_offsets(extent, axes_of(Loop), stride);
  std::vector<int64_t> runs = box_offsets(extent, axes_of(K2), stride);
  bool rows_kernel = k1 == 1 && (n == 1 || n_stride == 1);
  for (int64_t l : loops) {
    if (rows_kernel) {
      kn_sum(base + l, outs, runs, c);
      continue;
    }
    for (size_t m = 0; m < outs.size(); ++m)
      for (int64_t j : runs) c[m] = c[m] + k1_sum(base + outs[m] + l + j, k1);
  }
}

// YNNPACK's split factors: each axis (innermost first) takes as much of the
// tile area as is left; 0 where the axis is not split.
std::vector<int64_t> split_factors(const std::vector<int64_t>& shape, int64_t itemsize) {
  int64_t area = (kTileBytes + itemsize - 1) / itemsize, so_far = 1;
  std::vector<int64_t> split(shape.size(), 0);
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t s = std::max<int64_t>(1, std::min(area / so_far, shape[i]));
    if (s >= shape[i]) {
      so_far *= shape[i];
    } else {
      split[i] = s;
      so_far *= s;
    }
  }
  return split;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Which loops over tiles the scheduler keeps (outermost first): a loop is
// kept while the kept loops outside it give fewer than `target` tasks. In
// the final stage a reduced axis's loop is serial; it is kept only when a
// loop inside it is.
std::vector<bool> kept_loops(const std::vector<int64_t>& shape, const std::vector<int64_t>& split,
                             const std::vector<bool>& reduced, int64_t target, bool final_stage) {
  size_t rank = shape.size();
  std::vector<bool> kept(rank, false);
  int64_t tasks = 1;
  for (size_t a = 0; a < rank; ++a) {
    if (split[a] == 0 || (final_stage && reduced[a])) continue;
    if (tasks < target) {
      kept[a] = true;
      tasks *= ceil_div(shape[a], split[a]);
    }
  }
  if (final_stage)
    for (size_t a = 0; a < rank; ++a) {
      if (split[a] == 0 || !reduced[a]) continue;
      bool inner = false;
      for (size_t b = a + 1; b < rank; ++b) inner = inner || (split[b] != 0 && kept[b]);
      kept[a] = inner;
    }
  return kept;
}

// One reduce node over `x`: the tiles of its kept split reduced loops each go
// through one kernel call. In stage 1 (`partial`) tile t of such a loop
// writes slot t of the result's axis; the result keeps one slot per tile of
// each split reduced axis (a dropped loop's call writes slot 0). In the final
// stage the tiles are added into the one output in order.
template <class T>
std::vector<T> reduce_node(const T* x, const std::vector<int64_t>& shape,
                           const std::vector<bool>& reduced, const std::vector<int64_t>& split,
                           const std::vector<bool>& kept, bool partial,
                           std::vector<int64_t>& out_shape) {
  size_t rank = shape.size();
  out_shape = shape;
  for (size_t a = 0; a < rank; ++a)
    if (reduced[a]) out_shape[a] = partial && split[a] != 0 ? ceil_div(shape[a], split[a]) : 1;
  int64_t out_size = 1;
  for (int64_t e : out_shape) out_size *= e;
  std::vector<T> out(static_cast<size_t>(out_size), T(0));
  std::vector<int64_t> in_stride(rank), out_stride(rank), c_stride(rank, 0);
  for (int64_t i = static_cast<int64_t>(rank) - 1, si = 1, so = 1, sc = 1; i >= 0; --i) {
    size_t a = static_cast<size_t>(i);
    in_stride[a] = si, out_stride[a] = so;
    si *= shape[a], so *= out_shape[a];
    if (!(reduced[a] && out_shape[a] == 1)) c_stride[a] = sc, sc *= out_shape[a];
  }
  std::vector<int64_t> kept_axes, tiled;
  for (size_t a = 0; a < rank; ++a) {
    if (!reduced[a]) kept_axes.push_back(static_cast<int64_t>(a));
    if (reduced[a] && split[a] != 0 && kept[a]) tiled.push_back(static_cast<int64_t>(a));
  }
  std::vector<int64_t> c_offsets = box_offsets(out_shape, kept_axes, out_stride);
  // The tiles, row-major over the tiled axes.
  std::vector<int64_t> tile_count;
  for (int64_t a : tiled)
    tile_count.push_back(ceil_div(shape[static_cast<size_t>(a)], split[static_cast<size_t>(a)]));
  int64_t tiles = 1;
  for (int64_t n : tile_count) tiles *= n;
  auto run_tile = [&](int64_t index, std::vector<T>& c) {
    std::vector<int64_t> extent = shape;
    int64_t in_off = 0, slot = 0;
    for (size_t t = tiled.size(); t-- > 0;) {
      size_t a = static_cast<size_t>(tiled[t]);
      int64_t i = index % tile_count[t], lo = i * split[a];
      index /= tile_count[t];
      extent[a] = std::min(split[a], shape[a] - lo);
      in_off += lo * in_stride[a];
      if (partial) slot += i * out_stride[a];
    }
    for (size_t m = 0; m < c.size(); ++m) c[m] = out[static_cast<size_t>(slot + c_offsets[m])];
    reduce_tile(x + in_off, extent, in_stride, reduced, c_stride, c.data());
    for (size_t m = 0; m < c.size(); ++m) out[static_cast<size_t>(slot + c_offsets[m])] = c[m];
  };
  // Stage 1's tiles write slots of their own: big ones run on several
  // threads (the order within each tile, and so the result, is the same).
  int64_t size = 1;
  for (int64_t e : shape) size *= e;
  int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  int workers = partial && size >= kParallelElements ? static_cast<int>(std::min(tiles, cores)) : 1;
  auto run_share = [&](int w) {
    std::vector<T> c(c_offsets.size());
    for (int64_t i = w; i < tiles; i += workers) run_tile(i, c);
  };
  std::vector<std::thread> helpers;
  int started = 1;
  try {
    for (; started < workers; ++started) helpers.emplace_back(run_share, started);
  } catch (const std::system_error&) { // no more threads: the caller runs their shares
  }
  run_share(0);
  for (int w = started; w < workers; ++w) run_share(w);
  for (std::thread& h : helpers) h.join();
  return out;
}

} // namespace

bool ynn_sum_applies(DType d, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  if (d != DType::Float32 && d != DType::Float64 && d != DType::Float16) return false;
  int64_t size = 1;
  for (int64_t e : shape) size *= e;
  bool longer = false;
  for (int64_t a : axes) longer = longer || shape[static_cast<size_t>(a)] > 1;
  return size >= kYnnMinElements && longer;
}

int xla_cpu_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

template <class T>
void ynn_sum(const T* x, const std::vector<int64_t>& shape, const std::vector<int64_t>& axes,
             int threads, T* out) {
  int64_t target = threads > 1 ? 2 * int64_t{threads} : 1;
  size_t rank = shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<int64_t> split = split_factors(shape, sizeof(T)), out_shape;
  bool split_reduced = false;
  for (size_t a = 0; a < rank; ++a) split_reduced = split_reduced || (reduced[a] && split[a] != 0);
  std::vector<T> result;
  if (split_reduced) {
    std::vector<int64_t> mid_shape;
    std::vector<T> mid =
        reduce_node(x, shape, reduced, split, kept_loops(shape, split, reduced, target, false),
                    true, mid_shape);
    std::vector<int64_t> split2 = split_factors(mid_shape, sizeof(T));
    result = reduce_node(mid.data(), mid_shape, reduced, split2,
                         kept_loops(mid_shape, split2, reduced, target, true), false, out_shape);
  } else {
    result = reduce_node(x, shape, reduced, std::vector<int64_t>(rank, 0),
                         std::vector<bool>(rank, false), false, out_shape);
  }
  std::copy(result.begin(), result.end(), out);
}

template void ynn_sum<float>(const float*, const std::vector<int64_t>&, const std::vector<int64_t>&,
                             int, float*);
template void ynn_sum<double>(const double*, const std::vector<int64_t>&,
                              const std::vector<int64_t>&, int, double*);

} // namespace pxl::ref
