// The options of x.at[...]'s methods beyond np.hpp's index/index_update/index_fill
// (JAX's `mode=` and `wrap_negative_indices=`), for the few callers that take them.
#pragma once
#include "stdlib/np.hpp"

namespace pxl::np {

struct IndexOptions {
  bool clip = false;         // mode='clip': out-of-range indices clamp into range
  bool wrap_negative = true; // entries from -n to -1 count from the end first
  // mode='promise_in_bounds': computed as the default mode (a scatter drops
  // what is out of range), shown as JAX's mode under make_jaxpr.
  bool promise_in_bounds = false;
};

// x[items] reading clamped indices (modes None, 'clip', 'promise_in_bounds').
Tensor index_clamped(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                     bool wrap_negative);
// x.at[items].get(mode='fill'): `fill` where an index (static or array) is out of range.
Tensor index_fill(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                  const Tensor& fill, bool wrap_negative);
// x.at[items].<op>(v): an out-of-range update is dropped unless `opts.clip`.
Tensor index_update(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                    const Tensor& v, UpdateMode mode, const IndexOptions& opts);
// How many times each element of x is indexed by x.at[items] (int32, x's shape),
// the way index_update with these options would reach it.
Tensor index_counts(OpContext& cx, const Tensor& x, const std::vector<IndexItem>& items,
                    const IndexOptions& opts);

} // namespace pxl::np
