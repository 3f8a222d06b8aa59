#include "ir/simplify.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "ir/constant_of.hpp"
#include "ir/ref_reduce_ynn.hpp"
#include "ir/ref_util.hpp"
#include "ir/vma.hpp"
#include "lang/diag.hpp"

namespace pxl {

namespace {

bool simplifiable(DType d) { return d == DType::Float32 || d == DType::Float64; }

// Ops XLA's constant folder evaluates when all their operands are constants.
bool foldable(Op op) {
  return is_elementwise(op) || op == Op::BroadcastInDim || op == Op::Reshape || op == Op::Transpose;
}

// One pass of the rewrites over a Function; run() repeats it to a fixed point.
class Simplifier {
public:
  Simplifier(const Function& f, std::span<const Array> consts, std::vector<Array>* added)
      : cur_(f), added_(added) {
    const_values_.assign(consts.begin(), consts.end());
    const_values_.resize(f.consts.size());
  }

  std::shared_ptr<const Function> run() {
    // Dead instructions (a trace leaves some) must not count as uses.
    size_t before = cur_.body.size();
    remove_dead_code(cur_);
    bool any = cur_.body.size() != before;
    // JAX lowers square to multiply(x, x): XLA's rules (and its use counts)
    // see that multiply. (A complex square is its own formula, cplx::square.)
    for (Instr& i : cur_.body)
      if (i.op == Op::Square &&
          !is_complex(cur_.values[static_cast<size_t>(i.result)].aval.dtype)) {
        i.op = Op::Mul;
        i.operands = {i.operands[0], i.operands[0]};
        any = true;
      }
    // (XLA's fixed point; a rewrite never undoes another, so few rounds do.)
    for (int round = 0; round < 16 && one_round(); ++round) any = true;
    if (!any) return nullptr;
    return std::make_shared<Function>(std::move(cur_));
  }

private:
  bool one_round() {
    const Function in = cur_;
    uses_.assign(in.values.size(), 0);
    for (const Instr& i : in.body)
      for (int o : i.operands) ++uses_[static_cast<size_t>(o)];
    for (int r : in.results) ++uses_[static_cast<size_t>(r)];
    out_ = in;
    out_.body.clear();
    subst_.assign(in.values.size(), -1);
    const_.assign(in.values.size(), false);
    for (int c : in.consts) const_[static_cast<size_t>(c)] = true;
    for (IRValue& v : out_.values) v.producer = -1;
    constants_.clear();
    changed_ = false;
    for (const Instr& i : in.body) process(i);
    for (int& r : out_.results) r = resolve(r);
    if (!changed_) return false;
    remove_dead_code(out_);
    cur_ = std::move(out_);
    return true;
  }

  int resolve(int v) const {
    while (static_cast<size_t>(v) < subst_.size() && subst_[static_cast<size_t>(v)] >= 0)
      v = subst_[static_cast<size_t>(v)];
    return v;
  }

  // (A copy: emitting grows the value table.)
  AVal aval(int v) const { return out_.values[static_cast<size_t>(v)].aval; }

  // The instruction defining `v` in the rewritten body, or null.
  const Instr* def(int v) const {
    int p = out_.values[static_cast<size_t>(v)].producer;
    return p < 0 ? nullptr : &out_.body[static_cast<size_t>(p)];
  }

  // `v` with converts that only change the weak type skipped (XLA has no
  // weak types: they are no ops there).
  int look(int v) const {
    for (const Instr* p = def(v);
         p && p->op == Op::ConvertElementType && aval(p->operands[0]).dtype == aval(v).dtype;
         p = def(v))
      v = p->operands[0];
    return v;
  }

  // The defining instruction of `v` (seen through weak-type converts) when it
  // is `op`: a copy, as emitting grows the body it lives in.
  std::optional<Instr> is(int v, Op op) const {
    const Instr* p = def(look(v));
    if (!p || p->op != op) return std::nullopt;
    return *p;
  }

  bool one_use(int v) const {
    return static_cast<size_t>(v) < uses_.size() && uses_[static_cast<size_t>(v)] == 1;
  }
  bool is_const(int v) const { return const_[static_cast<size_t>(look(v))]; }

  // A scalar constant `v` is, or is a broadcast of: that scalar, else -1.
  int scalar_const(int v) const {
    v = look(v);
    if (!const_[static_cast<size_t>(v)]) return -1;
    if (aval(v).ndim() == 0) return v;
    const Instr* p = def(v);
    if (p && p->op == Op::BroadcastInDim && aval(p->operands[0]).ndim() == 0) return p->operands[0];
    return -1;
  }
  // A constant that is no broadcast of a scalar (XLA's literal), of `v`'s shape.
  bool plain_const(int v) const { return is_const(v) && scalar_const(v) < 0; }

