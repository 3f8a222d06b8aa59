#include "ir/contract.hpp"

#include <algorithm>
#include <optional>

#include "ir/constant_of.hpp"
#include "ir/reduce_tree.hpp"
#include "ir/ref_reduce_ynn.hpp"
#include "runtime/array.hpp"

namespace pxl {

namespace {

bool contractible_dtype(DType d) { return d == DType::Float32 || d == DType::Float64; }

bool reduction_fusion(Op op) {
  return op == Op::ReduceSum || op == Op::ReduceMax || op == Op::ReduceMin;
}

class Contraction {
public:
  Contraction(const Function& f, std::span<const Array> consts)
      : f_(f), consts_(consts), out_(f), other_uses_(f.values.size(), 0) {
    uses_.assign(f.values.size(), 0);
    for (const Instr& in : f.body)
      for (int o : in.operands) ++uses_[static_cast<size_t>(o)];
    for (int r : f.results) ++uses_[static_cast<size_t>(r)];
    // Values read only by reductions (not results): an elementwise op
    // producing one joins its reductions' fusions.
    std::vector<size_t> reduce_uses(f.values.size(), 0);
    for (const Instr& in : f.body)
      if (reduction_fusion(in.op))
        for (int o : in.operands) ++reduce_uses[static_cast<size_t>(o)];
    // (A reduction is a fusion of its own, into which XLA duplicates the
    // elementwise ops it reads (and what they read): it leaves them to their
    // other users.)
    for (const Instr& in : f.body) {
      size_t r = static_cast<size_t>(in.result);
      bool into_reduce = reduction_fusion(in.op) || (is_elementwise(in.op) && in.nresults == 1 &&
                                                     uses_[r] > 0 && reduce_uses[r] == uses_[r]);
      if (!into_reduce)
        for (int o : in.operands) ++other_uses_[static_cast<size_t>(o)];
    }
    for (int r : f.results) ++other_uses_[static_cast<size_t>(r)];
  }

  // The rewritten Function, or null when nothing was contracted.
  std::shared_ptr<const Function> run() {
    out_.body.clear();
    for (size_t i = 0; i < f_.body.size(); ++i) rewrite(f_.body[i]);
    if (!changed_) return nullptr;
    // Drop the multiplies now fused into all their users.
    remove_dead_code(out_);
    return std::make_shared<Function>(std::move(out_));
  }

private:
  // The two factors of a multiply being fused into this use, emitting
  // integer_pow's earlier products; false when `v` is no such multiply. A
  // reduce is a fusion of its own, into which XLA duplicates the multiply
  // where its fusion rules allow (duplicable): it contracts its copy
  // whatever else uses the multiply. The elementwise
  // users (and a result) share one fusion with it: one of them contracts it
  // only when it is the only one.
  bool factors(int v0, int& a, int& b, bool into_reduce) {
    // A convert that keeps the dtype (only a weak type changes) is no op in XLA.
    std::vector<int> chain{v0};
    for (;;) {
      const IRValue& val = f_.values[static_cast<size_t>(chain.back())];
      bool own_fusion = into_reduce && chain.size() == 1;
      size_t others = other_uses_[static_cast<size_t>(chain.back())];
      if (val.producer < 0 || !contractible_dtype(val.aval.dtype) || (!own_fusion && others > 1) ||
          (own_fusion && others > 0 && !duplicable(v0)))
        return false;
      const Instr& p = f_.body[static_cast<size_t>(val.producer)];
      if (p.op != Op::ConvertElementType ||
          f_.values[static_cast<size_t>(p.operands[0])].aval.dtype != val.aval.dtype)
        break;
      chain.push_back(p.operands[0]);
    }
    int v = chain.back();
    const Instr& p = f_.body[static_cast<size_t>(f_.values[static_cast<size_t>(v)].producer)];
    // XLA drops a multiply by one first: nothing is left to fuse.
    if (p.op == Op::Mul && (is_one(p.operands[0]) || is_one(p.operands[1]))) return false;
    if (p.op == Op::Mul) {
      a = p.operands[0];
      b = p.operands[1];
    } else if (p.op == Op::Square) { // (XLA's square is a multiply)
      a = b = p.operands[0];
    } else if (p.op == Op::IntegerPow && p.attrs.exponent >= 2) {
      // XLA's expansion (the reference's integer_pow): x squared again and
      // again, multiplied into the result per set bit of y. Products are
      // numbered from 1 (0 is x); the last one is the result, fused.
      std::vector<std::pair<size_t, size_t>> prods;
      size_t sq = 0, acc = 0;
      bool have = false;
      for (int64_t e = p.attrs.exponent; e > 0;) {
        if (e & 1) {
          if (have) prods.push_back({acc, sq});
          acc = have ? prods.size() : sq;
          have = true;
        }
        e >>= 1;
        if (e > 0) {
          prods.push_back({sq, sq});
          sq = prods.size();
        }
      }
      std::vector<int> id{p.operands[0]};
      for (size_t k = 0; k + 1 < prods.size(); ++k)
        id.push_back(emit(Op::Mul, {}, {id[prods[k].first], id[prods[k].second]}, v));
      a = id[prods.back().first];
      b = id[prods.back().second];
    } else {
      return false;
    }
    return true;
  }

