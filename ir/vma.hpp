// The vma rule of every op: which mesh axes its result may vary over, given
// the operands' sets. pxl's rules (DESIGN §3): elementwise and structural ops
// take the union; psum/pmean/pmax/pmin/all_gather over `a` make the value
// invariant over `a`; psum_scatter/ppermute/all_to_all keep (or make) it varying
// over `a`; axis_index(a) varies over `a`.
#pragma once
#include <span>

#include "ir/function.hpp"

namespace pxl {

// `named`: the bits of attrs.axis_names for collectives (0 otherwise).
// `grouped`: the collective acts within several axis_index_groups, so its
// result still differs between groups: psum/pmax/pmin/all_gather keep the
// operand's axes instead of removing the named ones.
AxisSet infer_vma(Op op, std::span<const AxisSet> operands, AxisSet named, bool grouped = false);

} // namespace pxl
