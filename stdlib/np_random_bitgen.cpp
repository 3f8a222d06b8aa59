#include "stdlib/np_random_bitgen.hpp"

#include <cmath>

namespace pxl::nprandom {

namespace {
#include "stdlib/np_random_ziggurat.inc"

constexpr int kN = 624, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU, kUpper = 0x80000000U, kLower = 0x7fffffffU;

// The smallest all-ones mask covering `x`.
uint64_t mask_for(uint64_t x) {
  for (int s = 1; s < 64; s <<= 1) x |= x >> s;
  return x;
}
} // namespace

// ---- MT19937 (numpy/random/src/mt19937, legacy/legacy-distributions) ------

void MT19937::seed_int(uint32_t seed) {
  for (int pos = 0; pos < kN; pos++) {
    key_[pos] = seed;
    seed = 1812433253U * (seed ^ (seed >> 30)) + static_cast<uint32_t>(pos) + 1;
  }
  pos_ = kN;
  has_gauss_ = false;
  gauss_ = 0;
}

void MT19937::seed_array(std::span<const uint32_t> init) {
  seed_int(19650218U);
  int i = 1;
  size_t j = 0;
  for (size_t k = std::max<size_t>(kN, init.size()); k; k--) {
    key_[i] = (key_[i] ^ ((key_[i - 1] ^ (key_[i - 1] >> 30)) * 1664525U)) + init[j] +
              static_cast<uint32_t>(j);
    i++, j++;
    if (i >= kN) key_[0] = key_[kN - 1], i = 1;
    if (j >= init.size()) j = 0;
  }
  for (int k = kN - 1; k; k--) {
    key_[i] =
        (key_[i] ^ ((key_[i - 1] ^ (key_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    i++;
    if (i >= kN) key_[0] = key_[kN - 1], i = 1;
  }
  key_[0] = 0x80000000U;
  pos_ = kN;
  has_gauss_ = false;
  gauss_ = 0;
}

void MT19937::regenerate() {
  auto twist = [&](int i, int next, int far) {
    uint32_t y = (key_[i] & kUpper) | (key_[next] & kLower);
    key_[i] = key_[far] ^ (y >> 1) ^ ((0U - (y & 1U)) & kMatrixA);
  };
  int i = 0;
  for (; i < kN - kM; i++) twist(i, i + 1, i + kM);
  for (; i < kN - 1; i++) twist(i, i + 1, i + kM - kN);
  twist(kN - 1, 0, kM - 1);
  pos_ = 0;
}

uint32_t MT19937::next32() {
  if (pos_ == kN) regenerate();
  uint32_t y = key_[pos_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  return y ^ (y >> 18);
}

uint64_t MT19937::next64() {
  uint64_t hi = next32(); // numpy: the first draw is the high word
  return hi << 32 | next32();
}

double MT19937::next_double() {
  int32_t a = static_cast<int32_t>(next32() >> 5), b = static_cast<int32_t>(next32() >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double MT19937::legacy_gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * next_double() - 1.0;
    x2 = 2.0 * next_double() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

// ---- SeedSequence and PCG64 (numpy/random/bit_generator, src/pcg64) -------

std::vector<uint32_t> seed_sequence_words(std::span<const uint32_t> entropy, size_t n_words) {
  constexpr uint32_t kInitA = 0x43b0d7e5U, kMultA = 0x931e8875U, kInitB = 0x8b51f9ddU,
                     kMultB = 0x58f38dedU, kMixL = 0xca01f9ddU, kMixR = 0x4973f715U;
  constexpr size_t kPool = 4;
  uint32_t hash_const = kInitA;
  auto hashmix = [&](uint32_t v) {
    v ^= hash_const;
    hash_const *= kMultA;
    v *= hash_const;
    return v ^ (v >> 16);
  };
  auto mix = [](uint32_t x, uint32_t y) {
    uint32_t r = kMixL * x - kMixR * y;
    return r ^ (r >> 16);
  };
  uint32_t pool[kPool];
  for (size_t i = 0; i < kPool; i++) pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0);
  for (size_t src = 0; src < kPool; src++)
    for (size_t dst = 0; dst < kPool; dst++)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src]));
  for (size_t src = kPool; src < entropy.size(); src++)
    for (size_t dst = 0; dst < kPool; dst++) pool[dst] = mix(pool[dst], hashmix(entropy[src]));

  std::vector<uint32_t> out(n_words);
  hash_const = kInitB;
  for (size_t i = 0; i < n_words; i++) {
    uint32_t v = pool[i % kPool] ^ hash_const;
    hash_const *= kMultB;
    v *= hash_const;
    out[i] = v ^ (v >> 16);
  }
  return out;
}

namespace {
using u128 = unsigned __int128;
constexpr u128 kPcgMultiplier =
    (static_cast<u128>(2549297995355413924ULL) << 64) | 4865540595714422341ULL;
u128 words_u128(const std::vector<uint32_t>& w, size_t i) {
  // Two little-endian uint64 (each two uint32 words): the first is the high half.
  uint64_t hi = static_cast<uint64_t>(w[i + 1]) << 32 | w[i];
  uint64_t lo = static_cast<uint64_t>(w[i + 3]) << 32 | w[i + 2];
  return static_cast<u128>(hi) << 64 | lo;
}
} // namespace

PCG64::PCG64(std::span<const uint32_t> entropy) {
  std::vector<uint32_t> w = seed_sequence_words(entropy, 8);
  u128 initstate = words_u128(w, 0), initseq = words_u128(w, 4);
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  step();
  state_ += initstate;
  step();
}

void PCG64::step() { state_ = state_ * kPcgMultiplier + inc_; }

uint64_t PCG64::next64() {
  step();
  uint64_t folded = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  unsigned rot = static_cast<unsigned>(state_ >> 122);
  return (folded >> rot) | (folded << ((64 - rot) & 63));
}

uint32_t PCG64::next32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  uint64_t next = next64();
  has_uint32_ = true;
  uinteger_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next);
}

double PCG64::next_double() {
  return static_cast<double>(next64() >> 11) * (1.0 / 9007199254740992.0);
}

// ---- samplers (numpy/random/src/distributions) -----------------------------

uint64_t bounded_masked(BitGen& g, uint64_t range) {
  if (range == 0) return 0;
  uint64_t mask = mask_for(range), v;
  if (range <= 0xffffffffULL) {
    while ((v = (g.next32() & mask)) > range) {
    }
  } else {
    while ((v = (g.next64() & mask)) > range) {
    }
  }
  return v;
}

uint64_t bounded_lemire(BitGen& g, uint64_t range) {
  if (range == 0) return 0;
  if (range == 0xffffffffULL) return g.next32();
  if (range == UINT64_MAX) return g.next64();
  if (range < 0xffffffffULL) {
    const uint32_t excl = static_cast<uint32_t>(range) + 1;
    uint64_t m = static_cast<uint64_t>(g.next32()) * excl;
    uint32_t left = static_cast<uint32_t>(m);
    if (left < excl) {
      const uint32_t threshold = (UINT32_MAX - static_cast<uint32_t>(range)) % excl;
      while (left < threshold) {
        m = static_cast<uint64_t>(g.next32()) * excl;
        left = static_cast<uint32_t>(m);
      }
    }
    return m >> 32;
  }
  const uint64_t excl = range + 1;
  u128 m = static_cast<u128>(g.next64()) * excl;
  uint64_t left = static_cast<uint64_t>(m);
  if (left < excl) {
    const uint64_t threshold = (UINT64_MAX - range) % excl;
    while (left < threshold) {
      m = static_cast<u128>(g.next64()) * excl;
      left = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double standard_normal_ziggurat(BitGen& g) {
  constexpr double kR = 3.6541528853610088, kInvR = 0.27366123732975828;
  for (;;) {
    uint64_t r = g.next64();
    int idx = static_cast<int>(r & 0xff);
    r >>= 8;
    bool negative = r & 1;
    uint64_t rabs = (r >> 1) & 0x000fffffffffffffULL;
    double x = static_cast<double>(rabs) * wi_double[idx];
    if (negative) x = -x;
    if (rabs < ki_double[idx]) return x; // the common case: inside the strip
    if (idx == 0) {                      // the tail beyond kR
      for (;;) {
        double xx = -kInvR * std::log1p(-g.next_double());
        double yy = -std::log1p(-g.next_double());
        if (yy + yy > xx * xx) return ((rabs >> 8) & 1) ? -(kR + xx) : kR + xx;
      }
    }
    if ((fi_double[idx - 1] - fi_double[idx]) * g.next_double() + fi_double[idx] <
        std::exp(-0.5 * x * x))
      return x;
  }
}

float standard_normal_ziggurat_f(BitGen& g) {
  constexpr float kR = 3.6541528853610088f, kInvR = 0.27366123732975828f;
  for (;;) {
    uint32_t r = g.next32();
    int idx = static_cast<int>(r & 0xff);
    bool negative = (r >> 8) & 1;
    uint32_t rabs = (r >> 9) & 0x0007fffffU;
    float x = static_cast<float>(rabs) * wi_float[idx];
    if (negative) x = -x;
    if (rabs < ki_float[idx]) return x;
    if (idx == 0) {
      for (;;) {
        float xx = -kInvR * std::log1p(-g.next_float());
        float yy = -std::log1p(-g.next_float());
        if (yy + yy > xx * xx) return ((rabs >> 8) & 1) ? -(kR + xx) : kR + xx;
      }
    }
    if ((fi_float[idx - 1] - fi_float[idx]) * g.next_float() + fi_float[idx] <
        std::exp(-0.5f * x * x))
      return x;
  }
}

} // namespace pxl::nprandom
