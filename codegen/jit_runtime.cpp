// See jit_runtime.hpp. Each wrapper calls exactly what the reference kernel
// (ir/ref_kernels.cpp) calls for that op and dtype, so results are bit-identical.
#include "codegen/jit_runtime.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ir/dtype.hpp"
#include "ir/ref_math.hpp"

namespace pxl {

namespace {

namespace x = ref::xla;

template <class T> T int_pow(T base, T exp) {
  // Mirrors ir/ref_kernels.cpp's int_pow (XLA's semantics, wrapping multiplies).
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? -1 : 1;
      return 0;
    }
  }
  U result = 1, b = static_cast<U>(base);
  while (exp != 0) {
    if (exp & 1) result *= b;
    b *= b;
    exp = static_cast<T>(static_cast<U>(exp) >> 1);
  }
  return static_cast<T>(result);
}

float expm1_f16(float v) { return x::expm1_f32(v, DType::Float16); }
float expm1_bf16(float v) { return x::expm1_f32(v); } // float32 steps, as XLA's bfloat16
float expm1_f32(float v) { return x::expm1_f32(v); }
float logistic_f16(float v) { return x::logistic_f32(v, DType::Float16); }
float logistic_bf16(float v) { return x::logistic_f32(v, DType::BFloat16); }
float logistic_f32(float v) { return x::logistic_f32(v); }
float tan_f32(float v) { return std::tan(v); }
float libm_exp_f32(float v) { return std::exp(v); } // expf, as the reference kernel's libm tail
float libm_log_f32(float v) { return std::log(v); }
float cbrt_f32(float v) { return std::cbrt(v); }
float fmod_f32(float a, float b) { return std::fmod(a, b); }
double log_f64(double v) { return std::log(v); }
double erf_f64(double v) { return std::erf(v); }
double sin_f64(double v) { return std::sin(v); }
double cos_f64(double v) { return std::cos(v); }
double tan_f64(double v) { return std::tan(v); }
double cbrt_f64(double v) { return std::cbrt(v); }
double atan2_f64(double a, double b) { return std::atan2(a, b); }
double pow_f64(double a, double b) { return std::pow(a, b); }
double fmod_f64(double a, double b) { return std::fmod(a, b); }
int32_t pow_i32(int32_t a, int32_t b) { return int_pow(a, b); }
uint32_t pow_u32(uint32_t a, uint32_t b) { return int_pow(a, b); }
float f16_to_f32(uint16_t h) { return half_to_float(h); }
uint16_t f32_to_f16(float f) { return float_to_half(f); }

void* addr(auto* fn) { return reinterpret_cast<void*>(fn); }

} // namespace

std::span<const RuntimeSymbol> jit_runtime_symbols() {
  static const RuntimeSymbol table[] = {
      {"pxl.exp.f32", addr(&x::exp_f32)},        {"pxl.log.f32", addr(&x::log_f32)},
      {"pxl.log1p.f32", addr(&x::log1p_f32)},    {"pxl.expm1.f32", addr(&expm1_f32)},
      {"pxl.expm1.f16", addr(&expm1_f16)},       {"pxl.expm1.bf16", addr(&expm1_bf16)},
      {"pxl.tanh.f32", addr(&x::tanh_f32)},      {"pxl.erf.f32", addr(&x::erf_f32)},
      {"pxl.rsqrt.f32", addr(&x::rsqrt_f32)},    {"pxl.logistic.f32", addr(&logistic_f32)},
      {"pxl.logistic.f16", addr(&logistic_f16)}, {"pxl.logistic.bf16", addr(&logistic_bf16)},
      {"pxl.sin.f32", addr(&x::sin_f32)},        {"pxl.cos.f32", addr(&x::cos_f32)},
      {"pxl.tan.f32", addr(&tan_f32)},           {"pxl.atan2.f32", addr(&x::atan2_f32)},
      {"pxl.pow.f32", addr(&x::pow_f32)},        {"pxl.fmod.f32", addr(&fmod_f32)},
      {"pxl.exp.f64", addr(&x::exp_f64)},        {"pxl.log.f64", addr(&log_f64)},
      {"pxl.log1p.f64", addr(&x::log1p_f64)},    {"pxl.expm1.f64", addr(&x::expm1_f64)},
      {"pxl.tanh.f64", addr(&x::tanh_f64)},      {"pxl.erf.f64", addr(&erf_f64)},
      {"pxl.rsqrt.f64", addr(&x::rsqrt_f64)},    {"pxl.logistic.f64", addr(&x::logistic_f64)},
      {"pxl.sin.f64", addr(&sin_f64)},           {"pxl.cos.f64", addr(&cos_f64)},
      {"pxl.tan.f64", addr(&tan_f64)},           {"pxl.atan2.f64", addr(&atan2_f64)},
      {"pxl.pow.f64", addr(&pow_f64)},           {"pxl.fmod.f64", addr(&fmod_f64)},
      {"pxl.pow.i32", addr(&pow_i32)},           {"pxl.pow.u32", addr(&pow_u32)},
      {"pxl.f16_to_f32", addr(&f16_to_f32)},     {"pxl.f32_to_f16", addr(&f32_to_f16)},
      {"pxl.cbrt.f32", addr(&cbrt_f32)},         {"pxl.cbrt.f64", addr(&cbrt_f64)},
      {"pxl.libm.exp.f32", addr(&libm_exp_f32)}, {"pxl.libm.log.f32", addr(&libm_log_f32)},
  };
  return table;
}

} // namespace pxl
