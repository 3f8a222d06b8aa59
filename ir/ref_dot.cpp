// Reference dot_general: transpose both operands to (batch, m, k) and
// (batch, k, n), then one matrix product per batch (OpenBLAS for f32/f64).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/reduce_tree.hpp"
#include "ir/ref_dot_complex.hpp"
#include "ir/ref_dot_ynn.hpp"
#include "ir/ref_reduce_ynn.hpp"
#include "ir/ref_util.hpp"
#include "runtime/blas.hpp"

namespace pxl::ref {

std::vector<int64_t> free_dims(int rank, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contract) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      out.push_back(d);
  return out;
}

int64_t prod_dims(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= s[static_cast<size_t>(d)];
  return p;
}

namespace {

// x transposed so that `groups` (concatenated) are its axes in order.
Array permuted(const Array& x, std::vector<int64_t> perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (identity) return x; // already in (batch, free, contract) order: no copy
  AVal pa{x.dtype(), {}, x.weak_type()};
  for (int64_t p : perm) pa.shape.push_back(x.shape()[static_cast<size_t>(p)]);
  return transpose(x, perm, pa);
}

std::vector<int64_t> concat(std::initializer_list<const std::vector<int64_t>*> parts) {
  std::vector<int64_t> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// XLA's CPU emitter computes a vector-matrix product as a column-major
// matrix-vector one (tiled_dot_emitter.cc): tiles of 8 terms (tile_cols)
// times one 32-byte vector of outputs, then the outputs left over (n modulo
// the lanes) one at a time. Its IR leaves a multiply and its add in different
// blocks for the first tile of two of those leftovers, so LLVM rounds those
// products instead of fusing them into multiply-adds: the first output of a
// two-output product, and the last output where n is one more than a multiple
// of the lanes. Two terms are one block (LLVM unrolls that loop): all fused.
// Measured against JAX 0.10.2 over k in 2..64, n in 1..25, for float32 and
// float64 (four lanes).
bool gemv_rounds_first_tile(int64_t k, int64_t n, int64_t j, size_t elem_bytes) {
  int64_t lanes = 32 / static_cast<int64_t>(elem_bytes);
  return k > 2 && ((n == 2 && j == 0) || (n > 1 && n % lanes == 1 && j == n - 1));
}

// x . y[:, j] for each of the n columns of y (k x n, row-major) in XLA's
// order on the CPU. A vector-vector dot (`scalar_out`) becomes a multiply and
// a reduce there: up to 32 terms a chain of fused multiply-adds, beyond that
// the rounded products summed as a reduction is (ir/reduce_tree.hpp: windows
// of 32, "SAME" padding; from 4096 terms YNNPACK's order, ref_reduce_ynn.hpp). A vector-matrix
// product is a chain of fused multiply-adds over k for every output, except
// where gemv_rounds_first_tile says XLA's emitter rounds the products.
template <class T>
void vector_dot(const T* x, const T* y, int64_t k, int64_t n, bool scalar_out, bool gemv, T* out) {
  std::vector<ReduceTreeLevel> levels = reduce_tree({k});
  for (int64_t j = 0; j < n; ++j) {
    auto term = [&](int64_t i) { return y[i * n + j]; };
    if (!scalar_out || levels.size() == 1) {
      T acc = T(0);
      int64_t rounded =
          gemv && gemv_rounds_first_tile(k, n, j, sizeof(T)) ? std::min<int64_t>(k, 8) : 0;
      for (int64_t i = 0; i < rounded; ++i)
        acc = static_cast<T>(acc + static_cast<T>(x[i] * term(i)));
      for (int64_t i = rounded; i < k; ++i) acc = std::fma(x[i], term(i), acc);
      out[j] = acc;
      continue;
    }
    std::vector<T> level(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) level[static_cast<size_t>(i)] = x[i] * term(i);
    if (ynn_sum_applies(sizeof(T) == 4 ? DType::Float32 : DType::Float64, {k}, {0})) {
      ynn_sum<T>(level.data(), {k}, {0}, xla_cpu_threads(), out + j); // YNNPACK's sum
      continue;
    }
    out[j] = tree_sum(std::move(level), T(0), [](T p, T q) { return static_cast<T>(p + q); });
  }
}

// A (m x k, row-major) . v in XLA's order on the CPU (its row-major
// matrix-vector emitter): per row, 32-byte vectors of fused multiply-adds
// over the first k - k % lanes terms, the lanes combined (adjacent pairs in
// the 8-row tiles of float32, by halving elsewhere), plus a chain of fused
// multiply-adds over the rest. One row is a vector dot (vector_dot). Returns
// false where the order is not known (float64 with 8 or more rows).
template <class T> bool matrix_vector(const T* a, const T* v, int64_t m, int64_t k, T* out) {
  if (m == 1) {
    vector_dot(a, v, k, 1, true, false, out);
    return true;
  }
  constexpr int64_t lanes = 32 / sizeof(T);
  if (sizeof(T) == 8 && m >= 8) return false;
  int64_t tiled = m / 8 * 8, main = k - k % lanes;
  for (int64_t i = 0; i < m; ++i) {
    const T* row = a + i * k;
    T acc[lanes] = {};
    for (int64_t j = 0; j < main; ++j) acc[j % lanes] = std::fma(row[j], v[j], acc[j % lanes]);
    for (int64_t w = lanes; w > 1; w /= 2)
      for (int64_t l = 0; l < w / 2; ++l)
        acc[l] = i < tiled ? static_cast<T>(acc[2 * l] + acc[2 * l + 1])
                           : static_cast<T>(acc[l] + acc[l + w / 2]);
    T tail = T(0);
    for (int64_t j = main; j < k; ++j) tail = std::fma(row[j], v[j], tail);
    out[i] = static_cast<T>(acc[0] + tail);
  }
  return true;
}

// out (m x n) = a (m x k) . b (k x n), row-major, as Eigen's tensor
// contraction sums it for XLA's convolutions: k in blocks of at most 320 (as
// even as multiples of 8 allow), each a chain of fused multiply-adds from
// zero, the blocks' sums added in order.
template <class T>
void eigen_chain(const T* a, const T* b, int64_t m, int64_t k, int64_t n, T* out) {
  int64_t blocks = (k + 319) / 320, kc = ((k + blocks - 1) / blocks + 7) / 8 * 8;
  if (kc >= k) return ynn_gemm(a, b, m, k, n, 1, out);
  std::vector<T> part(static_cast<size_t>(kc * m)), sum(static_cast<size_t>(m * n));
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    int64_t len = std::min(kc, k - k0);
    for (int64_t i = 0; i < m; ++i)
      std::copy(a + i * k + k0, a + i * k + k0 + len, part.begin() + i * len);
    ynn_gemm(part.data(), b + k0 * n, m, len, n, 1, k0 == 0 ? out : sum.data());
    if (k0 > 0)
      for (int64_t j = 0; j < m * n; ++j)
        out[j] = static_cast<T>(out[j] + sum[static_cast<size_t>(j)]);
  }
}

// out (m x n) = a (m x k) . b (k x n) as YNNPACK's dot sums a convolution
// whose contraction is (kernel position, input feature), k1 features
// innermost (XLA hands it a stencil with three reduction dimensions): the
// kernel's tile_k is picked for k1 (ynn_tile_k(m, k1, n)); the features that
// fill whole tiles are summed over every position in tile_k lanes
// (ynn_gemm), and the k1 mod tile_k left over are a zero-padded tile per
// position, each added to the output in turn with one rounded add.
template <class T>
void ynn_conv_gemm(const T* a, const T* b, int64_t m, int64_t k, int64_t k1, int64_t n, bool f64,
                   T* out) {
  int64_t tile = ynn_tile_k(m, k1, n, f64);
  int64_t main = k1 / tile * tile, positions = k / k1;
  if (main == k1) return ynn_gemm(a, b, m, k, n, static_cast<int>(tile), out);
  // Columns [from, from + len) of each position, gathered.
  auto gather = [&](int64_t from, int64_t len, std::vector<T>& sa, std::vector<T>& sb, int64_t p0,
                    int64_t np) {
    sa.assign(static_cast<size_t>(m * np * len), T(0));
    sb.assign(static_cast<size_t>(np * len * n), T(0));
    for (int64_t p = 0; p < np; ++p)
      for (int64_t c = 0; c < len; ++c) {
        int64_t src = (p0 + p) * k1 + from + c, dst = p * len + c;
        for (int64_t i = 0; i < m; ++i)
          sa[static_cast<size_t>(i * np * len + dst)] = a[i * k + src];
        std::copy(b + src * n, b + src * n + n, sb.begin() + dst * n);
      }
  };
  std::vector<T> sa, sb, tail(static_cast<size_t>(m * n));
  if (main > 0) {
    gather(0, main, sa, sb, 0, positions);
    ynn_gemm(sa.data(), sb.data(), m, positions * main, n, static_cast<int>(tile), out);
  } else {
    std::fill(out, out + m * n, T(0));
  }
  for (int64_t p = 0; p < positions; ++p) {
    gather(main, k1 - main, sa, sb, p, 1);
    ynn_gemm(sa.data(), sb.data(), m, k1 - main, n, static_cast<int>(tile), tail.data());
    for (int64_t j = 0; j < m * n; ++j)
      out[j] = static_cast<T>(out[j] + tail[static_cast<size_t>(j)]);
  }
}

// The dot without its size-1 dimensions, as XLA's algebraic simplifier
// rewrites it before choosing how to compute it (a free, batch or
// contracting axis of extent 1 is reshaped away): (1, k) . (k, 1) then sums as
// a vector dot, (m, k) . (k, 1) as a matrix-vector product. Null when there
// are none. The result's elements are the same in the same order.
struct UnitFreeDot {
  Array l, r;
  OpAttrs attrs;
  AVal out;
};
std::optional<UnitFreeDot> without_unit_dims(const Array& l, const Array& r, const OpAttrs& a,
                                             const AVal& oa) {
  const DotDims& dd = a.dot;
  auto unit = [](const Array& x, int64_t d) { return x.shape()[static_cast<size_t>(d)] == 1; };
  bool any = false;
  for (int64_t d = 0; d < l.ndim(); ++d) any |= unit(l, d);
  for (int64_t d = 0; d < r.ndim(); ++d) any |= unit(r, d);
  if (!any) return std::nullopt;
  // Keeps x's axes of extent > 1; `index` maps an old axis to its new number.
  auto squeeze = [&](const Array& x, std::vector<int64_t>& index) {
    Shape kept;
    index.assign(static_cast<size_t>(x.ndim()), -1);
    for (int64_t d = 0; d < x.ndim(); ++d)
      if (!unit(x, d)) {
        index[static_cast<size_t>(d)] = static_cast<int64_t>(kept.size());
        kept.push_back(x.shape()[static_cast<size_t>(d)]);
      }
    return x.reshaped(kept);
  };
  std::vector<int64_t> li, ri;
  UnitFreeDot u{squeeze(l, li), squeeze(r, ri), a, oa};
  DotDims& nd = u.attrs.dot;
  nd.lhs_batch.clear(), nd.rhs_batch.clear(), nd.lhs_contract.clear(), nd.rhs_contract.clear();
  // Batch and contracting axes come in pairs of equal extent: kept or dropped together.
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i)
    if (!unit(l, dd.lhs_batch[i])) {
      nd.lhs_batch.push_back(li[static_cast<size_t>(dd.lhs_batch[i])]);
      nd.rhs_batch.push_back(ri[static_cast<size_t>(dd.rhs_batch[i])]);
    }
  for (size_t i = 0; i < dd.lhs_contract.size(); ++i)
    if (!unit(l, dd.lhs_contract[i])) {
      nd.lhs_contract.push_back(li[static_cast<size_t>(dd.lhs_contract[i])]);
      nd.rhs_contract.push_back(ri[static_cast<size_t>(dd.rhs_contract[i])]);
    }
  u.out.shape.clear();
  for (int64_t s : oa.shape)
    if (s != 1) u.out.shape.push_back(s);
  return u;
}

} // namespace

