// XLA's algebraic simplifier in a jitted program (ir/simplify.hpp, ir/cse.hpp): which
// rewrites are made, and where XLA's conditions (a root used once, a scalar
// constant, a constant to add) keep the op as it is.
#include <catch2/catch.hpp>

#include "ir/cse.hpp"
#include "ir/simplify.hpp"
#include "runtime/array.hpp"

using namespace pxl;

namespace {

struct Simplified {
  std::string text;
  std::vector<Array> added;
};

Simplified simplified(const std::string& text, std::vector<Array> consts = {},
                      bool may_add = true) {
  auto f = std::make_shared<const Function>(parse_function(text));
  Simplified s;
  auto out = simplify_algebra(f, consts, may_add ? &s.added : nullptr);
  s.text = print_function(*out, false);
  CHECK(verify_function(*out).empty());
  CHECK(out->consts.size() == f->consts.size() + s.added.size());
  CHECK_NOTHROW(parse_function(s.text)); // valid IR text
  return s;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

Array f32(float v) { return Array::scalar(Scalar::of_float(v), DType::Float32); }

} // namespace

TEST_CASE("simplify: a division by a root multiplies by the other root", "[simplify]") {
  auto s = simplified(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = sqrt %1 : f32[4]
  %3 = div %0, %2 : f32[4]
  return %3
})");
  CHECK(has(s.text, "rsqrt %1"));
  CHECK(!has(s.text, "div"));
  CHECK(!has(s.text, "= sqrt %1"));

  // The root used again stays a division (XLA's one-use condition).
  auto twice = simplified(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4], f32[4]) {
  %2 = sqrt %1 : f32[4]
  %3 = div %0, %2 : f32[4]
  return %3, %2
})");
  CHECK(has(twice.text, "div %0, %2"));

  // 1 / broadcast(sqrt(v)), as jnp's division by a broadcast leaves it, is rsqrt(v).
  auto bc = simplified(R"(func @f(%0: f32[4,3], %1: f32[4,1]) consts(%2: f32[]) -> (f32[4,3]) {
  %3 = sqrt %1 : f32[4,1]
  %4 = broadcast_in_dim[shape=(4, 1) dims=[]] %2 : f32[4,1]
  %5 = div %4, %3 : f32[4,1]
  %6 = broadcast_in_dim[shape=(4, 3) dims=[0, 1]] %5 : f32[4,3]
  %7 = mul %0, %6 : f32[4,3]
  return %7
})",
                       {f32(1)});
  CHECK(has(bc.text, "rsqrt %1"));
  CHECK(!has(bc.text, "div"));
}

TEST_CASE("simplify: constants fold across ops as XLA reassociates them", "[simplify]") {
  // (a * c1) * c2 -> a * (c1 * c2) on the scalars, then one broadcast.
  auto mul = simplified(R"(func @f(%0: f32[4]) consts(%1: f32[], %2: f32[]) -> (f32[4]) {
  %3 = broadcast_in_dim[shape=(4,) dims=[]] %1 : f32[4]
  %4 = mul %0, %3 : f32[4]
  %5 = broadcast_in_dim[shape=(4,) dims=[]] %2 : f32[4]
  %6 = mul %5, %4 : f32[4]
  return %6
})",
                        {f32(0.3f), f32(0.7f)});
  CHECK(has(mul.text, "mul %1, %2 : f32[]"));
  CHECK(!has(mul.text, "mul %0, %3"));

  // a - c1 + c2 -> a + (-c1 + c2); (c1 - a) + c2 -> (c1 + c2) - a.
  auto add = simplified(R"(func @f(%0: f32[4]) consts(%1: f32[], %2: f32[]) -> (f32[4], f32[4]) {
  %3 = broadcast_in_dim[shape=(4,) dims=[]] %1 : f32[4]
  %4 = sub %0, %3 : f32[4]
  %5 = broadcast_in_dim[shape=(4,) dims=[]] %2 : f32[4]
  %6 = add %4, %5 : f32[4]
  %7 = sub %3, %0 : f32[4]
  %8 = add %7, %5 : f32[4]
  return %6, %8
})",
                        {f32(0.3f), f32(0.7f)});
  CHECK(has(add.text, "neg %1"));
  CHECK(has(add.text, "add %1, %2 : f32[]"));
  CHECK(!has(add.text, "sub %0"));

  // A constant times a non-constant stays: nothing to fold.
  auto keep = simplified(R"(func @f(%0: f32[4], %1: f32[4]) consts(%2: f32[]) -> (f32[4]) {
  %3 = broadcast_in_dim[shape=(4,) dims=[]] %2 : f32[4]
  %4 = mul %0, %3 : f32[4]
  %5 = mul %4, %1 : f32[4]
  return %5
})",
                         {f32(0.3f)});
  CHECK(has(keep.text, "%5 = mul %4, %1"));
}

