// matmul, dot and outer with numpy's rank rules, all as dot_general.
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

Tensor matmul(OpContext& cx, const Tensor& a0, const Tensor& b0) {
  const Shape& sa = av(a0).shape;
  const Shape& sb = av(b0).shape;
  if (sa.empty() || sb.empty())
    throw Error(ErrCode::Shape, "matmul: operands must have at least one dimension, got shapes " +
                                    shape_str(sa) + " and " + shape_str(sb));
  auto [a, b] = promoted(cx, a0, b0);
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  // numpy: a 1-d lhs is a row (1, k), a 1-d rhs a column (k, 1); both removed after.
  if (a_vec) a = reshape_to(cx, a, {1, sa[0]});
  if (b_vec) b = reshape_to(cx, b, {sb[0], 1});
  Shape la = av(a).shape, lb = av(b).shape;
  int64_t k_a = la.back(), k_b = lb[lb.size() - 2];
  if (k_a != k_b) throw Error(ErrCode::Contraction, contracting_mismatch(k_a, k_b));
  Shape ba(la.begin(), la.end() - 2), bb(lb.begin(), lb.end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes("matmul", ba, bb);
  } catch (const Error&) { // JAX's text
    throw Error(ErrCode::Value,
                "Incompatible types for matmul arguments: " + array_type_str(av(a0).dtype, sa) +
                    " and " + array_type_str(av(b0).dtype, sb));
  }
  Shape ta = batch, tb = batch;
  ta.insert(ta.end(), la.end() - 2, la.end());
  tb.insert(tb.end(), lb.end() - 2, lb.end());
  a = broadcast(cx, a, ta, "matmul");
  b = broadcast(cx, b, tb, "matmul");
  int64_t nb = static_cast<int64_t>(batch.size());
  DotDims dims;
  for (int64_t i = 0; i < nb; ++i) dims.lhs_batch.push_back(i), dims.rhs_batch.push_back(i);
  dims.lhs_contract = {nb + 1};
  dims.rhs_contract = {nb};
  Tensor r = dot_general(cx, a, b, dims); // (batch..., m, n)
  if (a_vec || b_vec) {
    Shape out = batch;
    if (!a_vec) out.push_back(la[la.size() - 2]);
    if (!b_vec) out.push_back(lb.back());
    r = reshape_to(cx, r, out);
  }
  return r;
}

Tensor dot(OpContext& cx, const Tensor& a0, const Tensor& b0) {
  const Shape& sa = av(a0).shape;
  const Shape& sb = av(b0).shape;
  if (sa.empty() || sb.empty()) return binary(cx, BinOp::Mul, a0, b0);
  auto [a, b] = promoted(cx, a0, b0);
  // Contract a's last axis with b's only axis (1-d) or second-to-last axis.
  int64_t ca = static_cast<int64_t>(sa.size()) - 1;
  int64_t cb = sb.size() == 1 ? 0 : static_cast<int64_t>(sb.size()) - 2;
  if (sa[static_cast<size_t>(ca)] != sb[static_cast<size_t>(cb)])
    throw Error(ErrCode::Contraction,
                contracting_mismatch(sa[static_cast<size_t>(ca)], sb[static_cast<size_t>(cb)]));
  DotDims dims;
  dims.lhs_contract = {ca};
  dims.rhs_contract = {cb};
  return dot_general(cx, a, b, dims);
}

Tensor outer(OpContext& cx, const Tensor& a, const Tensor& b) {
  Tensor ra = ravel(cx, a), rb = ravel(cx, b);
  return binary(cx, BinOp::Mul, reshape_to(cx, ra, {av(ra).size(), 1}),
                reshape_to(cx, rb, {1, av(rb).size()}));
}

} // namespace pxl::np