  // The one value all elements of constant `v` hold, when known.
  std::optional<double> uniform(int v) const {
    int k = constant_of(out_, look(v));
    if (k < 0 || static_cast<size_t>(k) >= const_values_.size()) return std::nullopt;
    const Array& c = const_values_[static_cast<size_t>(k)];
    if (!c.defined() || c.size() == 0 || !is_floating(c.dtype())) return std::nullopt;
    double x = c.get_f64(0);
    for (int64_t i = 1; i < c.size(); ++i)
      if (!(c.get_f64(i) == x)) return std::nullopt;
    return x;
  }
  bool is_all(int v, double x) const {
    std::optional<double> u = uniform(v);
    return u && *u == x;
  }

  // Appends `op` (its type by the shape rule, its location that of `like`).
  int emit(Op op, const OpAttrs& attrs, std::vector<int> operands, int like) {
    std::vector<AVal> avals;
    std::vector<AxisSet> vmas;
    bool all_const = foldable(op);
    for (int o : operands) {
      avals.push_back(aval(o));
      vmas.push_back(out_.values[static_cast<size_t>(o)].vma);
      all_const = all_const && const_[static_cast<size_t>(o)];
    }
    IRValue v;
    v.aval = infer(op, attrs, avals);
    v.vma = infer_vma(op, vmas, 0);
    v.loc = out_.values[static_cast<size_t>(like)].loc;
    v.producer = static_cast<int>(out_.body.size());
    int id = out_.add_value(std::move(v));
    out_.body.push_back(Instr{op, attrs, std::move(operands), id});
    const_.push_back(all_const);
    subst_.push_back(-1);
    return id;
  }
  int unary(Op op, int a, int like) { return emit(op, {}, {a}, like); }
  int binary(Op op, int a, int b, int like) { return emit(op, {}, {a, b}, like); }

  // A new scalar constant of dtype `d` (-1 when constants cannot be added).
  int constant(double x, DType d) {
    if (!added_) return -1;
    auto key = std::make_pair(x, d);
    if (auto it = constants_.find(key); it != constants_.end()) return it->second;
    Array a = Array::scalar(Scalar::of_float(x), d);
    IRValue v;
    v.aval = AVal{d, {}, false};
    int id = out_.add_value(std::move(v));
    out_.consts.push_back(id);
    const_.push_back(true);
    subst_.push_back(-1);
    const_values_.push_back(a);
    added_->push_back(std::move(a));
    constants_[key] = id;
    return id;
  }

  // Scalar `s` broadcast to `shape` (itself when `shape` is rank 0).
  int broadcast(int s, Shape shape, int like) {
    if (shape.empty()) return s;
    OpAttrs at;
    at.shape = shape;
    return emit(Op::BroadcastInDim, at, {s}, like);
  }
  // The constant `x` shaped as `like`, or -1.
  int filled(double x, int like) {
    int c = constant(x, aval(like).dtype);
    return c < 0 ? -1 : broadcast(c, aval(like).shape, like);
  }

  // c1 `op` c2 for two constants of the result's shape: on the scalars when
  // both are broadcasts of one, elementwise when neither is; else -1.
  int fold(Op op, int c1, int c2, int like) {
    int s1 = scalar_const(c1), s2 = scalar_const(c2);
    if (s1 >= 0 && s2 >= 0) return broadcast(binary(op, s1, s2, like), aval(like).shape, like);
    if (plain_const(c1) && plain_const(c2) && aval(c1).shape == aval(c2).shape &&
        aval(c1).shape == aval(like).shape)
      return binary(op, look(c1), look(c2), like);
    return -1;
  }
  bool foldable_pair(int c1, int c2, int like) const {
    Shape shape = aval(like).shape;
    return (scalar_const(c1) >= 0 && scalar_const(c2) >= 0) ||
           (plain_const(c1) && plain_const(c2) && aval(c1).shape == shape &&
            aval(c2).shape == shape);
  }
  // -c for a constant: on its scalar when it is a broadcast of one.
  int negated(int c, int like) {
    int s = scalar_const(c);
    if (s >= 0) return broadcast(unary(Op::Neg, s, like), aval(like).shape, like);
    return unary(Op::Neg, look(c), like);
  }

  // ---- the handlers; each returns the value replacing `in`, or -1 ----

  // A negation taken out of a product or quotient: -a * -b -> a * b,
  // a * -b and -a * b -> -(a * b), alike for a division (LLVM's InstCombine
  // under XLA's fused loops; the product is then shared with an equal one,
  // so x * y + x * -y is exactly 0, as in JAX's jit).
  int hoist_negation(Op op, int a, int b, int r) {
    auto na = is(a, Op::Neg), nb = is(b, Op::Neg);
    if (na && nb) return binary(op, na->operands[0], nb->operands[0], r);
    if (na) return unary(Op::Neg, binary(op, na->operands[0], b, r), r);
    if (nb) return unary(Op::Neg, binary(op, a, nb->operands[0], r), r);
    return -1;
  }