Array dot_general(const Array& l, const Array& r, const OpAttrs& a, const AVal& oa) {
  if (a.dot.order == DotOrder::Auto || a.dot.order == DotOrder::Elemental)
    if (std::optional<UnitFreeDot> u = without_unit_dims(l, r, a, oa))
      return dot_general(u->l, u->r, u->attrs, u->out).reshaped(oa.shape);
  const DotDims& dd = a.dot;
  std::vector<int64_t> lf = free_dims(l.ndim(), dd.lhs_batch, dd.lhs_contract);
  std::vector<int64_t> rf = free_dims(r.ndim(), dd.rhs_batch, dd.rhs_contract);
  int64_t B = prod_dims(l.shape(), dd.lhs_batch), M = prod_dims(l.shape(), lf);
  int64_t K = prod_dims(l.shape(), dd.lhs_contract), N = prod_dims(r.shape(), rf);
  Array lt = permuted(l, concat({&dd.lhs_batch, &lf, &dd.lhs_contract})); // (B, M, K)
  Array rt = permuted(r, concat({&dd.rhs_batch, &dd.rhs_contract, &rf})); // (B, K, N)
  // Every element is written below (BLAS with beta = 0, or the plain loops).
  Array out = Array::uninitialized(oa.dtype, oa.shape, oa.weak);
  if (out.size() == 0) return out;
  // A contraction of size 1 is a plain product in XLA (its simplifier turns
  // it into a multiply), so -1 * 0 stays -0 there; BLAS would add it to +0.
  // Where the left operand is a vector, XLA's order is known (vector_dot); a
  // batch of them is computed one batch element after another, each as the
  // unbatched dot (XLA's CPU emitter loops over the batch). A right operand
  // that contracts its last axis is a row-major matrix times the vector
  // (matrix_vector), a left operand that contracts its first a column-major
  // one (vector_dot), unless the dot is XLA's loop-fused elemental one.
  bool f32_or_f64 = oa.dtype == DType::Float32 || oa.dtype == DType::Float64;
  bool elemental = dd.order == DotOrder::Elemental;
  bool vector_lhs = lf.empty() && dd.lhs_contract.size() == 1 &&
                    (dd.lhs_batch.empty() || dd.order == DotOrder::Auto);
  bool vector_rhs = rf.empty() && dd.rhs_contract.size() == 1 && dd.lhs_batch.empty() &&
                    l.ndim() == 2 && dd.lhs_contract[0] == 0 &&
                    (elemental || dd.order == DotOrder::Auto);
  bool rows_rhs =
      vector_lhs && !elemental && dd.rhs_batch.empty() && r.ndim() == 2 && dd.rhs_contract[0] == 1;
  // complex64: XLA's multiply-and-reduce for two vectors, Eigen's kernels
  // for matrices (ref_dot_complex.hpp), one batch element after another.
  if (oa.dtype == DType::Complex64 && K > 1 && vector_lhs && rf.empty()) {
    for (int64_t b = 0; b < B; ++b)
      out.as<cplx::C>()[b] =
          cplx::vector_dot(lt.as<cplx::C>() + b * K, rt.as<cplx::C>() + b * K, K);
    return out;
  }
  if (oa.dtype == DType::Complex64 && K > 1) {
    for (int64_t b = 0; b < B; ++b)
      cplx::matmul(lt.as<cplx::C>() + b * M * K, rt.as<cplx::C>() + b * K * N, M, K, N,
                   out.as<cplx::C>() + b * M * N);
    return out;
  }
  if (f32_or_f64 && K > 1 && (vector_lhs || vector_rhs)) {
    visit_dtype(oa.dtype, [&]<DType D>() {
      if constexpr (D == DType::Float32 || D == DType::Float64) {
        using S = typename Elem<D>::S;
        if (vector_rhs) { // (k, m) . (k,): the matrix read by columns
          vector_dot(r.as<S>(), l.as<S>(), K, M, false, !elemental, out.as<S>());
          return;
        }
        if (rows_rhs && matrix_vector(r.as<S>(), l.as<S>(), N, K, out.as<S>())) return;
        for (int64_t b = 0; b < B; ++b)
          vector_dot(lt.as<S>() + b * K, rt.as<S>() + b * K * N, K, N, rf.empty(), !elemental,
                     out.as<S>() + b * N);
      }
    });
    return out;
  }
  // A convolution's contraction: the order of the library that computes it.
  if ((dd.order == DotOrder::Chain || dd.order == DotOrder::Ynn) && f32_or_f64 && K > 1) {
    visit_dtype(oa.dtype, [&]<DType D>() {
      if constexpr (D == DType::Float32 || D == DType::Float64) {
        using S = typename Elem<D>::S;
        for (int64_t b = 0; b < B; ++b) {
          const S* lb = lt.as<S>() + b * M * K;
          const S* rb = rt.as<S>() + b * K * N;
          S* ob = out.as<S>() + b * M * N;
          if (dd.order == DotOrder::Ynn)
            ynn_conv_gemm(lb, rb, M, K, l.shape()[static_cast<size_t>(dd.lhs_contract.back())], N,
                          D == DType::Float64, ob);
          else
            eigen_chain(lb, rb, M, K, N, ob);
        }
      }
    });
    return out;
  }
  // A row-major matrix times a vector: XLA's order too, per batch element.
  const int64_t nb = static_cast<int64_t>(dd.lhs_batch.size());
  bool batch_leading = true;
  for (int64_t i = 0; i < nb; ++i) batch_leading &= dd.lhs_batch[static_cast<size_t>(i)] == i;
  bool matvec = rf.empty() && batch_leading && dd.lhs_contract.size() == 1 && l.ndim() == nb + 2 &&
                dd.lhs_contract[0] == nb + 1 && r.ndim() == nb + 1;
  if ((oa.dtype == DType::Float32 || oa.dtype == DType::Float64) && K > 1 && matvec) {
    bool done = true;
    visit_dtype(oa.dtype, [&]<DType D>() {
      if constexpr (D == DType::Float32 || D == DType::Float64)
        for (int64_t b = 0; b < B && done; ++b)
          done = matrix_vector(lt.as<typename Elem<D>::S>() + b * M * K,
                               rt.as<typename Elem<D>::S>() + b * K, M, K,
                               out.as<typename Elem<D>::S>() + b * M);
    });
    if (done) return out;
  }
  // A row-major matrix product: XLA's order through YNNPACK (ref_dot_ynn.hpp),
  // or, for float32 dots XLA keeps from it, a chain of fused multiply-adds
  // (AVX-512) or the order measured without AVX-512 (eigen_gemm_avx2).
  // YNNPACK blocks a long k by the cache size (seen for tile_k 1 beyond 512;
  // tile_k 4 showed none up to 4096), and the emulation is slow for big
  // products: those keep OpenBLAS.
  // YNNPACK takes only a row-major left operand: batch axes first, the
  // contracted ones last (measured: `a.T @ b` as one dot_general is a chain).
  // XLA's DotDecomposer first transposes a dot that is not canonical (one
  // contracted axis, at most one free axis per operand, batch axes leading in
  // order) into (batch, free, contracted) order, which is row-major.
  bool lhs_rows = true;
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i)
    lhs_rows &= dd.lhs_batch[i] == static_cast<int64_t>(i);
  bool canonical = lhs_rows && dd.lhs_contract.size() == 1 && lf.size() <= 1 && rf.size() <= 1;
  for (size_t i = 0; i < dd.rhs_batch.size(); ++i)
    canonical &= dd.rhs_batch[i] == static_cast<int64_t>(i);
  for (size_t i = 0; i < dd.lhs_contract.size(); ++i)
    lhs_rows &= dd.lhs_contract[i] == static_cast<int64_t>(l.ndim() - dd.lhs_contract.size() + i);
  lhs_rows |= !canonical;
  bool ynn = lhs_rows && ynn_dot_applies(M, K, N);
  bool f64 = oa.dtype == DType::Float64;
  // A right operand whose contracted axis comes after its free one (`a @ w.T`,
  // with XLA's transpose folding; measured against JAX 0.10.2 over 150 shapes).
  bool packed_b = canonical && rf.size() == 1 && dd.rhs_contract[0] > rf[0];
  if ((oa.dtype == DType::Float32 || f64) && M >= 2 && N >= 2 && K > 1 &&
      B * M * N * K <= (int64_t{1} << 22) && (ynn || !f64)) {
    // (Measured without AVX-512 up to 40 a side; larger ones keep the chain.)
    if (!ynn && !f64 && host_ynn_isa() != YnnIsa::Avx512 && std::max({M, K, N}) <= 40) {
      for (int64_t b = 0; b < B; ++b)
        eigen_gemm_avx2(lt.as<float>() + b * M * K, rt.as<float>() + b * K * N, M, K, N,
                        out.as<float>() + b * M * N);
      return out;
    }
    YnnKernelChoice kernel =
        ynn && !f64 ? ynn_kernel(M, K, N, packed_b)
                    : YnnKernelChoice{ynn ? ynn_tile_k(M, K, N, f64, packed_b) : 1, true};
    int tile_k = kernel.tile_k;
    if (K <= (tile_k == 4 ? 4096 : 512)) {
      for (int64_t b = 0; b < B; ++b)
        if (f64)
          ynn_gemm(lt.as<double>() + b * M * K, rt.as<double>() + b * K * N, M, K, N, tile_k,
                   out.as<double>() + b * M * N);
        else
          ynn_gemm(lt.as<float>() + b * M * K, rt.as<float>() + b * K * N, M, K, N, tile_k,
                   out.as<float>() + b * M * N, kernel.fused);
      return out;
    }
  }
  if (oa.dtype == DType::Float32 && K > 1) {
    for (int64_t b = 0; b < B; ++b)
      gemm_f32(false, false, M, N, K, lt.as<float>() + b * M * K, K, rt.as<float>() + b * K * N, N,
               out.as<float>() + b * M * N, N);
    return out;
  }
  if (oa.dtype == DType::Float64 && K > 1) {
    for (int64_t b = 0; b < B; ++b)
      gemm_f64(false, false, M, N, K, lt.as<double>() + b * M * K, K, rt.as<double>() + b * K * N,
               N, out.as<double>() + b * M * N, N);
    return out;
  }
  // Plain loops: ints wrap, half types accumulate in float, bool is or-of-ands.
  visit_dtype(oa.dtype, [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    const auto* ls = lt.as<typename E::S>();
    const auto* rs = rt.as<typename E::S>();
    auto* os = out.as<typename E::S>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          C acc = C(0);
          if constexpr (!std::is_same_v<C, bool> && !is_int_v<C>)
            if (K == 1) { // the product alone, keeping its sign of zero
              C x = E::load(ls[(b * M + i)]), y = E::load(rs[b * N + j]);
              if constexpr (std::is_same_v<C, cplx::C>)
                os[(b * M + i) * N + j] = cplx::mul(x, y, N == 1 && M > 1); // XLA's multiply
              else
                os[(b * M + i) * N + j] = E::store(static_cast<C>(x * y));
              continue;
            }
          for (int64_t k = 0; k < K; ++k) {
            C x = E::load(ls[(b * M + i) * K + k]), y = E::load(rs[(b * K + k) * N + j]);
            if constexpr (std::is_same_v<C, bool>)
              acc = acc || (x && y);
            else if constexpr (is_int_v<C>)
              acc = wrap_add(acc, wrap_mul(x, y));
            else
              acc = static_cast<C>(acc + x * y);
          }
          os[(b * M + i) * N + j] = E::store(acc);
        }
  });
  return out;
}

} // namespace pxl::ref
