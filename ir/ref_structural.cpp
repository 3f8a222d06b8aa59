// Reference kernels that create, convert or move elements without arithmetic.
#include <algorithm>

#include "ir/ref_util.hpp"

namespace pxl::ref {

namespace {

Array fresh(const AVal& a) { return Array(a.dtype, a.shape, a.weak); }

// Copies one element of `size` bytes.
inline void copy_elem(void* dst, int64_t di, const void* src, int64_t si, size_t size) {
  std::memcpy(static_cast<char*>(dst) + di * static_cast<int64_t>(size),
              static_cast<const char*>(src) + si * static_cast<int64_t>(size), size);
}

// out (contiguous, of `shape`) = the elements of `in` at `offset` +
// sum(idx[d] * stride[d]) (in elements; a stride may be 0, a broadcast, or
// negative, a reversal). Transpose, slice, rev and broadcast_in_dim are this
// one copy. Size-1 dimensions are dropped and neighbours that are contiguous
// in `in` merged; the innermost run is a memcpy where its stride is 1, and a
// transpose (inner stride not 1, another dimension's 1) is copied in square
// tiles so that both sides stay in cache.
template <class T>
void copy_strided(T* out, const T* in, Shape shape, std::vector<int64_t> stride, int64_t offset) {
  Shape sh;
  std::vector<int64_t> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    if (!sh.empty() && st.back() == stride[d] * shape[d]) {
      sh.back() *= shape[d];
      st.back() = stride[d];
      continue;
    }
    sh.push_back(shape[d]);
    st.push_back(stride[d]);
  }
  in += offset;
  if (sh.empty()) {
    *out = *in;
    return;
  }
  const size_t r = sh.size(), inner = r - 1;
  std::vector<int64_t> ost(r, 1);
  for (size_t d = inner; d-- > 0;) ost[d] = ost[d + 1] * sh[d + 1];
  int tile = -1; // the dimension whose elements are contiguous in `in`, when inner's are not
  if (st[inner] != 1)
    for (size_t d = 0; d < inner; ++d)
      if (st[d] == 1) tile = static_cast<int>(d);
  std::vector<size_t> walk;
  for (size_t d = 0; d < inner; ++d)
    if (static_cast<int>(d) != tile) walk.push_back(d);
  std::vector<int64_t> idx(walk.size(), 0);
  const int64_t n = sh[inner], s = st[inner];
  for (;;) {
    int64_t ob = 0, ib = 0;
    for (size_t k = 0; k < walk.size(); ++k) {
      ob += idx[k] * ost[walk[k]];
      ib += idx[k] * st[walk[k]];
    }
    T* o = out + ob;
    const T* i = in + ib;
    if (tile < 0) {
      if (s == 1)
        std::memcpy(o, i, static_cast<size_t>(n) * sizeof(T));
      else
        for (int64_t j = 0; j < n; ++j) o[j] = i[j * s];
    } else {
      constexpr int64_t kTile = 16;
      const int64_t m = sh[static_cast<size_t>(tile)], om = ost[static_cast<size_t>(tile)];
      for (int64_t a0 = 0; a0 < m; a0 += kTile) {
        const int64_t a1 = std::min(m, a0 + kTile);
        for (int64_t b0 = 0; b0 < n; b0 += kTile) {
          const int64_t b1 = std::min(n, b0 + kTile);
          for (int64_t a = a0; a < a1; ++a) {
            T* row = o + a * om;
            const T* col = i + a;
            for (int64_t b = b0; b < b1; ++b) row[b] = col[b * s];
          }
        }
      }
    }
    size_t k = walk.size();
    while (k > 0 && ++idx[k - 1] == sh[walk[k - 1]]) idx[--k] = 0;
    if (k == 0) return;
  }
}

struct Bytes16 {
  uint64_t lo, hi;
};

// copy_strided for x's element size into a fresh array of `oa`.
Array strided(const Array& x, const AVal& oa, const std::vector<int64_t>& stride, int64_t offset) {
  Array out = Array::uninitialized(oa.dtype, oa.shape, oa.weak); // every element is written
  auto run = [&]<class T>(T*) {
    copy_strided(static_cast<T*>(out.data()), static_cast<const T*>(x.data()), oa.shape, stride,
                 offset);
  };
  switch (dtype_size(x.dtype())) {
  case 1:
    run(static_cast<uint8_t*>(nullptr));
    break;
  case 2:
    run(static_cast<uint16_t*>(nullptr));
    break;
  case 4:
    run(static_cast<uint32_t*>(nullptr));
    break;
  case 8:
    run(static_cast<uint64_t*>(nullptr));
    break;
  case 16:
    run(static_cast<Bytes16*>(nullptr));
    break;
  default:
    PXL_ASSERT(false, "no element size for a strided copy");
  }
  return out;
}

} // namespace