  // Whether XLA's fusion may copy `v`'s producer into a reduce while other
  // users keep the original (InstructionFusion::ComputeGloballyUnfusible): it
  // reads at most one full-size array (broadcasts and iotas do not count), or
  // no more elements than it writes, or every user could fuse it (elementwise
  // ops and reductions; a result or a dot cannot). Otherwise the reduce loads
  // the product XLA stored, rounded.
  bool duplicable(int v) const {
    const Instr* p = producer_through_converts(v);
    if (!p) return false;
    const AVal& out = f_.values[static_cast<size_t>(v)].aval;
    int full = 0;
    int64_t read = 0;
    std::vector<int> seen;
    for (int o : p->operands) {
      const AVal& oa = f_.values[static_cast<size_t>(o)].aval;
      const Instr* q = producer_through_converts(o);
      bool free = (q && (q->op == Op::BroadcastInDim || q->op == Op::Iota)) || oa.size() == 1;
      if (!free && oa.ndim() >= out.ndim()) ++full;
      if (std::find(seen.begin(), seen.end(), o) == seen.end()) {
        seen.push_back(o);
        read += oa.size();
      }
    }
    if (full <= 1 || read <= out.size()) return true;
    if (std::find(f_.results.begin(), f_.results.end(), v) != f_.results.end()) return false;
    for (const Instr& in : f_.body)
      if (std::find(in.operands.begin(), in.operands.end(), v) != in.operands.end() &&
          !is_elementwise(in.op) && !reduction_fusion(in.op))
        return false;
    return true;
  }

  // Whether `v` is a product by a negative constant (a broadcast scalar):
  // LLVM's InstCombine turns x * -c + y into y - x * c.
  bool negative_scale(int v) const {
    if (static_cast<size_t>(v) >= f_.values.size()) return false; // an emitted product
    const Instr* p = producer_through_converts(v);
    if (!p || p->op != Op::Mul) return false;
    for (int o : p->operands) {
      if (!splat(o)) continue;
      // The scalar: a constant, or a negated one (XLA folds it to a literal).
      int u = producer_through_converts(o)->operands[0];
      double sign = 1;
      if (const Instr* q = producer_through_converts(u); q && q->op == Op::Neg) {
        u = q->operands[0];
        sign = -1;
      }
      if (std::optional<double> c = known_scalar(u); c && sign * *c < 0) return true;
    }
    return false;
  }

  // The value of `v` where it is a known float constant of one element.
  std::optional<double> known_scalar(int v) const {
    int k = constant_of(f_, v);
    if (k < 0 || static_cast<size_t>(k) >= consts_.size()) return std::nullopt;
    const Array& c = consts_[static_cast<size_t>(k)];
    if (!c.defined() || c.size() != 1 || !is_floating(c.dtype())) return std::nullopt;
    return c.get_f64(0);
  }

  // Whether `v` is a constant 1 (its value known), or a broadcast of one.
  bool is_one(int v) const {
    std::optional<double> c = known_scalar(v);
    return c && *c == 1.0;
  }