TEST_CASE("simplify: divisions by constants and broadcasts multiply by reciprocals", "[simplify]") {
  auto s = simplified(R"(func @f(%0: f32[3], %1: f32[]) consts(%2: f32[3]) -> (f32[3], f32[3]) {
  %3 = div %0, %2 : f32[3]
  %4 = broadcast_in_dim[shape=(3,) dims=[]] %1 : f32[3]
  %5 = div %0, %4 : f32[3]
  return %3, %5
})",
                      {Array(DType::Float32, {3})});
  CHECK(!has(s.text, "div %0"));
  REQUIRE(s.added.size() == 1); // the constant 1
  CHECK(s.added[0].get_f64(0) == 1.0);

  // Without room for a new constant, neither is made.
  auto none = simplified(R"(func @f(%0: f32[3], %1: f32[]) -> (f32[3]) {
  %2 = broadcast_in_dim[shape=(3,) dims=[]] %1 : f32[3]
  %3 = div %0, %2 : f32[3]
  return %3
})",
                         {}, false);
  CHECK(has(none.text, "div %0, %2"));

  // A divisor broadcast from a value used twice stays a division (XLA's condition).
  auto twice = simplified(R"(func @f(%0: f32[3], %1: f32[]) -> (f32[3], f32[]) {
  %2 = broadcast_in_dim[shape=(3,) dims=[]] %1 : f32[3]
  %3 = div %0, %2 : f32[3]
  %4 = neg %1 : f32[]
  return %3, %4
})");
  CHECK(has(twice.text, "div %0, %2"));

  // ... unless the broadcast widens a size-1 axis: XLA reshapes the operand to
  // a scalar of the broadcast's own first, which nothing else uses.
  auto widened = simplified(R"(func @f(%0: f32[3], %1: f32[1]) -> (f32[3], f32[1]) {
  %2 = broadcast_in_dim[shape=(3,) dims=[0]] %1 : f32[3]
  %3 = div %0, %2 : f32[3]
  %4 = neg %1 : f32[1]
  return %3, %4
})");
  CHECK(!has(widened.text, "div %0, %2"));
  CHECK(has(widened.text, "mul %0"));
}

TEST_CASE("simplify: exp, log and pow identities; ints and dead code", "[simplify]") {
  auto s = simplified(R"(func @f(%0: f64[2], %1: f64[2]) -> (f64[2], f64[2], f64[2]) {
  %2 = exp %0 : f64[2]
  %3 = log %2 : f64[2]
  %4 = exp %1 : f64[2]
  %5 = mul %2, %4 : f64[2]
  %6 = div %0, %4 : f64[2]
  return %3, %5, %6
})");
  CHECK(has(s.text, "return %0,"));
  CHECK(has(s.text, "add %0, %1"));
  CHECK(has(s.text, "neg %1"));

  auto pow = simplified(R"(func @f(%0: f32[2]) consts(%1: f32[], %2: f32[]) -> (f32[2], f32[2]) {
  %3 = broadcast_in_dim[shape=(2,) dims=[]] %1 : f32[2]
  %4 = pow %0, %3 : f32[2]
  %5 = broadcast_in_dim[shape=(2,) dims=[]] %2 : f32[2]
  %6 = pow %0, %5 : f32[2]
  return %4, %6
})",
                        {f32(2), f32(0.5f)});
  CHECK(has(pow.text, "mul %0, %0"));
  CHECK(has(pow.text, "sqrt %0"));
  CHECK(!has(pow.text, "pow"));

  // Integers are left alone; a function with nothing to rewrite is returned as is.
  auto f = std::make_shared<const Function>(parse_function(R"(func @f(%0: i32[2]) -> (i32[2]) {
  %1 = mul %0, %0 : i32[2]
  %2 = div %1, %0 : i32[2]
  return %2
})"));
  std::vector<Array> added;
  CHECK(simplify_algebra(f, {}, &added) == f);
}