Array convert(const Array& x, const AVal& oa) {
  // Element by element through Array::get/set, which define every conversion:
  // ints wrap, floats -> ints saturate (NaN -> 0), anything -> bool is `!= 0`.
  // A conversion to the same dtype (a change of weak type) is XLA's no-op: it
  // copies the bits, so it does not flush a subnormal as the route through
  // double does under FTZ/DAZ.
  if (x.dtype() == oa.dtype) return x.with_weak(oa.weak);
  Array out = fresh(oa);
  for (int64_t i = 0; i < x.size(); ++i) out.set(i, x.get(i));
  return out;
}

Array iota(const OpAttrs& a, const AVal& oa) {
  if (oa.dtype == DType::Int32) { // the index arrays indexing builds: written directly
    Array out = Array::uninitialized(oa.dtype, oa.shape, oa.weak);
    int64_t inner = 1, dim = oa.shape[static_cast<size_t>(a.axis)];
    for (size_t d = static_cast<size_t>(a.axis) + 1; d < oa.shape.size(); ++d) inner *= oa.shape[d];
    auto* o = out.as<int32_t>();
    for (int64_t flat = 0; flat < out.size();)
      for (int32_t k = 0; k < dim; ++k)
        for (int64_t i = 0; i < inner; ++i) o[flat++] = k;
    return out;
  }
  Array out = fresh(oa);
  for_each_index(oa.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    out.set(flat, Scalar::of_int(idx[static_cast<size_t>(a.axis)]));
  });
  return out;
}

Array broadcast_in_dim(const Array& x, const OpAttrs& a, const AVal& oa) {
  std::vector<int64_t> xs = strides_of(x.shape()), stride(oa.shape.size(), 0);
  for (size_t k = 0; k < a.axes.size(); ++k)
    if (x.shape()[k] != 1) stride[static_cast<size_t>(a.axes[k])] = xs[k];
  return strided(x, oa, stride, 0);
}

Array transpose(const Array& x, const std::vector<int64_t>& perm, const AVal& oa) {
  std::vector<int64_t> xs = strides_of(x.shape()), stride;
  for (int64_t p : perm) stride.push_back(xs[static_cast<size_t>(p)]);
  return strided(x, oa, stride, 0);
}

Array slice(const Array& x, const OpAttrs& a, const AVal& oa) {
  std::vector<int64_t> xs = strides_of(x.shape()), stride;
  int64_t offset = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    stride.push_back(a.strides[d] * xs[d]);
    offset += a.starts[d] * xs[d];
  }
  return strided(x, oa, stride, offset);
}

Array rev(const Array& x, const OpAttrs& a, const AVal& oa) {
  std::vector<int64_t> stride = strides_of(x.shape());
  int64_t offset = 0;
  for (int64_t ax : a.axes) {
    size_t d = static_cast<size_t>(ax);
    offset += (x.shape()[d] - 1) * stride[d];
    stride[d] = -stride[d];
  }
  return strided(x, oa, stride, offset);
}

Array concatenate(std::span<const Array> xs, const OpAttrs& a, const AVal& oa) {
  // View every operand as (outer, axis, inner) and copy row blocks.
  Array out = fresh(oa);
  if (out.size() == 0) return out; // (an empty array may have no buffer to copy to or from)
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < ax; ++d) outer *= oa.shape[d];
  for (size_t d = ax + 1; d < oa.shape.size(); ++d) inner *= oa.shape[d];
  size_t es = dtype_size(oa.dtype);
  int64_t out_row = oa.shape[ax] * inner;
  int64_t offset = 0;
  for (const Array& x : xs) {
    int64_t row = x.shape()[ax] * inner;
    if (row == 0) continue;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.data()) +
                      (o * out_row + offset) * static_cast<int64_t>(es),
                  static_cast<const char*>(x.data()) + o * row * static_cast<int64_t>(es),
                  static_cast<size_t>(row) * es);
    offset += row;
  }
  return out;
}

