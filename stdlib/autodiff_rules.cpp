// The transpose (VJP) rule of every op, one switch without `default:` so that
// -Wswitch flags an op added to ir/ops.def without a rule. Formulas follow
// JAX's (jax/_src/lax/lax.py) so that results agree to the last bit where
// cheap, e.g. d tanh = (g + g*y) * (1 - y). Rules bind primitives through the
// context, so the backward pass is itself differentiable (grad of grad).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "lang/diag.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/np.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/sharding.hpp"

namespace pxl {

namespace {

// Primitive builders over one context; operands already have equal dtypes.
struct B {
  OpContext& cx;
  Tensor bind(Op op, const OpAttrs& a, std::vector<Tensor> xs) { return cx.bind(op, a, xs); }
  Tensor un(Op op, const Tensor& x) { return bind(op, {}, {x}); }
  Tensor bin(Op op, const Tensor& x, const Tensor& y) { return bind(op, {}, {x, y}); }
  Tensor add(const Tensor& x, const Tensor& y) { return bin(Op::Add, x, y); }
  Tensor sub(const Tensor& x, const Tensor& y) { return bin(Op::Sub, x, y); }
  Tensor mul(const Tensor& x, const Tensor& y) { return bin(Op::Mul, x, y); }
  Tensor div(const Tensor& x, const Tensor& y) { return bin(Op::Div, x, y); }
  Tensor neg(const Tensor& x) { return un(Op::Neg, x); }
  Tensor integer_pow(const Tensor& x, int64_t n) { return np::integer_pow(cx, x, n); }
  Tensor eq(const Tensor& x, const Tensor& y) { return bin(Op::Eq, x, y); }
  Tensor select(const Tensor& p, const Tensor& t, const Tensor& f) {
    return bind(Op::Select, {}, {p, t, f});
  }
  static Scalar value(const Tensor& x, double v) {
    return is_inexact(x->aval.dtype) ? Scalar::of_float(v)
                                     : Scalar::of_int(static_cast<int64_t>(v));
  }
  // A tensor of x's shape and dtype filled with v: JAX's full_like, a
  // broadcast_in_dim in a jaxpr.
  Tensor full(const Tensor& x, double v) { return np::full_like(cx, x, value(x, v)); }
  // JAX's _const(x, v) and _one(x): a scalar of x's dtype, which a binary op
  // takes as a literal operand (pxl broadcasts it; a jaxpr does not show that).
  Tensor lit(const Tensor& x, double v) {
    return np::detail::fill(cx, x->aval.shape, value(x, v), x->aval.dtype, x->aval.weak);
  }
  Tensor zeros(const Tensor& x) { return full(x, 0); }
  Tensor convert(const Tensor& x, DType d, bool weak) {
    OpAttrs a;
    a.dtype = d;
    a.weak = weak;
    return bind(Op::ConvertElementType, a, {x});
  }
  Tensor reshape(const Tensor& x, const Shape& s) {
    if (x->aval.shape == s) return x;
    OpAttrs a;
    a.shape = s;
    return bind(Op::Reshape, a, {x});
  }
  Tensor reduce_sum(const Tensor& x, std::vector<int64_t> axes) {
    if (axes.empty()) return x;
    std::sort(axes.begin(), axes.end());
    OpAttrs a;
    a.axes = std::move(axes);
    return bind(Op::ReduceSum, a, {x});
  }
  Tensor broadcast(const Tensor& x, const Shape& s, std::vector<int64_t> axes,
                   bool numpy_dims = false) {
    if (x->aval.shape == s) return x;
    OpAttrs a;
    a.numpy_ints = numpy_dims ? 1 : 0; // (OpAttrs::numpy_ints)
    a.shape = s;
    a.axes = std::move(axes);
    a.filled = true; // JAX's broadcast_in_dim, shown even of a literal
    return bind(Op::BroadcastInDim, a, {x});
  }
  // x's unit dims stretched to `s` (the same rank): what a jaxpr's binary op
  // does implicitly.
  Tensor stretch(const Tensor& x, const Shape& s) {
    if (x->aval.shape == s) return x;
    OpAttrs a;
    a.shape = s;
    a.axes.resize(s.size());
    std::iota(a.axes.begin(), a.axes.end(), 0);
    return bind(Op::BroadcastInDim, a, {x});
  }
  Tensor transpose(const Tensor& x, std::vector<int64_t> perm) {
    OpAttrs a;
    a.perm = std::move(perm);
    return bind(Op::Transpose, a, {x});
  }
  Tensor collective(Op op, const OpAttrs& base, const Tensor& x) {
    OpAttrs a;
    a.axis_names = base.axis_names;
    a.group_size = base.group_size;
    a.index_groups = base.index_groups;
    a.axis = base.axis;
    a.tiled = base.tiled;
    a.concat_axis = base.concat_axis;
    a.pairs = base.pairs;
    return bind(op, a, {x});
  }
};

std::vector<int64_t> kept_dims(int ndim, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < ndim; ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  return kept;
}

// JAX's _broadcast_in_dim_transpose_rule: the sum over the dims the
// broadcast made (new ones, and those of the operand's unit dims), whose unit
// dims are then put back. `axes`: the result's dim of each operand dim.
Tensor broadcast_transpose(B& b, const Tensor& ct, const Shape& operand,
                           const std::vector<int64_t>& axes) {
  std::vector<int64_t> unit, kept, sum;
  for (size_t k = 0; k < operand.size(); ++k)
    (operand[k] == 1 ? unit.push_back(static_cast<int64_t>(k)) : kept.push_back(axes[k]));
  for (int64_t d = 0; d < ct->aval.ndim(); ++d)
    if (std::find(kept.begin(), kept.end(), d) == kept.end()) sum.push_back(d);
  return np::detail::expand_dims_at(b.cx, b.reduce_sum(ct, sum), unit);
}

// JAX's _unbroadcast: the transpose of a binary op's implicit broadcasting
// of a rank-0 operand, or of an operand of the same rank's unit dims.
Tensor unstretch(B& b, const Tensor& ct, const Shape& operand) {
  std::vector<int64_t> sum;
  for (int64_t d = 0; d < ct->aval.ndim(); ++d)
    if (operand.empty() ||
        operand[static_cast<size_t>(d)] != ct->aval.shape[static_cast<size_t>(d)])
      sum.push_back(d);
  return b.reshape(b.reduce_sum(ct, sum), operand);
}

// The cotangent of broadcast_in_dim's operand. jnp's broadcasting (a
// broadcast pxl binds for a binary op, keeping the operand's dims in order
// and stretching only unit ones) transposes as JAX's: the binary op's
// implicit stretch, then the rank promotion's broadcast_in_dim (to the
// operand's shape with leading unit dims).
Tensor unbroadcast(B& b, const Tensor& ct, const AVal& operand, const OpAttrs& at) {
  const Shape &s = operand.shape, &o = ct->aval.shape;
  const std::vector<int64_t>& axes = at.axes;
  bool stretch = !at.filled && axes.size() == s.size() && s.size() <= o.size();
  for (size_t k = 0; k < s.size() && stretch; ++k)
    stretch = axes[k] == static_cast<int64_t>(o.size() - s.size() + k) &&
              (s[k] == 1 || s[k] == o[static_cast<size_t>(axes[k])]);
  if (!stretch) return broadcast_transpose(b, ct, s, axes);
  if (s.empty() || s.size() == o.size()) return unstretch(b, ct, s);
  Shape promoted(o.size() - s.size(), 1);
  promoted.insert(promoted.end(), s.begin(), s.end());
  return broadcast_transpose(b, unstretch(b, ct, promoted), s, axes);
}

// JAX's _dot_general_transpose_lhs: the cotangent of x in dot_general(x, y).
// Over Explicit mesh axes the product is typed as x is (JAX passes x's
// sharding as its out_sharding), so no ambiguity check refuses it.
Tensor dot_transpose_lhs(B& b, const Tensor& g, const Tensor& x_primal, const Tensor& y,
                         const DotDims& d, bool swap_ans) {
  const AVal& x = x_primal->aval;
  auto remaining = [](int n, const std::vector<int64_t>& c, const std::vector<int64_t>& bt) {
    std::vector<int64_t> r;
    for (int64_t i = 0; i < n; ++i)
      if (std::find(c.begin(), c.end(), i) == c.end() &&
          std::find(bt.begin(), bt.end(), i) == bt.end())
        r.push_back(i);
    return r;
  };
  std::vector<int64_t> x_kept = remaining(x.ndim(), d.lhs_contract, d.lhs_batch);
  std::vector<int64_t> y_kept = remaining(y->aval.ndim(), d.rhs_contract, d.rhs_batch);
  auto range = [](int64_t start, size_t n) {
    std::vector<int64_t> r(n);
    std::iota(r.begin(), r.end(), start);
    return r;
  };
  int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  int64_t nx = static_cast<int64_t>(x_kept.size());
  OpAttrs a;
  a.dot.lhs_batch = range(0, d.lhs_batch.size());
  a.dot.rhs_batch = d.rhs_batch;
  a.dot.lhs_contract = range(swap_ans ? nb : nb + nx, y_kept.size());
  a.dot.rhs_contract = y_kept;
  a.dot.preferred_none = d.preferred_none; // as JAX's transposes pass it on
  a.dot.precision = d.precision;
  // The product's dims are x's batch dims, x's kept dims, then x's contracting
  // dims in the order of y's; transposing by their argsort restores x's order.
  std::vector<size_t> order(d.rhs_contract.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t i, size_t j) { return d.rhs_contract[i] < d.rhs_contract[j]; });
  std::vector<int64_t> dims = d.lhs_batch;
  dims.insert(dims.end(), x_kept.begin(), x_kept.end());
  for (size_t i : order) dims.push_back(d.lhs_contract[i]);
  std::vector<int64_t> perm(dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) { return dims[i] < dims[j]; });
  if (auto typed = explicit_mesh_type(x_primal))
    for (int64_t k : dims) a.dim_axes.push_back((*typed)[static_cast<size_t>(k)]);
  Tensor r = b.bind(Op::DotGeneral, a, {g, y});
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? r : b.transpose(r, perm);
}