  int multiply(const Instr& in) {
    int a = in.operands[0], b = in.operands[1], r = in.result;
    if (is_all(b, 1.0)) return a;
    if (is_all(a, 1.0)) return b;
    if (int h = hoist_negation(Op::Mul, a, b, r); h >= 0) return h;
    // (a * c1) * c2 -> a * (c1 * c2), any operand order.
    for (auto [x, c2] : {std::pair{a, b}, std::pair{b, a}}) {
      if (!is_const(c2)) continue;
      if (auto m = is(x, Op::Mul))
        for (auto [y, c1] :
             {std::pair{m->operands[0], m->operands[1]}, std::pair{m->operands[1], m->operands[0]}})
          if (!is_const(y) && is_const(c1) && foldable_pair(c1, c2, r))
            return binary(Op::Mul, y, fold(Op::Mul, c1, c2, r), r);
    }
    // (x * c1) * (y * c2) -> (x * y) * (c1 * c2) for one element (XLA folds
    // the constants' broadcasts to that shape into constants, which its rule
    // needs; larger broadcasts stay broadcasts).
    if (aval(r).size() == 1)
      if (auto m1 = is(a, Op::Mul))
        if (auto m2 = is(b, Op::Mul)) {
          int x = m1->operands[0], c1 = m1->operands[1], y = m2->operands[0], c2 = m2->operands[1];
          if (is_const(x)) std::swap(x, c1);
          if (is_const(y)) std::swap(y, c2);
          if (!is_const(x) && !is_const(y) && is_const(c1) && is_const(c2))
            return binary(Op::Mul, binary(Op::Mul, x, y, r), fold(Op::Mul, c1, c2, r), r);
        }
    // (a * c) * broadcast(b) -> a * broadcast(b * c), c a scalar constant.
    for (auto [x, bb] : {std::pair{a, b}, std::pair{b, a}}) {
      auto m = is(x, Op::Mul);
      auto bc = is(bb, Op::BroadcastInDim);
      if (!m || !bc || is_const(bc->operands[0])) continue;
      for (auto [y, c] :
           {std::pair{m->operands[0], m->operands[1]}, std::pair{m->operands[1], m->operands[0]}}) {
        int s = scalar_const(c);
        if (is_const(y) || s < 0) continue;
        int b0 = bc->operands[0];
        int scaled = binary(Op::Mul, b0, broadcast(s, aval(b0).shape, b0), b0);
        return binary(Op::Mul, y, emit(Op::BroadcastInDim, bc->attrs, {scaled}, r), r);
      }
    }
    if (auto e1 = is(a, Op::Exp))
      if (auto e2 = is(b, Op::Exp))
        return unary(Op::Exp, binary(Op::Add, e1->operands[0], e2->operands[0], r), r);
    // convert(pred) * x -> select(pred, x, 0)
    for (auto [m, x] : {std::pair{a, b}, std::pair{b, a}}) {
      std::optional<Instr> cv = is(m, Op::ConvertElementType);
      if (!cv || aval(cv->operands[0]).dtype != DType::Bool) continue;
      int zero = filled(0.0, r);
      if (zero >= 0) return emit(Op::Select, {}, {cv->operands[0], x, zero}, r);
    }
    return -1;
  }

  int add(const Instr& in) {
    int a = in.operands[0], b = in.operands[1], r = in.result;
    if (is_all(b, 0.0)) return a;
    if (is_all(a, 0.0)) return b;
    for (auto [x, c2] : {std::pair{a, b}, std::pair{b, a}}) {
      if (!is_const(c2)) continue;
      // (a + c1) + c2 -> a + (c1 + c2)
      if (auto s = is(x, Op::Add))
        for (auto [y, c1] :
             {std::pair{s->operands[0], s->operands[1]}, std::pair{s->operands[1], s->operands[0]}})
          if (!is_const(y) && is_const(c1) && foldable_pair(c1, c2, r))
            return binary(Op::Add, y, fold(Op::Add, c1, c2, r), r);
      // (c1 - a) + c2 -> (c1 + c2) - a
      if (auto s = is(x, Op::Sub)) {
        int c1 = s->operands[0], y = s->operands[1];
        if (!is_const(y) && is_const(c1) && foldable_pair(c1, c2, r))
          return binary(Op::Sub, fold(Op::Add, c1, c2, r), y, r);
      }
    }
    return -1;
  }

  int subtract(const Instr& in) {
    int a = in.operands[0], b = in.operands[1], r = in.result;
    if (is_all(b, 0.0)) return a;
    // a - c -> a + (-c): the constant then folds into a sum around it.
    if (!is_const(a) && is_const(b) && foldable_pair(b, b, r))
      return binary(Op::Add, a, negated(b, r), r);
    return -1;
  }

