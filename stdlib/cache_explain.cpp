#include "stdlib/cache_explain.hpp"

#include <limits>

#include "lang/interp_impl.hpp"

namespace pxl {

std::string Signature::key() const {
  std::string k;
  for (const auto& [what, value] : parts) {
    k += what;
    k += '\x1f';
    k += value;
    k += '\x1e';
  }
  return k;
}

void add_trace_config(InterpreterImpl& in, Signature& sig) {
  Value config = in.get_attr(in.import_module("jax", Span{}, ""), "config", Span{});
  for (auto [flag, fallback] : {std::pair{"jax_default_matmul_precision", "None"},
                                std::pair{"jax_numpy_rank_promotion", "'allow'"},
                                std::pair{"jax_numpy_dtype_promotion", "'standard'"}}) {
    std::string v = pxl::repr(in.get_attr(config, flag, Span{}));
    if (v != fallback) sig.add(flag, v);
  }
}

namespace {

// What differs between two signatures, or "" when none does.
std::string differences(const Signature& before, const Signature& now) {
  std::string out;
  auto note = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  size_t n = std::max(before.parts.size(), now.parts.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= before.parts.size()) {
      note("new " + now.parts[i].first + " " + now.parts[i].second);
    } else if (i >= now.parts.size()) {
      note("no " + before.parts[i].first + " (was " + before.parts[i].second + ")");
    } else if (before.parts[i] != now.parts[i]) {
      if (before.parts[i].first != now.parts[i].first)
        note(before.parts[i].first + " " + before.parts[i].second + " is now " +
             now.parts[i].first + " " + now.parts[i].second);
      else
        note(now.parts[i].first + " was " + before.parts[i].second + ", now " +
             now.parts[i].second);
    }
  }
  return out;
}

size_t count_differences(const Signature& a, const Signature& b) {
  size_t n = std::max(a.parts.size(), b.parts.size()), d = 0;
  for (size_t i = 0; i < n; ++i)
    d += i >= a.parts.size() || i >= b.parts.size() || a.parts[i] != b.parts[i];
  return d;
}

} // namespace

void explain_trace_miss(InterpreterImpl& in, const std::string& what, const Span& where,
                        const Signature& now, const std::vector<const Signature*>& seen) {
  if (!in.options().explain_cache) return;
  std::string at;
  if (where.valid())
    at = " at " + where.file->path() + ":" + std::to_string(where.file->line_of(where.begin)) +
         ":" + std::to_string(where.file->column_of(where.begin));
  std::string why = "first call";
  const Signature* closest = nullptr;
  size_t best = std::numeric_limits<size_t>::max();
  for (const Signature* s : seen)
    if (size_t d = count_differences(*s, now); d < best) best = d, closest = s;
  if (closest) {
    why = differences(*closest, now);
    if (why.empty()) why = "its result captured values of an enclosing trace (not cached)";
  }
  in.err() << "pxl: trace cache miss: " << what << at << ": " << why << "\n";
}

} // namespace pxl
