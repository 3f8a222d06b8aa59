#include "ir/fold_constants.hpp"

#include <math.h>

#include <cmath>
#include <optional>

#include "lang/diag.hpp"

namespace pxl {

namespace {

// XLA's folders evaluate at most this many elements (larger results are
// left to the kernels).
constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

// Two folders compute a jitted program's constants: StableHLO's, on the
// program as JAX lowers it, evaluates transcendental functions in double
// precision and rounds the result; what it cannot fold (expm1, log1p, ...)
// and every op after such an op XLA's evaluator folds, with the C library's
// float functions.
// A third: LLVM, which unrolls a short loop over an iota whole and folds its
// arithmetic op by op (XLA itself folds no iota).
enum class Folder : char { None, StableHlo, Xla, Unrolled };

// The longest rank-1 iota whose arithmetic pxl folds as LLVM's unrolled loop:
// where a chain of a few ops (jnp.linspace's) stops being unrolled on
// AVX-512 (measured: 351; two ops, arange(n) * a + b, unroll to 447, an
// exp's polynomial to 49, not modelled).
constexpr int64_t kMaxUnrolledIota = 351;

// The ops of an iota's loop pxl folds: arithmetic LLVM folds as the kernel
// computes it, but for its multiply-adds.
bool unrolled_arithmetic(Op op) {
  return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Neg ||
         op == Op::Max || op == Op::Min || op == Op::Abs || op == Op::ConvertElementType;
}

// Ops StableHLO's folder leaves to XLA's.
bool xla_folds_only(Op op) {
  return op == Op::Expm1 || op == Op::Log1p || op == Op::Logistic || op == Op::Cbrt ||
         op == Op::Pow || op == Op::Atan2 || op == Op::ErfInv;
}

// StableHLO's way: in double precision, rounded once.
template <double (*F)(double)> float in_double(float x) { return static_cast<float>(F(x)); }
float rsqrt_in_double(float x) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}
float rsqrt_in_float(float x) { return 1.0f / std::sqrt(x); }
float logistic_in_float(float x) { return 1.0f / (1.0f + ::expf(-x)); } // XLA's expansion

// The float32 function `folder` computes `op` with, where the kernel's bits
// differ (XLA's polynomials); null for the other ops.
using FoldFn = float (*)(float);
FoldFn folded_function(Op op, Folder folder) {
  auto pick = [hlo = folder == Folder::StableHlo](FoldFn in_hlo, FoldFn in_xla) {
    return hlo ? in_hlo : in_xla;
  };
  switch (op) {
  case Op::Exp:
    return pick(in_double<::exp>, ::expf);
  case Op::Log:
    return pick(in_double<::log>, ::logf);
  case Op::Tanh:
    return pick(in_double<::tanh>, ::tanhf);
  case Op::Erf:
    return pick(in_double<::erf>, ::erff);
  case Op::Sin:
    return pick(in_double<::sin>, ::sinf);
  case Op::Cos:
    return pick(in_double<::cos>, ::cosf);
  case Op::Tan:
    return pick(in_double<::tan>, ::tanf);
  case Op::Rsqrt:
    return pick(rsqrt_in_double, rsqrt_in_float);
  case Op::Expm1: // XLA's evaluator's only
    return ::expm1f;
  case Op::Log1p:
    return ::log1pf;
  case Op::Logistic:
    return logistic_in_float;
  default:
    return nullptr;
  }
}

// Ops of constants the folders evaluate, and short rank-1 iotas.
bool foldable(const Instr& in, const AVal& out) {
  if (in.nresults != 1 || has_effect(in)) return false;
  if (in.op == Op::Iota) return out.ndim() == 1 && out.size() <= kMaxUnrolledIota;
  return is_elementwise(in.op) || op_family(in.op) == OpFamily::Structural;
}

// Whether the kernel may compute `op` otherwise than the folder: a
// transcendental function, or arithmetic that the kernel fuses into
// multiply-adds (ir/contract.hpp).
bool kernel_differs(Op op, DType d) {
  if (d == DType::Float32 && folded_function(op, Folder::Xla)) return true;
  return is_floating(d) && (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Fma);
}

} // namespace