  // Whether broadcast `bc` stretches an operand axis of size 1.
  bool widens_unit_axis(const Instr& bc) const {
    const Shape& from = aval(bc.operands[0]).shape;
    for (size_t i = 0; i < from.size() && i < bc.attrs.axes.size(); ++i)
      if (from[i] == 1 && bc.attrs.shape[static_cast<size_t>(bc.attrs.axes[i])] != 1) return true;
    return false;
  }

  // a / c -> a * (1 / c), for a constant c (XLA's InvertConstant).
  int divide_by_constant(int a, int b, int r) {
    if (is_const(a) || !is_const(b) || !foldable_pair(b, b, r)) return -1;
    int s = scalar_const(b), one = constant(1.0, aval(r).dtype);
    if (one < 0) return -1;
    int inv = s >= 0 ? broadcast(binary(Op::Div, one, s, r), aval(r).shape, r)
                     : binary(Op::Div, broadcast(one, aval(r).shape, r), look(b), r);
    return binary(Op::Mul, a, inv, r);
  }

  int divide(const Instr& in) {
    int a = in.operands[0], b = in.operands[1], r = in.result;
    // (Complex divisions only by a constant: XLA expands complex exp, sqrt
    // and pow before its simplifier, and keeps a / broadcast(b).)
    if (is_complex(aval(r).dtype)) return divide_by_constant(a, b, r);
    if (is_all(b, 1.0)) return a;
    if (int h = hoist_negation(Op::Div, a, b, r); h >= 0) return h;
    auto e2 = is(b, Op::Exp);
    if (e2) {
      if (auto e1 = is(a, Op::Exp))
        return unary(Op::Exp, binary(Op::Sub, e1->operands[0], e2->operands[0], r), r);
      return binary(Op::Mul, a, unary(Op::Exp, unary(Op::Neg, e2->operands[0], r), r), r);
    }
    if (auto p = is(b, Op::Pow))
      return binary(Op::Mul, a,
                    binary(Op::Pow, p->operands[0], unary(Op::Neg, p->operands[1], r), r), r);
    for (auto [root, inverse] : {std::pair{Op::Sqrt, Op::Rsqrt}, std::pair{Op::Rsqrt, Op::Sqrt}})
      if (auto p = is(b, root); p && one_use(look(b)))
        return binary(Op::Mul, a, unary(inverse, p->operands[0], r), r);
    if (int by = divide_by_constant(a, b, r); by >= 0) return by;
    // a / broadcast(b) -> a * broadcast(1 / b); a scalar b only when nothing
    // else uses it (measured: XLA keeps x / s exact when s is also used). A
    // broadcast that widens a size-1 axis is XLA's reshape to a scalar of its
    // own, then a broadcast: that scalar has no other use.
    if (auto bc = is(b, Op::BroadcastInDim);
        bc &&
        (aval(bc->operands[0]).size() > 1 || one_use(bc->operands[0]) || widens_unit_axis(*bc))) {
      int b0 = bc->operands[0], one = filled(1.0, b0);
      if (one < 0) return -1;
      int inv = binary(Op::Div, one, b0, b0);
      return binary(Op::Mul, a, emit(Op::BroadcastInDim, bc->attrs, {inv}, r), r);
    }
    auto da = is(a, Op::Div);
    auto db = is(b, Op::Div);
    if (da && db) // (a / b) / (c / d) -> (a * d) / (b * c)
      return binary(Op::Div, binary(Op::Mul, da->operands[0], db->operands[1], r),
                    binary(Op::Mul, da->operands[1], db->operands[0], r), r);
    if (da) // (a / b) / c -> a / (b * c)
      return binary(Op::Div, da->operands[0], binary(Op::Mul, da->operands[1], b, r), r);
    if (db) // a / (b / c) -> (a * c) / b
      return binary(Op::Div, binary(Op::Mul, a, db->operands[1], r), db->operands[0], r);
    return -1;
  }

  int power(const Instr& in) {
    int a = in.operands[0], b = in.operands[1], r = in.result;
    std::optional<double> y = uniform(b);
    if (y && *y == 0) return filled(1.0, r);
    if (y && *y == 1) return a;
    if (auto e = is(a, Op::Exp)) return unary(Op::Exp, binary(Op::Mul, e->operands[0], b, r), r);
    if (y && *y == 2) return binary(Op::Mul, a, a, r);
    if (y && *y == 3) return binary(Op::Mul, a, binary(Op::Mul, a, a, r), r);
    if (y && *y == -1) {
      int one = filled(1.0, r);
      return one < 0 ? -1 : binary(Op::Div, one, a, r);
    }
    // (LLVM's, as it compiles XLA's pow by a constant: a square root, with
    // pow's values at -0 and -inf.)
    if (y && *y == 0.5) {
      int inf = filled(INFINITY, r), minus_inf = filled(-INFINITY, r);
      if (inf < 0) return -1;
      int root = unary(Op::Abs, unary(Op::Sqrt, a, r), r);
      return emit(Op::Select, {}, {binary(Op::Eq, a, minus_inf, r), inf, root}, r);
    }
    return -1;
  }

