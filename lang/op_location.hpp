// The source location recorded for a traced operation. An operation bound by
// pxl's standard library (its .pxl modules) keeps the location of the user's
// call into the library, so that errors found after tracing (jit's sharding
// checks) point at the user's code, as errors raised during the call do
// (lang/diag.cpp).
#pragma once

#include "ir/tensor.hpp"
#include "lang/source.hpp"

namespace pxl {

inline bool in_library_source(const Span& s) {
  return s.valid() && s.file->path().rfind("<stdlib>/", 0) == 0;
}

// Whether a call from `s` is part of a library composite that JAX compiles
// whole (OpContext::library_call). The scipy.stats distributions are plain
// Python functions in JAX, each of their ops dispatched (and compiled by XLA)
// alone, as a user's own ops are.
inline bool in_library_composite(const Span& s) {
  if (!in_library_source(s)) return false;
  const std::string& path = s.file->path();
  static constexpr std::string_view stats = "<stdlib>/scipy_stats_";
  if (path.rfind(stats, 0) != 0) return true;
  for (std::string_view jitted : {"betabinom", "poisson", "truncnorm", "kde", "core"})
    if (path.compare(stats.size(), jitted.size(), jitted) == 0) return true;
  return false;
}

inline Span op_location(const OpContext& cx, const Span& where) {
  return in_library_source(where) && cx.loc.valid() && !in_library_source(cx.loc) ? cx.loc : where;
}

} // namespace pxl
