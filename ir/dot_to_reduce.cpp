#include "ir/dot_to_reduce.hpp"

#include <numeric>

#include "ir/op.hpp"
#include "ir/ref_util.hpp"
#include "ir/vma.hpp"

namespace pxl {

namespace {
// The axes of `x` that are neither batch nor contracting and have extent 1.
std::vector<int64_t> unit_free_axes(const AVal& x, const std::vector<int64_t>& batch,
                                    const std::vector<int64_t>& contract) {
  std::vector<int64_t> out;
  for (int64_t a : ref::free_dims(x.ndim(), batch, contract))
    if (x.shape[static_cast<size_t>(a)] == 1) out.push_back(a);
  return out;
}
} // namespace

bool dot_of_vectors(const Function& f, const Instr& in) {
  if (in.op != Op::DotGeneral || in.attrs.dot.order != DotOrder::Auto) return false;
  const DotDims& d = in.attrs.dot;
  const AVal& l = f.values[static_cast<size_t>(in.operands[0])].aval;
  const AVal& r = f.values[static_cast<size_t>(in.operands[1])].aval;
  const AVal& out = f.values[static_cast<size_t>(in.result)].aval;
  for (DType t : {l.dtype, r.dtype, out.dtype})
    if (is_complex(t) || t == DType::Bool) return false;
  // Free axes of extent 1 do not count: XLA's simplifier drops them first
  // ((1, k) . (k, 1) is a dot of vectors).
  return unit_free_axes(l, d.lhs_batch, d.lhs_contract).size() + d.lhs_batch.size() +
                 d.lhs_contract.size() ==
             l.shape.size() &&
         unit_free_axes(r, d.rhs_batch, d.rhs_contract).size() + d.rhs_batch.size() +
                 d.rhs_contract.size() ==
             r.shape.size();
}

namespace {

// Appends `op` to `g` (type by the shape rule; vma and location as `like`'s).
int append(Function& g, Op op, const OpAttrs& attrs, std::vector<int> operands, int like) {
  std::vector<AVal> avals;
  for (int o : operands) avals.push_back(g.values[static_cast<size_t>(o)].aval);
  IRValue v = g.values[static_cast<size_t>(like)];
  v.aval = infer(op, attrs, avals);
  v.producer = static_cast<int>(g.body.size());
  int id = g.add_value(std::move(v));
  g.body.push_back(Instr{op, attrs, std::move(operands), id});
  return id;
}

// `x` with its dims `first` then `then` in that order, in dtype `d`; its
// free axes of extent 1 (`unit`) dropped.
int arrange(Function& g, int x, const std::vector<int64_t>& first, const std::vector<int64_t>& then,
            const std::vector<int64_t>& unit, DType d) {
  std::vector<int64_t> perm = first;
  perm.insert(perm.end(), then.begin(), then.end());
  perm.insert(perm.end(), unit.begin(), unit.end());
  std::vector<int64_t> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm != identity) {
    OpAttrs t;
    t.perm = perm;
    x = append(g, Op::Transpose, t, {x}, x);
  }
  if (!unit.empty()) {
    OpAttrs r;
    const Shape& s = g.values[static_cast<size_t>(x)].aval.shape;
    r.shape.assign(s.begin(), s.end() - static_cast<std::ptrdiff_t>(unit.size()));
    x = append(g, Op::Reshape, r, {x}, x);
  }
  if (g.values[static_cast<size_t>(x)].aval.dtype != d) {
    OpAttrs c;
    c.dtype = d;
    x = append(g, Op::ConvertElementType, c, {x}, x);
  }
  return x;
}

} // namespace

std::shared_ptr<const Function> dots_of_vectors_to_reduce(std::shared_ptr<const Function> f) {
  bool any = false;
  for (const Instr& in : f->body) any = any || dot_of_vectors(*f, in);
  if (!any) return f;
  auto g = std::make_shared<Function>(*f);
  g->body.clear();
  for (const Instr& in : f->body) {
    if (!dot_of_vectors(*f, in)) {
      g->body.push_back(in);
      for (int r = 0; r < in.nresults; ++r)
        g->values[static_cast<size_t>(in.result + r)].producer =
            static_cast<int>(g->body.size()) - 1;
      continue;
    }
    const DotDims& d = in.attrs.dot;
    DType t = f->values[static_cast<size_t>(in.result)].aval.dtype;
    // Half types multiply and sum in float32 (as a GEMM accumulates), rounded once.
    DType ct = t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
    const AVal& la = f->values[static_cast<size_t>(in.operands[0])].aval;
    const AVal& ra = f->values[static_cast<size_t>(in.operands[1])].aval;
    std::vector<int64_t> lu = unit_free_axes(la, d.lhs_batch, d.lhs_contract);
    std::vector<int64_t> ru = unit_free_axes(ra, d.rhs_batch, d.rhs_contract);
    int l = arrange(*g, in.operands[0], d.lhs_batch, d.lhs_contract, lu, ct);
    int r = arrange(*g, in.operands[1], d.rhs_batch, d.rhs_contract, ru, ct);
    int product = append(*g, Op::Mul, {}, {l, r}, in.result);
    OpAttrs sum;
    for (size_t a = 0; a < d.lhs_contract.size(); ++a)
      sum.axes.push_back(static_cast<int64_t>(d.lhs_batch.size() + a));
    // The sum, then its conversion back to a half type and the dot's unit
    // axes, whichever are needed; the last one is the dot's value.
    std::vector<std::pair<Op, OpAttrs>> steps{{Op::ReduceSum, sum}};
    if (ct != t) {
      OpAttrs c;
      c.dtype = t;
      steps.emplace_back(Op::ConvertElementType, c);
    }
    if (!lu.empty() || !ru.empty()) {
      OpAttrs shape;
      shape.shape = f->values[static_cast<size_t>(in.result)].aval.shape;
      steps.emplace_back(Op::Reshape, shape);
    }
    int x = product;
    for (size_t i = 0; i + 1 < steps.size(); ++i)
      x = append(*g, steps[i].first, steps[i].second, {x}, in.result);
    Instr last{steps.back().first, steps.back().second, {x}, in.result};
    // The last op keeps the dot's value id (and so every use of it).
    g->values[static_cast<size_t>(in.result)].producer = static_cast<int>(g->body.size());
    g->body.push_back(std::move(last));
  }
  return g;
}

} // namespace pxl
