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
  // Softmax over the last axis of 2-D `x` as jax.nn.softmax traces it: the
  // max and sum keep their dims (reshapes to (n, 1)), the division is a
  // multiplication by 1/sum, and one broadcast is dead.
  int softmax_traced(int x) {
    Shape s = aval(x).shape;
    int one = param(DType::Float32, {});
    OpAttrs red, rs, bc, bc1;
    red.axes = {1};
    rs.shape = {s[0], 1};
    bc.shape = s;
    bc.axes = {0, 1};
    bc1.shape = rs.shape;
    int m = op(Op::Reshape, rs, {op(Op::ReduceMax, red, {x})});
    int e = op(Op::Exp, {}, {op(Op::Sub, {}, {x, op(Op::BroadcastInDim, bc, {m})})});
    int sum = op(Op::Reshape, rs, {op(Op::ReduceSum, red, {e})});
    op(Op::BroadcastInDim, bc, {sum});
    int inv = op(Op::Div, {}, {op(Op::BroadcastInDim, bc1, {one}), sum});
    return op(Op::Mul, {}, {e, op(Op::BroadcastInDim, bc, {inv})});
  }

  const AVal& aval(int v) const { return f.values[v].aval; }

  // Softmax over the last axis of 2-D `x`, as jax.nn.softmax traces it:
  // exp(x - max) / sum(exp(x - max)).
  int softmax(int x) {
    Shape s = aval(x).shape;
    OpAttrs red, bc;
    red.axes = {1};
    bc.shape = s;
    bc.axes = {0};
    int m = op(Op::ReduceMax, red, {x});
    int e = op(Op::Exp, {}, {op(Op::Sub, {}, {x, op(Op::BroadcastInDim, bc, {m})})});
    int sum = op(Op::ReduceSum, red, {e});
    return op(Op::Div, {}, {e, op(Op::BroadcastInDim, bc, {sum})});
  }
};

} // namespace pxl