DotDims swapped(const DotDims& d) {
  DotDims s = d;
  s.order = DotOrder::Auto;
  std::swap(s.lhs_batch, s.rhs_batch);
  std::swap(s.lhs_contract, s.rhs_contract);
  return s;
}

// x with zeros where the index is out of range (scatter drops those updates).
Tensor mask_dropped(B& b, const Tensor& v, const Tensor& idx, int64_t axis, int64_t dim) {
  Tensor lo = b.bin(Op::Ge, idx, b.full(idx, 0));
  Tensor hi = b.bin(Op::Lt, idx, b.full(idx, static_cast<double>(dim)));
  Tensor ok = b.bin(Op::And, lo, hi);
  std::vector<int64_t> axes(static_cast<size_t>(idx->aval.ndim()));
  std::iota(axes.begin(), axes.end(), axis);
  return b.select(b.broadcast(ok, v->aval.shape, axes), v, b.zeros(v));
}

Tensor take(B& b, const Tensor& x, const Tensor& idx, int64_t axis) {
  OpAttrs a;
  a.axis = axis;
  return b.bind(Op::Take, a, {x, idx});
}

Tensor scatter(B& b, const Tensor& x, const Tensor& idx, const Tensor& upd, int64_t axis,
               ScatterMode mode) {
  OpAttrs a;
  a.axis = axis;
  a.mode = mode;
  return b.bind(Op::Scatter, a, {x, idx, upd});
}

