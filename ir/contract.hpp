// XLA's floating-point contraction, for the programs JAX compiles whole.
//
// XLA's CPU and GPU back ends emit a jitted program's elementwise work as
// fused loops that LLVM compiles with contraction on: an add or subtract of a
// multiply becomes one fused multiply-add (rounded once; a multiply with
// other uses is duplicated into each consumer's loop, where each contracts
// its copy), and a reduce_sum of such a multiply, when no reduced axis is longer
// than 32 (longer ones are first cut into reduce-windows, which do not take
// the multiply in), accumulates fused multiply-adds. Eager ops (one XLA
// program each) never see this, so it changes the last bits of a jitted
// result only. pxl rewrites the Functions that JAX compiles as one program
// (jax.jit's, pmap's, loop bodies) the same way before they run, in the
// reference and compiled executors alike:
//
//   add(mul(a, b), c), add(c, mul(a, b))  ->  fma(a, b, c)
//   sub(mul(a, b), c)                     ->  fma(a, b, neg(c))
//   sub(c, mul(a, b))                     ->  fma(neg(a), b, c)
//   reduce_sum(mul(a, b))                 ->  mul_reduce_sum(a, b)
//
// for float32 and float64 (XLA computes half types in float32 with a
// rounding between ops). When both operands of an add are such multiplies,
// the left one is fused (LLVM's DAG combiner tries it first). integer_pow
// with y >= 2 is XLA's chain of multiplies: its last one is fused.
#pragma once
#include <memory>
#include <span>

#include "ir/function.hpp"

namespace pxl {

// `f` contracted as above (nested Functions are left to their own
// executables); `f` itself when nothing changes. `consts`, when given, are
// the values of f.consts: a multiply by a constant one is then dropped first,
// as XLA's simplifier does, and leaves nothing to fuse.
std::shared_ptr<const Function> contract_multiply_adds(std::shared_ptr<const Function> f,
                                                       std::span<const Array> consts = {});

} // namespace pxl