std::shared_ptr<const Function> fold_constants(std::shared_ptr<const Function> f,
                                               std::span<const Array> consts,
                                               std::vector<Array>* added, bool stablehlo_only) {
  if (!added || consts.size() != f->consts.size()) return f;
  std::vector<std::optional<Array>> known(f->values.size());
  std::vector<Folder> folder(f->values.size(), Folder::None); // of known values
  // Depends on an op whose folded value the kernel may not give.
  std::vector<char> tainted(f->values.size(), 0);
  for (size_t i = 0; i < consts.size(); ++i) {
    if (!consts[i].defined()) return f;
    known[static_cast<size_t>(f->consts[i])] = consts[i];
    folder[static_cast<size_t>(f->consts[i])] = Folder::StableHlo;
  }
  bool any = false;
  for (const Instr& in : f->body) {
    const AVal& out = f->values[static_cast<size_t>(in.result)].aval;
    if (!foldable(in, out) || out.size() > kMaxFoldedElements) continue;
    std::vector<Array> operands;
    bool all_known = true, taint = false;
    Folder by = in.op == Op::Iota       ? Folder::Unrolled
                : xla_folds_only(in.op) ? Folder::Xla
                                        : Folder::StableHlo;
    for (int o : in.operands) {
      all_known = all_known && known[static_cast<size_t>(o)].has_value();
      if (!all_known) break;
      operands.push_back(*known[static_cast<size_t>(o)]);
      taint = taint || tainted[static_cast<size_t>(o)];
      Folder of = folder[static_cast<size_t>(o)];
      if (of == Folder::Unrolled || (of == Folder::Xla && by != Folder::Unrolled)) by = of;
    }
    if (!all_known || (stablehlo_only && by != Folder::StableHlo)) continue;
    // An iota's loop: its arithmetic only, rank 1, short.
    if (by == Folder::Unrolled && in.op != Op::Iota &&
        (!unrolled_arithmetic(in.op) || out.ndim() != 1 || out.size() > kMaxUnrolledIota))
      continue;
    Array value;
    try {
      value = eval_ref(in.op, in.attrs, operands);
    } catch (const Error&) { // an op the reference refuses stays the kernel's to run
      continue;
    }
    if (FoldFn fn = out.dtype == DType::Float32 ? folded_function(in.op, by) : nullptr) {
      const float* x = operands[0].as<float>();
      float* y = value.as<float>();
      for (int64_t k = 0; k < value.size(); ++k) y[k] = fn(x[k]);
    }
    known[static_cast<size_t>(in.result)] = std::move(value);
    folder[static_cast<size_t>(in.result)] = by;
    // (A broadcast stays a splat: what it broadcasts becomes the constant.)
    tainted[static_cast<size_t>(in.result)] =
        in.op != Op::BroadcastInDim && (taint || kernel_differs(in.op, out.dtype));
    any = any || tainted[static_cast<size_t>(in.result)];
  }
  if (!any) return f;
  // The tainted values that an untainted op or the results read become constants.
  auto copy = std::make_shared<Function>(*f);
  std::vector<int> replacement(f->values.size(), -1);
  auto constant_for = [&](int v) {
    size_t s = static_cast<size_t>(v);
    if (replacement[s] < 0) {
      IRValue c = f->values[s];
      c.producer = -1;
      replacement[s] = copy->add_value(std::move(c));
      copy->consts.push_back(replacement[s]);
      added->push_back(*known[s]);
    }
    return replacement[s];
  };
  for (Instr& in : copy->body) {
    if (tainted[static_cast<size_t>(in.result)]) continue; // folded itself (only those are tainted)
    for (int& o : in.operands)
      if (tainted[static_cast<size_t>(o)]) o = constant_for(o);
  }
  for (int& r : copy->results)
    if (tainted[static_cast<size_t>(r)]) r = constant_for(r);
  remove_dead_code(*copy);
  return copy;
}

} // namespace pxl