  int log(const Instr& in) {
    int a = in.operands[0], r = in.result;
    if (auto e = is(a, Op::Exp)) return e->operands[0];
    for (auto [root, half] : {std::pair{Op::Sqrt, 0.5}, std::pair{Op::Rsqrt, -0.5}})
      if (auto p = is(a, root)) {
        int h = filled(half, r);
        if (h >= 0) return binary(Op::Mul, unary(Op::Log, p->operands[0], r), h, r);
      }
    if (auto p = is(a, Op::Pow)) {
      int x = p->operands[0], y = p->operands[1], zero = filled(0.0, r);
      if (zero < 0) return -1;
      int logs = binary(Op::Mul, unary(Op::Log, unary(Op::Abs, x, r), r), y, r);
      return emit(Op::Select, {}, {binary(Op::Eq, y, zero, r), zero, logs}, r);
    }
    return -1;
  }

  // Whether `v` is never negative by how it is made (XLA's IsNonNegative):
  // a square, an abs, a constant >= 0, a maximum with such a value, a select
  // of two, a broadcast of one.
  bool non_negative(int v, int depth = 0) const {
    if (std::optional<double> c = uniform(v)) return *c >= 0; // a constant
    const Instr* p = def(look(v));
    if (!p || depth > 8) return false;
    switch (p->op) {
    case Op::Mul:
      return p->operands[0] == p->operands[1];
    case Op::Abs:
      return true;
    case Op::BroadcastInDim:
      return non_negative(p->operands[0], depth + 1);
    case Op::Max:
      return non_negative(p->operands[0], depth + 1) || non_negative(p->operands[1], depth + 1);
    case Op::Select:
      return non_negative(p->operands[1], depth + 1) && non_negative(p->operands[2], depth + 1);
    default:
      return false;
    }
  }

  int square_root(const Instr& in) {
    auto m = is(in.operands[0], Op::Mul);
    if (m && m->operands[0] == m->operands[1]) return unary(Op::Abs, m->operands[0], in.result);
    return -1;
  }

  // sum(broadcast(x)) over only axes the broadcast added -> broadcast(x * n),
  // n the number of terms (XLA's; a sum of n copies would round n times).
  int sum_of_broadcast(const Instr& in) {
    auto bc = is(in.operands[0], Op::BroadcastInDim);
    if (!bc) return -1;
    int x = bc->operands[0], r = in.result;
    Shape xs = aval(x).shape, out = bc->attrs.shape;
    std::vector<bool> reduced(out.size(), false);
    for (int64_t a : in.attrs.axes) reduced[static_cast<size_t>(a)] = true;
    double n = 1;
    for (size_t o = 0; o < out.size(); ++o)
      if (reduced[o]) n *= static_cast<double>(out[o]);
    // The operand's dimensions that stay, and where each lands in the result.
    Shape kept_shape;
    std::vector<int64_t> lands;
    for (size_t j = 0; j < xs.size(); ++j) {
      size_t o = static_cast<size_t>(bc->attrs.axes[j]);
      if (reduced[o]) {
        if (xs[j] != 1) return -1; // a dimension of x itself is summed
        continue;
      }
      kept_shape.push_back(xs[j]);
      int64_t at = 0;
      for (size_t k = 0; k < o; ++k) at += reduced[k] ? 0 : 1;
      lands.push_back(at);
    }
    int c = constant(n, aval(r).dtype);
    if (c < 0) return -1;
    if (kept_shape != xs) {
      OpAttrs to;
      to.shape = kept_shape;
      x = emit(Op::Reshape, to, {x}, x);
    }
    int scaled = binary(Op::Mul, x, broadcast(c, kept_shape, x), x);
    if (kept_shape == aval(r).shape) return scaled;
    OpAttrs to;
    to.shape = aval(r).shape;
    to.axes = lands;
    return emit(Op::BroadcastInDim, to, {scaled}, r);
  }

