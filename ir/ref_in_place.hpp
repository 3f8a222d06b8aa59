// Reference kernels that may write their result over their first operand's
// elements: a scatter (`ys.at[i].set(y)`) whose operand dies at it and whose
// bytes nothing else holds costs the update, not a copy of the whole array
// (a loop's stacked outputs, updated once a step). The executables decide
// when an operand may be given up (runtime/spmd_steps.hpp).
#pragma once
#include <span>

#include "ir/op.hpp"

namespace pxl {

// Whether `op` has an in-place form (eval_ref_in_place).
bool updates_in_place(Op op);

// eval_ref(op, attrs, {x, rest...}) computed in `x`'s own bytes: `x` becomes
// the result. The caller owns x's buffer alone, and op updates_in_place.
void eval_ref_in_place(Op op, const OpAttrs& attrs, Array& x, std::span<const Array> rest);

} // namespace pxl
