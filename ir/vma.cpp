#include "ir/vma.hpp"

namespace pxl {

AxisSet infer_vma(Op op, std::span<const AxisSet> operands, AxisSet named, bool grouped) {
  AxisSet all = 0;
  for (AxisSet s : operands) all |= s;
  switch (op_family(op)) {
  case OpFamily::Unary:
  case OpFamily::Binary:
  case OpFamily::Compare:
  case OpFamily::Select:
  case OpFamily::Nary:
  case OpFamily::Convert:
  case OpFamily::Creation:
  case OpFamily::Structural:
  case OpFamily::Reduce:
  case OpFamily::Scan:
  case OpFamily::Dot:
  case OpFamily::Index:
  case OpFamily::Linalg:
    return all;
  case OpFamily::Effect:
  case OpFamily::Call: // only single-device code calls an SPMD function
    return 0;
  case OpFamily::Loop: // bound with bind_call, which takes the vma from the body
  case OpFamily::Collective:
    break;
  }
  switch (op) {
  case Op::Pmax:
  case Op::Pmin:
    // JAX types these invariant over the named axes even with
    // axis_index_groups (each group then holds its own value).
    return all & ~named;
  case Op::Psum:
  case Op::AllGather:
    if (grouped) return all;
    return all & ~named; // every device of the group now holds the same data
  case Op::PsumScatter:
  case Op::Ppermute:
  case Op::AllToAll:
  case Op::AxisIndex:
    return all | named;
  default:
    return all;
  }
}

} // namespace pxl