  // sum(transpose(y)) -> transpose(sum(y)) over the same elements, where XLA
  // hands the sum to YNNPACK (ir/ref_reduce_ynn.hpp): XLA folds the transpose
  // into the reduce's layout, so YNNPACK reads y in its own order.
  // (Not through elementwise ops: XLA then copies the transposed array and
  // reduces the copy, with a reduce-window first for an axis over 32 long.)
  int sum_of_transpose(const Instr& in) {
    auto t = is(in.operands[0], Op::Transpose);
    const AVal& x = aval(in.operands[0]);
    if (!t || !ref::ynn_sum_applies(x.dtype, x.shape, in.attrs.axes)) return -1;
    const std::vector<int64_t>& perm = t->attrs.perm;
    int y = t->operands[0];
    OpAttrs sum;
    std::vector<int64_t> kept; // y's axes in the order the result has them
    for (size_t d = 0; d < perm.size(); ++d) {
      bool reduced = std::find(in.attrs.axes.begin(), in.attrs.axes.end(),
                               static_cast<int64_t>(d)) != in.attrs.axes.end();
      (reduced ? sum.axes : kept).push_back(perm[d]);
    }
    std::sort(sum.axes.begin(), sum.axes.end());
    y = emit(Op::ReduceSum, sum, {y}, in.result);
    std::vector<int64_t> order = kept; // y's kept axes ascending: the new sum's order
    std::sort(order.begin(), order.end());
    OpAttrs back;
    for (int64_t k : kept)
      back.perm.push_back(std::find(order.begin(), order.end(), k) - order.begin());
    if (std::is_sorted(back.perm.begin(), back.perm.end())) return y;
    return emit(Op::Transpose, back, {y}, in.result);
  }

  // reduce(reduce(x, a), b) -> reduce(x, a and b): one reduction, in the order
  // XLA's reduce then takes over all those axes.
  int reduce(const Instr& in) {
    // A reduction over unit dims only moves no element: XLA makes it a
    // reshape (a transpose's sum of a rank promotion's unit dim).
    const Shape& x = aval(in.operands[0]).shape;
    if (aval(in.operands[0]).dtype == aval(in.result).dtype &&
        std::all_of(in.attrs.axes.begin(), in.attrs.axes.end(),
                    [&](int64_t d) { return x[static_cast<size_t>(d)] == 1; }))
      return reshape_to(in.operands[0], aval(in.result).shape, in.result);
    if (in.op == Op::ReduceSum)
      if (int by = sum_of_broadcast(in); by >= 0) return by;
    if (in.op == Op::ReduceSum)
      if (int by = sum_of_transpose(in); by >= 0) return by;
    // sum(-x) -> -sum(x) (the sum may then contract x's products into fmas)
    if (in.op == Op::ReduceSum)
      if (auto n = is(in.operands[0], Op::Neg))
        return unary(Op::Neg, emit(Op::ReduceSum, in.attrs, {n->operands[0]}, in.result),
                     in.result);
    auto inner = is(in.operands[0], in.op);
    if (!inner || aval(inner->operands[0]).dtype != aval(in.result).dtype) return -1;
    int rank = aval(inner->operands[0]).ndim();
    std::vector<int64_t> kept;
    for (int64_t d = 0; d < rank; ++d)
      if (std::find(inner->attrs.axes.begin(), inner->attrs.axes.end(), d) ==
          inner->attrs.axes.end())
        kept.push_back(d);
    OpAttrs merged;
    merged.axes = inner->attrs.axes;
    for (int64_t b : in.attrs.axes) merged.axes.push_back(kept[static_cast<size_t>(b)]);
    std::sort(merged.axes.begin(), merged.axes.end());
    return emit(in.op, merged, {inner->operands[0]}, in.result);
  }

  // op(broadcast(s1), broadcast(s2)) of two scalars -> broadcast(op(s1, s2)):
  // XLA sinks broadcasts below elementwise ops, which exposes the scalars to
  // the rules above (a mean of a broadcast scalar folds its count away).
  int sink_broadcasts(const Instr& in) {
    if (aval(in.result).ndim() == 0) return -1;
    std::vector<int> scalars;
    for (int o : in.operands) {
      auto bc = is(o, Op::BroadcastInDim);
      if (!bc || aval(bc->operands[0]).ndim() != 0) return -1;
      scalars.push_back(bc->operands[0]);
    }
    return broadcast(emit(in.op, in.attrs, scalars, in.result), aval(in.result).shape, in.result);
  }

  // x reshaped to `shape`: x itself when it has that shape, else one reshape
  // of what x reshapes (XLA merges reshapes of reshapes).
  int reshape_to(int x, const Shape& shape, int like) {
    if (aval(x).shape == shape) return x;
    if (auto r = is(x, Op::Reshape)) x = r->operands[0];
    if (aval(x).shape == shape) return x;
    OpAttrs to;
    to.shape = shape;
    return emit(Op::Reshape, to, {x}, like);
  }

  // broadcast(broadcast(x)) is one broadcast of x (XLA's simplifier), so a
  // scalar broadcast in two steps is seen as the scalar it is.
  int broadcast_of_broadcast(const Instr& in) {
    auto b = is(in.operands[0], Op::BroadcastInDim);
    if (!b) return -1;
    OpAttrs at = in.attrs;
    at.axes.clear();
    for (int64_t d : b->attrs.axes) at.axes.push_back(in.attrs.axes[static_cast<size_t>(d)]);
    return emit(Op::BroadcastInDim, at, {b->operands[0]}, in.result);
  }

