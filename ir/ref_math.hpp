// Bit-exact re-implementations of the elementwise math XLA's CPU backend emits,
// so eager results match JAX on CPU. Each function names the XLA routine it
// mirrors; the multiply-adds that LLVM fuses in XLA's kernels (XLA compiles with
// FP-op fusion on) are written as explicit std::fma calls.
#pragma once

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

// float64.
double tanh_f64(double x);     // xla/codegen/intrinsic/tanh.cc, float64 rational approximation
double exp_f64(double x);      // xla/codegen/intrinsic/exp.cc, float64 Pade-style approximation
double expm1_f64(double x);    // EmitExpm1 on exp_f64 and tanh_f64
double log1p_f64(double x);    // EmitLog1p: rational approximation near 0, else libm log(1+x)
double logistic_f64(double x); // LogisticExpander on exp_f64
double rsqrt_f64(double x);    // xla/codegen/intrinsic/rsqrt.cc (vrsqrt14 + two Newton steps)

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