TEST_CASE("cse: a repeated op and equal constants are computed once", "[simplify]") {
  auto f = std::make_shared<const Function>(
      parse_function(R"(func @f(%0: f32[4], %1: f32[4]) consts(%2: f32[], %3: f32[]) -> (f32[4]) {
  %4 = sub %0, %1 : f32[4]
  %5 = sub %0, %1 : f32[4]
  %6 = mul %4, %5 : f32[4]
  %7 = broadcast_in_dim[shape=(4,) dims=[]] %2 : f32[4]
  %8 = broadcast_in_dim[shape=(4,) dims=[]] %3 : f32[4]
  %9 = add %6, %7 : f32[4]
  %10 = add %9, %8 : f32[4]
  return %10
})"));
  std::vector<Array> consts{f32(1.5f), f32(1.5f)};
  auto out = eliminate_common_subexpressions(f, consts);
  std::string text = print_function(*out, false);
  CHECK(verify_function(*out).empty());
  CHECK(has(text, "mul %4, %4"));
  CHECK(has(text, "add %9, %7"));
  // Different constants, or nothing repeated: the function as it was.
  std::vector<Array> other{f32(1.5f), f32(2.5f)};
  auto g = std::make_shared<const Function>(
      parse_function(R"(func @f(%0: f32[4]) consts(%1: f32[], %2: f32[]) -> (f32[4]) {
  %3 = broadcast_in_dim[shape=(4,) dims=[]] %1 : f32[4]
  %4 = broadcast_in_dim[shape=(4,) dims=[]] %2 : f32[4]
  %5 = add %0, %3 : f32[4]
  %6 = add %5, %4 : f32[4]
  return %6
})"));
  CHECK(eliminate_common_subexpressions(g, other) == g);
}

TEST_CASE("simplify: reductions of reductions and of broadcasts", "[simplify]") {
  // sum(sum(x, 1), 0) is one sum over both axes.
  auto merged = simplified(R"(func @f(%0: f32[4,3,2]) -> (f32[2]) {
  %1 = reduce_sum[axes=[1]] %0 : f32[4,2]
  %2 = reduce_sum[axes=[0]] %1 : f32[2]
  return %2
})");
  CHECK(has(merged.text, "reduce_sum[axes=[0, 1]] %0 : f32[2]"));

  // A sum over the axes a broadcast added is the value times their count.
  auto bcast = simplified(R"(func @f(%0: f32[3]) -> (f32[3]) {
  %1 = broadcast_in_dim[shape=(5, 3) dims=[1]] %0 : f32[5,3]
  %2 = reduce_sum[axes=[0]] %1 : f32[3]
  return %2
})");
  CHECK(!has(bcast.text, "reduce_sum"));
  REQUIRE(bcast.added.size() == 1);
  CHECK(bcast.added[0].get_f64(0) == 5.0);

  // ... but not when it also sums a dimension of the value itself.
  auto own = simplified(R"(func @f(%0: f32[3]) -> (f32[]) {
  %1 = broadcast_in_dim[shape=(5, 3) dims=[1]] %0 : f32[5,3]
  %2 = reduce_sum[axes=[0, 1]] %1 : f32[]
  return %2
})");
  CHECK(has(own.text, "reduce_sum[axes=[0, 1]]"));

  // Two broadcast scalars: the op on the scalars, broadcast once.
  auto sink = simplified(R"(func @f(%0: f32[], %1: f32[]) -> (f32[4]) {
  %2 = broadcast_in_dim[shape=(4,) dims=[]] %0 : f32[4]
  %3 = broadcast_in_dim[shape=(4,) dims=[]] %1 : f32[4]
  %4 = add %2, %3 : f32[4]
  return %4
})");
  CHECK(has(sink.text, "add %0, %1 : f32[]"));
}

