// numpy.random's bit generators and samplers, bit-exact with numpy: the
// legacy RandomState (MT19937, seeded as numpy's `RandomState(seed)`; its
// polar-method gauss, masked bounded integers) and the Generator of
// `default_rng(seed)` (PCG64 seeded through a SeedSequence; ziggurat normals,
// Lemire bounded integers). Host-only and independent of the interpreter; the
// module (stdlib/mod_numpy_random.cpp) shapes and converts the draws.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace pxl::nprandom {

// The stream of raw words both generators give the samplers.
class BitGen {
public:
  virtual ~BitGen() = default;
  virtual uint32_t next32() = 0;
  virtual uint64_t next64() = 0;
  virtual double next_double() = 0; // uniform on [0, 1), 53 bits
  float next_float() { return static_cast<float>(next32() >> 8) * (1.0f / 16777216.0f); }
};

// Mersenne Twister MT19937 with RandomState's extras (its cached gauss).
class MT19937 : public BitGen {
public:
  explicit MT19937(uint32_t seed) { seed_int(seed); }
  void seed_int(uint32_t seed);                   // init_genrand
  void seed_array(std::span<const uint32_t> key); // init_by_array
  uint32_t next32() override;
  uint64_t next64() override;
  double next_double() override;
  // RandomState's standard normal: Marsaglia's polar method, two per round,
  // the second kept for the next call.
  double legacy_gauss();

private:
  uint32_t key_[624];
  int pos_ = 624;
  bool has_gauss_ = false;
  double gauss_ = 0;
  void regenerate();
};

// PCG64 (XSL-RR 128/64), 32-bit draws taken as halves of a 64-bit one.
class PCG64 : public BitGen {
public:
  // Seeded as numpy's PCG64(SeedSequence(entropy)).
  explicit PCG64(std::span<const uint32_t> entropy);
  uint32_t next32() override;
  uint64_t next64() override;
  double next_double() override;

private:
  unsigned __int128 state_ = 0, inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
  void step();
};

// SeedSequence(entropy).generate_state(n_words) as uint32 words.
std::vector<uint32_t> seed_sequence_words(std::span<const uint32_t> entropy, size_t n_words);

// Samplers. A bounded integer is in [0, range] (the caller adds the low bound).
// RandomState.randint and the shuffles' random_interval: [0, range] by
// rejecting draws masked to range's bit length.
uint64_t bounded_masked(BitGen& g, uint64_t range);
// Generator.integers: Lemire's multiply-and-reject, 32-bit draws when range fits.
uint64_t bounded_lemire(BitGen& g, uint64_t range);
double standard_normal_ziggurat(BitGen& g);  // Generator.standard_normal
float standard_normal_ziggurat_f(BitGen& g); // ... dtype=float32

} // namespace pxl::nprandom
