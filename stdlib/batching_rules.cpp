// The batching rule of every primitive (vmap). An operand is either batched,
// with the vmapped axis moved to dimension 0, or the same for every example.
// Each rule binds ordinary primitives on the batched tensors in the current
// context, so vmap runs eagerly, under jit, inside pmap/shard_map, and nests.
// One switch without `default:`: -Wswitch flags an op that lacks a rule.
#include <algorithm>
#include <numeric>

#include "lang/tracer.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/custom_derivatives.hpp"
#include "stdlib/debug_print.hpp"
#include "stdlib/host_callback.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/np.hpp"
#include "stdlib/rbg_batching.hpp"
#include "stdlib/trace_util.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

namespace {

using Dims = std::vector<int64_t>;

Tensor bind(OpContext& cx, Op op, const OpAttrs& a, std::vector<Tensor> xs) {
  return cx.bind(op, a, xs);
}

Dims shifted(const Dims& d, int64_t by = 1) {
  Dims out;
  for (int64_t x : d) out.push_back(x + by);
  return out;
}

Dims range(int64_t lo, int64_t hi) {
  Dims out;
  for (int64_t i = lo; i < hi; ++i) out.push_back(i);
  return out;
}

Dims cat(std::initializer_list<Dims> parts) {
  Dims out;
  for (const Dims& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Tensor transpose(OpContext& cx, const Tensor& t, const Dims& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return t;
  OpAttrs a;
  a.perm = perm;
  return bind(cx, Op::Transpose, a, {t});
}

// Moves dimension `from` of t to position `to`.
Tensor move_axis(OpContext& cx, const Tensor& t, int64_t from, int64_t to) {
  Dims perm = range(0, t->aval.ndim());
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  return transpose(cx, t, perm);
}

Tensor reshape(OpContext& cx, const Tensor& t, const Shape& shape) {
  if (t->aval.shape == shape) return t;
  OpAttrs a;
  a.shape = shape;
  return bind(cx, Op::Reshape, a, {t});
}

// A tensor of `shape` filled with the integer `v` in `dtype`.
Tensor filled(OpContext& cx, int64_t v, DType dtype, const Shape& shape) {
  Tensor s = cx.constant(Array::scalar(Scalar::of_int(v), dtype));
  OpAttrs a;
  a.shape = shape;
  return bind(cx, Op::BroadcastInDim, a, {s});
}

Tensor materialize(OpContext& cx, const BVal& v, int64_t B) {
  return v.batched ? v.t : broadcast_batch(cx, v.t, B);
}

// b * A for each example b, in the shape of the batched index array `idx`.
Tensor example_offsets(OpContext& cx, const Tensor& idx, int64_t A) {
  OpAttrs io;
  io.dtype = idx->aval.dtype;
  io.shape = idx->aval.shape;
  io.axis = 0;
  Tensor b = bind(cx, Op::Iota, io, {});
  return bind(cx, Op::Mul, {}, {b, filled(cx, A, idx->aval.dtype, idx->aval.shape)});
}

// x [B, pre.., A, post..] -> [B*A, pre.., post..]: examples laid end to end
// along the indexed axis, so one take/scatter serves every example.
Tensor flatten_indexed(OpContext& cx, const Tensor& x, int64_t axis) {
  int64_t n = x->aval.ndim();
  Tensor t = transpose(cx, x, cat({{0, axis + 1}, range(1, axis + 1), range(axis + 2, n)}));
  Shape s = t->aval.shape;
  s[1] *= s[0];
  s.erase(s.begin());
  return reshape(cx, t, s);
}

BVal batch_take(OpContext& cx, const OpAttrs& attrs, const BVal& x, const BVal& idx) {
  int64_t axis = attrs.axis;
  if (!idx.batched) {
    OpAttrs a = attrs;
    a.axis = axis + 1;
    return {bind(cx, Op::Take, a, {x.t, idx.t}), true};
  }
  if (!x.batched) // x[:axis] + [B] + idx + x[axis+1:]
    return {move_axis(cx, bind(cx, Op::Take, attrs, {x.t, idx.t}), axis, 0), true};
  int64_t A = x.t->aval.shape[axis + 1];
  DType it = idx.t->aval.dtype;
  const Shape& is = idx.t->aval.shape;
  // take clamps its indices; clamp before offsetting so that each example stays in its rows.
  Tensor clamped = bind(cx, Op::Min, {}, {idx.t, filled(cx, A - 1, it, is)});
  clamped = bind(cx, Op::Max, {}, {clamped, filled(cx, 0, it, is)});
  Tensor flat_idx = bind(cx, Op::Add, {}, {clamped, example_offsets(cx, idx.t, A)});
  OpAttrs a = attrs;
  a.axis = 0;
  Tensor r = bind(cx, Op::Take, a, {flatten_indexed(cx, x.t, axis), flat_idx});
  // r: [B, idx.., pre.., post..] -> [B, pre.., idx.., post..]
  int64_t k = static_cast<int64_t>(is.size()) - 1, p = axis, n = r->aval.ndim();
  return {
      transpose(cx, r, cat({{0}, range(k + 1, k + 1 + p), range(1, k + 1), range(k + 1 + p, n)})),
      true};
}

BVal batch_scatter(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> in, int64_t B) {
  int64_t axis = attrs.axis;
  if (!in[1].batched && !in[2].batched) {
    OpAttrs a = attrs;
    a.axis = axis + 1;
    return {bind(cx, Op::Scatter, a, {in[0].t, in[1].t, broadcast_batch(cx, in[2].t, B)}), true};
  }
  Tensor x = materialize(cx, in[0], B), idx = materialize(cx, in[1], B),
         upd = materialize(cx, in[2], B);
  int64_t A = x->aval.shape[axis + 1];
  DType it = idx->aval.dtype;
  const Shape& is = idx->aval.shape;
  // Out-of-range indices are dropped by scatter: keep them out of range after offsetting.
  Tensor valid = bind(cx, Op::And, {},
                      {bind(cx, Op::Ge, {}, {idx, filled(cx, 0, it, is)}),
                       bind(cx, Op::Lt, {}, {idx, filled(cx, A, it, is)})});
  Tensor flat_idx = bind(cx, Op::Select, {},
                         {valid, bind(cx, Op::Add, {}, {idx, example_offsets(cx, idx, A)}),
                          filled(cx, B * A, it, is)});
  int64_t k = static_cast<int64_t>(is.size()) - 1, p = axis, nu = upd->aval.ndim();
  Tensor flat_upd = transpose(
      cx, upd, cat({{0}, range(p + 1, p + 1 + k), range(1, p + 1), range(p + 1 + k, nu)}));
  OpAttrs a = attrs;
  a.axis = 0;
  Tensor r = bind(cx, Op::Scatter, a, {flatten_indexed(cx, x, axis), flat_idx, flat_upd});
  // [B*A, pre.., post..] -> [B, A, pre.., post..] -> [B, pre.., A, post..]
  Shape s = r->aval.shape;
  s[0] = A;
  s.insert(s.begin(), B);
  int64_t n = static_cast<int64_t>(s.size());
  return {transpose(cx, reshape(cx, r, s), cat({{0}, range(2, p + 2), {1}, range(p + 2, n)})),
          true};
}

BVal batch_dot(OpContext& cx, const OpAttrs& attrs, const BVal& l, const BVal& r) {
  OpAttrs a = attrs;
  DotDims& d = a.dot;
  int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  if (l.batched) {
    d.lhs_batch = shifted(d.lhs_batch);
    d.lhs_contract = shifted(d.lhs_contract);
  }
  if (r.batched) {
    d.rhs_batch = shifted(d.rhs_batch);
    d.rhs_contract = shifted(d.rhs_contract);
  }
  if (l.batched && r.batched) {
    d.lhs_batch.insert(d.lhs_batch.begin(), 0);
    d.rhs_batch.insert(d.rhs_batch.begin(), 0);
    if (!a.dim_axes.empty()) a.dim_axes.insert(a.dim_axes.begin(), {}); // the batch stays whole
    return {bind(cx, Op::DotGeneral, a, {l.t, r.t}), true};
  }
  // One side batched: its vmapped axis is that side's first free dimension.
  int64_t pos = nb;
  if (r.batched) pos += l.t->aval.ndim() - nb - static_cast<int64_t>(attrs.dot.lhs_contract.size());
  if (!a.dim_axes.empty()) a.dim_axes.insert(a.dim_axes.begin() + pos, {});
  Tensor out = bind(cx, Op::DotGeneral, a, {l.t, r.t});
  return {move_axis(cx, out, pos, 0), true};
}

BVal batch_pad(OpContext& cx, const OpAttrs& attrs, const BVal& x, const BVal& v, int64_t B) {
  OpAttrs a = attrs;
  a.lo.insert(a.lo.begin(), 0);
  a.hi.insert(a.hi.begin(), 0);
  a.interior.insert(a.interior.begin(), 0);
  Tensor xb = materialize(cx, x, B);
  if (!v.batched) return {bind(cx, Op::Pad, a, {xb, v.t}), true};
  // A per-example padding value: pad with zero, then select the value where a
  // padded mask is false.
  DType dt = xb->aval.dtype;
  Tensor zero = cx.constant(Array::scalar(Scalar::of_int(0), dt));
  Tensor padded = bind(cx, Op::Pad, a, {xb, zero});
  Tensor ones = cx.constant(Array::scalar(Scalar::of_bool(true), DType::Bool));
  OpAttrs ba;
  ba.shape = xb->aval.shape;
  Tensor mask = bind(cx, Op::BroadcastInDim, ba, {ones});
  mask =
      bind(cx, Op::Pad, a, {mask, cx.constant(Array::scalar(Scalar::of_bool(false), DType::Bool))});
  OpAttrs va;
  va.shape = padded->aval.shape;
  va.axes = {0};
  Tensor fill = bind(cx, Op::BroadcastInDim, va, {v.t});
  return {bind(cx, Op::Select, {}, {mask, padded, fill}), true};
}

// all_to_all over the vmapped axis together with other axes `rest` (of total
// size R), the vmapped one first (major) or last (minor) among the names. The
// combined rank is b*R + r (major) or r*B + b (minor); chunk k of the split
// axis goes to rank k. Done in two exchanges: over the vmapped axis here (a
// transpose: example b' takes every example's chunks (., b', .)), then over the
// rest with the other chunk index as both split and concat axis, after which
// that axis holds the senders' rest ranks; the senders' (rest, vmapped) ranks
// and the chunk's own concat axis are merged in rank order.
BVal batch_all_to_all_with_rest(OpContext& cx, const OpAttrs& attrs, const OpAttrs& rest,
                                const BVal& in, int64_t B, bool major) {
  Tensor x = materialize(cx, in, B); // (from_b, operand dims...)
  int64_t R = rest.group_size, n = x->aval.ndim();
  int64_t sa = attrs.axis + 1, ca = attrs.concat_axis + 1;
  Shape shape = x->aval.shape;
  int64_t c = shape[static_cast<size_t>(sa)] / (R * B);
  // Labels: 0..n-1 the tensor's axes (0 = sender's b); n = receiver's b,
  // n+1 = the rest chunk index (becomes the sender's rest rank), n+2 = chunk.
  const int64_t TO_B = n, KR = n + 1, CH = n + 2;
  std::vector<int64_t> labels, sizes;
  for (int64_t i = 0; i < n; ++i) {
    if (i != sa) {
      labels.push_back(i);
      sizes.push_back(shape[static_cast<size_t>(i)]);
      continue;
    }
    if (major) {
      labels.insert(labels.end(), {TO_B, KR, CH});
      sizes.insert(sizes.end(), {B, R, c});
    } else {
      labels.insert(labels.end(), {KR, TO_B, CH});
      sizes.insert(sizes.end(), {R, B, c});
    }
  }
  Tensor t = reshape(cx, x, Shape(sizes.begin(), sizes.end()));
  auto pos = [&](int64_t l) {
    return static_cast<int64_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
  };
  auto permute = [&](const std::vector<int64_t>& target) {
    Dims perm;
    for (int64_t l : target) perm.push_back(pos(l));
    t = transpose(cx, t, perm);
    labels = target;
  };
  // (to_b, from_b, operand dims with the split axis as (KR, CH)).
  std::vector<int64_t> y = {TO_B, 0};
  for (int64_t i = 1; i < n; ++i) {
    if (i == sa)
      y.insert(y.end(), {KR, CH});
    else
      y.push_back(i);
  }
  permute(y);
  OpAttrs ra = rest;
  ra.axis = ra.concat_axis = pos(KR);
  t = bind(cx, Op::AllToAll, ra, {t}); // KR now indexes the sender's rest rank
  // Final: the concat axis as (senders' ranks in order, its own axis), the
  // split axis as the chunk.
  std::vector<int64_t> target = {TO_B};
  Shape out = {B};
  for (int64_t i = 1; i < n; ++i) {
    int64_t own = i == sa ? CH : i;
    int64_t own_size = i == sa ? c : shape[static_cast<size_t>(i)];
    if (i == ca) {
      if (major)
        target.insert(target.end(), {0, KR, own});
      else
        target.insert(target.end(), {KR, 0, own});
      out.push_back(R * B * own_size);
    } else {
      target.push_back(own);
      out.push_back(own_size);
    }
  }
  permute(target);
  return {reshape(cx, t, out), true};
}

// A collective whose axis names include the vmapped axis itself (vmap's
// axis_name): over that axis it acts across the batch dimension.
BVal batch_vmap_collective(OpContext& cx, Op op, const OpAttrs& attrs, std::span<const BVal> in,
                           const BatchAxis& ax) {
  if (!attrs.index_groups.empty())
    throw Error(ErrCode::Unsupported,
                std::string(op_name(op)) + " over the vmapped axis '" + ax.name +
                    "' with axis_index_groups is not supported (nor is it in JAX)");
  OpAttrs rest = attrs;
  rest.axis_names.erase(std::find(rest.axis_names.begin(), rest.axis_names.end(), ax.name));
  rest.group_size = attrs.group_size / ax.size;
  bool has_rest = !rest.axis_names.empty();
  auto over_rest = [&](Tensor t) { return has_rest ? bind(cx, op, rest, {t}) : t; };
  int64_t B = ax.size;
  switch (op) {
  case Op::Psum:
  case Op::Pmax:
  case Op::Pmin: {
    const BVal& x = in[0];
    Tensor t;
    if (!x.batched) {
      // psum of a value that is the same for every example: B copies of it.
      t = op == Op::Psum
              ? bind(cx, Op::Mul, {}, {x.t, filled(cx, B, x.t->aval.dtype, x.t->aval.shape)})
              : x.t;
    } else {
      OpAttrs r;
      r.axes = {0};
      t = bind(cx,
               op == Op::Psum   ? Op::ReduceSum
               : op == Op::Pmax ? Op::ReduceMax
                                : Op::ReduceMin,
               r, {x.t});
    }
    return {over_rest(t), false};
  }
  case Op::AxisIndex: {
    OpAttrs io;
    io.dtype = DType::Int32;
    io.shape = {B};
    Tensor b = bind(cx, Op::Iota, io, {});
    if (!has_rest) return {b, true};
    // Major to minor: the mesh axes listed before the vmapped one, then it.
    if (attrs.axis_names.back() != ax.name) break;
    Tensor r = bind(cx, Op::AxisIndex, rest, {});
    OpAttrs ba;
    ba.shape = {B};
    Tensor major = bind(cx, Op::Mul, {},
                        {bind(cx, Op::BroadcastInDim, ba, {r}), filled(cx, B, DType::Int32, {B})});
    return {bind(cx, Op::Add, {}, {major, b}), true};
  }
  case Op::AllGather: {
    if (has_rest) break;
    Tensor x = materialize(cx, in[0], B);
    Tensor t = move_axis(cx, x, 0, attrs.axis);
    if (attrs.tiled) { // merge the gathered axis into the next one
      Shape s = t->aval.shape;
      s[attrs.axis + 1] *= s[attrs.axis];
      s.erase(s.begin() + attrs.axis);
      t = reshape(cx, t, s);
    }
    return {t, false};
  }
  case Op::PsumScatter: {
    // Example i gets chunk i (of the scatter axis) of the sum over examples.
    if (has_rest) break;
    Tensor x = materialize(cx, in[0], B); // (j, operand dims...)
    int64_t sa = attrs.axis + 1;
    Shape s = x->aval.shape;
    if (attrs.tiled) {
      s[sa] /= B;
      s.insert(s.begin() + sa, B); // the scatter axis as (i, chunk)
      x = reshape(cx, x, s);
    }
    OpAttrs r;
    r.axes = {0};
    Tensor t = bind(cx, Op::ReduceSum, r, {x}); // (operand dims with i at the scatter axis)
    return {move_axis(cx, t, sa - 1, 0), true};
  }
  case Op::Ppermute: {
    // Example d gets example s's value for each (s, d) pair; the others get zeros.
    if (has_rest) break;
    Tensor x = materialize(cx, in[0], B);
    Shape row = x->aval.shape;
    row[0] = 1;
    std::vector<int64_t> src(static_cast<size_t>(B), -1);
    for (auto [from, to] : attrs.pairs) src[static_cast<size_t>(to)] = from;
    std::vector<Tensor> rows;
    for (int64_t s : src) {
      if (s < 0) {
        rows.push_back(filled(cx, 0, x->aval.dtype, row));
        continue;
      }
      OpAttrs a;
      a.starts.assign(row.size(), 0);
      a.limits = x->aval.shape;
      a.strides.assign(row.size(), 1);
      a.starts[0] = s;
      a.limits[0] = s + 1;
      rows.push_back(bind(cx, Op::Slice, a, {x}));
    }
    OpAttrs c;
    c.axis = 0;
    return {cx.bind(Op::Concatenate, c, rows), true};
  }
  case Op::AllToAll: {
    // Example j's chunk i (of the split axis) goes to example i, which
    // concatenates the chunks it receives along the concat axis in order of j.
    if (has_rest) {
      bool major = attrs.axis_names.front() == ax.name, minor = attrs.axis_names.back() == ax.name;
      if (!major && !minor) break;
      return batch_all_to_all_with_rest(cx, attrs, rest, in[0], B, major);
    }
    Tensor x = materialize(cx, in[0], B); // (j, operand dims...)
    int64_t sa = attrs.axis + 1, ca = attrs.concat_axis + 1;
    Shape s = x->aval.shape;
    s[sa] /= B;
    s.insert(s.begin() + sa, B);                        // the split axis as (i, chunk)
    Tensor t = move_axis(cx, reshape(cx, x, s), sa, 0); // (i, j, operand dims...)
    t = move_axis(cx, t, 1, ca);                        // j just before the concat axis
    Shape m = t->aval.shape;
    m[ca] *= m[ca + 1];
    m.erase(m.begin() + ca + 1);
    return {reshape(cx, t, m), true};
  }
  default:
    break;
  }
  throw Error(ErrCode::Unsupported,
              std::string(op_name(op)) + " over the vmapped axis '" + ax.name + "'" +
                  (has_rest ? " together with mesh axes" : "") + " is not supported");
}

} // namespace

Tensor broadcast_batch(OpContext& cx, const Tensor& t, int64_t B) {
  OpAttrs a;
  a.shape = t->aval.shape;
  a.shape.insert(a.shape.begin(), B);
  a.axes = range(1, t->aval.ndim() + 1);
  a.numpy_ints = 1; // (JAX's batching.broadcast computes them with numpy)
  return bind(cx, Op::BroadcastInDim, a, {t});
}

BVal batch_op(OpContext& cx, Op op, const OpAttrs& attrs, std::span<const BVal> in,
              const BatchAxis& ax) {
  int64_t B = ax.size;
  bool any = false;
  for (const BVal& v : in) any = any || v.batched;
  bool over_vmap_axis =
      !ax.name.empty() && std::find(attrs.axis_names.begin(), attrs.axis_names.end(), ax.name) !=
                              attrs.axis_names.end();
  if (over_vmap_axis) return batch_vmap_collective(cx, op, attrs, in, ax);
  std::vector<Tensor> ts;
  for (const BVal& v : in) ts.push_back(v.t);
  if (!any) return {cx.bind(op, attrs, ts), false};
  auto all_batched = [&] {
    std::vector<Tensor> out;
    for (const BVal& v : in) out.push_back(materialize(cx, v, B));
    return out;
  };
  OpAttrs a = attrs;
  // A division of batched values by an unbatched divisor: the batch
  // broadcasts the divisor in the op's program, so XLA multiplies by its
  // reciprocal where JAX compiles the batched op alone (np::rewrite_division_here).
  if (op == Op::Div && in[0].batched && !in[1].batched && B > 1) {
    const AVal& d = in[1].t->aval;
    if (is_floating(d.dtype) && !upcast_around_fusion(d.dtype) &&
        np::rewrite_division_here(cx, d.size() == 1))
      return {np::times_reciprocal(cx, in[0].t, in[1].t), true};
  }
  switch (op) {
  // Elementwise: every operand gets the batch dimension.
  case Op::Neg:
  case Op::Exp:
  case Op::Log:
  case Op::Log1p:
  case Op::Expm1:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Tanh:
  case Op::Sin:
  case Op::Cos:
  case Op::Tan:
  case Op::Cbrt:
  case Op::Abs:
  case Op::Sign:
  case Op::Floor:
  case Op::Ceil:
  case Op::Round:
  case Op::IsFinite:
  case Op::Logistic:
  case Op::Erf:
  case Op::ErfInv:
  case Op::Not:
  case Op::IntegerPow:
  case Op::Square:
  case Op::ConvertElementType:
  case Op::BitcastConvertType:
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Rem:
  case Op::Pow:
  case Op::Max:
  case Op::Min:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Atan2:
  case Op::ShiftLeft:
  case Op::ShiftRightLogical:
  case Op::ShiftRightArithmetic:
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
  case Op::Fma:
  case Op::Threefry2x32:
  case Op::Real:
  case Op::Imag:
  case Op::Conj:
  case Op::Complex:
  // Linalg ops treat leading dims as a batch already.
  case Op::Cholesky:
  case Op::TriangularSolve:
  case Op::Lu:
  case Op::Qr:
  case Op::Eigh:
  case Op::Svd:
  case Op::Eig:
  case Op::Schur:
  case Op::Hessenberg:
  case Op::Tridiagonal:
  case Op::HouseholderProduct:
  case Op::Geqrf:
  case Op::Ormqr:
    return {cx.bind(op, attrs, all_batched()), true};
  case Op::ShardingConstraint: // the batch axis (0) is split over spmd_axis_name, else whole
    a.dim_axes.insert(a.dim_axes.begin(), ax.spmd_axis_name);
    return {cx.bind(op, a, all_batched()), true};
  case Op::Fft: // transforms trailing axes: the batch axis (0) is a leading one
    return {bind(cx, op, attrs, {in[0].t}), true};
  case Op::Select: {
    std::vector<Tensor> xs = all_batched();
    // A 0-d predicate that differs per example must take the branches' shape.
    if (in[0].batched && xs[0]->aval.ndim() == 1 && xs[1]->aval.ndim() > 1) {
      OpAttrs pa;
      pa.shape = xs[1]->aval.shape;
      pa.axes = {0};
      xs[0] = bind(cx, Op::BroadcastInDim, pa, {xs[0]});
    } else if (!in[0].batched && in[0].t->aval.ndim() == 0) {
      xs[0] = in[0].t; // a 0-d predicate shared by all examples stays 0-d
    }
    return {cx.bind(op, attrs, xs), true};
  }
  case Op::Iota: // no operands: never batched
    break;
  case Op::BroadcastInDim:
    a.shape.insert(a.shape.begin(), B);
    a.axes = cat({{0}, shifted(attrs.axes)});
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::Reshape:
    a.shape.insert(a.shape.begin(), B);
    a.axes = shifted(attrs.axes); // a squeeze's dropped dimensions
    a.perm = shifted(attrs.perm); // an expand_dims' inserted ones
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::Transpose:
    a.perm = cat({{0}, shifted(attrs.perm)});
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::Slice:
    a.starts.insert(a.starts.begin(), 0);
    a.limits.insert(a.limits.begin(), B);
    if (!a.strides.empty()) a.strides.insert(a.strides.begin(), 1);
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::Rev:
  case Op::ReduceSum:
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceProd:
  case Op::ReduceAnd:
  case Op::ReduceOr:
    a.axes = shifted(attrs.axes);
    if (op != Op::Rev) a.numpy_ints = 1; // (JAX's reducer_batcher shifts the axes with numpy)
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::Argmax:
  case Op::Argmin:
  case Op::Cumsum:
  case Op::Argsort:
    a.axis = attrs.axis + 1;
    if (op == Op::Argmax || op == Op::Argmin) a.numpy_ints = 1;
    if (op != Op::Cumsum && !attrs.axes.empty()) a.axes = shifted(attrs.axes);
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::Concatenate:
    a.axis = attrs.axis + 1;
    return {cx.bind(op, a, all_batched()), true};
  case Op::MulReduceSum:
    a.axes = shifted(attrs.axes);
    return {cx.bind(op, a, all_batched()), true};
  case Op::Pad:
    return batch_pad(cx, attrs, in[0], in[1], B);
  case Op::DotGeneral:
    return batch_dot(cx, attrs, in[0], in[1]);
  case Op::Take:
    return batch_take(cx, attrs, in[0], in[1]);
  case Op::Scatter:
    return batch_scatter(cx, attrs, in, B);
  // Collectives over mesh axes: the batch dimension is data.
  case Op::Psum:
  case Op::Pmax:
  case Op::Pmin:
  case Op::Ppermute:
    return {bind(cx, op, attrs, {in[0].t}), true};
  case Op::AllGather:
  case Op::PsumScatter:
    a.axis = attrs.axis + 1;
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::AllToAll:
    a.axis = attrs.axis + 1;
    a.concat_axis = attrs.concat_axis + 1;
    return {bind(cx, op, a, {in[0].t}), true};
  case Op::AxisIndex: // no operands
    break;
  case Op::DebugPrint: { // one print per example, in order (JAX's batching rule)
    const bool gate_batched = !in.empty() && in.back().batched;
    if (attrs.debug) check_debug_batching(*attrs.debug, gate_batched);
    // In a cond whose predicate is batched every branch runs for every
    // example (JAX's select), and so prints.
    if (auto ungated = attrs.debug && gate_batched ? without_gate(*attrs.debug) : nullptr) {
      a.debug = ungated;
      if (auto* tc = dynamic_cast<TraceContext*>(&cx)) {
        a.axis = static_cast<int64_t>(tc->function().debug_formats.size());
        tc->function().debug_formats.push_back(*ungated);
      }
      in = in.first(in.size() - 1);
    }
    Tensor token;
    for (int64_t i = 0; i < B; ++i) {
      std::vector<Tensor> row;
      for (const BVal& v : in) {
        if (!v.batched) {
          row.push_back(v.t);
          continue;
        }
        OpAttrs s;
        s.starts.assign(v.t->aval.shape.size(), 0);
        s.limits = v.t->aval.shape;
        s.strides.assign(v.t->aval.shape.size(), 1);
        s.starts[0] = i;
        s.limits[0] = i + 1;
        OpAttrs r;
        r.shape.assign(v.t->aval.shape.begin() + 1, v.t->aval.shape.end());
        row.push_back(bind(cx, Op::Reshape, r, {bind(cx, Op::Slice, s, {v.t})}));
      }
      // Each example's print is a statement of its own, so an SPMD run prints
      // example by example, each on every device in turn (JAX's eager order).
      if (auto* tc = dynamic_cast<TraceContext*>(&cx); tc && i > 0) {
        std::vector<DebugFormat>& formats = tc->function().debug_formats;
        if (a.axis >= 0 && static_cast<size_t>(a.axis) < formats.size()) {
          formats.push_back(formats[static_cast<size_t>(a.axis)]);
          a.axis = static_cast<int64_t>(formats.size()) - 1;
        }
      }
      token = cx.bind(op, a, row);
    }
    return {token, false};
  }
  case Op::SpmdCall:     // several results: batch_function maps over it (batch_spmd_call)
  case Op::While:        // likewise (batch_while)
  case Op::CustomCall:   // likewise (batch_custom_call)
  case Op::HostCallback: // likewise (batch_host_callback)
    break;
  }
  return {cx.bind(op, attrs, ts), false};
}

namespace {

// The same layout with the batch dimension in front, unsplit.
SpmdMapping with_batch_dim(SpmdMapping m) {
  m.spec.entries.insert(m.spec.entries.begin(), std::vector<std::string>{});
  if (m.squeeze >= 0) ++m.squeeze;
  return m;
}

} // namespace

bool call_operands(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                   std::vector<Tensor>& ts, std::vector<bool>& batched, std::vector<BVal>& out) {
  bool any = false;
  for (const BVal& a : args) {
    ts.push_back(a.t);
    batched.push_back(a.batched);
    any = any || a.batched;
  }
  if (!any)
    for (Tensor& t : cx.bind_call(attrs, ts)) out.push_back({std::move(t), false});
  return any;
}

// vmap of an SPMD call is an SPMD call of the batched callee: each participant
// batches its own blocks, which carry the batch dimension in front.
std::vector<BVal> batch_spmd_call(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                                  const BatchAxis& ax) {
  const SpmdCallee& c = *attrs.callee;
  if (c.kind == "shard_map" && !ax.spmd_axis_name.empty()) {
    auto uses = [&](const std::vector<SpmdMapping>& ms) {
      for (const SpmdMapping& m : ms)
        for (const std::string& a : m.spec.axes())
          if (std::find(ax.spmd_axis_name.begin(), ax.spmd_axis_name.end(), a) !=
              ax.spmd_axis_name.end())
            return true;
      return false;
    };
    if (uses(c.ins))
      throw Error(ErrCode::Value, "vmap spmd_axis_name cannot appear in shard_map in_specs");
    if (uses(c.outs))
      throw Error(ErrCode::Value, "vmap spmd_axis_name cannot appear in shard_map out_specs");
  }
  // Collectives in the callee over the vmap's named axis (one the call's mesh
  // does not have: a pmap inside vmap(axis_name=...)) reduce over the batch,
  // so such a call is batched even when no operand is.
  BatchAxis inner{ax.size, "", {}};
  const std::vector<std::string>& mesh_axes = c.layout.mesh.axis_names;
  if (!ax.name.empty() && c.fn->axis_bit(ax.name) >= 0 &&
      std::find(mesh_axes.begin(), mesh_axes.end(), ax.name) == mesh_axes.end())
    inner.name = ax.name;
  std::vector<Tensor> ts;
  std::vector<bool> batched;
  std::vector<BVal> out;
  if (inner.name.empty()) {
    if (!call_operands(cx, attrs, args, ts, batched, out)) return out;
  } else {
    for (const BVal& a : args) {
      ts.push_back(a.t);
      batched.push_back(a.batched);
    }
  }
  std::vector<SpmdMapping> ins, outs;
  for (size_t i = 0; i < args.size(); ++i)
    ins.push_back(batched[i] ? with_batch_dim(c.ins[i]) : c.ins[i]);
  for (const SpmdMapping& m : c.outs) outs.push_back(with_batch_dim(m));
  auto body = [&](TraceContext& tc, std::span<const Tensor> params) {
    std::vector<BVal> bparams;
    for (size_t i = 0; i < params.size(); ++i) bparams.push_back({params[i], batched[i]});
    std::vector<Tensor> results;
    for (const BVal& r : batch_function(tc, *c.fn, bparams, {}, inner))
      results.push_back(materialize(tc, r, ax.size));
    return results;
  };
  for (Tensor& t : bind_derived_spmd_call(cx, c, c.fn->name + "_batched", std::move(ins), ts,
                                          std::move(outs), body))
    out.push_back({std::move(t), true});
  return out;
}

std::vector<BVal> batch_function(OpContext& cx, const Function& f, std::span<const BVal> params,
                                 std::span<const Tensor> consts, const BatchAxis& ax,
                                 BatchLanding* landing) {
  std::vector<BVal> batched_consts;
  for (const Tensor& c : consts) batched_consts.push_back({c, false});
  if (landing) landing->start = jaxpr_body_size(cx);
  auto landed = [&] {
    if (landing) landing->after.push_back(jaxpr_body_size(cx));
  };
  std::vector<BVal> env = walk_function<BVal>(
      cx, f, params, batched_consts,
      [&](Op op, const OpAttrs& attrs, const std::vector<BVal>& args, const IRValue& v) {
        try {
          BVal r = batch_op(cx, op, attrs, args, ax);
          landed();
          return r;
        } catch (Error& e) {
          e.set_span_if_missing(v.loc);
          throw;
        }
      },
      [&](const OpAttrs& attrs, const std::vector<BVal>& args, const Instr& in) {
        try {
          std::vector<BVal> r;
          if (in.op == Op::While)
            r = batch_while(cx, attrs, args, ax);
          else if (is_rng_bit_generator_call(attrs))
            r = batch_rng_bit_generator(cx, attrs, args, ax);
          else if (attrs.custom)
            r = batch_custom_call(cx, attrs, args, ax);
          else if (attrs.host)
            r = batch_host_callback(cx, attrs, args, ax);
          else
            r = batch_spmd_call(cx, attrs, args, ax);
          landed();
          return r;
        } catch (Error& e) {
          e.set_span_if_missing(f.values[in.result].loc);
          throw;
        }
      });
  std::vector<BVal> out;
  for (int r : f.results) out.push_back(env[r]);
  if (landing) landing->env = std::move(env);
  return out;
}

} // namespace pxl
