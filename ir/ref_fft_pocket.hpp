// lax.fft's float32 transforms as XLA's CPU runtime computes them: DUCC's
// pocketfft plans (radix 2, 3, 4, 5, 7, 8, 11 and generic passes, Bluestein
// for large primes, real transforms by radf/radb passes) evaluated in float
// with the same operation order, so results agree with JAX bit for bit.
#pragma once

#include <complex>
#include <cstddef>
#include <memory>

namespace pxl::ref::pocket {

class CPass;
class RPass;

// A plan for complex transforms of one length.
class ComplexPlan {
public:
  // `single`: the plan DUCC uses for a line transformed on its own rather
  // than in SIMD lanes (it differs for lengths above 300 that are multiples
  // of 4).
  ComplexPlan(size_t n, bool single);
  ~ComplexPlan();
  size_t length() const { return n_; }
  // One transform in place; forward is exp(-2 pi i jk/n). The result is
  // scaled by `fct` when that is not 1.
  void exec(std::complex<float>* data, bool forward, float fct) const;

private:
  size_t n_;
  std::shared_ptr<const CPass> pass_;
};

// A plan for real transforms of one length.
class RealPlan {
public:
  explicit RealPlan(size_t n);
  ~RealPlan();
  size_t length() const { return n_; }
  // The forward transform of n real points into n/2 + 1 complex ones.
  void r2c(const float* in, std::complex<float>* out, float fct) const;
  // The backward transform of a half spectrum of n/2 + 1 points into n real ones.
  void c2r(const std::complex<float>* in, float* out, float fct) const;

private:
  size_t n_;
  std::shared_ptr<const RPass> pass_;
};

} // namespace pxl::ref::pocket