  // Whether a dot operand (side 0: lhs) has no batch axes and no free axis
  // longer than 1.
  bool vector_like(int v, size_t side, const DotDims& d) {
    const std::vector<int64_t>& batch = side == 0 ? d.lhs_batch : d.rhs_batch;
    const Shape& shape = aval(v).shape;
    if (!batch.empty()) return false;
    for (int64_t a : ref::free_dims(static_cast<int>(shape.size()), batch,
                                    side == 0 ? d.lhs_contract : d.rhs_contract))
      if (shape[static_cast<size_t>(a)] != 1) return false;
    return true;
  }

  // A dot whose contracted axes all have extent 1 is a product of its
  // operands broadcast to the result (XLA's simplifier), so it fuses with
  // what follows (`x @ w + b` for one input feature is a multiply-add).
  // Not batched (measured: XLA keeps a batched one a dot, rounded before an
  // add).
  int dot_of_unit_contraction(const Instr& in) {
    const DotDims& d = in.attrs.dot;
    const AVal out = aval(in.result);
    if (d.order != DotOrder::Auto || d.lhs_contract.empty() || !d.lhs_batch.empty() ||
        (out.dtype != DType::Float32 && out.dtype != DType::Float64))
      return -1;
    int factors[2] = {-1, -1};
    int64_t free_at = 0;
    for (size_t side = 0; side < 2; ++side) {
      int x = in.operands[side];
      const AVal xa = aval(x);
      const std::vector<int64_t>& contract = side == 0 ? d.lhs_contract : d.rhs_contract;
      if (xa.dtype != out.dtype) return -1;
      for (int64_t c : contract)
        if (xa.shape[static_cast<size_t>(c)] != 1) return -1;
      Shape kept;
      OpAttrs to;
      to.shape = out.shape;
      for (int64_t a = 0; a < static_cast<int64_t>(xa.shape.size()); ++a) {
        if (std::find(contract.begin(), contract.end(), a) != contract.end()) continue;
        to.axes.push_back(free_at++);
        kept.push_back(xa.shape[static_cast<size_t>(a)]);
      }
      factors[side] = emit(Op::BroadcastInDim, to, {reshape_to(x, kept, in.result)}, in.result);
    }
    return binary(Op::Mul, factors[0], factors[1], in.result);
  }

  // XLA's CPU transpose folding: a transpose feeding a dot that only swaps
  // the operand's free and contracted axes (batch axes in place, one
  // contracted axis, one free) becomes the dot's dimension numbers, so the
  // dot reads the untransposed array (and YNNPACK packs a right operand
  // folded so, ir/ref_dot_ynn.hpp). Where the other operand is a vector, XLA
  // fuses the transpose and the dot into one loop instead: DotOrder::Elemental.
  int dot_of_transpose(const Instr& in) {
    OpAttrs attrs = in.attrs;
    std::vector<int> operands = in.operands;
    bool folded = false;
    for (size_t side = 0; side < 2; ++side) {
      bool elemental = in.attrs.dot.order == DotOrder::Auto &&
                       !vector_like(in.operands[side], side, in.attrs.dot) &&
                       vector_like(in.operands[1 - side], 1 - side, in.attrs.dot);
      auto t = is(operands[side], Op::Transpose);
      std::vector<int64_t>& batch = side == 0 ? attrs.dot.lhs_batch : attrs.dot.rhs_batch;
      std::vector<int64_t>& contract = side == 0 ? attrs.dot.lhs_contract : attrs.dot.rhs_contract;
      // (A constant's transpose XLA has folded into a new constant before.)
      if (!t || is_const(operands[side]) || contract.size() != 1 ||
          batch.size() + 2 != t->attrs.perm.size())
        continue;
      const std::vector<int64_t>& perm = t->attrs.perm;
      bool batch_kept = true;
      for (int64_t b : batch) batch_kept &= perm[static_cast<size_t>(b)] == b;
      if (!batch_kept) continue;
      contract[0] = perm[static_cast<size_t>(contract[0])];
      operands[side] = t->operands[0];
      folded = true;
      if (elemental) attrs.dot.order = DotOrder::Elemental;
    }
    return folded ? emit(Op::DotGeneral, attrs, operands, in.result) : -1;
  }