TEST_CASE("simplify: square, negated sums, stop_gradient, one-element products", "[simplify]") {
  // square is x * x before the other rules; sum(-x) is -sum(x).
  auto sq = simplified(R"(func @f(%0: f32[4,8]) -> (f32[4]) {
  %1 = square %0 : f32[4,8]
  %2 = neg %1 : f32[4,8]
  %3 = reduce_sum[axes=[1]] %2 : f32[4]
  return %3
})");
  CHECK(has(sq.text, "%1 = mul %0, %0 : f32[4,8]"));
  CHECK(has(sq.text, "%4 = reduce_sum[axes=[1]] %1 : f32[4]\n  %5 = neg %4"));
  CHECK(!has(sq.text, "square"));

  // stop_gradient's bitcast to the same type is no op.
  auto sg = simplified(R"(func @f(%0: f32[4]) -> (f32[4]) {
  %1 = bitcast_convert_type[dtype=float32] %0 : f32[4]
  %2 = sin %1 : f32[4]
  return %2
})");
  CHECK(has(sg.text, "sin %0"));

  // (x * c1) * (y * c2) folds the constants for one element, not for more.
  const char* prod = R"(func @f(%0: f32[S], %1: f32[S]) consts(%2: f32[], %3: f32[]) -> (f32[S]) {
  %4 = broadcast_in_dim[shape=(S,) dims=[]] %2 : f32[S]
  %5 = broadcast_in_dim[shape=(S,) dims=[]] %3 : f32[S]
  %6 = mul %0, %4 : f32[S]
  %7 = mul %1, %5 : f32[S]
  %8 = mul %6, %7 : f32[S]
  return %8
})";
  auto with_shape = [&](const std::string& n) {
    std::string t = prod;
    for (size_t at; (at = t.find('S')) != std::string::npos;) t.replace(at, 1, n);
    return t;
  };
  std::vector<Array> cs{f32(3.0f), f32(5.0f)};
  auto one = simplified(with_shape("1"), cs);
  CHECK(has(one.text, "mul %0, %1 : f32[1]"));
  auto four = simplified(with_shape("4"), cs);
  CHECK(!has(four.text, "mul %0, %1"));
}

TEST_CASE("simplify: a transpose swapping a dot operand's axes folds into the dot", "[simplify]") {
  // a @ w.T: the dot contracts w's last axis.
  auto nt = simplified(R"(func @f(%0: f32[3,10], %1: f32[32,10]) -> (f32[3,32]) {
  %2 = transpose[perm=[1, 0]] %1 : f32[10,32]
  %3 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]] %0, %2 : f32[3,32]
  return %3
})");
  CHECK(has(nt.text, "lhs_contract=[1] rhs_contract=[1]] %0, %1"));
  CHECK(!has(nt.text, "transpose"));

  // Both operands of a batched dot, the batch axis in place.
  auto both = simplified(R"(func @f(%0: f32[2,10,3], %1: f32[2,32,10]) -> (f32[2,3,32]) {
  %2 = transpose[perm=[0, 2, 1]] %0 : f32[2,3,10]
  %3 = transpose[perm=[0, 2, 1]] %1 : f32[2,10,32]
  %4 = dot_general[lhs_batch=[0] rhs_batch=[0] lhs_contract=[2] rhs_contract=[1]] %2, %3 : f32[2,3,32]
  return %4
})");
  CHECK(has(both.text, "lhs_contract=[1] rhs_contract=[2]] %0, %1"));

  // A transpose that moves a batch axis, or an operand with two free axes, stays.
  auto moved = simplified(R"(func @f(%0: f32[10,2,3], %1: f32[2,10,4]) -> (f32[2,3,4]) {
  %2 = transpose[perm=[1, 2, 0]] %0 : f32[2,3,10]
  %3 = dot_general[lhs_batch=[0] rhs_batch=[0] lhs_contract=[2] rhs_contract=[1]] %2, %1 : f32[2,3,4]
  return %3
})");
  CHECK(has(moved.text, "transpose"));
  auto wide = simplified(R"(func @f(%0: f32[10,2,3], %1: f32[10,4]) -> (f32[2,3,4]) {
  %2 = transpose[perm=[1, 2, 0]] %0 : f32[2,3,10]
  %3 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[2] rhs_contract=[0]] %2, %1 : f32[2,3,4]
  return %3
})");
  CHECK(has(wide.text, "transpose"));

  // A vector times a transposed matrix: XLA's loop-fused elemental dot.
  auto vec =
      simplified(R"(func @f(%0: f32[1,10], %1: f32[16,10], %2: f32[10]) -> (f32[1,16], f32[16]) {
  %3 = transpose[perm=[1, 0]] %1 : f32[10,16]
  %4 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]] %0, %3 : f32[1,16]
  %5 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[0] rhs_contract=[0]] %3, %2 : f32[16]
  return %4, %5
})");
  CHECK(has(vec.text, "lhs_contract=[1] rhs_contract=[1] order=elemental] %0, %1"));
  CHECK(has(vec.text, "lhs_contract=[1] rhs_contract=[0] order=elemental] %1, %2"));
  CHECK(!has(vec.text, "transpose"));
}

