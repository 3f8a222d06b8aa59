// complex64 elementwise math of the reference kernels, in the forms XLA's CPU
// emitter and JAX's lowerings use (multiplication with its fused products,
// Smith's division, the scaled absolute value, exp, expm1, rsqrt ... from
// XLA's float32 functions), so results round as JAX's. Internal to ir/.
#pragma once
#include <complex>

namespace pxl::ref::cplx {

using C = std::complex<float>;

// XLA's (ac - bd, bc + ad) with one product of each part fused, as LLVM
// contracts it on an FMA host: ac, and bc (ad when y is a broadcast scalar).
C mul(C x, C y, bool scalar_y = false);
C div(C x, C y);
float abs(C z);
C sign(C z);   // z / |z|, z itself at 0 (keeping zeros' signs)
C square(C z); // lax.square's formula
C exp(C z);
C log(C z);
C log1p(C z);
C expm1(C z);
C sqrt(C z);
C rsqrt(C z);
C sin(C z);
C cos(C z);
C tan(C z);
C tanh(C z);
C pow(C x, C y);
bool is_finite(C z);

} // namespace pxl::ref::cplx
