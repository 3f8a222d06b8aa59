#include "ir/libm_tail.hpp"

#include <algorithm>
#include <set>

#include "ir/ref_math.hpp"

namespace pxl {

namespace {

// Whether XLA's CPU fusion leaves the op producing `v` out of its consumers'
// loops (or `v` is an input of the program).
bool materialized(const Function& f, int v) {
  int p = f.values[static_cast<size_t>(v)].producer;
  if (p < 0) return true;
  const Instr& in = f.body[static_cast<size_t>(p)];
  switch (op_family(in.op)) {
  case OpFamily::Linalg:     // LAPACK's custom calls
  case OpFamily::Collective: // XLA's all-reduce, all-gather, ...
  case OpFamily::Effect:     // host callbacks
  case OpFamily::Loop:       // a while loop's results
    return true;
  default:
    // Reductions, dots (small ones become multiplies and reductions) and
    // gathers fuse into the loop (measured); a sort does not, but pxl's is
    // a gather of its permutation, as `x[jnp.argsort(x)]`, whose gather fuses.
    return in.op == Op::Fft; // a custom call of its own
  }
}

// What feeds an exp or log in its loop: XLA fuses the elementwise ops in
// front of it, and LLVM's SLP vectorizer then decides by their cost which
// tails still split into libm calls (measured against JAX 0.10.2).
enum class Feed {
  Simple, // a loaded value, maybe converted; abs or sqrt of one; a binary op of two
          // (abs of that too): every tail of 3, 5, 6 or 7 lanes
  Fused,  // other trees of loaded values and cheap elementwise ops: some tails
  Other   // a constant among them (a splat vector), or an op not modelled: none
};

int skip_converts(const Function& f, int v) {
  for (int p; (p = f.values[static_cast<size_t>(v)].producer) >= 0 &&
              f.body[static_cast<size_t>(p)].op == Op::ConvertElementType;)
    v = f.body[static_cast<size_t>(p)].operands[0];
  return v;
}

bool is_const(const Function& f, int v) {
  return std::find(f.consts.begin(), f.consts.end(), v) != f.consts.end();
}

// A value the loop loads: a parameter, an array constant, or a result of an
// op XLA does not fuse.
bool loaded(const Function& f, int v) {
  if (f.values[static_cast<size_t>(v)].producer < 0)
    return !is_const(f, v) || f.values[static_cast<size_t>(v)].aval.ndim() > 0;
  return materialized(f, v);
}

// Whether the fused tree in front of `v` holds loaded values and elementwise
// ops only (at most `budget` of them).
bool elementwise_tree(const Function& f, int v, int& budget) {
  if (loaded(f, v)) return true;
  int p = f.values[static_cast<size_t>(v)].producer;
  if (p < 0 || --budget < 0) return false;
  const Instr& in = f.body[static_cast<size_t>(p)];
  // (Transcendental ops are XLA's polynomials, whose constants are splats.)
  static constexpr Op kCheap[] = {
      Op::Neg, Op::Abs, Op::Sqrt, Op::Add,    Op::Sub, Op::Mul,
      Op::Div, Op::Max, Op::Min,  Op::Eq,     Op::Ne,  Op::Lt,
      Op::Le,  Op::Gt,  Op::Ge,   Op::Select, Op::Fma, Op::ConvertElementType};
  if (std::find(std::begin(kCheap), std::end(kCheap), in.op) == std::end(kCheap)) return false;
  for (int o : in.operands)
    if (f.values[static_cast<size_t>(o)].aval.ndim() == 0 || !elementwise_tree(f, o, budget))
      return false;
  return true;
}

Feed feed_of(const Function& f, int operand) {
  int v = skip_converts(f, operand);
  if (loaded(f, v)) return Feed::Simple;
  auto binary_of_loaded = [&](const Instr& in) {
    static constexpr Op kBinary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min};
    if (std::find(std::begin(kBinary), std::end(kBinary), in.op) == std::end(kBinary)) return false;
    int a = skip_converts(f, in.operands[0]), b = skip_converts(f, in.operands[1]);
    // XLA's simplifier makes a + (-b) and (-a) + b subtractions.
    auto negated = [&](int& x) {
      int p = f.values[static_cast<size_t>(x)].producer;
      if (in.op != Op::Add || p < 0 || f.body[static_cast<size_t>(p)].op != Op::Neg) return;
      x = skip_converts(f, f.body[static_cast<size_t>(p)].operands[0]);
    };
    negated(a);
    negated(b);
    return a != b && loaded(f, a) && loaded(f, b);
  };
  const Instr& in = f.body[static_cast<size_t>(f.values[static_cast<size_t>(v)].producer)];
  if (binary_of_loaded(in)) return Feed::Simple;
  if (in.op == Op::Abs || in.op == Op::Sqrt) {
    int x = skip_converts(f, in.operands[0]);
    int px = f.values[static_cast<size_t>(x)].producer;
    if (loaded(f, x) ||
        (in.op == Op::Abs && px >= 0 && binary_of_loaded(f.body[static_cast<size_t>(px)])))
      return Feed::Simple;
  }
  int budget = 8;
  return elementwise_tree(f, v, budget) ? Feed::Fused : Feed::Other;
}

} // namespace

std::shared_ptr<const Function> mark_libm_tails(std::shared_ptr<const Function> f) {
  std::vector<std::set<size_t>> readers(f->values.size());
  for (size_t i = 0; i < f->body.size(); ++i)
    for (int o : f->body[i].operands) readers[static_cast<size_t>(o)].insert(i);
  std::shared_ptr<Function> out;
  for (size_t i = 0; i < f->body.size(); ++i) {
    const Instr& in = f->body[i];
    if ((in.op != Op::Exp && in.op != Op::Log) || in.attrs.libm_tail) continue;
    const AVal& a = f->values[static_cast<size_t>(in.result)].aval;
    int64_t start = ref::xla::libm_tail_start(static_cast<int64_t>(a.ndim()), a.size());
    if (a.dtype != DType::Float32 || start < 0) continue;
    // The op is the root of its loop: a result, or read by several ops.
    bool is_result = std::find(f->results.begin(), f->results.end(), in.result) != f->results.end();
    if (!is_result && readers[static_cast<size_t>(in.result)].size() < 2) continue;
    // A fused tree leaves 5 or 6 lanes to libm, and 3 after a vector of 8.
    int64_t lanes = a.size() - start;
    bool fused_tail = lanes == 5 || lanes == 6 || (lanes == 3 && start > 0);
    Feed feed = feed_of(*f, in.operands[0]);
    if (feed == Feed::Other || (feed == Feed::Fused && !fused_tail)) continue;
    if (!out) out = std::make_shared<Function>(*f);
    out->body[i].attrs.libm_tail = true;
  }
  return out ? out : f;
}

} // namespace pxl
