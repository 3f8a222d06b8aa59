// The batching rule of every op (stdlib/batching_rules.cpp) against a loop:
// for each combination of batched/unbatched operands, batch_op's result for
// example b must equal the reference kernel applied to example b's operands.
// Collectives need a mesh; they are covered by tests/programs/transforms.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <random>

#include "ir/op.hpp"
#include "runtime/array.hpp"
#include "runtime/eager.hpp"
#include "stdlib/transforms.hpp"

using namespace pxl;

namespace {

constexpr int64_t kB = 3;

Array random_array(DType d, const Shape& s, std::mt19937& rng, int64_t lo = -4, int64_t hi = 4,
                   bool dyadic = false) {
  Array a(d, s);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::uniform_int_distribution<int64_t> ui(lo, hi);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (d == DType::Bool)
      a.set(i, Scalar::of_bool(ui(rng) % 2 == 0));
    else if (is_integer(d))
      a.set(i, Scalar::of_int(ui(rng)));
    else if (dyadic)
      a.set(i, Scalar::of_float(static_cast<double>(ui(rng)) / 4));
    else
      a.set(i, Scalar::of_float(u(rng)));
  }
  return a;
}

// Example b of a batched array (dimension 0).
Array example(const Array& a, int64_t b) {
  OpAttrs s;
  s.starts.assign(a.ndim(), 0);
  s.limits = a.shape();
  s.starts[0] = b;
  s.limits[0] = b + 1;
  s.strides.assign(a.ndim(), 1);
  std::vector<Array> in{a};
  Array sl = eval_ref(Op::Slice, s, in);
  Shape rest(a.shape().begin() + 1, a.shape().end());
  return sl.reshaped(rest);
}

bool same(const Array& x, const Array& y) {
  if (x.dtype() != y.dtype() || x.shape() != y.shape()) return false;
  return std::memcmp(x.data(), y.data(), x.nbytes()) == 0;
}

// `operands[i]` holds per-example operand i (shape without the batch dim);
// every combination of batched operands is checked, with fresh random
// examples for the batched ones.
struct Case {
  Op op;
  OpAttrs attrs;
  std::vector<std::pair<DType, Shape>> operands;
  int64_t lo = -4, hi = 4; // range of integer operands
  // Float operands that are multiples of 1/4: XLA's order for a matrix
  // product depends on its shape, which batching changes (in JAX too), and
  // with these every order gives the same sum.
  bool dyadic = false;
};

void check_case(const Case& c) {
  std::mt19937 rng(42);
  size_t n = c.operands.size();
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    EagerContext cx;
    std::vector<BVal> in;
    std::vector<Array> whole;
    for (size_t i = 0; i < n; ++i) {
      bool batched = mask & (1u << i);
      Shape s = c.operands[i].second;
      if (batched) s.insert(s.begin(), kB);
      whole.push_back(random_array(c.operands[i].first, s, rng, c.lo, c.hi, c.dyadic));
      in.push_back({cx.constant(whole.back()), batched});
    }
    BVal out = batch_op(cx, c.op, c.attrs, in, BatchAxis{kB, "", {}});
    const Array& got = cx.concrete(out.t);
    for (int64_t b = 0; b < kB; ++b) {
      std::vector<Array> args;
      for (size_t i = 0; i < n; ++i)
        args.push_back(in[i].batched ? example(whole[i], b) : whole[i]);
      Array want = eval_ref(c.op, c.attrs, args);
      // A float division by an unbatched divisor multiplies by its reciprocal,
      // as XLA rewrites the batched op's program (its divisor broadcast).
      if (c.op == Op::Div && is_floating(args[1].dtype()) && in[0].batched && !in[1].batched) {
        Array one(args[1].dtype(), args[1].shape(), args[1].weak_type());
        for (int64_t i = 0; i < one.size(); ++i) one.set(i, Scalar::of_int(1));
        Array inv = eval_ref(Op::Div, {}, std::vector<Array>{one, args[1]});
        want = eval_ref(Op::Mul, {}, std::vector<Array>{args[0], inv});
      }
      Array have = out.batched ? example(got, b) : got;
      INFO(op_name(c.op) << " mask " << mask << " example " << b);
      CHECK(same(have, want));
    }
  }
}

OpAttrs with(std::function<void(OpAttrs&)> f) {
  OpAttrs a;
  f(a);
  return a;
}

const DType F = DType::Float32, I = DType::Int32, Bo = DType::Bool;

} // namespace

TEST_CASE("batching: elementwise ops", "[transforms]") {
  for (Op op : {Op::Neg,  Op::Exp,   Op::Log,      Op::Log1p,    Op::Expm1, Op::Sqrt, Op::Rsqrt,
                Op::Tanh, Op::Sin,   Op::Cos,      Op::Tan,      Op::Abs,   Op::Sign, Op::Floor,
                Op::Ceil, Op::Round, Op::IsFinite, Op::Logistic, Op::Erf,   Op::Cbrt})
    check_case({op, {}, {{F, {2, 3}}}});
  check_case({Op::Not, {}, {{Bo, {4}}}});
  check_case({Op::IntegerPow, with([](OpAttrs& a) { a.exponent = -3; }), {{F, {2, 3}}}});
  check_case({Op::IntegerPow, with([](OpAttrs& a) { a.exponent = 5; }), {{I, {4}}}});
  check_case({Op::Not, {}, {{I, {4}}}});
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::Pow, Op::Max, Op::Min, Op::Atan2,
                Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge})
    check_case({op, {}, {{F, {2, 3}}, {F, {2, 3}}}});
  for (Op op : {Op::And, Op::Or, Op::Xor, Op::ShiftLeft, Op::ShiftRightLogical,
                Op::ShiftRightArithmetic, Op::Div, Op::Rem})
    check_case({op, {}, {{I, {5}}, {I, {5}}}, 0, 7});
  check_case({Op::Select, {}, {{Bo, {2, 3}}, {F, {2, 3}}, {F, {2, 3}}}});
  check_case({Op::Select, {}, {{Bo, {}}, {F, {2, 3}}, {F, {2, 3}}}});
  check_case({Op::Select, {}, {{Bo, {}}, {F, {}}, {F, {}}}});
  check_case({Op::ConvertElementType, with([](OpAttrs& a) { a.dtype = I; }), {{F, {4}}}});
  check_case({Op::BitcastConvertType, with([](OpAttrs& a) { a.dtype = I; }), {{F, {4}}}});
}

