#pragma once
// jax.numpy_dtype_promotion('strict') for the binary operators: JAX's strict
// lattice decides the operands' common type (stdlib/np_dtypes.cpp, where the
// lattices live).

#include <optional>
#include <vector>

#include "ir/dtype.hpp"
#include "ir/tensor.hpp"

namespace pxl {

class InterpreterImpl;
struct AVal;

// Under strict promotion, the dtype and weak type both operands take (a
// TypePromotionError, E0105, when the strict lattice joins them nowhere);
// nullopt under 'standard' promotion.
std::optional<PromotedType> strict_binary_type(InterpreterImpl& in, const AVal& x, const AVal& y);

// The same for a jnp function's two operands, converted in place to the type
// strict promotion gives them (unchanged under 'standard').
void strict_promote_pair(InterpreterImpl& in, Tensor& x, Tensor& y);

// jnp functions that join all their operands' types (concatenate, stack, dot,
// matmul, outer, einsum): under strict promotion JAX's TypePromotionError when
// the strict lattice has no join; otherwise nothing (standard promotion follows).
void strict_check_join(InterpreterImpl& in, const std::vector<Tensor>& xs);

} // namespace pxl
