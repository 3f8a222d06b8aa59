// A Function built op by op for the codegen tests and kernel benchmarks.
#pragma once
#include <vector>

#include "ir/function.hpp"
#include "ir/op.hpp"

namespace pxl {

// Builds a Function op by op; the shape rule gives each result's type.
struct Builder {
  Function f;
  int param(DType d, Shape s) {
    IRValue v;
    v.aval = AVal{d, std::move(s), false};
    int id = f.add_value(v);
    f.params.push_back(id);
    return id;
  }
  int op(Op op, const OpAttrs& a, std::vector<int> operands) {
    std::vector<AVal> avals;
    for (int o : operands) avals.push_back(f.values[o].aval);
    IRValue v;
    v.aval = infer(op, a, avals);
    v.producer = static_cast<int>(f.body.size());
    int id = f.add_value(v);
    f.body.push_back(Instr{op, a, std::move(operands), id});
    return id;
  }
  const AVal& aval(int v) const { return f.values[v].aval; }
};

} // namespace pxl
