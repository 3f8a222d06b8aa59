// vmap of lax.rng_bit_generator (the bits of the rbg and unsafe_rbg PRNG
// keys) as JAX batches it: a batched key draws every example's bits from its
// first key, as one draw of the batched shape (JAX's
// _rng_bit_generator_batching_rule), and the new keys are the batched keys
// with the first replaced by that draw's new key.
#pragma once
#include <span>
#include <vector>

#include "ir/op.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

// Whether a custom_call is the rng_bit_generator draw (np::philox_words).
bool is_rng_bit_generator_call(const OpAttrs& attrs);

// Its batching rule.
std::vector<BVal> batch_rng_bit_generator(OpContext& cx, const OpAttrs& attrs,
                                          std::span<const BVal> args, const BatchAxis& axis);

} // namespace pxl
