// See buffer_plan.hpp. Liveness is over the plan's steps, inclusive at both
// ends: a kernel's output (defined at its step) and its inputs (read at it)
// always overlap, which is what lets kernels declare their buffers noalias.
#include "codegen/buffer_plan.hpp"

#include <algorithm>

namespace pxl {

namespace {

int64_t aligned(int64_t n) {
  return (n + BufferPlan::kAlign - 1) / BufferPlan::kAlign * BufferPlan::kAlign;
}

// Host steps that keep what they are given past the step: jax.debug.print's
// records are printed after the run; an SPMD call's callee may return views
// of its arguments, a while loop its carry when it runs no iteration; a host
// callback may keep its arguments (in a list) or return them.
bool keeps_operands(Op op) {
  return op == Op::DebugPrint || op == Op::HostCallback || op == Op::SpmdCall || op == Op::While;
}

struct Item {
  int64_t bytes = 0;
  int def = 0, last = 0;
  int64_t offset = 0;
  int id = 0; // value id, or -1 - kernel for a scratch buffer
};

// First fit, biggest first: each item takes the lowest aligned offset where it
// overlaps no placed item whose live range meets its own.
int64_t place(std::vector<Item>& items) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
    return items[a].def < items[b].def;
  });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t i : order) {
    Item& it = items[i];
    std::vector<std::pair<int64_t, int64_t>> busy; // [offset, end) of conflicting items
    for (size_t p : placed) {
      const Item& q = items[p];
      if (q.def <= it.last && it.def <= q.last)
        busy.push_back({q.offset, q.offset + aligned(q.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto [b, e] : busy) {
      if (at + it.bytes <= b) break;
      at = std::max(at, e);
    }
    it.offset = at;
    total = std::max(total, at + aligned(it.bytes));
    placed.push_back(i);
  }
  return total;
}

} // namespace

BufferPlan plan_buffers(const Function& f, const KernelPlan& plan) {
  using Kind = BufferPlan::Kind;
  const size_t nv = f.values.size();
  BufferPlan b;
  b.values.resize(nv);
  b.scratch.assign(plan.kernels.size(), -1);
  for (size_t v = 0; v < nv; ++v) {
    const AVal& a = f.values[v].aval;
    b.values[v].bytes = a.size() * static_cast<int64_t>(dtype_size(a.dtype));
  }
  for (int p : f.params) b.values[p].kind = Kind::Input;
  for (int c : f.consts) b.values[c].kind = Kind::Input;

  // root[v]: the kernel output whose bytes v is (itself, or what a chain of
  // host reshapes started from); escapes[root]: some member is seen outside.
  std::vector<int> root(nv, -1);
  std::vector<bool> escapes(nv, false);
  auto use = [&](int v, int s) { b.values[v].last = std::max(b.values[v].last, s); };
  std::vector<Item> items;
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& st = plan.steps[si];
    int s = static_cast<int>(si);
    if (st.kind == Step::Kind::Kernel) {
      const Kernel& kn = plan.kernels[st.index];
      for (int v : kn.inputs) use(v, s);
      BufferPlan::Slot& out = b.values[kn.root];
      out.kind = Kind::Owned; // until it is known not to escape
      out.def = out.last = s;
      root[kn.root] = kn.root;
      if (int64_t sb = kernel_scratch_bytes(f, kn); sb > 0)
        items.push_back({sb, s, s, 0, -1 - st.index});
      continue;
    }
    const Instr& in = f.body[st.index];
    for (int v : in.operands) {
      use(v, s);
      if (keeps_operands(in.op) && root[v] >= 0) escapes[root[v]] = true;
    }
    for (int r = in.result; r < in.result + in.nresults; ++r) {
      b.values[r].kind = Kind::Host;
      b.values[r].def = b.values[r].last = s;
    }
    if (in.op == Op::Reshape && root[in.operands[0]] >= 0) root[in.result] = root[in.operands[0]];
  }
  for (int r : f.results)
    if (root[r] >= 0) escapes[root[r]] = true;

  // An alias group is live from its root's definition to its members' last read.
  std::vector<int> group_last(nv, -1);
  for (size_t v = 0; v < nv; ++v)
    if (root[v] >= 0) group_last[root[v]] = std::max(group_last[root[v]], b.values[v].last);
  for (size_t v = 0; v < nv; ++v)
    if (root[v] == static_cast<int>(v) && !escapes[v])
      items.push_back({b.values[v].bytes, b.values[v].def, group_last[v], 0, static_cast<int>(v)});
  b.arena_bytes = place(items);
  for (const Item& it : items) {
    if (it.id < 0) {
      b.scratch[-1 - it.id] = it.offset;
      continue;
    }
    BufferPlan::Slot& s = b.values[it.id];
    s.kind = Kind::Arena;
    s.offset = it.offset;
    s.last = it.last;
  }
  for (size_t v = 0; v < nv; ++v) {
    int r = root[v];
    if (r < 0 || r == static_cast<int>(v) || escapes[r]) continue;
    BufferPlan::Slot& s = b.values[v];
    s.kind = Kind::Alias;
    s.root = r;
    s.offset = b.values[r].offset;
    s.def = b.values[r].def;
    s.last = b.values[r].last;
  }
  return b;
}

std::string describe_buffers(const BufferPlan& b) {
  std::string arena, owned;
  for (size_t v = 0; v < b.values.size(); ++v) {
    const BufferPlan::Slot& s = b.values[v];
    std::string id = "%" + std::to_string(v);
    if (s.kind == BufferPlan::Kind::Arena || s.kind == BufferPlan::Kind::Alias)
      arena += (arena.empty() ? "" : ", ") + id +
               (s.kind == BufferPlan::Kind::Alias ? "=%" + std::to_string(s.root) : "") + " @" +
               std::to_string(s.offset) + " [" + std::to_string(s.def) + "," +
               std::to_string(s.last) + "]";
    else if (s.kind == BufferPlan::Kind::Owned)
      owned += (owned.empty() ? "%" : ", %") + std::to_string(v);
  }
  for (size_t k = 0; k < b.scratch.size(); ++k)
    if (b.scratch[k] >= 0)
      arena += (arena.empty() ? "" : ", ") + std::string("scratch k") + std::to_string(k) + " @" +
               std::to_string(b.scratch[k]);
  return "arena " + std::to_string(b.arena_bytes) + " bytes: " + arena + "; owned: " + owned;
}

} // namespace pxl
