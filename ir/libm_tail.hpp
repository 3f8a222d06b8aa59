// Which exp and log ops of a jitted program take the C library's expf/logf
// for their last elements (OpAttrs::libm_tail), as XLA's CPU code does when
// such an op is a kernel of its own.
//
// XLA fuses elementwise ops into loops that LLVM unrolls when short; its SLP
// vectorizer packs a rank-1 float32 loop's elements past the last multiple
// of 8 into one vector, and XLA's exp and log exist only for vectors of 1, 2,
// 4 and 8 lanes, so a vector of 3, 5, 6 or 7 lanes becomes calls of expf and
// logf (ref::xla::libm_tail_start). Fused with other arithmetic the lanes pack
// differently, so only an op that is a loop of its own takes them: one that
// reads a program input (maybe converted) or the result of an op XLA does not
// fuse (linear algebra, an fft, a collective, a loop, a host callback), and
// whose value is a program result or read by two or more ops (XLA does not
// duplicate an exp into several fusions). Measured against JAX 0.10.2; a
// negation or a sum in front takes them too for 5 or 6 lanes, as does a sort,
// but not a product or a reduction (not modelled: pxl keeps XLA's values).
#pragma once
#include <memory>

#include "ir/function.hpp"

namespace pxl {

// `f` with libm_tail set on those exp and log ops; `f` itself when none is.
std::shared_ptr<const Function> mark_libm_tails(std::shared_ptr<const Function> f);

} // namespace pxl
