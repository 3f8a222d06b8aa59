// Philox-4x32 as XLA's rng_bit_generator expander builds it on CPU (XLA's
// PhiloxBitGenerator, without key scrambling). The uint32[4] key is XLA's
// u64[2] state, little-endian word pairs: the Philox key is state[0] = words
// (k0, k1); the 128-bit counter is (state[1], state[0]), i.e. words
// (k2, k3, k0, k1) from the least significant. Counter c + i yields four
// words, placed at 4 * i .. 4 * i + 3 of the output; the new state keeps
// state[0] and advances state[1] (mod 2**64) by the number of counters.
// Built from uint32 ops only (the high product word by 16-bit halves), so it
// needs no 64-bit types and the same code serves concrete and traced keys.
#include "stdlib/np_philox.hpp"

#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

Tensor u32c(OpContext& cx, uint32_t v, const Shape& shape) {
  return broadcast(cx, constant(cx, Scalar::of_int(v), DType::UInt32), shape, "rng_bit_generator");
}

Tensor op(OpContext& cx, Op o, const Tensor& a, const Tensor& b) { return bind(cx, o, {}, {a, b}); }

// 1 where a + b carried out of 32 bits (sum < a), else 0, as uint32.
Tensor carry(OpContext& cx, const Tensor& sum, const Tensor& a) {
  return convert(cx, op(cx, Op::Lt, sum, a), DType::UInt32, false);
}

// The high 32 bits of x * m (x uint32, m a constant).
Tensor mulhi(OpContext& cx, const Tensor& x, uint32_t m) {
  const Shape& s = av(x).shape;
  Tensor m16 = u32c(cx, 0xFFFF, s), s16 = u32c(cx, 16, s);
  Tensor xl = op(cx, Op::And, x, m16), xh = op(cx, Op::ShiftRightLogical, x, s16);
  Tensor ml = u32c(cx, m & 0xFFFF, s), mh = u32c(cx, m >> 16, s);
  Tensor lo = op(cx, Op::Mul, xl, ml), mid1 = op(cx, Op::Mul, xh, ml),
         mid2 = op(cx, Op::Mul, xl, mh);
  Tensor c = op(cx, Op::Add, op(cx, Op::ShiftRightLogical, lo, s16),
                op(cx, Op::Add, op(cx, Op::And, mid1, m16), op(cx, Op::And, mid2, m16)));
  Tensor hi = op(cx, Op::Add, op(cx, Op::Mul, xh, mh), op(cx, Op::ShiftRightLogical, mid1, s16));
  hi = op(cx, Op::Add, hi, op(cx, Op::ShiftRightLogical, mid2, s16));
  return op(cx, Op::Add, hi, op(cx, Op::ShiftRightLogical, c, s16));
}

} // namespace

std::pair<Tensor, Tensor> philox_words_ops(OpContext& cx, const Tensor& key, int64_t n) {
  const int64_t nvec = (n + 3) / 4;
  const Shape s{nvec};
  Tensor k0 = key_word(cx, key, 0, s), k1 = key_word(cx, key, 1, s), k2 = key_word(cx, key, 2, s),
         k3 = key_word(cx, key, 3, s);
  // The counters (k2, k3, k0, k1) + i, with carries between the words.
  Tensor x0 = op(cx, Op::Add, k2, iota(cx, DType::UInt32, s, 0));
  Tensor c = carry(cx, x0, k2);
  Tensor x1 = op(cx, Op::Add, k3, c);
  c = op(cx, Op::And, c, carry(cx, x1, k3));
  Tensor x2 = op(cx, Op::Add, k0, c);
  c = op(cx, Op::And, c, carry(cx, x2, k0));
  Tensor x3 = op(cx, Op::Add, k1, c);
  Tensor a = k0, b = k1;
  for (int round = 0; round < 10; ++round) {
    Tensor hi0 = mulhi(cx, x0, 0xD2511F53u), lo0 = op(cx, Op::Mul, x0, u32c(cx, 0xD2511F53u, s));
    Tensor hi1 = mulhi(cx, x2, 0xCD9E8D57u), lo1 = op(cx, Op::Mul, x2, u32c(cx, 0xCD9E8D57u, s));
    x0 = op(cx, Op::Xor, op(cx, Op::Xor, hi1, x1), a);
    x1 = lo1;
    x2 = op(cx, Op::Xor, op(cx, Op::Xor, hi0, x3), b);
    x3 = lo0;
    a = op(cx, Op::Add, a, u32c(cx, 0x9E3779B9u, s));
    b = op(cx, Op::Add, b, u32c(cx, 0xBB67AE85u, s));
  }
  Tensor words = reshape_to(cx, stack(cx, {x0, x1, x2, x3}, 1), {nvec * 4});
  if (nvec * 4 != n) {
    OpAttrs sl;
    sl.starts = {0};
    sl.limits = {n};
    sl.strides = {1};
    words = bind(cx, Op::Slice, sl, {words});
  }
  // The new state: state[1] + nvec (mod 2**64) in words 2 and 3.
  const Shape one{};
  Tensor w2 = key_word(cx, key, 2, one), w3 = key_word(cx, key, 3, one);
  uint64_t add = static_cast<uint64_t>(nvec);
  Tensor s2 = op(cx, Op::Add, w2, u32c(cx, static_cast<uint32_t>(add), one));
  Tensor s3 = op(cx, Op::Add, op(cx, Op::Add, w3, u32c(cx, static_cast<uint32_t>(add >> 32), one)),
                 carry(cx, s2, w2));
  Tensor new_key = stack(cx, {key_word(cx, key, 0, one), key_word(cx, key, 1, one), s2, s3}, 0);
  return {new_key, words};
}

} // namespace pxl::np