  // Whether XLA computes `v` inside the loop of the reduce it feeds (an
  // elementwise op or a broadcast, fused into it), rather than loading it.
  bool computed(int v) const {
    if (static_cast<size_t>(v) >= f_.values.size()) return true; // an emitted product
    const Instr* in = producer_through_converts(v);
    return in && (is_elementwise(in->op) || in->op == Op::BroadcastInDim);
  }

  // Whether `v` is a broadcast of one element (through same-type converts):
  // a value the loop holds in a register rather than loads.
  bool splat(int v) const {
    if (static_cast<size_t>(v) >= f_.values.size()) return false; // an emitted product
    const Instr* in = producer_through_converts(v);
    return in && in->op == Op::BroadcastInDim &&
           f_.values[static_cast<size_t>(in->operands[0])].aval.size() == 1;
  }

  // The instruction that computes `v`, looking through conversions that only
  // change the weak type; null for a parameter or constant.
  const Instr* producer_through_converts(int v) const {
    for (;;) {
      int p = f_.values[static_cast<size_t>(v)].producer;
      if (p < 0) return nullptr;
      const Instr& in = f_.body[static_cast<size_t>(p)];
      bool same_type = in.op == Op::ConvertElementType &&
                       f_.values[static_cast<size_t>(in.operands[0])].aval.dtype ==
                           f_.values[static_cast<size_t>(v)].aval.dtype;
      if (!same_type) return &in;
      v = in.operands[0];
    }
  }

  // Whether `v` is (a broadcast or reshape of) a sum XLA hands to YNNPACK: its
  // elementwise users join that YNNPACK fusion, which multiplies and adds
  // separately (measured: the gradient of x * sum(x) adds the broadcast sum to
  // the rounded product).
  bool from_ynn_sum(int v) const {
    for (;;) {
      int p = f_.values[static_cast<size_t>(v)].producer;
      if (p < 0) return false;
      const Instr& in = f_.body[static_cast<size_t>(p)];
      if (in.op == Op::BroadcastInDim || in.op == Op::Reshape) {
        v = in.operands[0];
        continue;
      }
      if (in.op != Op::ReduceSum) return false;
      const AVal& x = f_.values[static_cast<size_t>(in.operands[0])].aval;
      return ref::ynn_sum_applies(x.dtype, x.shape, in.attrs.axes);
    }
  }

  // Whether `v` is a parameter or a dot's result of shape `shape`.
  bool loaded_whole(int v, const Shape& shape) const {
    const IRValue& val = f_.values[static_cast<size_t>(v)];
    return val.aval.shape == shape &&
           (val.producer < 0 || f_.body[static_cast<size_t>(val.producer)].op == Op::DotGeneral);
  }

  // Whether `v` broadcasts a loaded vector along the rows of a matrix.
  bool row_bias(int v) const {
    const IRValue& val = f_.values[static_cast<size_t>(v)];
    if (val.producer < 0 || val.aval.shape.size() != 2) return false;
    const Instr& in = f_.body[static_cast<size_t>(val.producer)];
    return in.op == Op::BroadcastInDim && in.attrs.axes == std::vector<int64_t>{1} &&
           loaded_whole(in.operands[0], {val.aval.shape[1]});
  }

  // Whether `v` is a - b (or a + b) of two different arrays the loop loads
  // (`biased`: one may be a dense layer's output, a loaded array plus a row
  // bias), used `uses` times by its one user (`shared`: at least, as an L1
  // loss's difference that its gradient reads too, which XLA recomputes in
  // the loss's loop): the difference of an L1 or squared-error loss.
  bool difference_of_loaded(int v, size_t uses = 1, bool biased = true, bool shared = false) const {
    if (static_cast<size_t>(v) >= f_.values.size()) return false; // an emitted product
    const IRValue& val = f_.values[static_cast<size_t>(v)];
    size_t n = uses_[static_cast<size_t>(v)];
    if (val.producer < 0 || n < uses || (n > uses && !shared) || val.aval.dtype != DType::Float32)
      return false;
    const Instr& in = f_.body[static_cast<size_t>(val.producer)];
    if ((in.op != Op::Sub && in.op != Op::Add) || in.operands[0] == in.operands[1]) return false;
    int x = in.operands[0], y = in.operands[1];
    int plain = loaded_whole(x, val.aval.shape) + loaded_whole(y, val.aval.shape);
    return plain == 2 || (plain == 1 && biased && (dense_output(x) || dense_output(y)));
  }

