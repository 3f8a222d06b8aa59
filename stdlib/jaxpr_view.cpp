#include "stdlib/jaxpr_view.hpp"

#include <algorithm>

#include "lang/jaxpr_record.hpp"
#include "stdlib/jaxpr_eqns.hpp"

namespace pxl {

namespace {

void resolve_aliases(Function& g, const JaxprRecord* rec) {
  if (!rec || rec->alias.empty()) return;
  for (Instr& i : g.body)
    for (int& o : i.operands)
      for (int guard = 0; guard < 64; ++guard) {
        auto a = rec->alias.find(o);
        if (a == rec->alias.end()) break;
        o = a->second;
      }
}

// Whether instruction `j`, moved right after instruction `k`, stays in the
// same recorded regions and hidden ranges. A region that ends (begins) right
// after k has the moved instruction outside (before) it.
bool same_regions(const JaxprRecord& rec, size_t j, size_t k) {
  auto holds_j = [&](size_t b, size_t e) { return b <= j && j < e; };
  auto holds_point = [&](size_t b, size_t e) { return b <= k && k + 1 < e; };
  for (const JaxprRegion& g : rec.regions)
    if (g.closed && holds_j(g.begin, g.end) != holds_point(g.begin, g.end)) return false;
  for (auto [b, e] : rec.hidden)
    if (holds_j(b, e) != holds_point(b, e)) return false;
  return true;
}

} // namespace

JaxprView jaxpr_view(const Function& f, const JaxprRecord* rec) {
  JaxprView v;
  v.fn = f;
  v.rec = rec;
  resolve_aliases(v.fn, rec);
  if (!rec || rec->moved.empty()) return v;
  const size_t n = f.body.size();
  // The moves that keep every operand defined before its use and every
  // instruction in its regions; an invalid one stays where it was (and so do
  // the moves that need it).
  std::vector<char> moved(n, 0);
  std::vector<size_t> target(n, 0);
  std::vector<std::vector<size_t>> after(n); // per k: what follows it, in order
  for (auto [j, k] : rec->moved) {
    if (j >= n || k >= j || moved[j] || moved[k] || !same_regions(*rec, j, k)) continue;
    bool ready = true;
    for (int o : v.fn.body[j].operands) {
      int p = v.fn.values[static_cast<size_t>(o)].producer;
      if (p < 0) continue;
      auto pu = static_cast<size_t>(p);
      ready = ready && (moved[pu] ? target[pu] == k : pu <= k);
    }
    if (!ready) continue;
    moved[j] = 1;
    target[j] = k;
    after[k].push_back(j);
  }
  std::vector<size_t> order, newpos(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (moved[i]) continue;
    order.push_back(i);
    for (size_t j : after[i]) order.push_back(j);
  }
  std::vector<Instr> body;
  body.reserve(n);
  for (size_t p = 0; p < order.size(); ++p) {
    newpos[order[p]] = p;
    body.push_back(std::move(v.fn.body[order[p]]));
  }
  v.fn.body = std::move(body);
  for (IRValue& val : v.fn.values)
    if (val.producer >= 0)
      val.producer = static_cast<int>(newpos[static_cast<size_t>(val.producer)]);
  // A boundary before old instruction x: the instructions now before it.
  std::vector<size_t> stays_before(n + 1, 0), lands_before_begin(n + 1, 0),
      lands_before_end(n + 1, 0);
  for (size_t x = 0; x < n; ++x) stays_before[x + 1] = stays_before[x] + (moved[x] ? 0 : 1);
  for (size_t j = 0; j < n; ++j)
    if (moved[j]) {
      ++lands_before_begin[target[j] + 1];
      if (target[j] + 2 <= n) ++lands_before_end[target[j] + 2];
    }
  for (size_t x = 1; x <= n; ++x) {
    lands_before_begin[x] += lands_before_begin[x - 1];
    lands_before_end[x] += lands_before_end[x - 1];
  }
  auto begin_at = [&](size_t x) {
    x = std::min(x, n);
    return stays_before[x] + lands_before_begin[x];
  };
  auto end_at = [&](size_t x) {
    x = std::min(x, n);
    return stays_before[x] + lands_before_end[x];
  };
  v.renumbered = std::make_unique<JaxprRecord>(*rec);
  for (JaxprRegion& g : v.renumbered->regions) {
    if (!g.closed) continue;
    g.begin = begin_at(g.begin);
    g.end = std::max(g.begin, end_at(g.end));
  }
  for (auto& [b, e] : v.renumbered->hidden) {
    b = begin_at(b);
    e = std::max(b, end_at(e));
  }
  for (size_t& a : v.renumbered->add_any)
    if (a < n) a = newpos[a];
  v.renumbered->moved.clear();
  v.rec = v.renumbered.get();
  return v;
}

void name_add_any(const JaxprView& view, JaxprReading& rd) {
  if (!view.rec) return;
  for (size_t i : view.rec->add_any)
    if (i < view.fn.body.size() && view.fn.body[i].op == Op::Add) rd.prim[i] = "add_any";
}

} // namespace pxl