// The product of the sizes of the mesh axes in `axes`.
int64_t axes_size(OpContext& cx, AxisSet axes) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  if (!tc) return 1;
  const Function& f = tc->function();
  int64_t n = 1;
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    if (axes & (AxisSet{1} << i)) n *= f.mesh_sizes[i];
  return n;
}

AxisSet named_axes(OpContext& cx, const OpAttrs& a) {
  auto* tc = dynamic_cast<TraceContext*>(&cx);
  AxisSet s = 0;
  if (!tc) return s;
  for (const auto& n : a.axis_names) {
    int bit = tc->function().axis_bit(n);
    if (bit >= 0) s |= AxisSet{1} << bit;
  }
  return s;
}

// all_gather's transpose under vma typing: the gathered value is invariant, so
// its cotangent is too and each device takes its own block (an operand that is
// itself invariant was copied N times: it takes the sum of the blocks).
Tensor gather_transpose(B& b, const OpAttrs& a, const Tensor& x, const Tensor& ct) {
  Shape s = ct->aval.shape;
  Tensor blocks = ct;
  int64_t axis = a.axis;
  if (a.tiled) {
    s[axis] = a.group_size;
    s.insert(s.begin() + axis + 1, x->aval.shape[axis]);
    blocks = b.reshape(ct, s);
  }
  if ((vma_of(b.cx, x) & named_axes(b.cx, a)) == 0) return b.reduce_sum(blocks, {axis});
  OpAttrs ia;
  ia.axis_names = a.axis_names;
  ia.group_size = a.group_size;
  Tensor rank = b.bind(Op::AxisIndex, ia, {});
  return take(b, blocks, rank, axis);
}

// Batched matrix product over the trailing two dims, with either side transposed.
// Whether every axis `at` names is a vmap's axis_name (the one a vmap trace
// adds to its enclosing trace's axes): there collectives act as in pmap, with
// no vma typing (all_gather transposes to psum_scatter, as JAX's vmap does).
bool vmap_axes_only(OpContext& cx, const OpAttrs& at) {
  if (at.axis_names.empty()) return false;
  std::vector<std::string> vmapped;
  for (auto* tc = dynamic_cast<TraceContext*>(&cx); tc;
       tc = dynamic_cast<TraceContext*>(&tc->outer())) {
    if (tc->what() != "vmap") continue;
    const auto& mine = tc->function().mesh_axes;
    auto* up = dynamic_cast<TraceContext*>(&tc->outer());
    size_t outer_n = up ? up->function().mesh_axes.size() : 0;
    if (mine.size() > outer_n) vmapped.push_back(mine.back());
  }
  for (const std::string& n : at.axis_names)
    if (std::find(vmapped.begin(), vmapped.end(), n) == vmapped.end()) return false;
  return true;
}

Tensor batch_matmul(B& b, const Tensor& x, const Tensor& y, bool tx, bool ty) {
  int64_t nd = x->aval.ndim(), nb = nd - 2;
  OpAttrs a;
  for (int64_t i = 0; i < nb; ++i) a.dot.lhs_batch.push_back(i), a.dot.rhs_batch.push_back(i);
  a.dot.lhs_contract = {tx ? nb : nb + 1};
  a.dot.rhs_contract = {ty ? nb + 1 : nb};
  return b.bind(Op::DotGeneral, a, {x, y});
}

