// Bit-exact re-implementations of the elementwise math XLA's CPU backend emits,
// so eager results match JAX on CPU. Each function names the XLA routine it
// mirrors; the multiply-adds that LLVM fuses in XLA's kernels (XLA compiles with
// FP-op fusion on) are written as explicit std::fma calls.
#pragma once
#include <cstdint>

#include "ir/dtype.hpp"

namespace pxl::ref::xla {

// The storage type an XLA op's intermediate results are rounded to: ops that
// XLA expands into several HLO ops (logistic, expm1) round every step for half
// types and float8 types (float32 and float64: no rounding).
using Round = DType;

// float32 (float16/bfloat16 compute in float32 and round on store).
float exp_f32(float x);   // xla/codegen/intrinsic/exp.cc (Cephes-style exp)
float log_f32(float x);   // xla/codegen/intrinsic/log.cc (Cephes-style log)
float log1p_f32(float x); // XLA's EmitLog1p: rational approximation near 0, else log(1+x)
float expm1_f32(float x, Round r = DType::Float32); // XLA's EmitExpm1: tanh(x/2) * (exp(x) + 1)
float tanh_f32(float x);      // xla/codegen/intrinsic/tanh.cc (Eigen's generic_fast_tanh_float)
float erf_f32(float x);       // xla/codegen/intrinsic/erf.cc (rational approximation)
float erf_inv_f32(float x);   // chlo's ErfInv (Giles' polynomial on log1p_f32)
float rsqrt_f32(float x);     // xla/codegen/intrinsic/rsqrt.cc (rsqrtss + Newton steps)
int rsqrt_f32_newton_steps(); // 1 on AMD CPUs, 2 elsewhere, as XLA's
float logistic_f32(float x, Round r = DType::Float32); // LogisticExpander: 1 / (1 + exp(-x))
// XLA calls libm's sinf/cosf; these are glibc 2.36's (Arm's optimized routines,
// evaluated in double; the FMA build's fused multiply-adds), which the JIT
// emits inline. Max error 0.56 ulp, any argument (exact Payne-Hanek reduction).
float sin_f32(float x);
float cos_f32(float x);
// XLA calls libm's powf: glibc 2.36's (Arm's optimized routines: log2 from a
// 16-entry table, exp2 from a 32-entry one, in double), emitted inline too.
float pow_f32(float x, float y);
// XLA calls libm's atan2f: glibc 2.36's (fdlibm's, in float), emitted inline too.
float atan2_f32(float y, float x);

// XLA's CPU code for a rank-1 float32 loop of fewer than 16 elements: LLVM
// unrolls it, and its SLP vectorizer packs the elements past the first 8 (all
// of them below 8) into one vector of that width. XLA's exp and log exist for
// vectors of 1, 2, 4 and 8 lanes only, so a vector of 3, 5, 6 or 7 lanes is
// split into calls of the C library's expf and logf. The first element that
// takes them, or -1 for none.
inline int64_t libm_tail_start(int64_t rank, int64_t n) {
  int64_t tail = n % 8;
  if (rank != 1 || n >= 16 || tail < 3 || tail == 4) return -1;
  return n - tail;
}

// float64.
double tanh_f64(double x);     // xla/codegen/intrinsic/tanh.cc, float64 rational approximation
double exp_f64(double x);      // xla/codegen/intrinsic/exp.cc, float64 Pade-style approximation
double expm1_f64(double x);    // EmitExpm1 on exp_f64 and tanh_f64
double log1p_f64(double x);    // EmitLog1p: rational approximation near 0, else libm log(1+x)
double logistic_f64(double x); // LogisticExpander on exp_f64
double rsqrt_f64(double x);    // xla/codegen/intrinsic/rsqrt.cc (vrsqrt14 + two Newton steps)
double erf_inv_f64(double x);  // erf_inv_f32's polynomial evaluated in double

// The coefficients of erf_inv, highest power first (float32 bit patterns), for
// w < 5 and w >= 5.
inline constexpr uint32_t kErfInvSmall[9] = {0x32f16588, 0x34b84b36, 0xb66c7357,
                                             0xb6935ac1, 0x396532db, 0xbaa45408,
                                             0xbb88e4ef, 0x3e7c8f63, 0x3fc02e2f};
inline constexpr uint32_t kErfInvLarge[9] = {0xb951f09b, 0x38d3b56b, 0x3ab0dc72,
                                             0xbb70bde7, 0x3bbc127b, 0xbbf9c5d7,
                                             0x3c1aa57e, 0x3f8036db, 0x40354f7e};

// The constants of sin_f32/cos_f32, shared with the JIT's inline version.
inline constexpr uint32_t kTrigTinyTop = 0x398;               // |x| < 2^-12: sin x = x, cos x = 1
inline constexpr uint32_t kTrigSmallTop = 0x3f4;              // |x| < pi/4: no reduction
inline constexpr uint32_t kTrigFastTop = 0x42f;               // |x| < 120: one-step reduction
inline constexpr double kTrigHpiInv = 0x1.45F306DC9C883p+23;  // 2/pi * 2^24
inline constexpr double kTrigHpi = 0x1.921FB54442D18p0;       // pi/2
inline constexpr double kTrigPio2p63 = 0x1.921FB54442D18p-62; // pi/2 * 2^-61
inline constexpr double kTrigSin[3] = {-0x1.555545995a603p-3, 0x1.1107605230bc4p-7,
                                       -0x1.994eb3774cf24p-13};
inline constexpr double kTrigCos[5] = {0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5,
                                       -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16};
// 4/pi to 192 bits; each entry adds 8 bits, so entries i, i+4 and i+8 form a
// 96-bit window starting at any byte.
inline constexpr uint32_t kInvPio4[24] = {
    0xa2,       0xa2f9,     0xa2f983,   0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
    0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
    0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041};

// The tables of pow_f32: log2(x) = log2(c) + log2(z/c) for c the centre of
// z's sixteenth of [0x1.66p-1, 0x1.66p0), and 2^(k/32) for exp2.
inline constexpr double kPowInvc[16] = {0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0,
                                        0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
                                        0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,
                                        0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
                                        0x1.0953f419900a7p+0, 0x1p+0,
                                        0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
                                        0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1,
                                        0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
inline constexpr double kPowLogc[16] = {-0x1.efec65b963019p-2, -0x1.b0b6832d4fca4p-2,
                                        -0x1.7418b0a1fb77bp-2, -0x1.39de91a6dcf7bp-2,
                                        -0x1.01d9bf3f2b631p-2, -0x1.97c1d1b3b7afp-3,
                                        -0x1.2f9e393af3c9fp-3, -0x1.960cbbf788d5cp-4,
                                        -0x1.a6f9db6475fcep-5, 0x0p+0,
                                        0x1.338ca9f24f53dp-4,  0x1.476a9543891bap-3,
                                        0x1.e840b4ac4e4d2p-3,  0x1.40645f0c6651cp-2,
                                        0x1.88e9c2c1b9ff8p-2,  0x1.ce0a44eb17bccp-2};
inline constexpr double kPowLog2Poly[5] = {0x1.27616c9496e0bp-2, -0x1.71969a075c67ap-2,
                                           0x1.ec70a6ca7baddp-2, -0x1.7154748bef6c8p-1,
                                           0x1.71547652ab82bp+0};
inline constexpr uint64_t kExp2fTab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
inline constexpr double kExp2fPoly[3] = {0x1.c6af84b912394p-5, 0x1.ebfce50fac4f3p-3,
                                         0x1.62e42ff0c52d6p-1};
inline constexpr double kExp2fShift = 0x1.8p+52 / 32;        // rounds to a multiple of 1/32
inline constexpr double kPowOverflow = 0x1.fffffffd1d571p+6; // y log2 x above: inf

// The constants of atan2_f32: atan(x) for x in [0, 0.4375) by a polynomial,
// else atan(c) + atan((x - c) / (1 + c x)) for c = 0.5, 1, 1.5, inf.
inline constexpr float kAtanHi[4] = {0x1.dac670p-2f, 0x1.921fb4p-1f, 0x1.f730bcp-1f,
                                     0x1.921fb4p+0f};
inline constexpr float kAtanLo[4] = {0x1.586ed2p-28f, 0x1.4442d0p-25f, 0x1.281f68p-25f,
                                     0x1.4442d0p-24f};
inline constexpr float kAtanPoly[11] = {0x1.555556p-2f,  -0x1.99999ap-3f, 0x1.24924ap-3f,
                                        -0x1.c71c70p-4f, 0x1.745cdcp-4f,  -0x1.3b0f2ap-4f,
                                        0x1.10d66ap-4f,  -0x1.dde2d6p-5f, 0x1.97b4b2p-5f,
                                        -0x1.2b4442p-5f, 0x1.0ad3aep-6f};
inline constexpr float kAtanPi = 0x1.921fb6p+1f;     // pi rounded to float
inline constexpr float kAtanPiLo = -0x1.777a5cp-24f; // pi - kAtanPi
inline constexpr float kAtanPio2 = 0x1.921fb6p+0f;
inline constexpr float kAtanPio4 = 0x1.921fb6p-1f;
inline constexpr int kAtan2Far = 26; // |y/x| beyond 2^this: atan2 is +-pi/2 or 0, +-pi

// Sets the x86 MXCSR flush-to-zero and denormals-are-zero bits for the scope,
// as XLA's CPU runtime does around every computation.
class ScopedFlushDenormal {
public:
  ScopedFlushDenormal();
  ~ScopedFlushDenormal();
  ScopedFlushDenormal(const ScopedFlushDenormal&) = delete;
  ScopedFlushDenormal& operator=(const ScopedFlushDenormal&) = delete;

private:
  unsigned saved_ = 0;
};

} // namespace pxl::ref::xla
