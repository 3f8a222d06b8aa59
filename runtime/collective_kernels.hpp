// The element loops of the collectives, one per dtype and reduction: the
// rendezvous logic in collectives.cpp only decides who copies or reduces which
// element range.
#pragma once
#include <cstdint>

#include "ir/dtype.hpp"
#include "runtime/collectives.hpp"

namespace pxl::coll {

// For each i in [0, n): r = ins[0][i] op ins[1][i] op ... op ins[nins-1][i],
// combined strictly in that order (so float results never depend on which
// thread ran the loop), then stored to outs[0][i] .. outs[nouts-1][i].
// f16/bf16 accumulate in f32 and round once; int32/uint32 wrap; bool Sum and
// Max are logical or, Min logical and. Pointers are already offset to element
// 0 of the range. Outputs may alias inputs at the same position: every input
// element is read before the matching output is written.
//
// `streaming`: the outputs will not be read again soon (buffers far larger
// than the caches), so store them with non-temporal writes, which skip reading
// each destination line into the cache first — a third of the memory traffic.
void reduce(DType dtype, ReduceKind kind, const void* const* ins, int nins, void* const* outs,
            int nouts, int64_t n, bool streaming = false);

// memcpy, with non-temporal stores when `streaming` (see reduce).
void copy(void* dst, const void* src, size_t bytes, bool streaming);

} // namespace pxl::coll