Array pad(const Array& x, const Array& value, const OpAttrs& a, const AVal& oa) {
  Array out = fresh(oa);
  size_t es = dtype_size(x.dtype());
  for (int64_t i = 0; i < out.size(); ++i) copy_elem(out.data(), i, value.data(), 0, es);
  std::vector<int64_t> os = strides_of(oa.shape);
  for_each_index(x.shape(), [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t p = a.lo[d] + idx[d] * (a.interior[d] + 1);
      if (p < 0 || p >= oa.shape[d]) return; // cut off by negative padding
      dst += p * os[d];
    }
    copy_elem(out.data(), dst, x.data(), flat, es);
  });
  return out;
}

Array take(const Array& x, const Array& idx, const OpAttrs& a, const AVal& oa) {
  // x as (outer, n, inner); out as (outer, m, inner) with out[o, j] = x[o, clamp(idx[j])].
  Array out = fresh(oa);
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1, n = x.shape()[ax], m = idx.size();
  for (size_t d = 0; d < ax; ++d) outer *= x.shape()[d];
  for (size_t d = ax + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  if (n == 0) return out; // nothing to gather from; JAX would fill, zeros it is
  size_t es = dtype_size(x.dtype());
  size_t row = static_cast<size_t>(inner) * es;
  for (int64_t j = 0; j < m; ++j) {
    // Out-of-range indices are clamped, as XLA's gather does.
    int64_t k = std::clamp<int64_t>(static_cast<int64_t>(idx.get(j).i), 0, n - 1);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.data()) + (o * m + j) * static_cast<int64_t>(row),
                  static_cast<const char*>(x.data()) + (o * n + k) * static_cast<int64_t>(row),
                  row);
  }
  return out;
}

Array scatter(const Array& x, const Array& idx, const Array& upd, const OpAttrs& a,
              const AVal& oa) {
  // The operand's copy writes every byte: no zero fill first.
  Array out = Array::uninitialized(oa.dtype, oa.shape, oa.weak);
  std::memcpy(out.data(), x.data(), x.nbytes());
  scatter_into(out, idx, upd, a);
  return out;
}

void scatter_into(Array& out, const Array& idx, const Array& upd, const OpAttrs& a) {
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = 1, inner = 1, n = out.shape()[ax], m = idx.size();
  for (size_t d = 0; d < ax; ++d) outer *= out.shape()[d];
  for (size_t d = ax + 1; d < out.shape().size(); ++d) inner *= out.shape()[d];
  visit_dtype(out.dtype(), [&]<DType D>() {
    using E = Elem<D>;
    using C = typename E::C;
    auto* os = out.as<typename E::S>();
    const auto* us = upd.as<typename E::S>();
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = idx.get(j).i;
      if (k < 0 || k >= n) continue; // out-of-range updates are dropped, as in JAX
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          typename E::S& dst = os[(o * n + k) * inner + i];
          C u = E::load(us[(o * m + j) * inner + i]);
          C cur = E::load(dst);
          C r = u;
          switch (a.mode) {
          case ScatterMode::Set:
            r = u;
            break;
          case ScatterMode::Add:
            if constexpr (is_int_v<C>)
              r = wrap_add(cur, u);
            else
              r = static_cast<C>(cur + u);
            break;
          case ScatterMode::Mul:
            if constexpr (is_int_v<C>)
              r = wrap_mul(cur, u);
            else
              r = static_cast<C>(cur * u);
            break;
          case ScatterMode::Min:
            r = nan_min(cur, u);
            break;
          case ScatterMode::Max:
            r = nan_max(cur, u);
            break;
          }
          dst = E::store(r);
        }
    }
  });
}

} // namespace pxl::ref
