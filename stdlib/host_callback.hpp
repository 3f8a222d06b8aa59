// jax.pure_callback and jax.experimental.io_callback with results as host
// calls from compiled code (the host_callback op, ir/ops.def): the builtin
// stdlib/callbacks.pxl binds, and the op's batching rule.
#pragma once
#include <span>
#include <vector>

#include "stdlib/transforms.hpp"

namespace pxl {

struct ModuleBuilder;

// Adds jax.debug._host_callback (stdlib/callbacks.pxl's binding of the op).
void add_host_callback(ModuleBuilder& debug);

// vmap of a host_callback, as JAX batches pure_callback by its vmap_method
// ("sequential": one call per example; "expand_dims", "broadcast_all",
// "legacy_vectorized": one call that sees the batch) and io_callback
// (sequential; an ordered one is refused).
std::vector<BVal> batch_host_callback(OpContext& cx, const OpAttrs& attrs,
                                      std::span<const BVal> args, const BatchAxis& axis);

// The io_callbacks (with or without results) `f` holds, nested loops and
// custom_jvp/vjp functions included: JAX's vmap of a while loop whose
// predicate is batched refuses them.
struct IoEffects {
  bool ordered = false, unordered = false;
};
IoEffects io_effects(const Function& f);

} // namespace pxl
