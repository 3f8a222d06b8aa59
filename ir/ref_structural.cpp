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
  Array out = fresh(oa);
  std::vector<int64_t> xs = strides_of(x.shape());
  size_t es = dtype_size(x.dtype());
  for_each_index(oa.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t k = 0; k < a.axes.size(); ++k)
      if (x.shape()[k] != 1) src += idx[static_cast<size_t>(a.axes[k])] * xs[k];
    copy_elem(out.data(), flat, x.data(), src, es);
  });
  return out;
}

Array transpose(const Array& x, const std::vector<int64_t>& perm, const AVal& oa) {
  Array out = fresh(oa);
  std::vector<int64_t> xs = strides_of(x.shape());
  size_t es = dtype_size(x.dtype());
  for_each_index(oa.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t j = 0; j < perm.size(); ++j) src += idx[j] * xs[static_cast<size_t>(perm[j])];
    copy_elem(out.data(), flat, x.data(), src, es);
  });
  return out;
}

Array slice(const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out = fresh(oa);
  std::vector<int64_t> xs = strides_of(x.shape());
  size_t es = dtype_size(x.dtype());
  for_each_index(oa.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d) src += (a.starts[d] + idx[d] * a.strides[d]) * xs[d];
    copy_elem(out.data(), flat, x.data(), src, es);
  });
  return out;
}

Array rev(const Array& x, const OpAttrs& a, const AVal& oa) {
  Array out = fresh(oa);
  std::vector<int64_t> xs = strides_of(x.shape());
  std::vector<bool> flip(x.shape().size(), false);
  for (int64_t ax : a.axes) flip[static_cast<size_t>(ax)] = true;
  size_t es = dtype_size(x.dtype());
  for_each_index(oa.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      src += (flip[d] ? x.shape()[d] - 1 - idx[d] : idx[d]) * xs[d];
    copy_elem(out.data(), flat, x.data(), src, es);
  });
  return out;
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
