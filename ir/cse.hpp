// Common subexpression elimination, as XLA's HloCSE runs it on a jitted
// program before code generation: an op repeated on the same operands (a
// Python expression written twice, `(x - m) * (x - m)`) is computed once, and
// so are equal constants. It changes results only through what the code
// generator then sees: the product above is a square, and a product used
// twice is not fused into either add (ir/contract.hpp).
#pragma once
#include <memory>
#include <span>

#include "ir/function.hpp"
#include "runtime/array.hpp"

namespace pxl {

// `f` with each repeated side-effect-free op replaced by its first instance,
// dead code removed; `f` itself when nothing repeats. `consts`, when given,
// are the values of f.consts: equal ones are then one constant too.
std::shared_ptr<const Function> eliminate_common_subexpressions(std::shared_ptr<const Function> f,
                                                                std::span<const Array> consts = {});

} // namespace pxl
