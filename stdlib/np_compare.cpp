// allclose and array_equal: they answer a Python bool, so they need the values.
#include <cmath>

#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

bool allclose(OpContext& cx, const Tensor& a0, const Tensor& b0, double rtol, double atol,
              bool equal_nan) {
  Shape s = broadcast_shapes("allclose", av(a0).shape, av(b0).shape);
  PromotedType p = to_inexact(promote_types(av(a0).dtype, av(a0).weak, av(b0).dtype, av(b0).weak));
  // The tensors own the arrays concrete() refers to, so they are kept in locals.
  Tensor ta = broadcast(cx, convert(cx, a0, p.dtype, p.weak), s, "allclose");
  Tensor tb = broadcast(cx, convert(cx, b0, p.dtype, p.weak), s, "allclose");
  const Array& a = cx.concrete(ta);
  const Array& b = cx.concrete(tb);
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.get_f64(i), y = b.get_f64(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (equal_nan && std::isnan(x) && std::isnan(y)) continue;
      return false;
    }
    if (x == y) continue; // also equal infinities
    if (std::isinf(x) || std::isinf(y)) return false;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) return false;
  }
  return true;
}

bool array_equal(OpContext& cx, const Tensor& a0, const Tensor& b0) {
  if (av(a0).shape != av(b0).shape) return false;
  PromotedType p = promote_types(av(a0).dtype, av(a0).weak, av(b0).dtype, av(b0).weak);
  Tensor ta = convert(cx, a0, p.dtype, p.weak), tb = convert(cx, b0, p.dtype, p.weak);
  const Array& a = cx.concrete(ta);
  const Array& b = cx.concrete(tb);
  for (int64_t i = 0; i < a.size(); ++i)
    if (!(a.get_f64(i) == b.get_f64(i))) return false; // NaN != NaN, as numpy
  return true;
}

} // namespace pxl::np
