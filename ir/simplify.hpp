// XLA's algebraic simplifier: the rewrites of it that change a float result,
// for the programs JAX compiles whole (jit, pmap, loop bodies, the jnp
// functions JAX jits), in the order XLA's handlers try them. Eager ops are
// one program each; the rewrites within one jnp call are made where that call
// builds its ops (np_elementwise.cpp's division by a broadcast), so this pass
// only adds what spans several ops. Measured against JAX 0.10.2's CPU
// backend (its XLA has the exp/log identities without the fast-math guard
// later XLA puts on them). For float32 and float64 values:
//
//   a / sqrt(b) -> a * rsqrt(b)   a / rsqrt(b) -> a * sqrt(b)   (b's root used once)
//   a / exp(b) -> a * exp(-b)     exp(a) / exp(b) -> exp(a - b)
//   a / pow(b, c) -> a * pow(b, -c)
//   a / C -> a * (1 / C) (complex too)   a / broadcast(b) -> a * broadcast(1 / b)  (b used once)
//   (a / b) / (c / d) -> (a * d) / (b * c)   (a / b) / c -> a / (b * c)   a / (b / c) -> (a * c) /
//   b (a * C1) * C2 -> a * (C1 * C2)   (a + C1) + C2 -> a + (C1 + C2)   (C1 - a) + C2 -> (C1 + C2)
//   - a a - C -> a + (-C)             (a * c) * broadcast(b) -> a * broadcast(b * c)  (c a scalar)
//   exp(a) * exp(b) -> exp(a + b)   convert(pred) * x -> select(pred, x, 0)
//   pow(a, 0|1|2|3|-1) -> 1 | a | a * a | a * (a * a) | 1 / a   pow(exp(a), b) -> exp(a * b)
//   log(exp(a)) -> a   log(sqrt(a)) -> log(a) * 0.5   log(rsqrt(a)) -> log(a) * -0.5
//   square(a) -> a * a (first, as JAX lowers it)   sqrt(a * a) -> abs(a)   a * 1, a + 0, a - 0 -> a
//   abs(a) -> a where a is never negative by construction (a * a, abs, max or select of such)
//   reduce(reduce(x, axes1), axes2) -> reduce(x, both)   (sum, prod, max, min)
//   sum(-x) -> -sum(x)   bitcast_convert(a) to a's own type -> a
//   sum(broadcast(x)) over axes the broadcast added -> broadcast(x * n)
//
// C: a constant (captured values, and ops on them only), or a broadcast of a
// scalar one. Constants the rewrites combine are computed by ops of the
// program in the value's type, as XLA's constant folder does.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "ir/function.hpp"
#include "runtime/array.hpp"

namespace pxl {

// `f` rewritten as above, repeated until nothing changes, dead code removed;
// `f` itself when nothing applies. `consts`: the values of f.consts, when
// known (a multiply by one, an exponent). `added`, when given, receives the
// values of the constants the rewrites need (1, 0, 0.5, ...), appended to
// f.consts in order; without it the rewrites that need one are not made
// (a callee whose constants are already parameters).
std::shared_ptr<const Function> simplify_algebra(std::shared_ptr<const Function> f,
                                                 std::span<const Array> consts = {},
                                                 std::vector<Array>* added = nullptr);

} // namespace pxl