Tensor swap_last(B& b, const Tensor& x) {
  std::vector<int64_t> perm(static_cast<size_t>(x->aval.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return b.transpose(x, perm);
}

// x with the elements outside its (batched) triangle zeroed: the lower one,
// j <= i + k, or the upper one, j >= i + k.
Tensor triangle(B& b, const Tensor& x, bool lower, int64_t k) {
  const Shape& s = x->aval.shape;
  OpAttrs ri, ci;
  ri.dtype = ci.dtype = DType::Int32;
  ri.shape = ci.shape = s;
  ri.axis = static_cast<int64_t>(s.size()) - 2;
  ci.axis = static_cast<int64_t>(s.size()) - 1;
  Tensor rows = b.bind(Op::Iota, ri, {}), cols = b.bind(Op::Iota, ci, {});
  Tensor shifted = b.add(rows, b.full(rows, static_cast<double>(k)));
  Tensor keep = b.bin(lower ? Op::Le : Op::Ge, cols, shifted);
  return b.select(keep, x, b.zeros(x));
}

// triangular_solve's cotangents (JAX's _triangular_solve_transpose_rule for
// b; for a, the transpose of _triangular_solve_jvp_rule_a).
std::vector<Tensor> triangular_solve_vjp(B& b, const OpAttrs& at, std::span<const Tensor> p,
                                         const Tensor& y, const Tensor& g,
                                         const std::vector<bool>& need) {
  const LinalgAttrs& l = at.linalg;
  OpAttrs tr = at;
  tr.linalg.transpose_a = !l.transpose_a;
  Tensor ct_b = b.bind(Op::TriangularSolve, tr, {p[0], g});
  Tensor ct_a;
  if (need[0]) {
    // op(A)'s cotangent: -ct_b y^T (left side) or -y^T ct_b (right side).
    Tensor c =
        l.left_side ? batch_matmul(b, ct_b, y, false, true) : batch_matmul(b, y, ct_b, true, false);
    if (l.transpose_a) c = swap_last(b, c);
    int64_t k = l.unit_diagonal ? (l.lower ? -1 : 1) : 0;
    ct_a = triangle(b, b.neg(c), l.lower, k); // masked after negating, as JAX (zeros stay +0)
  }
  return {ct_a, need[1] ? ct_b : nullptr};
}

// JAX's _fft_transpose_rule. The DFT matrix is symmetric, so FFT and IFFT
// are their own transposes; RFFT's is N times the IRFFT of the conjugated
// cotangent halved where the half spectrum stands for two entries; IRFFT's
// the RFFT of the cotangent scaled by 1/N, doubled where the half spectrum
// stands for two conjugate entries, and conjugated.
Tensor fft_transpose(B& b, const OpAttrs& at, const Tensor& g) {
  int64_t n = at.shape.back();
  if (at.axis < 2) return b.bind(Op::Fft, at, {g});
  // mask[j] = 1 at j = 0 and (n even) at j = n/2, else 2: the half spectrum's
  // entries that stand for two conjugate ones.
  auto half_mask = [&](const Shape& s, double scale) {
    int64_t h = s.back();
    Array mask(DType::Complex64, {h});
    for (int64_t j = 0; j < h; ++j) {
      bool single = j == 0 || (n % 2 == 0 && j == h - 1);
      mask.set(j, Scalar::of_float((single ? 1.0 : 2.0) * scale));
    }
    return b.broadcast(b.cx.constant(std::move(mask)), s, {static_cast<int64_t>(s.size()) - 1});
  };
  double count = 1.0;
  for (int64_t d : at.shape) count *= static_cast<double>(d);
  if (at.axis == 2) { // N * irfft(conj(g) / mask), as JAX 0.10
    OpAttrs ir = at;
    ir.axis = 3;
    Tensor out = b.bind(Op::Fft, ir, {b.div(b.un(Op::Conj, g), half_mask(g->aval.shape, 1.0))});
    return b.mul(b.full(out, count), out);
  }
  OpAttrs r = at;
  r.axis = 2;
  Tensor x = b.bind(Op::Fft, r, {g});
  Tensor m = half_mask(x->aval.shape, 1.0 / count);
  return b.un(Op::Conj, b.mul(m, x));
}

} // namespace

std::vector<Tensor> transpose_rule(OpContext& cx, SpmdMode mode, const Instr& in,
                                   std::span<const Tensor> p, const Tensor& y, const Tensor& g,
                                   const std::vector<bool>& need,
                                   std::vector<std::pair<size_t, Tensor>>& extra) {
  B b{cx};
  // Builds the cotangent of operand k only if it is needed (no matmul for a constant).
  auto when = [&](size_t k, auto&& make) -> Tensor { return need[k] ? make() : nullptr; };
  const OpAttrs& at = in.attrs;
  std::vector<Tensor> out(p.size());
  auto one = [&](Tensor t) {
    out[0] = std::move(t);
    return out;
  };
  switch (in.op) {
  case Op::Neg:
    return one(b.neg(g));
  case Op::Exp:
    return one(b.mul(g, y));
  case Op::Log:
    return one(b.div(g, p[0]));
  case Op::Log1p:
    return one(b.div(g, b.add(p[0], b.lit(p[0], 1))));
  case Op::Expm1:
    return one(b.mul(g, b.add(y, b.lit(y, 1))));
  case Op::Sqrt:
    return one(b.mul(g, b.div(b.lit(p[0], 0.5), y)));
  case Op::Rsqrt:
    return one(b.mul(g, b.mul(b.lit(p[0], -0.5), b.div(y, p[0]))));
  case Op::Tanh: {
    // JAX's jvp (g + g*y) * (1 - y), transposed: t = ct*(1 - y) reaches x
    // twice, as t and as t*y, accumulated one after the other.
    Tensor t = b.mul(g, b.sub(b.lit(p[0], 1), y));
    extra.push_back({0, b.mul(t, y)});
    return one(t);
  }
  case Op::Sin:
    return one(b.mul(g, b.un(Op::Cos, p[0])));
  case Op::Cos: { // JAX's -(g * sin x), transposed: the negation first
    Tensor sin = b.un(Op::Sin, p[0]);
    return one(b.mul(b.neg(g), sin));
  }
  case Op::Tan:
    return one(b.mul(g, b.add(b.lit(p[0], 1), b.un(Op::Square, y))));
  case Op::Cbrt: // JAX's g * (1/3 * y ** -2)
    return one(b.mul(g, b.mul(b.lit(p[0], 1.0 / 3.0), b.integer_pow(y, -2))));
  case Op::Abs:
    if (is_complex(p[0]->aval.dtype)) {
      // JAX: d|x| = real(dx * conj(x) / |x|), with |x| = 0 replaced by 1.
      Tensor safe = b.select(b.eq(y, b.zeros(y)), b.full(y, 1), y);
      Tensor c = b.div(b.un(Op::Conj, p[0]), b.bin(Op::Complex, safe, b.zeros(safe)));
      return one(b.mul(b.bin(Op::Complex, g, b.zeros(g)), c));
    }
    {
      // JAX's select(x >= 0, g, -g) transposed: each case's cotangent, then
      // the negation's, summed.
      Tensor ge = b.bin(Op::Ge, p[0], b.lit(p[0], 0));
      Tensor z = b.full(g, 0);
      Tensor negated = b.select(ge, z, g), kept = b.select(ge, g, z);
      extra.push_back({0, b.neg(negated)});
      return one(kept);
    }
  case Op::Real: // JAX's transposes: real -> complex(t, 0), imag -> complex(0, -t), the
                 // zero a strongly typed array (so the cotangent is never weak)
    return one(b.bin(Op::Complex, g, b.convert(b.zeros(g), g->aval.dtype, false)));
  case Op::Imag:
    return one(b.bin(Op::Complex, b.convert(b.zeros(g), g->aval.dtype, false), b.neg(g)));
  case Op::Conj:
    return one(b.un(Op::Conj, g));
  case Op::ShardingConstraint: { // the cotangent laid out as the value was (JAX's transpose)
    // The cotangent of partial sums is a whole (reduced) value: JAX's to_ct_spec.
    OpAttrs a = at;
    a.unreduced.clear();
    a.concat_axis = 0;
    return one(b.bind(Op::ShardingConstraint, a, {g}));
  }
  case Op::Complex:
    return {when(0, [&] { return b.un(Op::Real, g); }),
            when(1, [&] { return b.un(Op::Imag, b.neg(g)); })};
  case Op::Fft:
    return one(fft_transpose(b, at, g));
  case Op::Logistic:
    return one(b.mul(g, b.mul(y, b.sub(b.lit(y, 1), y))));
  case Op::Erf: {
    Tensor x2 = b.mul(p[0], p[0]);
    Tensor c = b.full(p[0], 2.0 / std::sqrt(std::numbers::pi));
    return one(b.mul(b.mul(c, g), b.un(Op::Exp, b.neg(x2))));
  }
  case Op::ErfInv: {
    // JAX: d erf_inv(x) = sqrt(pi)/2 * exp(erf_inv(x)^2).
    Tensor c = b.full(p[0], std::sqrt(std::numbers::pi) / 2.0);
    return one(b.mul(b.mul(c, g), b.un(Op::Exp, b.mul(y, y))));
  }
  case Op::Sign:
  case Op::Floor:
  case Op::Ceil:
  case Op::Round:
    // Piecewise constant: JAX's JVP is a symbolic zero, so no cotangent flows
    // back (an input reached only through it gets +0, never a -0 product).
    return out;
  case Op::IsFinite:
  case Op::Not:
    return out;
  case Op::Add:
    return {g, g};
  case Op::Sub:
    return {g, b.neg(g)};
  // (A JVP's terms transpose last operand first, as JAX's jaxpr shows them.)
  case Op::Mul: {
    out[1] = when(1, [&] { return b.mul(p[0], g); });
    if (need[0]) {
      OpAttrs a; // jnp.mean's mul by 1/n shows as JAX's div by n
      a.shown_divisor = at.shown_divisor;
      out[0] = b.bind(Op::Mul, a, {g, p[1]});
    }
    return out;
  }
  case Op::Div: {
    // JAX's: integer_pow(y, -2), whose own rule keeps every higher
    // derivative one op (1 / (y * y) squares its denominator per order).
    out[1] = when(1, [&] { return b.neg(b.mul(b.mul(g, b.integer_pow(p[1], -2)), p[0])); });
    out[0] = when(0, [&] { return b.div(g, p[1]); });
    return out;
  }
  case Op::Square:
  case Op::IntegerPow: {
    // JAX's: g * (n * x ** (n - 1)); zero for n = 0, g for 1, g * (2 * x) for 2
    // (and for square).
    int64_t n = in.op == Op::Square ? 2 : at.exponent;
    if (n == 0) return one(b.zeros(p[0]));
    if (n == 1) return one(g);
    if (n == 2) return one(b.mul(g, b.mul(b.lit(p[0], 2.0), p[0])));
    return one(b.mul(g, b.mul(b.lit(p[0], static_cast<double>(n)), b.integer_pow(p[0], n - 1))));
  }
  case Op::Rem: {
    Tensor q = b.div(p[0], p[1]);
    return {g, b.mul(b.neg(g), b.mul(b.un(Op::Sign, q), b.un(Op::Floor, b.un(Op::Abs, q))))};
  }
  case Op::Pow: {
    // JAX's _pow_jvp_lhs: y x^(y-1), with 0 where an integer y is 0.
    const Tensor &x = p[0], &e = p[1];
    Tensor jac_x = b.mul(e, b.bin(Op::Pow, x, b.sub(e, b.full(e, 1))));
    if (at.int_exponent) {
      Tensor e0 = b.eq(e, b.zeros(e));
      Tensor e_nz = b.select(e0, b.full(e, 1), e);
      jac_x = b.select(e0, b.zeros(e), b.mul(e_nz, b.bin(Op::Pow, x, b.sub(e, b.full(e, 1)))));
    }
    Tensor x_nz = b.select(b.eq(x, b.zeros(x)), b.full(x, 1), x);
    return {b.mul(g, jac_x), b.mul(g, b.mul(b.un(Op::Log, x_nz), y))};
  }
  case Op::Max:
  case Op::Min: {
    // JAX's _balanced_eq: a tie splits the cotangent evenly.
    auto balanced = [&](const Tensor& a, const Tensor& c) {
      Tensor num = b.select(b.eq(a, y), b.full(y, 1), b.zeros(y));
      return b.div(num, b.select(b.eq(c, y), b.full(y, 2), b.full(y, 1)));
    };
    Tensor jac_x = balanced(p[0], p[1]), jac_y = balanced(p[1], p[0]);
    out[1] = b.mul(g, jac_y);
    out[0] = b.mul(g, jac_x);
    return out;
  }
  case Op::Atan2: { // JAX's jvps: g * (y / (x^2 + y^2)) and g * (-x / (x^2 + y^2))
    auto den = [&] { return b.add(b.un(Op::Square, p[0]), b.un(Op::Square, p[1])); };
    Tensor jac_x = b.div(p[1], den());
    Tensor jac_y = b.div(b.neg(p[0]), den());
    return {b.mul(g, jac_x), b.mul(g, jac_y)};
  }
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::ShiftLeft:
  case Op::ShiftRightLogical:
  case Op::ShiftRightArithmetic:
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
  case Op::BitcastConvertType:
  case Op::Iota:
  case Op::ReduceAnd:
  case Op::ReduceOr:
  case Op::Argmax:
  case Op::Argmin:
  case Op::Argsort:
  case Op::AxisIndex:
  case Op::DebugPrint:
    return out;          // integer/bool results: nothing to differentiate
  case Op::HostCallback: // several results: backward_pass refuses it
  case Op::SpmdCall:     // several results: backward_pass transposes it (autodiff_spmd.cpp)
  case Op::While:        // no transpose: backward_pass raises JAX's error
  case Op::CustomCall:   // backward_pass asks its rule (custom_derivatives.cpp)
    return out;
  case Op::Fma:
    return {when(0, [&] { return b.mul(g, p[1]); }), when(1, [&] { return b.mul(p[0], g); }), g};
  case Op::MulReduceSum: {
    Tensor gb = b.broadcast(g, p[0]->aval.shape, kept_dims(p[0]->aval.ndim(), at.axes));
    return {when(0, [&] { return b.mul(gb, p[1]); }), when(1, [&] { return b.mul(p[0], gb); })};
  }
  case Op::Threefry2x32:
    return out;      // uint32 bits: not differentiable (JAX's threefry2x32_p has no JVP)
  case Op::Select: { // (JAX's case 0, the false branch, first)
    Tensor z = b.zeros(g);
    out[2] = when(2, [&] { return b.select(p[0], z, g); });
    out[1] = when(1, [&] { return b.select(p[0], g, z); });
    return out;
  }
  case Op::ConvertElementType:
    if (!is_inexact(p[0]->aval.dtype)) return out;
    return one(b.convert(g, p[0]->aval.dtype, p[0]->aval.weak));
  case Op::BroadcastInDim:
    return one(unbroadcast(b, g, p[0]->aval, at));
  case Op::Reshape:
    if (!at.axes.empty()) // a squeeze (JAX's squeeze transposes to expand_dims)
      return one(np::detail::expand_dims_at(cx, g, at.axes));
    if (!at.perm.empty()) { // an expand_dims (JAX's broadcast_in_dim)
      std::vector<int64_t> kept;
      for (int64_t d = 0; d < g->aval.ndim(); ++d)
        if (std::find(at.perm.begin(), at.perm.end(), d) == at.perm.end()) kept.push_back(d);
      return one(broadcast_transpose(b, g, p[0]->aval.shape, kept));
    }
    return one(b.reshape(g, p[0]->aval.shape));
  case Op::Transpose: {
    std::vector<int64_t> inv(at.perm.size());
    for (size_t i = 0; i < at.perm.size(); ++i) inv[at.perm[i]] = static_cast<int64_t>(i);
    return one(b.transpose(g, inv));
  }
  case Op::Slice: {
    const Shape& s = p[0]->aval.shape;
    if (g->aval.size() == 0) return one(b.zeros(p[0]));
    OpAttrs a;
    // (JAX's rule computes hi, and a strided slice's interior, with numpy.)
    bool unit =
        std::all_of(at.strides.begin(), at.strides.end(), [](int64_t st) { return st == 1; });
    a.numpy_ints = unit ? 2 : 6;
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t n = g->aval.shape[i], st = at.strides[i];
      a.lo.push_back(at.starts[i]);
      a.interior.push_back(st - 1);
      a.hi.push_back(s[i] - (at.starts[i] + (n - 1) * st + 1));
    }
    return one(b.bind(Op::Pad, a, {g, np::scalar(cx, Scalar::of_int(0), g->aval.dtype, false)}));
  }
  case Op::Rev:
    return one(b.bind(Op::Rev, at, {g}));
  case Op::Concatenate: {
    int64_t off = 0;
    for (size_t k = 0; k < p.size(); ++k) {
      const Shape& s = p[k]->aval.shape;
      OpAttrs a;
      a.starts.assign(s.size(), 0);
      a.limits = g->aval.shape;
      a.strides.assign(s.size(), 1);
      a.starts[at.axis] = off;
      a.limits[at.axis] = off + s[at.axis];
      off += s[at.axis];
      if (need[k]) out[k] = b.bind(Op::Slice, a, {g});
    }
    return out;
  }
  case Op::Pad: {
    // JAX: un-pad (negated lo/hi), then take every (interior+1)-th element.
    OpAttrs un; // (its config and the slice's starts and strides numpy's, as JAX's)
    un.numpy_ints = 7;
    for (size_t i = 0; i < at.lo.size(); ++i) {
      un.lo.push_back(-at.lo[i]);
      un.hi.push_back(-at.hi[i]);
      un.interior.push_back(0);
    }
    Tensor unpadded = b.bind(Op::Pad, un, {g, b.zeros(p[1])});
    OpAttrs sl;
    sl.numpy_ints = 5;
    sl.starts.assign(at.lo.size(), 0);
    sl.limits = unpadded->aval.shape;
    for (int64_t i : at.interior) sl.strides.push_back(i + 1);
    Tensor gx = b.bind(Op::Slice, sl, {unpadded});
    std::vector<int64_t> all(static_cast<size_t>(g->aval.ndim()));
    std::iota(all.begin(), all.end(), 0);
    Tensor gv = b.sub(b.reduce_sum(g, all), b.reduce_sum(gx, all));
    return {gx, gv};
  }
  case Op::ReduceSum:
    return one(b.broadcast(g, p[0]->aval.shape, kept_dims(p[0]->aval.ndim(), at.axes), true));
  case Op::ReduceMax:
  case Op::ReduceMin: {
    // JAX's _reduce_chooser: the cotangent is shared by the locations of the extremum.
    const Shape& s = p[0]->aval.shape;
    std::vector<int64_t> kept = kept_dims(p[0]->aval.ndim(), at.axes);
    Shape unit = s; // the extremum with the reduced dims kept (JAX's reshape)
    for (int64_t d : at.axes) unit[static_cast<size_t>(d)] = 1;
    Tensor where = b.convert(b.eq(p[0], b.stretch(b.reshape(y, unit), s)), g->aval.dtype, false);
    Tensor counts = b.reduce_sum(where, at.axes);
    return one(b.mul(b.broadcast(b.div(g, counts), s, kept), where));
  }
  case Op::ReduceProd: {
    // d prod / d x_i = prod of the others, exact when some x are zero.
    const Tensor& x = p[0];
    const Shape& s = x->aval.shape;
    std::vector<int64_t> kept = kept_dims(x->aval.ndim(), at.axes);
    Tensor is0 = b.eq(x, b.zeros(x));
    Tensor nz_prod = b.bind(Op::ReduceProd, at, {b.select(is0, b.full(x, 1), x)});
    Tensor zeros = b.reduce_sum(b.convert(is0, x->aval.dtype, false), at.axes);
    Tensor nz = b.broadcast(zeros, s, kept);
    Tensor x_safe = b.select(is0, b.full(x, 1), x);
    Tensor d_none = b.div(b.broadcast(y, s, kept), x_safe);
    Tensor d_one = b.select(is0, b.broadcast(nz_prod, s, kept), b.zeros(x));
    Tensor d = b.select(b.eq(nz, b.zeros(nz)), d_none,
                        b.select(b.eq(nz, b.full(nz, 1)), d_one, b.zeros(x)));
    return one(b.mul(b.broadcast(g, s, kept), d));
  }
  case Op::Cumsum: {
    OpAttrs a = at;
    a.reverse = !at.reverse;
    return one(b.bind(Op::Cumsum, a, {g}));
  }
  case Op::DotGeneral: {
    // The right operand's cotangent first, as JAX's backward pass reaches
    // the two linear terms of the product's jvp in reverse.
    Tensor gy = when(1, [&] { return dot_transpose_lhs(b, g, p[1], p[0], swapped(at.dot), true); });
    Tensor gx = when(0, [&] { return dot_transpose_lhs(b, g, p[0], p[1], at.dot, false); });
    return {gx, gy};
  }
  case Op::TriangularSolve:
    return triangular_solve_vjp(b, at, p, y, g, need);
  case Op::Cholesky:
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
    // The factorizations are differentiated by the jvp rules of their
    // jax.lax.linalg wrappers (stdlib/linalg_lax.pxl, custom_jvp), which are
    // always what records them.
    if (!is_floating(y->aval.dtype)) return out;
    throw Error(ErrCode::Unsupported,
                std::string("differentiating the raw ") + op_name(in.op) +
                    " primitive is not supported (call it through jax.lax.linalg)");
  case Op::Take: {
    // take clamps its indices; the transpose adds into the clamped positions.
    const Tensor& idx = p[1];
    int64_t dim = p[0]->aval.shape[at.axis];
    Tensor ci = b.bin(Op::Min, b.bin(Op::Max, idx, b.zeros(idx)),
                      b.full(idx, static_cast<double>(dim - 1)));
    return {scatter(b, b.zeros(p[0]), ci, g, at.axis, ScatterMode::Add), nullptr};
  }
  case Op::Scatter: {
    const Tensor &x = p[0], &idx = p[1], &upd = p[2];
    int64_t dim = x->aval.shape[at.axis];
    auto taken = [&](const Tensor& v) {
      return mask_dropped(b, take(b, v, idx, at.axis), idx, at.axis, dim);
    };
    switch (at.mode) {
    case ScatterMode::Set:
      return {scatter(b, g, idx, b.zeros(upd), at.axis, ScatterMode::Set), nullptr, taken(g)};
    case ScatterMode::Add:
      return {g, nullptr, taken(g)};
    case ScatterMode::Mul: {
      // An update alone at its position gets g * x there (JAX's rule, which
      // needs unique indices, and is exact when the update is 0); updates
      // sharing a position get g * y / update (the product of the others).
      // (The unused branch divides by 1, so its transpose, in jvp, is finite.)
      Tensor one = b.full(upd, 1);
      Tensor refs =
          take(b, scatter(b, b.zeros(x), idx, one, at.axis, ScatterMode::Add), idx, at.axis);
      Tensor alone = b.eq(refs, one);
      return {scatter(b, g, idx, upd, at.axis, ScatterMode::Mul), nullptr,
              b.select(alone, taken(b.mul(g, x)),
                       b.div(taken(b.mul(g, y)), b.select(alone, one, upd)))};
    }
    case ScatterMode::Min:
    case ScatterMode::Max: {
      // The transpose of JAX's _scatter_extremal_jvp: the updates that win a
      // position and the operand, when it keeps its value, share its
      // cotangent evenly (1 / (winners + 1) with the operand, else 1 / winners).
      Tensor ty = take(b, y, idx, at.axis);
      Tensor won = b.eq(upd, ty);
      Tensor kept = b.eq(take(b, x, idx, at.axis), ty);
      Tensor one = b.full(upd, 1);
      auto count = [&](const Tensor& v) {
        return take(b, scatter(b, b.zeros(x), idx, v, at.axis, ScatterMode::Add), idx, at.axis);
      };
      Tensor n_won = count(b.select(won, one, b.zeros(upd)));
      Tensor n_refs = count(one);
      Tensor shared = b.div(one, b.add(n_won, one));
      Tensor upd_coef = b.select(won, b.select(kept, shared, b.div(one, n_won)), b.zeros(upd));
      Tensor op_coef = b.div(b.add(b.full(upd, -1), b.select(kept, shared, b.zeros(upd))), n_refs);
      Tensor gt = mask_dropped(b, take(b, g, idx, at.axis), idx, at.axis, dim);
      return {b.add(g, scatter(b, b.zeros(x), idx, b.mul(gt, op_coef), at.axis, ScatterMode::Add)),
              nullptr, b.mul(gt, upd_coef)};
    }
    }
    return out;
  }
  case Op::Psum: {
    if (mode == SpmdMode::Pmap) return one(b.collective(Op::Psum, at, g));
    // A replicated operand was counted once per device of the invariant axes.
    int64_t n = axes_size(cx, named_axes(cx, at) & ~vma_of(cx, p[0]));
    return one(n == 1 ? g : b.mul(g, b.full(g, static_cast<double>(n))));
  }
  case Op::Pmax:
  case Op::Pmin: // JAX has no derivative for them, over any axis: its NotImplementedError
    throw Error(ErrCode::Unsupported, std::string("Differentiation rule for '") +
                                          (in.op == Op::Pmax ? "pmax" : "pmin") +
                                          "' not implemented");
  case Op::AllGather:
    if (mode == SpmdMode::Pmap || vmap_axes_only(cx, at))
      return one(b.collective(Op::PsumScatter, at, g));
    return one(gather_transpose(b, at, p[0], g));
  case Op::PsumScatter:
    return one(b.collective(Op::AllGather, at, g));
  case Op::Ppermute: {
    OpAttrs a = at;
    for (auto& [s, d] : a.pairs) std::swap(s, d);
    return one(b.collective(Op::Ppermute, a, g));
  }
  case Op::AllToAll: {
    OpAttrs a = at;
    std::swap(a.axis, a.concat_axis);
    return one(b.collective(Op::AllToAll, a, g));
  }
  }
  return out;
}

} // namespace pxl