  // Whether `v` is a loaded array plus a bias along its rows: a dense layer's
  // output, which XLA adds in the loop that reads it.
  bool dense_output(int v) const {
    const IRValue& val = f_.values[static_cast<size_t>(v)];
    if (val.producer < 0) return false;
    const Instr& add = f_.body[static_cast<size_t>(val.producer)];
    if (add.op != Op::Add) return false;
    for (size_t i = 0; i < 2; ++i)
      if (row_bias(add.operands[i]) && loaded_whole(add.operands[1 - i], val.aval.shape))
        return true;
    return false;
  }

  // The LoopBody (ir/reduce_tree.hpp) of a float32 sum of `v` over all its
  // elements: the class of the elementwise ops XLA fuses into the sum's loop
  // between it and the one array it loads. Load where pxl has not measured
  // such a loop: several loaded arrays (but |a - b|: Pair), a value with users outside the
  // body (XLA does not duplicate an expensive op; pxl leaves cheap ones out too), other ops
  // (broadcasts, reshapes, converts: other index work), or sin, cos and sign in a chain. The
  // body may read a value twice (a DAG: softplus, silu, gelu, elu); its work counts once. `extra`:
  // work after `v` (a product by a scalar's multiply; sin or cos times a scalar keeps their class:
  // measured on 13 shapes, all but 16 x 3 agree).
  LoopBody loop_body(int v, int extra = 0, int* loaded_out = nullptr) const {
    if (static_cast<size_t>(v) >= f_.values.size()) return LoopBody::Load; // an emitted product
    // |a - b| of two loaded arrays: a class of its own (measured).
    if (const Instr* p = producer_through_converts(v);
        extra == 0 && p && p->op == Op::Abs && uses_[static_cast<size_t>(v)] == 1 &&
        difference_of_loaded(p->operands[0], 1, true, true))
      return LoopBody::Pair;
    // Per-element work in half units (a cheap op is 2) and its divides and
    // square roots (which cost more in wider vectors): the classes are
    // ranges of these, measured.
    int work = extra, divides = 0, loaded = -1;
    std::optional<LoopBody> alone;
    bool ok = true;
    auto invariant = [&](int u) {
      return splat(u) || f_.values[static_cast<size_t>(u)].aval.size() == 1;
    };
    // A value the loop loads: a parameter or constant, or the result of an op
    // XLA does not fuse into the sum's loop.
    auto is_loaded = [&](int u) {
      int p = f_.values[static_cast<size_t>(u)].producer;
      if (p < 0) return true;
      Op op = f_.body[static_cast<size_t>(p)].op;
      return op == Op::DotGeneral || op == Op::MulReduceSum || op == Op::ReduceSum ||
             op == Op::ReduceMax || op == Op::ReduceMin;
    };
    auto negation_of_loaded = [&](int u) {
      int p = f_.values[static_cast<size_t>(u)].producer;
      return p >= 0 && f_.body[static_cast<size_t>(p)].op == Op::Neg &&
             is_loaded(f_.body[static_cast<size_t>(p)].operands[0]);
    };
    // The body may read a value twice (softplus reads x in a max, an abs and
    // a select): each is computed once in the loop, its work counted once.
    std::vector<bool> seen(f_.values.size(), false);
    auto visit = [&](auto& self, int u, bool top) -> void {
      if (!ok) return;
      const IRValue& val = f_.values[static_cast<size_t>(u)];
      const Instr* in = val.producer >= 0 ? &f_.body[static_cast<size_t>(val.producer)] : nullptr;
      if (is_loaded(u)) {
        ok = loaded < 0 || loaded == u;
        loaded = u;
        return;
      }
      if (seen[static_cast<size_t>(u)]) return;
      seen[static_cast<size_t>(u)] = true;
      // (A compare's result is a bool lane mask.)
      if (val.aval.dtype != DType::Float32 && val.aval.dtype != DType::Bool) {
        ok = false;
        return;
      }
      auto binary_with_invariant = [&](int cost) {
        bool l = invariant(in->operands[0]), r = invariant(in->operands[1]);
        if (l && r) return false; // constants only
        work += cost;
        if (!l) self(self, in->operands[0], false);
        if (!r) self(self, in->operands[1], false);
        return ok; // (false where an operand's own body is not one)
      };
      if (op_family(in->op) == OpFamily::Compare) { // a lane mask, a cheap op
        ok = binary_with_invariant(2);
        return;
      }
      switch (in->op) {
      case Op::Sign:
      case Op::Sin:
      case Op::Cos:
        // Measured alone, on the loaded array or its negation.
        alone = in->op == Op::Sign ? LoopBody::Sign : LoopBody::Sine;
        ok = top && (is_loaded(in->operands[0]) || negation_of_loaded(in->operands[0]));
        if (ok) self(self, in->operands[0], false);
        return;
      case Op::Neg:
        break;
      case Op::Floor:
      case Op::Ceil:
      case Op::Round:
      case Op::Square:
        work += 2;
        break;
      case Op::Abs:
        work += 4;
        break;
      case Op::Tanh:
      case Op::Expm1:
      case Op::Log1p:
        work += 5;
        break;
      case Op::Exp:
      case Op::Log:
        work += 8;
        break;
      case Op::Sqrt:
        ++divides;
        break;
      case Op::Logistic:
      case Op::Erf:
        ++divides;
        work += 10;
        break;
      case Op::IntegerPow:
        if (in->attrs.exponent < 2 || in->attrs.exponent > 4) ok = false;
        work += 2 * (in->attrs.exponent - 1);
        break;
      case Op::Fma: { // a multiply and an add by scalars
        bool l = invariant(in->operands[0]), r = invariant(in->operands[1]);
        ok = l != r && invariant(in->operands[2]);
        work += 4;
        if (ok) self(self, in->operands[l ? 1 : 0], false);
        return;
      }
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
        ok = binary_with_invariant(2);
        return;
      case Op::Max:
      case Op::Min:
        ok = binary_with_invariant(3);
        return;
      case Op::Atan2:
        ok = invariant(in->operands[1]) && binary_with_invariant(8);
        return;
      case Op::Select: {
        work += 2;
        for (int o : in->operands)
          if (ok && !invariant(o)) self(self, o, false);
        return;
      }
      case Op::Div: // by a scalar a cheap op; by the element a divide too
        if (!invariant(in->operands[1])) ++divides;
        ok = binary_with_invariant(2);
        return;
      default:
        ok = false;
        return;
      }
      if (ok) self(self, in->operands[0], false);
    };
    visit(visit, v, true);
    // Every value of the body is used only in it (and the root only by the
    // sum): XLA stores a value with users outside and the sum loads it.
    std::vector<size_t> inside(f_.values.size(), 0);
    for (size_t u = 0; u < seen.size(); ++u)
      if (seen[u])
        for (int o : f_.body[static_cast<size_t>(f_.values[u].producer)].operands)
          ++inside[static_cast<size_t>(o)];
    for (size_t u = 0; u < seen.size() && ok; ++u)
      ok = !seen[u] || uses_[u] == (static_cast<int>(u) == v ? 1 : inside[u]);
    if (loaded_out) *loaded_out = loaded;
    if (!ok || loaded < 0) return LoopBody::Load;
    if (alone) return *alone;
    if (divides > 1) return LoopBody::Load;
    if (divides == 1)
      return work == 0 ? LoopBody::Sqrt : work < 3 ? LoopBody::Recip : LoopBody::Logistic;
    return work == 0   ? LoopBody::Load
           : work <= 2 ? LoopBody::Light
           : work <= 4 ? LoopBody::Abs
           : work <= 7 ? LoopBody::Tanh
                       : LoopBody::Exp;
  }

