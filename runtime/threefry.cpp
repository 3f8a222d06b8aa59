// Threefry-2x32 as in Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"
// (SC'11), with the rotation constants and key schedule of JAX's
// _threefry2x32_lowering, so the words agree bit for bit with jax.random.
#include "runtime/threefry.hpp"

namespace pxl {

namespace {

constexpr uint32_t kParity = 0x1BD11BDA; // Threefry's key-schedule parity constant
constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};

inline uint32_t rotl(uint32_t x, int d) { return (x << d) | (x >> (32 - d)); }

} // namespace

std::array<uint32_t, 2> threefry2x32(ThreefryKey key, uint32_t x0, uint32_t x1) {
  const uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ kParity};
  x0 += ks[0];
  x1 += ks[1];
  // Five groups of four rounds; after group g the key words rotate and the
  // group number is injected, as in the unrolled JAX lowering.
  for (uint32_t g = 0; g < 5; ++g) {
    for (int r : kRot[g % 2]) {
      x0 += x1;
      x1 = rotl(x1, r);
      x1 ^= x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + g + 1;
  }
  return {x0, x1};
}

ThreefryKey threefry_seed(int64_t seed) {
  auto u = static_cast<uint64_t>(seed);
  return {static_cast<uint32_t>(u >> 32), static_cast<uint32_t>(u)};
}

ThreefryKey threefry_split_one(ThreefryKey key, uint64_t i) {
  return threefry2x32(key, static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(i));
}

ThreefryKey threefry_fold_in(ThreefryKey key, uint32_t data) { return threefry2x32(key, 0, data); }

uint32_t threefry_bits32(ThreefryKey key, uint64_t i) {
  auto [a, b] = threefry2x32(key, static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(i));
  return a ^ b;
}

void threefry_fill_bits32(ThreefryKey key, uint32_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = threefry_bits32(key, static_cast<uint64_t>(i));
}

} // namespace pxl