TEST_CASE("simplify: a dot contracting axes of extent 1 is a product", "[simplify]") {
  auto outer = simplified(R"(func @f(%0: f32[5,1], %1: f32[1,9]) -> (f32[5,9]) {
  %2 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]] %0, %1 : f32[5,9]
  return %2
})");
  CHECK(!has(outer.text, "dot_general"));
  CHECK(has(outer.text, "broadcast_in_dim[shape=(5, 9) dims=[0]]"));
  CHECK(has(outer.text, "broadcast_in_dim[shape=(5, 9) dims=[1]]"));
  CHECK(has(outer.text, "mul "));
  // Batched, or a contraction longer than 1: a dot still.
  auto batched = simplified(R"(func @f(%0: f32[3,4,1], %1: f32[3,1,6]) -> (f32[3,4,6]) {
  %2 = dot_general[lhs_batch=[0] rhs_batch=[0] lhs_contract=[2] rhs_contract=[1]] %0, %1 : f32[3,4,6]
  return %2
})");
  CHECK(has(batched.text, "dot_general"));
  auto longer = simplified(R"(func @f(%0: f32[5,2], %1: f32[2,9]) -> (f32[5,9]) {
  %2 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]] %0, %1 : f32[5,9]
  return %2
})");
  CHECK(has(longer.text, "dot_general"));
}

TEST_CASE("simplify: a broadcast of a broadcast is one broadcast", "[simplify]") {
  auto s = simplified(R"(func @f(%0: f32[], %1: f32[5,10]) -> (f32[5,10]) {
  %2 = broadcast_in_dim[shape=(5,) dims=[]] %0 : f32[5]
  %3 = broadcast_in_dim[shape=(5, 10) dims=[0]] %2 : f32[5,10]
  %4 = mul %3, %1 : f32[5,10]
  return %4
})");
  CHECK(has(s.text, "broadcast_in_dim[shape=(5, 10) dims=[]] %0"));
  CHECK(!has(s.text, "shape=(5,)"));
}

TEST_CASE("simplify: abs of a value never negative is the value", "[simplify]") {
  auto s = simplified(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4], f32[4]) {
  %2 = mul %0, %0 : f32[4]
  %3 = abs %2 : f32[4]
  %4 = mul %0, %1 : f32[4]
  %5 = abs %4 : f32[4]
  return %3, %5
})");
  CHECK(has(s.text, "return %2, %5")); // a square: dropped; x * y: kept
  auto m = simplified(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = abs %0 : f32[4]
  %3 = max %1, %2 : f32[4]
  %4 = abs %3 : f32[4]
  return %4
})");
  CHECK(has(m.text, "return %3"));
}
