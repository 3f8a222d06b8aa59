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

inline Span op_location(const OpContext& cx, const Span& where) {
  return in_library_source(where) && cx.loc.valid() && !in_library_source(cx.loc) ? cx.loc : where;
}

} // namespace pxl
