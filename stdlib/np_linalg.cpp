// matmul, dot and outer with numpy's rank rules, all as dot_general.
#include <algorithm>
#include <optional>

#include "stdlib/jaxpr_record.hpp"
#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

Tensor dot_general(OpContext& cx, const Tensor& a, const Tensor& b, DotDims dims) {
  OpAttrs at;
  at.dot = std::move(dims);
  return bind(cx, Op::DotGeneral, at, {a, b});
}

// Both operands converted to their promoted type.
std::pair<Tensor, Tensor> promoted(OpContext& cx, const Tensor& a, const Tensor& b) {
  PromotedType p = promote_types(av(a).dtype, av(a).weak, av(b).dtype, av(b).weak);
  return {convert(cx, a, p.dtype, p.weak), convert(cx, b, p.dtype, p.weak)};
}

// JAX's TypeError (from lax.dot_general) for one contracted axis of two sizes.
std::string contracting_mismatch(int64_t a, int64_t b) {
  return "dot_general requires contracting dimensions to have the same shape, got (" +
         std::to_string(a) + ",) and (" + std::to_string(b) + ",).";
}

} // namespace

// jnp.matmul as JAX builds it: batch dimensions of size 1 on one side are
// squeezed and become the other side's free dimensions (no broadcast), a 1-d
// operand is contracted as it is, and a transpose puts the batch dimensions
// first; the dot_general XLA sees (and make_jaxpr prints) is JAX's.
Tensor matmul(OpContext& cx, const Tensor& a0, const Tensor& b0, std::array<uint8_t, 2> precision) {
  const Shape& sa = av(a0).shape;
  const Shape& sb = av(b0).shape;
  for (int k = 0; k < 2; ++k)
    if ((k ? sb : sa).empty()) // JAX's text
      throw Error(ErrCode::Value, "matmul input operand " + std::to_string(k) +
                                      " must have ndim at least 1, but it has ndim 0");
  size_t begin = jaxpr_body_size(cx);
  auto [a, b] = promoted(cx, a0, b0);
  jaxpr_hide_operand_converts(cx, begin, {{a0, a}, {b0, b}}); // JAX's mixed operands
  const bool a_mat = sa.size() > 1, b_mat = sb.size() > 1;
  const int64_t k_a = sa.back(), k_b = b_mat ? sb[sb.size() - 2] : sb[0];
  const size_t na = a_mat ? sa.size() - 2 : 0, nb = b_mat ? sb.size() - 2 : 0;
  const size_t n = std::max(na, nb);
  std::vector<int64_t> a_squeeze, b_squeeze, both_squeeze, a_batch, b_batch;
  std::vector<int64_t> idx_batch, idx_a_other, idx_b_other;
  auto sz = [](std::vector<int64_t>& v) { return static_cast<int64_t>(v.size()); };
  for (size_t i = 0; i < n; ++i) {
    std::optional<int64_t> ba, bb; // this batch dimension's size on each side
    if (i >= n - na) ba = sa[i - (n - na)];
    if (i >= n - nb) bb = sb[i - (n - nb)];
    const auto at = static_cast<int64_t>(i);
    if (!ba) {
      idx_b_other.push_back(at);
    } else if (!bb) {
      idx_a_other.push_back(at);
    } else if (*ba == 1 && *bb == 1) {
      a_squeeze.push_back(sz(idx_batch) + sz(idx_a_other) + sz(a_squeeze));
      b_squeeze.push_back(sz(idx_batch) + sz(idx_b_other) + sz(b_squeeze));
      both_squeeze.push_back(at);
    } else if (*ba == 1) {
      idx_b_other.push_back(at);
      a_squeeze.push_back(sz(idx_batch) + sz(idx_a_other) + sz(a_squeeze));
    } else if (*bb == 1) {
      idx_a_other.push_back(at);
      b_squeeze.push_back(sz(idx_batch) + sz(idx_b_other) + sz(b_squeeze));
    } else if (*ba == *bb) {
      a_batch.push_back(sz(idx_batch) + sz(idx_a_other));
      b_batch.push_back(sz(idx_batch) + sz(idx_b_other));
      idx_batch.push_back(at);
    } else { // JAX's text
      throw Error(ErrCode::Value,
                  "Incompatible types for matmul arguments: " + array_type_str(av(a0).dtype, sa) +
                      " and " + array_type_str(av(b0).dtype, sb));
    }
  }
  if (k_a != k_b) throw Error(ErrCode::Contraction, contracting_mismatch(k_a, k_b));
  if (a_mat) idx_a_other.push_back(static_cast<int64_t>(n));
  if (b_mat) idx_b_other.push_back(static_cast<int64_t>(n) + (a_mat ? 1 : 0));
  std::vector<int64_t> order = idx_batch; // where each dot_general dimension goes
  order.insert(order.end(), idx_a_other.begin(), idx_a_other.end());
  order.insert(order.end(), idx_b_other.begin(), idx_b_other.end());
  std::vector<int64_t> perm(order.size()); // argsort(order) (a squeezed pair leaves a gap)
  for (size_t d = 0; d < order.size(); ++d) perm[d] = static_cast<int64_t>(d);
  std::sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
    return order[static_cast<size_t>(x)] < order[static_cast<size_t>(y)];
  });
  a = squeeze_dims(cx, a, a_squeeze);
  b = squeeze_dims(cx, b, b_squeeze);
  DotDims dims;
  dims.lhs_contract = {static_cast<int64_t>(av(a).ndim()) - 1};
  dims.rhs_contract = {static_cast<int64_t>(av(b).ndim()) - 1 - (b_mat ? 1 : 0)};
  dims.lhs_batch = a_batch;
  dims.rhs_batch = b_batch;
  dims.precision = precision;
  Tensor r = transpose_to(cx, dot_general(cx, a, b, dims), perm);
  return expand_dims_at(cx, r, both_squeeze);
}

Tensor dot(OpContext& cx, const Tensor& a0, const Tensor& b0, std::array<uint8_t, 2> precision) {
  const Shape& sa = av(a0).shape;
  const Shape& sb = av(b0).shape;
  if (sa.empty() || sb.empty()) return binary(cx, BinOp::Mul, a0, b0);
  size_t begin = jaxpr_body_size(cx);
  auto [a, b] = promoted(cx, a0, b0);
  jaxpr_hide_operand_converts(cx, begin, {{a0, a}, {b0, b}}); // JAX's mixed operands
  // Contract a's last axis with b's only axis (1-d) or second-to-last axis.
  int64_t ca = static_cast<int64_t>(sa.size()) - 1;
  int64_t cb = sb.size() == 1 ? 0 : static_cast<int64_t>(sb.size()) - 2;
  if (sa[static_cast<size_t>(ca)] != sb[static_cast<size_t>(cb)])
    throw Error(ErrCode::Contraction,
                contracting_mismatch(sa[static_cast<size_t>(ca)], sb[static_cast<size_t>(cb)]));
  DotDims dims;
  dims.lhs_contract = {ca};
  dims.rhs_contract = {cb};
  dims.precision = precision;
  return dot_general(cx, a, b, dims);
}

Tensor outer(OpContext& cx, const Tensor& a, const Tensor& b) {
  Tensor column = expand_dims_at(cx, ravel(cx, a), {1});
  Tensor row = expand_dims_at(cx, ravel(cx, b), {0});
  return binary(cx, BinOp::Mul, column, row);
}

} // namespace pxl::np
