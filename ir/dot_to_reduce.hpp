// XLA's GPU backend turns a dot_general whose operands have only batch and
// contracting dimensions (a dot of vectors, batched or not) into a multiply
// and a reduction (GpuAlgebraicSimplifier's ShouldStrengthReduceDotToReduce):
// a vmapped dot of vectors then sums its products exactly as the unbatched one
// does, and no GEMM library call is made for it. The CUDA platform does the
// same (runtime/cuda/executable.cpp).
#pragma once
#include <memory>

#include "ir/function.hpp"

namespace pxl {

// Whether `in` is such a dot: real operands, XLA's dot order. Free axes of
// extent 1 do not count (XLA's simplifier drops them first): (1, k) . (k, 1)
// is a dot of vectors; the rewrite reshapes them away and back.
bool dot_of_vectors(const Function& f, const Instr& in);

// `f` with every such dot at its top level rewritten as transpose(s) to
// (batch..., contracting...), conversion to the result's type, multiply, and
// reduce_sum over the contracting axes; the result keeps its value id. `f`
// itself when there is none.
std::shared_ptr<const Function> dots_of_vectors_to_reduce(std::shared_ptr<const Function> f);

} // namespace pxl
