// Fusion: a greedy producer-into-consumer inliner. Cheap, pure producers are
// recomputed inside every kernel that reads them (XLA's loop fusion), so a
// chain of elementwise ops, or a reduction and its elementwise prologue, is one
// loop; everything else becomes a host step.
#include "codegen/plan.hpp"

#include "ir/reduce_tree.hpp"
#include "ir/ref_reduce_ynn.hpp"

#include <algorithm>
#include <set>

namespace pxl {

namespace {

// A value read by more fused consumers than this is computed once into a
// buffer rather than recomputed in each of them.
constexpr size_t kMaxRecompute = 4;

bool is_reduce_op(Op op) {
  switch (op) {
  case Op::ReduceSum:
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceProd:
  case Op::ReduceAnd:
  case Op::ReduceOr:
    return true;
  default:
    return false;
  }
}

bool is_half_or_bool(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Bool;
}

Shape squeezed(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

// Whether a reshape only inserts or drops size-1 axes (keepdims=True): fused
// where it is inlined, it reads its operand at the same indices.
bool unit_dim_reshape(const Shape& from, const Shape& to) { return squeezed(from) == squeezed(to); }

// How a value is indexed inside a loop kernel, relative to the kernel's loop
// indices: exactly them (Top), by the loop indices of the row's axes, its
// size-1 axes aside (Row), or anything else.
enum class Index { Top, Row, Other };

// Whether every read of `v` in the kernel rooted at `value` happens at the
// current row's index (see Kernel::row_reduce). `row` is v's shape: the
// leading axes of the kernel's output.
// `through`, when given, is the body index of a row reduction fused in the
// kernel: its operand is read at the top of the operand's own shape.
bool reads_by_row(const Function& f, const std::vector<int>& inputs, int value, int v,
                  const Shape& row, const Shape& out, Index mode, int through = -1) {
  if (value == v) return mode == Index::Row || (mode == Index::Top && out == row);
  if (std::find(inputs.begin(), inputs.end(), value) != inputs.end()) return true;
  int p = f.values[value].producer;
  if (p < 0) return true;
  const Instr& in = f.body[p];
  if (p == through && mode != Index::Other) {
    int x = in.operands[0];
    return reads_by_row(f, inputs, x, v, row, f.values[x].aval.shape, Index::Top, through);
  }
  Index sub = Index::Other;
  if (mode != Index::Other && is_elementwise(in.op)) {
    sub = mode;
  } else if (in.op == Op::Reshape && mode != Index::Other) {
    // A size-1-axes reshape (the only kind fused) keeps the row's indices;
    // from the top, when all it adds are size-1 axes after the row's.
    const Shape& os = f.values[in.operands[0]].aval.shape;
    if (mode == Index::Row || squeezed(os) == squeezed(row)) sub = Index::Row;
  } else if (mode == Index::Top && in.op == Op::BroadcastInDim) {
    // The operand's axes of size > 1 must be the row's, at the same leading
    // loop indices (a keepdims=True row value broadcast along the row).
    const Shape& os = f.values[in.operands[0]].aval.shape;
    bool leading = squeezed(os) == squeezed(row) && out.size() >= row.size() &&
                   std::equal(row.begin(), row.end(), out.begin());
    size_t j = 0;
    for (size_t d = 0; d < os.size() && leading; ++d) {
      if (os[d] == 1) continue;
      while (j < row.size() && row[j] == 1) ++j;
      leading &= in.attrs.axes[d] == static_cast<int64_t>(j++);
    }
    if (leading) sub = Index::Row;
  }
  for (size_t j = 0; j < in.operands.size(); ++j) {
    // Select's 0-d predicate is read at the empty index.
    bool scalar = in.op == Op::Select && j == 0 && f.values[in.operands[j]].aval.ndim() == 0;
    Index m = scalar ? (row.empty() ? Index::Row : Index::Other) : sub;
    if (!reads_by_row(f, inputs, in.operands[j], v, row, out, m, through)) return false;
  }
  return true;
}

// Merges reduction kernel `r`, whose result `v` kernel `c` reads, into `c`:
// c reads r's inputs instead of v and inlines r's instructions.
void absorb(Kernel& c, const Kernel& r, int v) {
  std::vector<int> inputs;
  for (int x : c.inputs)
    if (x != v) inputs.push_back(x);
  for (int x : r.inputs)
    if (std::find(inputs.begin(), inputs.end(), x) == inputs.end()) inputs.push_back(x);
  std::set<int> fused(c.fused.begin(), c.fused.end());
  fused.insert(r.fused.begin(), r.fused.end());
  c.inputs = std::move(inputs);
  c.fused.assign(fused.begin(), fused.end()); // body order: the root is still last
}

// How many kernels (those not `gone`) and host steps read each value (an
// inlined producer is recomputed in every kernel that uses it, so its
// operands have several).
std::vector<int> count_readers(const Function& f, const KernelPlan& plan,
                               const std::vector<bool>& gone) {
  std::vector<int> readers(f.values.size(), 0);
  for (size_t i = 0; i < plan.kernels.size(); ++i)
    if (!gone[i])
      for (int v : plan.kernels[i].inputs) ++readers[v];
  for (const Step& s : plan.steps)
    if (s.kind == Step::Kind::Instr)
      for (int v : std::set<int>(f.body[s.index].operands.begin(), f.body[s.index].operands.end()))
        ++readers[v];
  return readers;
}

// Merges each trailing reduction into the one loop kernel that reads its
// result row by row (see Kernel::row_reduce); the reduction's own kernel and
// step go away.
void fuse_rows(const Function& f, const std::vector<bool>& is_result, PlanTarget target,
               KernelPlan& plan) {
  std::vector<int> kernel_of(f.values.size(), -1);
  for (size_t i = 0; i < plan.kernels.size(); ++i) kernel_of[plan.kernels[i].root] = int(i);
  std::vector<bool> gone(plan.kernels.size(), false);
  std::vector<int> readers = count_readers(f, plan, gone);
  for (Kernel& c : plan.kernels) {
    if (c.reduce) continue;
    const Shape& out = f.values[c.root].aval.shape;
    for (int v : c.inputs) {
      int ri = kernel_of[v];
      if (ri < 0 || gone[ri] || is_result[v]) continue;
      const Kernel& r = plan.kernels[ri];
      if (!r.reduce || r.row_reduce >= 0 || !reduce_axes_trailing(f, r)) continue;
      // The row kernel loops over the row's axes, then the output's remaining
      // ones: the row must be a leading part of the output's shape.
      const Shape& row = f.values[v].aval.shape;
      if (out.size() < row.size() || !std::equal(row.begin(), row.end(), out.begin())) continue;
      if (readers[v] != 1 ||
          !reads_by_row(f, c.inputs, c.root, v, f.values[v].aval.shape, out, Index::Top))
        continue;
      absorb(c, r, v);
      c.row_reduce = r.instr;
      gone[ri] = true;
      break;
    }
  }
  // Row reductions read only by a row kernel, at its rows, go into it first.
  std::vector<int> reads = count_readers(f, plan, gone);
  for (Kernel& c : plan.kernels) {
    if (c.row_reduce < 0) continue;
    const Instr& main = f.body[c.row_reduce];
    const Shape& row = f.values[main.result].aval.shape;
    const Shape& xs = f.values[main.operands[0]].aval.shape;
    for (bool merged = true; merged;) {
      merged = false;
      for (int v : c.inputs) {
        int ri = kernel_of[v];
        if (ri < 0 || gone[ri] || is_result[v] || reads[v] != 1) continue;
        const Kernel& r = plan.kernels[ri];
        if (!r.reduce || r.row_reduce >= 0 || !reduce_axes_trailing(f, r)) continue;
        const Instr& before = f.body[r.instr];
        if (f.values[v].aval.shape != row || f.values[before.operands[0]].aval.shape != xs)
          continue;
        // On CUDA a row's threads are grouped for the main reduction (and
        // its dtype's shared memory): an order-free reduction (max) of the
        // same dtype reduces in any group, an ordered one (a float sum) only
        // in an ordered one's.
        DType bd = f.values[before.operands[0]].aval.dtype;
        DType md = f.values[main.operands[0]].aval.dtype;
        if (target == PlanTarget::Cuda &&
            (bd != md || (ordered_reduction(f, before) && !ordered_reduction(f, main))))
          continue;
        if (!reads_by_row(f, c.inputs, c.root, v, row, f.values[c.root].aval.shape, Index::Top,
                          c.row_reduce))
          continue;
        absorb(c, r, v);
        c.row_before.insert(c.row_before.begin(), r.instr); // it may read earlier ones
        gone[ri] = true;
        merged = true;
        break;
      }
    }
    std::sort(c.row_before.begin(), c.row_before.end()); // body order: producers first
  }
  // Renumber the surviving kernels and drop the merged ones' steps.
  std::vector<int> index(plan.kernels.size(), -1);
  std::vector<Kernel> kernels;
  for (size_t i = 0; i < plan.kernels.size(); ++i)
    if (!gone[i]) {
      index[i] = static_cast<int>(kernels.size());
      kernels.push_back(std::move(plan.kernels[i]));
    }
  std::vector<Step> steps;
  for (const Step& s : plan.steps) {
    if (s.kind == Step::Kind::Kernel && gone[s.index]) continue;
    steps.push_back(s);
    if (s.kind == Step::Kind::Kernel) steps.back().index = index[s.index];
  }
  plan.kernels = std::move(kernels);
  plan.steps = std::move(steps);
}

} // namespace

bool fusible_instr(const Function& f, const Instr& in, PlanTarget target) {
  // The kernel emitter has no complex arithmetic and no float8/float4
  // conversions: those values are computed by the reference kernels as host
  // steps (DESIGN: codegen).
  if (host_steps_only(f.values[in.result].aval.dtype)) return false;
  for (int o : in.operands)
    if (host_steps_only(f.values[o].aval.dtype)) return false;
  switch (op_family(in.op)) {
  case OpFamily::Unary:
  case OpFamily::Binary:
  case OpFamily::Compare:
  case OpFamily::Select:
  case OpFamily::Nary:
    return true;
  case OpFamily::Convert:
    // A bitcast reinterprets storage bits; kernels compute half types in f32
    // and bools as i1, so only 32/64-bit storage types bitcast in a kernel.
    return in.op == Op::ConvertElementType ||
           (!is_half_or_bool(f.values[in.operands[0]].aval.dtype) &&
            !is_half_or_bool(f.values[in.result].aval.dtype));
  case OpFamily::Creation:
    return in.op == Op::Iota;
  case OpFamily::Structural:
    return in.op == Op::BroadcastInDim || in.op == Op::Transpose || in.op == Op::Slice ||
           in.op == Op::Rev;
  case OpFamily::Reduce:
    if (in.op == Op::ReduceSum && target == PlanTarget::Host) {
      const AVal& x = f.values[in.operands[0]].aval;
      if (ref::ynn_sum_applies(x.dtype, x.shape, in.attrs.axes)) return false;
    }
    return is_reduce_op(in.op);
  case OpFamily::Scan:
  case OpFamily::Dot:
  case OpFamily::Index:
  case OpFamily::Linalg: // LAPACK through the reference kernel
  case OpFamily::Collective:
  case OpFamily::Effect:
  case OpFamily::Call:
  case OpFamily::Loop: // a host step: runs its sub-Functions' executables
    return false;
  }
  return false;
}

KernelPlan plan_kernels(const Function& f, PlanTarget target) {
  size_t n = f.body.size();
  std::vector<std::vector<int>> users(f.values.size());
  for (size_t i = 0; i < n; ++i) {
    std::set<int> seen;
    for (int o : f.body[i].operands)
      if (seen.insert(o).second) users[o].push_back(static_cast<int>(i));
  }
  std::vector<bool> is_result(f.values.size(), false);
  for (int r : f.results) is_result[r] = true;
  std::vector<bool> fusible(n), inlined(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = f.body[i];
    fusible[i] = fusible_instr(f, in, target) ||
                 (in.op == Op::Reshape && unit_dim_reshape(f.values[in.operands[0]].aval.shape,
                                                           f.values[in.result].aval.shape));
  }
  // A size-1-axes reshape is fused only where it is inlined: as a kernel of
  // its own it would copy what the reference reshapes for free.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      const Instr& in = f.body[i];
      if (!fusible[i] || in.op != Op::Reshape) continue;
      const auto& u = users[in.result];
      if (is_result[in.result] || u.empty() || u.size() > kMaxRecompute ||
          !std::all_of(u.begin(), u.end(), [&](int j) { return fusible[j]; })) {
        fusible[i] = false;
        changed = true;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = f.body[i];
    if (!fusible[i] || is_reduce_op(in.op) || is_result[in.result]) continue;
    const auto& u = users[in.result];
    inlined[i] = !u.empty() && u.size() <= kMaxRecompute &&
                 std::all_of(u.begin(), u.end(), [&](int j) { return fusible[j]; });
  }

  KernelPlan plan;
  for (size_t i = 0; i < n; ++i) {
    if (inlined[i]) continue;
    // Dead pure code (a traced value nothing reads) costs nothing.
    if (fusible[i] && users[f.body[i].result].empty() && !is_result[f.body[i].result]) continue;
    if (!fusible[i]) {
      plan.steps.push_back({Step::Kind::Instr, static_cast<int>(i)});
      continue;
    }
    Kernel k;
    k.root = f.body[i].result;
    k.instr = static_cast<int>(i);
    k.reduce = is_reduce_op(f.body[i].op);
    std::set<int> fused_set;
    // Depth-first over the operands: inlined producers join the kernel, every
    // other value is a buffer the kernel reads.
    std::vector<int> stack(f.body[i].operands.rbegin(), f.body[i].operands.rend());
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      int p = f.values[v].producer;
      if (p >= 0 && inlined[p]) {
        if (fused_set.insert(p).second)
          for (int o : f.body[p].operands) stack.push_back(o);
      } else if (std::find(k.inputs.begin(), k.inputs.end(), v) == k.inputs.end()) {
        k.inputs.push_back(v);
      }
    }
    k.fused.assign(fused_set.begin(), fused_set.end()); // body order
    k.fused.push_back(static_cast<int>(i));
    plan.steps.push_back({Step::Kind::Kernel, static_cast<int>(plan.kernels.size())});
    plan.kernels.push_back(std::move(k));
  }
  fuse_rows(f, is_result, target, plan);
  return plan;
}

bool reduce_axes_trailing(const Function& f, const Kernel& k) {
  return reduce_axes_trailing(f, k.instr);
}

bool reduce_axes_trailing(const Function& f, int instr) {
  const Instr& in = f.body[instr];
  int64_t r = f.values[in.operands[0]].aval.ndim();
  int64_t first = r - static_cast<int64_t>(in.attrs.axes.size());
  return std::all_of(in.attrs.axes.begin(), in.attrs.axes.end(),
                     [&](int64_t a) { return a >= first; });
}

bool ordered_reduction(const Function& f, const Instr& in) {
  return reduce_order_matters(in.op == Op::ReduceSum || in.op == Op::ReduceProd,
                              f.values[in.operands[0]].aval.dtype);
}

bool kernel_flat(const Function& f, const Kernel& k) {
  auto last = k.reduce ? k.fused.end() - 1 : k.fused.end();
  return k.row_reduce < 0 &&
         std::all_of(k.fused.begin(), last, [&](int i) { return is_elementwise(f.body[i].op); });
}

int reduce_split_axis(const Function& f, const Kernel& k) {
  if (!k.reduce || reduce_axes_trailing(f, k)) return -1;
  const Instr& in = f.body[k.instr];
  const AVal& xa = f.values[in.operands[0]].aval;
  const std::vector<int64_t>& axes = in.attrs.axes;
  size_t a = 0;
  while (a < xa.shape.size() && std::find(axes.begin(), axes.end(), int64_t(a)) != axes.end()) ++a;
  if (a == xa.shape.size()) return -1;
  if (a == 0) return 0; // each piece reads one contiguous block
  // Under reduced axes, a piece reads a strided run per outer index: worth
  // it only when the runs stay long (the pool makes at most 64 pieces).
  int64_t run = dtype_size(xa.dtype);
  for (size_t d = a; d < xa.shape.size(); ++d) run *= xa.shape[d];
  return run >= (int64_t{1} << 20) ? static_cast<int>(a) : -1;
}

KernelSplit kernel_split(const Function& f, const Kernel& k) {
  // A reduction splits into blocks when it reduces this many elements to one.
  constexpr int64_t kSplitMin = int64_t{1} << 20;
  const AVal& oa = f.values[k.root].aval;
  KernelSplit s;
  if (k.row_reduce >= 0) {
    const Shape& row = f.values[f.body[k.row_reduce].result].aval.shape;
    s.extent = row.empty() ? 1 : row[0];
    s.work = std::max(oa.size(), f.values[f.body[k.row_reduce].operands[0]].aval.size());
    return s;
  }
  if (!k.reduce) {
    s.extent = kernel_flat(f, k) ? oa.size() : oa.ndim() ? oa.shape[0] : 1;
    s.work = oa.size();
    return s;
  }
  const Instr& in = f.body[k.instr];
  const AVal& xa = f.values[in.operands[0]].aval;
  s.work = xa.size();
  if (!reduce_axes_trailing(f, k)) {
    // Accumulates into its outputs (or an f32 scratch for half types) in the
    // walk's order; a range of the split axis owns its outputs.
    int a = reduce_split_axis(f, k);
    if (a >= 0) s.extent = xa.shape[static_cast<size_t>(a)];
    return s;
  }
  if (kernel_flat(f, k)) {
    if (oa.size() == 1 && xa.size() >= kSplitMin) {
      // An ordered sum's blocks are its tree's last-level nodes (reduce_tree.hpp).
      s.extent = xa.size() / kSplitBlock;
      if (ordered_reduction(f, in)) {
        std::vector<ReduceTreeLevel> levels = reduce_tree(xa.shape);
        s.extent = 1;
        for (int64_t e : levels[reduce_tree_split_level(levels, kReduceSplitNodes)].extent)
          s.extent *= e;
      }
      s.finish = true;
    } else {
      s.extent = oa.size();
    }
  } else {
    s.extent = oa.ndim() ? oa.shape[0] : 1;
  }
  return s;
}

int64_t kernel_scratch_bytes(const Function& f, const Kernel& k) {
  if (k.reduce && kernel_split(f, k).finish) return kernel_split(f, k).extent * 8;
  if (!k.reduce || reduce_axes_trailing(f, k)) return 0;
  DType d = f.values[f.body[k.instr].operands[0]].aval.dtype;
  if (d != DType::Float16 && d != DType::BFloat16) return 0;
  return f.values[k.root].aval.size() * 4;
}

std::string describe_plan(const Function& f, const KernelPlan& p) {
  std::string s = std::to_string(p.kernels.size()) + " kernels";
  for (const Kernel& k : p.kernels) {
    s += "\n  %" + std::to_string(k.root) + " = [";
    for (size_t j = 0; j < k.fused.size(); ++j)
      s += (j ? " " : "") + std::string(op_name(f.body[k.fused[j]].op)) +
           (k.fused[j] == k.row_reduce ||
                    std::count(k.row_before.begin(), k.row_before.end(), k.fused[j])
                ? "(row)"
                : "");
    s += "](";
    for (size_t j = 0; j < k.inputs.size(); ++j)
      s += (j ? ", %" : "%") + std::to_string(k.inputs[j]);
    s += ")";
  }
  return s;
}

} // namespace pxl