  // Appends an instruction; its result takes the type, axes and location of
  // `like`. (run() numbers the producers once the body is final.)
  int emit(Op op, const OpAttrs& attrs, std::vector<int> operands, int like) {
    IRValue v = out_.values[static_cast<size_t>(like)]; // (like may be an emitted value)
    int id = out_.add_value(std::move(v));
    out_.body.push_back(Instr{op, attrs, std::move(operands), id});
    return id;
  }

  // The operand of `v` when `v` is a negation used only here, else -1.
  int negated_operand(int v) const {
    const IRValue& val = f_.values[static_cast<size_t>(v)];
    if (val.producer < 0 || other_uses_[static_cast<size_t>(v)] > 1) return -1;
    const Instr& p = f_.body[static_cast<size_t>(val.producer)];
    return p.op == Op::Neg ? p.operands[0] : -1;
  }

  // `v` without pairs of negations used only here (--m is m).
  int without_double_negation(int v) const {
    for (int m; (m = negated_operand(v)) >= 0;) {
      int u = negated_operand(m);
      if (u < 0) break;
      v = u;
    }
    return v;
  }

  void rewrite(const Instr& in) {
    Instr copy = in;
    int a = -1, b = -1;
    bool is_add = in.op == Op::Add, is_sub = in.op == Op::Sub;
    DType d = f_.values[static_cast<size_t>(in.result)].aval.dtype;
    if ((is_add || is_sub) && contractible_dtype(d) && !from_ynn_sum(in.operands[0]) &&
        !from_ynn_sum(in.operands[1])) {
      int l = without_double_negation(in.operands[0]), r = without_double_negation(in.operands[1]);
      // LLVM's InstCombine moves negations used only here: y - (-m) is y + m,
      // -m - y is -(m + y), -m + y and y + -m are y - m; m may then fuse.
      bool negate_result = false;
      auto take_negation = [&](int& side, int other) {
        int m = negated_operand(side);
        if (m < 0 || m == other) return false;
        side = m;
        std::swap(is_add, is_sub);
        return true;
      };
      if (is_sub) {
        negate_result = !take_negation(r, l) && take_negation(l, r);
      } else if (take_negation(l, r)) {
        std::swap(l, r); // -m + y: y - m
      } else {
        take_negation(r, l);
      }
      // x * -c + m is m - x * c there: the other product fuses first.
      if (is_add && negative_scale(l) && !negative_scale(r)) std::swap(l, r);
      if (l != r && factors(l, a, b, false)) {
        int c = is_sub ? emit(Op::Neg, {}, {r}, r) : r;
        copy = Instr{Op::Fma, {}, {a, b, c}, in.result};
        changed_ = true;
      } else if (l != r && factors(r, a, b, false)) {
        if (is_sub) a = emit(Op::Neg, {}, {a}, a);
        copy = Instr{Op::Fma, {}, {a, b, l}, in.result};
        changed_ = true;
      } else if (l != in.operands[0] || r != in.operands[1]) {
        // (A negation dropped or moved, nothing fused: the op on the new operands.)
        copy = Instr{is_sub ? Op::Sub : Op::Add, {}, {l, r}, in.result};
        changed_ = true;
      }
      if (negate_result && copy.op != in.op) {
        int inner = emit(copy.op, copy.attrs, copy.operands, in.result);
        copy = Instr{Op::Neg, {}, {inner}, in.result};
      }
    } else if (in.op == Op::ReduceSum && contractible_dtype(d)) {
      const Shape& xs = f_.values[static_cast<size_t>(in.operands[0])].aval.shape;
      bool short_axes = true;
      for (int64_t ax : in.attrs.axes) short_axes &= xs[static_cast<size_t>(ax)] <= kReduceWindow;
      // YNNPACK's sums (ir/ref_reduce_ynn.hpp) take the rounded products.
      bool ynn = ref::ynn_sum_applies(d, xs, in.attrs.axes);
      // A float32 sum of every element: its loop's work picks its lanes.
      bool whole_f32 =
          d == DType::Float32 && f_.values[static_cast<size_t>(in.result)].aval.size() == 1;
      if (short_axes && !ynn && factors(in.operands[0], a, b, true)) {
        OpAttrs at;
        at.axes = in.attrs.axes;
        at.exponent = a == b ? 2 : 0;
        // attrs.axis: 1 when a factor is computed in the loop, 2 when one is a
        // broadcast scalar (loop-invariant) and the other loaded, else 0.
        bool scaled = splat(a) != splat(b) && !computed(splat(a) ? b : a);
        at.axis = scaled ? 2 : computed(a) || computed(b) ? 1 : 0;
        // A whole float32 sum of a computed value times a scalar: the scaled
        // form, with the lanes of that value's work and the multiply.
        if (at.axis == 1 && splat(a) != splat(b) && whole_f32) {
          LoopBody body = loop_body(splat(a) ? b : a, 2);
          if (body != LoopBody::Load) {
            at.axis = 2;
            at.loop_body = static_cast<int64_t>(body);
          }
        }
        // x * g(x), the other factor computed from the loaded one in the
        // loop (silu, x * tanh(x)): fused as a product by a scalar is, in
        // the lanes of the whole computation.
        if (at.axis == 1 && whole_f32 && !splat(a) && !splat(b) && a != b) {
          int loaded = -1;
          bool a_loaded = f_.values[static_cast<size_t>(a)].producer < 0;
          int computed_factor = a_loaded ? b : a;
          LoopBody body = loop_body(computed_factor, 2, &loaded);
          if (body != LoopBody::Load && loaded == (a_loaded ? a : b)) {
            at.axis = 2;
            at.loop_body = static_cast<int64_t>(body);
          }
        }
        // The square of a difference of two loaded arrays (a squared error):
        // its own lanes and rounding (ref_mul_reduce.cpp).
        // With a bias in the difference, only for fewer than 8 rows (scalar
        // loops and 4 lanes; from 8 rows LLVM's lanes differ from both, and
        // the plain sum's are right more often).
        const Instr* sq = producer_through_converts(in.operands[0]);
        const Shape& diff_shape = f_.values[static_cast<size_t>(a)].aval.shape;
        if (at.axis == 1 && a == b && whole_f32 && sq &&
            difference_of_loaded(a, sq->op == Op::Mul ? 2 : 1,
                                 diff_shape.size() == 2 && diff_shape[0] < 8))
          at.loop_body = static_cast<int64_t>(LoopBody::Pair);
        copy = Instr{Op::MulReduceSum, at, {a, b}, in.result};
        changed_ = true;
      } else if (whole_f32 && !ynn) {
        if (LoopBody body = loop_body(in.operands[0]); body != LoopBody::Load) {
          copy.attrs.loop_body = static_cast<int64_t>(body);
          changed_ = true;
        }
      }
    }
    if (copy.op != in.op) {
      // The fused op's weak type follows its operands, which may differ from
      // the replaced op's where a dropped convert changed only the weak type:
      // then a convert restores it.
      std::vector<AVal> avals;
      for (int o : copy.operands) avals.push_back(out_.values[static_cast<size_t>(o)].aval);
      const AVal& want = f_.values[static_cast<size_t>(in.result)].aval;
      if (infer(copy.op, copy.attrs, avals).weak != want.weak) {
        int fused = emit(copy.op, copy.attrs, copy.operands, in.result);
        out_.values[static_cast<size_t>(fused)].aval.weak = !want.weak;
        OpAttrs conv;
        conv.dtype = want.dtype;
        conv.weak = want.weak;
        copy = Instr{Op::ConvertElementType, conv, {fused}, in.result};
      }
    }
    out_.body.push_back(std::move(copy));
  }

  const Function& f_;
  std::span<const Array> consts_;
  Function out_;
  std::vector<size_t> other_uses_; // per value: uses other than by a reduction
  std::vector<size_t> uses_;       // per value: all uses, results included
  bool changed_ = false;
};

} // namespace

std::shared_ptr<const Function> contract_multiply_adds(std::shared_ptr<const Function> f,
                                                       std::span<const Array> consts) {
  std::shared_ptr<const Function> out = Contraction(*f, consts).run();
  return out ? out : f;
}

} // namespace pxl