  // convert(op(a, b)) to float32 of a bfloat16 op -> op(convert(a), convert(b)):
  // XLA computes bfloat16 ops in float32, rounding each result, and with
  // excess precision allowed (its default) drops the rounding that an explicit
  // convert to float32 undoes (jnp.sum's upcast of a bfloat16 product sums the
  // unrounded products). The op's other uses keep the rounded value.
  int excess_precision(const Instr& in) {
    const int x = in.operands[0];
    const Instr* p = def(x);
    if (aval(in.result).dtype != DType::Float32 || aval(x).dtype != DType::BFloat16 || !p ||
        p->nresults != 1 || widened_.count(in.result))
      return -1;
    switch (p->op) {
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
    case Op::Neg:
    case Op::Abs:
    case Op::Exp:
    case Op::Log:
    case Op::Log1p:
    case Op::Expm1: // (bfloat16's is float32's, rounded: codegen/jit_runtime.cpp)
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Pow:
      break;
    default:
      return -1;
    }
    const Instr op = *p; // (a copy: emitting grows the body)
    std::vector<int> wide;
    for (int o : op.operands) {
      if (aval(o).dtype != DType::BFloat16) return -1;
      OpAttrs to;
      to.dtype = DType::Float32;
      wide.push_back(emit(Op::ConvertElementType, to, {o}, in.result));
      widened_.insert(wide.back()); // (its operand stays rounded)
    }
    return emit(op.op, op.attrs, wide, in.result);
  }

  int rewrite(const Instr& in) {
    if (in.op == Op::ConvertElementType) return excess_precision(in);
    // (Not divisions: a / broadcast(b) is the reciprocal rule's.)
    if (in.op == Op::Add || in.op == Op::Sub || in.op == Op::Mul || in.op == Op::Max ||
        in.op == Op::Min)
      if (int by = sink_broadcasts(in); by >= 0) return by;
    switch (in.op) {
    case Op::ReduceSum:
    case Op::ReduceProd:
    case Op::ReduceMax:
    case Op::ReduceMin:
      return reduce(in);
    case Op::Mul:
      return multiply(in);
    case Op::Add:
      return add(in);
    case Op::Sub:
      return subtract(in);
    case Op::Div:
      return divide(in);
    case Op::Pow:
      return power(in);
    case Op::Log:
      return log(in);
    case Op::Sqrt:
      return square_root(in);
    case Op::Abs: // abs(x * x) -> x * x (which then fuses into a multiply-add)
      return non_negative(in.operands[0]) ? in.operands[0] : -1;
    case Op::DotGeneral:
      if (int by = dot_of_unit_contraction(in); by >= 0) return by;
      return dot_of_transpose(in);
    case Op::BroadcastInDim:
      return broadcast_of_broadcast(in);
    case Op::Reshape:
      if (aval(in.operands[0]).shape == aval(in.result).shape) return in.operands[0];
      return is(in.operands[0], Op::Reshape)
                 ? reshape_to(in.operands[0], aval(in.result).shape, in.result)
                 : -1;
    case Op::BitcastConvertType: // to its own type (stop_gradient's): no op
      return aval(in.operands[0]).dtype == aval(in.result).dtype ? in.operands[0] : -1;
    default:
      return -1;
    }
  }

  void process(const Instr& orig) {
    Instr in = orig;
    for (int& o : in.operands) o = resolve(o);
    DType dt = aval(in.result).dtype;
    if (in.nresults == 1 && (simplifiable(dt) || (is_complex(dt) && in.op == Op::Div))) {
      int by = -1;
      try {
        by = rewrite(in);
      } catch (const Error&) { // a rewrite the shape rules refuse is not made
        by = -1;
      }
      if (by >= 0) {
        AVal want = aval(in.result);
        if (aval(by).dtype != want.dtype || aval(by).shape != want.shape) {
          by = -1; // (never: each rewrite keeps the type)
        } else if (aval(by).weak != want.weak) {
          OpAttrs conv;
          conv.dtype = want.dtype;
          conv.weak = want.weak;
          by = emit(Op::ConvertElementType, conv, {by}, in.result);
        }
      }
      if (by >= 0) {
        subst_[static_cast<size_t>(in.result)] = by;
        changed_ = true;
        return;
      }
    }
    bool all_const = foldable(in.op);
    for (int o : in.operands) all_const = all_const && const_[static_cast<size_t>(o)];
    for (int k = 0; k < in.nresults; ++k) {
      out_.values[static_cast<size_t>(in.result + k)].producer = static_cast<int>(out_.body.size());
      const_[static_cast<size_t>(in.result + k)] = all_const && in.nresults == 1;
    }
    out_.body.push_back(std::move(in));
  }

  Function cur_;
  std::vector<Array>* added_;
  std::vector<Array> const_values_; // of cur_.consts, in order
  Function out_;
  std::vector<int> uses_;  // in the round's input
  std::vector<int> subst_; // value -> the value replacing it, or -1
  std::vector<char> const_;
  std::map<std::pair<double, DType>, int> constants_;
  // The converts excess_precision made of an op's operands: not rewritten in
  // turn (only the op before the program's own convert keeps the precision).
  std::set<int> widened_;
  bool changed_ = false;
};

} // namespace

std::shared_ptr<const Function> simplify_algebra(std::shared_ptr<const Function> f,
                                                 std::span<const Array> consts,
                                                 std::vector<Array>* added) {
  std::shared_ptr<const Function> out = Simplifier(*f, consts, added).run();
  return out ? out : f;
}

} // namespace pxl
