// XLA's RngBitGenerator as it runs on CPU (RNG_DEFAULT and RNG_PHILOX expand
// to Philox-4x32, 10 rounds): the bits behind lax.rng_bit_generator and the
// rbg / unsafe_rbg PRNG implementations.
#pragma once
#include <utility>

#include "stdlib/np.hpp"

namespace pxl::np {

// The first `n` uint32 words (flat, uint32[n]) drawn from the uint32[4] state
// `key` (which may be traced), and the new state: (new_key, words). The
// counters used are ceil(n / 4); n must be below 2**34. Traced, the draw is
// one rng_bit_generator custom_call, so that vmap can batch it as JAX batches
// rng_bit_generator (stdlib/rbg_batching.cpp); eagerly it is its ops.
std::pair<Tensor, Tensor> philox_words(OpContext& cx, const Tensor& key, int64_t n);
// The draw as primitive ops.
std::pair<Tensor, Tensor> philox_words_ops(OpContext& cx, const Tensor& key, int64_t n);

} // namespace pxl::np
