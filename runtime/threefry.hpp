// Threefry-2x32 (20 rounds), the hash behind JAX's default PRNG, and the
// counter layouts JAX builds on it. Kept apart from the np layer so a future
// random-bits primitive (traced, or a device kernel) computes the same values.
#pragma once
#include <array>
#include <cstdint>

namespace pxl {

using ThreefryKey = std::array<uint32_t, 2>;

// JAX's threefry2x32_p on one counter pair: returns the two hashed words.
std::array<uint32_t, 2> threefry2x32(ThreefryKey key, uint32_t x0, uint32_t x1);

// jax.random.key_data(PRNGKey(seed)): the high and low words of the 64-bit seed.
ThreefryKey threefry_seed(int64_t seed);

// Key i of split(key, n) (jax_threefry_partitionable=True): the hash of counter (0, i)
// (in general (hi, lo) of the 64-bit index i).
ThreefryKey threefry_split_one(ThreefryKey key, uint64_t i);

// fold_in(key, data): the hash of the counter pair (0, data).
ThreefryKey threefry_fold_in(ThreefryKey key, uint32_t data);

// 32 random bits for flat element i of a random_bits array (partitionable
// layout): both words of the hash of (hi(i), lo(i)), xor-ed. 8- and 16-bit
// draws keep the low bits of this value.
uint32_t threefry_bits32(ThreefryKey key, uint64_t i);

// out[i] = threefry_bits32(key, i) for i in [0, n).
void threefry_fill_bits32(ThreefryKey key, uint32_t* out, int64_t n);

} // namespace pxl
