// Bit-exact re-implementations of the elementwise math XLA's CPU backend emits,
// so eager results match JAX on CPU. Each function names the XLA routine it
// mirrors; the multiply-adds that LLVM fuses in XLA's kernels (XLA compiles with
// FP-op fusion on) are written as explicit std::fma calls.
#pragma once
#include <cstdint>

namespace pxl::ref::xla {

// The storage type an XLA op's intermediate results are rounded to: ops that
// XLA expands into several HLO ops (logistic, expm1) round every step for half types.
enum class Round { F32, F16, BF16 };

// float32 (float16/bfloat16 compute in float32 and round on store).
float exp_f32(float x);   // xla/codegen/intrinsic/exp.cc (Cephes-style exp)
float log_f32(float x);   // xla/codegen/intrinsic/log.cc (Cephes-style log)
float log1p_f32(float x); // XLA's EmitLog1p: rational approximation near 0, else log(1+x)
float expm1_f32(float x, Round r = Round::F32); // XLA's EmitExpm1: tanh(x/2) * (exp(x) + 1)
float tanh_f32(float x);  // xla/codegen/intrinsic/tanh.cc (Eigen's generic_fast_tanh_float)
float erf_f32(float x);   // xla/codegen/intrinsic/erf.cc (rational approximation)
float rsqrt_f32(float x); // xla/codegen/intrinsic/rsqrt.cc (rsqrtss + one Newton step)
float logistic_f32(float x, Round r = Round::F32); // LogisticExpander: 1 / (1 + exp(-x))
// XLA calls libm's sinf/cosf; these are glibc 2.36's (Arm's optimized routines,
// evaluated in double; the FMA build's fused multiply-adds), which the JIT
// emits inline. Max error 0.56 ulp, any argument (exact Payne-Hanek reduction).
float sin_f32(float x);
float cos_f32(float x);

// float64.
double tanh_f64(double x);     // xla/codegen/intrinsic/tanh.cc, float64 rational approximation
double exp_f64(double x);      // xla/codegen/intrinsic/exp.cc, float64 Pade-style approximation
double expm1_f64(double x);    // EmitExpm1 on exp_f64 and tanh_f64
double log1p_f64(double x);    // EmitLog1p: rational approximation near 0, else libm log(1+x)
double logistic_f64(double x); // LogisticExpander on exp_f64
double rsqrt_f64(double x);    // xla/codegen/intrinsic/rsqrt.cc (vrsqrt14 + two Newton steps)

// The constants of sin_f32/cos_f32, shared with the JIT's inline version.
inline constexpr uint32_t kTrigTinyTop = 0x398;  // |x| < 2^-12: sin x = x, cos x = 1
inline constexpr uint32_t kTrigSmallTop = 0x3f4; // |x| < pi/4: no reduction
inline constexpr uint32_t kTrigFastTop = 0x42f;  // |x| < 120: one-step reduction
inline constexpr double kTrigHpiInv = 0x1.45F306DC9C883p+23; // 2/pi * 2^24
inline constexpr double kTrigHpi = 0x1.921FB54442D18p0;      // pi/2
inline constexpr double kTrigPio2p63 = 0x1.921FB54442D18p-62; // pi/2 * 2^-61
inline constexpr double kTrigSin[3] = {-0x1.555545995a603p-3, 0x1.1107605230bc4p-7,
                                       -0x1.994eb3774cf24p-13};
inline constexpr double kTrigCos[5] = {0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5,
                                       -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16};
// 4/pi to 192 bits; each entry adds 8 bits, so entries i, i+4 and i+8 form a
// 96-bit window starting at any byte.
inline constexpr uint32_t kInvPio4[24] = {
    0xa2,       0xa2f9,     0xa2f983,   0xa2f9836e, 0xf9836e4e, 0x836e4e44,
    0x6e4e4415, 0x4e441529, 0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
    0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0, 0x34ddc0db, 0xddc0db62,
    0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041};

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