TEST_CASE("batching: structural ops", "[transforms]") {
  check_case({Op::BroadcastInDim,
              with([](OpAttrs& a) {
                a.shape = {2, 4, 3};
                a.axes = {0, 2};
              }),
              {{F, {2, 3}}}});
  check_case({Op::BroadcastInDim, with([](OpAttrs& a) { a.shape = {4}; }), {{F, {}}}});
  check_case({Op::Reshape, with([](OpAttrs& a) { a.shape = {3, 2}; }), {{F, {2, 3}}}});
  check_case({Op::Transpose, with([](OpAttrs& a) { a.perm = {2, 0, 1}; }), {{F, {2, 3, 4}}}});
  check_case({Op::Slice,
              with([](OpAttrs& a) {
                a.starts = {1, 0};
                a.limits = {4, 3};
                a.strides = {2, 1};
              }),
              {{F, {5, 3}}}});
  check_case({Op::Rev, with([](OpAttrs& a) { a.axes = {1}; }), {{F, {2, 3}}}});
  check_case({Op::Concatenate,
              with([](OpAttrs& a) { a.axis = 1; }),
              {{F, {2, 3}}, {F, {2, 1}}, {F, {2, 2}}}});
  check_case({Op::Pad,
              with([](OpAttrs& a) {
                a.lo = {1, 0};
                a.hi = {0, 2};
                a.interior = {1, 0};
              }),
              {{F, {2, 3}}, {F, {}}}});
  check_case({Op::Iota,
              with([](OpAttrs& a) {
                a.dtype = I;
                a.shape = {3};
              }),
              {}});
}

TEST_CASE("batching: reductions, scans, contraction", "[transforms]") {
  for (Op op : {Op::ReduceSum, Op::ReduceMax, Op::ReduceMin, Op::ReduceProd})
    check_case({op, with([](OpAttrs& a) { a.axes = {0, 2}; }), {{F, {2, 3, 2}}}});
  for (Op op : {Op::ReduceAnd, Op::ReduceOr})
    check_case({op, with([](OpAttrs& a) { a.axes = {1}; }), {{Bo, {2, 3}}}});
  for (Op op : {Op::Argmax, Op::Argmin})
    check_case({op,
                with([](OpAttrs& a) {
                  a.axis = 1;
                  a.dtype = I;
                }),
                {{F, {2, 3}}}});
  check_case({Op::Cumsum,
              with([](OpAttrs& a) {
                a.axis = 0;
                a.reverse = true;
              }),
              {{F, {4, 2}}}});
  // matmul, a batched matmul, and a contraction over two dims
  check_case({Op::DotGeneral,
              with([](OpAttrs& a) {
                a.dot.lhs_contract = {1};
                a.dot.rhs_contract = {0};
              }),
              {{F, {2, 3}}, {F, {3, 4}}},
              -4,
              4,
              true});
  check_case({Op::DotGeneral,
              with([](OpAttrs& a) {
                a.dot.lhs_batch = {0};
                a.dot.rhs_batch = {1};
                a.dot.lhs_contract = {2};
                a.dot.rhs_contract = {0};
              }),
              {{F, {2, 3, 4}}, {F, {4, 2, 5}}},
              -4,
              4,
              true});
  check_case({Op::DotGeneral,
              with([](OpAttrs& a) {
                a.dot.lhs_contract = {0, 1};
                a.dot.rhs_contract = {1, 0};
              }),
              {{F, {2, 3}}, {F, {3, 2}}},
              -4,
              4,
              true});
}

TEST_CASE("batching: take and scatter", "[transforms]") {
  // Indices go out of range on both sides: take clamps, scatter drops.
  check_case({Op::Take, with([](OpAttrs& a) { a.axis = 0; }), {{F, {4, 2}}, {I, {3}}}, -2, 5});
  check_case(
      {Op::Take, with([](OpAttrs& a) { a.axis = 1; }), {{F, {2, 4, 3}}, {I, {2, 2}}}, -2, 5});
  for (ScatterMode m : {ScatterMode::Set, ScatterMode::Add, ScatterMode::Max}) {
    check_case({Op::Scatter,
                with([m](OpAttrs& a) {
                  a.axis = 0;
                  a.mode = m;
                }),
                {{F, {4, 2}}, {I, {3}}, {F, {3, 2}}},
                -1,
                4});
    check_case({Op::Scatter,
                with([m](OpAttrs& a) {
                  a.axis = 1;
                  a.mode = m;
                }),
                {{F, {2, 4, 3}}, {I, {2, 2}}, {F, {2, 2, 2, 3}}},
                -1,
                4});
  }
}

TEST_CASE("batching: pad with a per-example padding value", "[transforms]") {
  check_case({Op::Pad,
              with([](OpAttrs& a) {
                a.lo = {2};
                a.hi = {1};
                a.interior = {1};
              }),
              {{I, {3}}, {I, {}}}});
}
