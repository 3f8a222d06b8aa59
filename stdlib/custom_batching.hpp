// jax.custom_batching: custom_vmap and sequential_vmap (custom_batching.cpp).
#pragma once
#include <span>
#include <vector>

#include "ir/custom_call.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

// vmap of a custom_call that a custom_vmap function recorded: its rule's
// results, bound in `cx`, put in `out`. False for any other custom_call (and
// for a custom_vmap call whose captured values are batched: its primal is
// batched then).
bool batch_custom_vmap(OpContext& cx, const OpAttrs& attrs, std::span<const BVal> args,
                       const BatchAxis& axis, std::vector<BVal>& out);

// Registers jax.custom_batching (custom_vmap, sequential_vmap).
void add_custom_batching(InterpreterImpl& in, Value& jax);

} // namespace pxl
