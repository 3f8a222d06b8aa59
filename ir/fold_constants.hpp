// Constant folding, as JAX's compiler folds a jitted program's constants
// before XLA's CPU code generator sees them: ops whose operands are
// constants (Python scalars, captured arrays, and ops of those) are computed
// once, each rounded on its own, where the kernels would fuse a multiply and
// an add into one rounding (ir/contract.hpp) or evaluate XLA's polynomial for
// a transcendental function. StableHLO's folder computes exp, log, tanh,
// erf, rsqrt, sin, cos and tan in double precision and rounds to float32;
// expm1, log1p, logistic (XLA's 1 / (1 + exp(-x))) (and cbrt, atan2,
// erf_inv) and every op after one are XLA's evaluator's, with the C
// library's float functions; other ops fold as the kernels compute them.
// Broadcasts of scalars stay splats. XLA folds no iota, but LLVM unrolls a
// short loop over one and folds its arithmetic op by op: pxl folds the
// arithmetic (+ - * / neg max min abs, converts) of a rank-1 iota of up to
// 351 elements so; the length LLVM unrolls depends on the loop's body (447
// for arange(n) * a + b, 49 under an exp), which is not modelled. Measured
// against JAX 0.10.2 for float32.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "ir/function.hpp"
#include "runtime/array.hpp"

namespace pxl {

// `f` with each value computed from constants alone through such an op
// (where the kernel may differ) replaced by a new constant, appended to
// f.consts with its value appended to `added`, dead code removed; `f` itself
// when there is none, when `added` is null, or when `consts` (the values of
// f.consts) are not all known. `stablehlo_only`: only what StableHLO's folder
// folds (it runs before XLA's rewrites, XLA's evaluator after them).
std::shared_ptr<const Function> fold_constants(std::shared_ptr<const Function> f,
                                               std::span<const Array> consts,
                                               std::vector<Array>* added, bool stablehlo_only);

} // namespace pxl
