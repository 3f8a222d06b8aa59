#include "ir/dot_to_reduce.hpp"

#include <numeric>

#include "ir/op.hpp"
#include "ir/vma.hpp"

namespace pxl {

bool dot_of_vectors(const Function& f, const Instr& in) {
  if (in.op != Op::DotGeneral || in.attrs.dot.order != DotOrder::Auto) return false;
  const DotDims& d = in.attrs.dot;
  const AVal& l = f.values[static_cast<size_t>(in.operands[0])].aval;
  const AVal& r = f.values[static_cast<size_t>(in.operands[1])].aval;
  const AVal& out = f.values[static_cast<size_t>(in.result)].aval;
  for (DType t : {l.dtype, r.dtype, out.dtype})
    if (is_complex(t) || t == DType::Bool) return false;
  return l.shape.size() == d.lhs_batch.size() + d.lhs_contract.size() &&
         r.shape.size() == d.rhs_batch.size() + d.rhs_contract.size();
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

// `x` with its dims `first` then `then` in that order, in dtype `d`.
int arrange(Function& g, int x, const std::vector<int64_t>& first, const std::vector<int64_t>& then,
            DType d) {
  std::vector<int64_t> perm = first;
  perm.insert(perm.end(), then.begin(), then.end());
  std::vector<int64_t> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm != identity) {
    OpAttrs t;
    t.perm = perm;
    x = append(g, Op::Transpose, t, {x}, x);
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
    int l = arrange(*g, in.operands[0], d.lhs_batch, d.lhs_contract, ct);
    int r = arrange(*g, in.operands[1], d.rhs_batch, d.rhs_contract, ct);
    int product = append(*g, Op::Mul, {}, {l, r}, in.result);
    OpAttrs sum;
    for (size_t a = 0; a < d.lhs_contract.size(); ++a)
      sum.axes.push_back(static_cast<int64_t>(d.lhs_batch.size() + a));
    Instr last{Op::ReduceSum, sum, {product}, in.result};
    if (ct != t) {
      OpAttrs c;
      c.dtype = t;
      last = Instr{Op::ConvertElementType,
                   c,
                   {append(*g, Op::ReduceSum, sum, {product}, in.result)},
                   in.result};
    }
    // The last op keeps the dot's value id (and so every use of it).
    g->values[static_cast<size_t>(in.result)].producer = static_cast<int>(g->body.size());
    g->body.push_back(std::move(last));
  }
  return g;
}

} // namespace pxl
