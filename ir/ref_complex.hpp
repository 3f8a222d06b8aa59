// complex64 elementwise math of the reference kernels, in the forms XLA's CPU
// emitter uses where they matter for rounding (multiplication, Smith's
// division, the scaled absolute value, exp from the float32 exp/cos/sin);
// the other functions compute in double and round once. Internal to ir/.
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
