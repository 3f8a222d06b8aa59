// Which captured constant a value is, looking through the ops that keep a
// scalar constant's value (convert_element_type, broadcast_in_dim): rewrites
// that test a literal's value (a multiply by one) ask this.
#pragma once
#include "ir/function.hpp"

namespace pxl {

// The index in f.consts of the constant `v` is (or converts or broadcasts), -1 if none.
inline int constant_of(const Function& f, int v) {
  for (;;) {
    const IRValue& x = f.values[static_cast<size_t>(v)];
    if (x.producer < 0) break;
    const Instr& p = f.body[static_cast<size_t>(x.producer)];
    if ((p.op != Op::ConvertElementType && p.op != Op::BroadcastInDim) || p.operands.size() != 1)
      return -1;
    v = p.operands[0];
  }
  for (size_t k = 0; k < f.consts.size(); ++k)
    if (f.consts[k] == v) return static_cast<int>(k);
  return -1;
}

} // namespace pxl
