// --explain-cache: why a transformation traces its function again. A cache
// key is kept as labelled parts so a miss can name what changed ("argument 1:
// f32[8] -> f32[16]"), as JAX's jax_explain_cache_misses does.
#pragma once
#include <string>
#include <vector>

#include "lang/source.hpp"

namespace pxl {

class InterpreterImpl;

struct Signature {
  std::vector<std::pair<std::string, std::string>> parts; // (what, value)
  void add(std::string what, std::string value) {
    parts.emplace_back(std::move(what), std::move(value));
  }
  std::string key() const; // the parts joined unambiguously (the cache key)
};

// The config flags that change how a function traces, each set to other than
// its default (JAX keys its trace caches on them).
void add_trace_config(InterpreterImpl& in, Signature& sig);

// With --explain-cache, writes one line to the error stream: "pxl: trace
// cache miss: jit(f) at file:line:col: <why>", where `why` compares `now` with
// the closest of the `seen` signatures (or says it is the first call).
void explain_trace_miss(InterpreterImpl& in, const std::string& what, const Span& where,
                        const Signature& now, const std::vector<const Signature*>& seen);

} // namespace pxl
