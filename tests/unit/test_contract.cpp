// XLA's contraction of multiply-adds in a jitted program (ir/contract.hpp):
// which adds take which multiply, and where XLA leaves the product rounded.
#include <catch2/catch.hpp>

#include "ir/contract.hpp"
#include "ir/reduce_tree.hpp"
#include "runtime/array.hpp"

using namespace pxl;

namespace {

std::string contracted(const std::string& text) {
  auto f = std::make_shared<const Function>(parse_function(text));
  auto c = contract_multiply_adds(f);
  std::string out = print_function(*c, false);
  CHECK(verify_function(*c).empty());
  CHECK_NOTHROW(parse_function(out)); // valid IR text
  return out;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

} // namespace

TEST_CASE("contraction: an add or subtract of a multiply used once fuses it", "[contract]") {
  std::string add = contracted(R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4]) -> (f32[4]) {
  %3 = mul %0, %1 : f32[4]
  %4 = add %2, %3 : f32[4]
  return %4
})");
  CHECK(has(add, "fma %0, %1, %2"));
  CHECK(!has(add, "mul"));

  // c - a*b = fma(-a, b, c); a*b - c = fma(a, b, -c).
  std::string sub = contracted(R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4]) -> (f32[4], f32[4]) {
  %3 = mul %0, %1 : f32[4]
  %4 = sub %2, %3 : f32[4]
  %5 = mul %1, %2 : f32[4]
  %6 = sub %5, %0 : f32[4]
  return %4, %6
})");
  CHECK(has(sub, "neg %0"));
  CHECK(has(sub, "neg %0 : f32[4]\n  %4 = fma %7, %1, %2"));
  CHECK(has(sub, "neg %0 : f32[4]\n  %6 = fma %1, %2, %8"));

  // Both operands multiplies: the left one is fused (LLVM tries it first).
  std::string both = contracted(R"(func @f(%0: f64[2], %1: f64[2]) -> (f64[2]) {
  %2 = mul %0, %1 : f64[2]
  %3 = mul %1, %1 : f64[2]
  %4 = add %2, %3 : f64[2]
  return %4
})");
  CHECK(has(both, "%4 = fma %0, %1, %3"));
}

TEST_CASE("contraction: x * -c + m fuses m first (LLVM's m - x * c)", "[contract]") {
  auto f = std::make_shared<const Function>(parse_function(
      R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4], %3: f32[4]) consts(%4: f32[]) -> (f32[4]) {
  %5 = broadcast_in_dim[shape=(4,) dims=[]] %4 : f32[4]
  %6 = mul %0, %5 : f32[4]
  %7 = mul %1, %2 : f32[4]
  %8 = add %6, %7 : f32[4]
  return %8
})"));
  std::vector<Array> negative{Array::scalar(Scalar::of_float(-0.2), DType::Float32)};
  std::string out = print_function(*contract_multiply_adds(f, negative), false);
  CHECK(has(out, "fma %1, %2, %6"));
  std::vector<Array> positive{Array::scalar(Scalar::of_float(0.2), DType::Float32)};
  out = print_function(*contract_multiply_adds(f, positive), false);
  CHECK(has(out, "fma %0, %5, %7"));
}

TEST_CASE("contraction: a product used twice, returned, or not float32/64 stays", "[contract]") {
  for (const char* text : {R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4], f32[4]) {
  %2 = mul %0, %1 : f32[4]
  %3 = add %2, %0 : f32[4]
  return %3, %2
})",
                           R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = mul %0, %1 : f32[4]
  %3 = add %2, %0 : f32[4]
  %4 = add %2, %1 : f32[4]
  %5 = mul %3, %4 : f32[4]
  return %5
})",
                           R"(func @f(%0: f16[4], %1: f16[4]) -> (f16[4]) {
  %2 = mul %0, %1 : f16[4]
  %3 = add %2, %0 : f16[4]
  return %3
})",
                           R"(func @f(%0: i32[4], %1: i32[4]) -> (i32[4]) {
  %2 = mul %0, %1 : i32[4]
  %3 = add %2, %0 : i32[4]
  return %3
})"}) {
    auto f = std::make_shared<const Function>(parse_function(text));
    CHECK(contract_multiply_adds(f) == f);
  }
}

TEST_CASE("contraction: integer_pow is XLA's chain of products, the last fused", "[contract]") {
  // x**3 = x * (x*x): the square is computed, the last product fused.
  std::string cube = contracted(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = integer_pow[y=3] %0 : f32[4]
  %3 = add %2, %1 : f32[4]
  return %3
})");
  CHECK(has(cube, "%4 = mul %0, %0 : f32[4]\n  %3 = fma %0, %4, %1"));
  // x**6 = (x*x) * ((x*x)*(x*x)).
  std::string six = contracted(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = integer_pow[y=6] %0 : f32[4]
  %3 = add %2, %1 : f32[4]
  return %3
})");
  CHECK(has(six, "%4 = mul %0, %0 : f32[4]\n  %5 = mul %4, %4 : f32[4]\n  %3 = fma %4, %5, %1"));
  // c - x**6 negates a factor the expansion made: fma(-(x*x), (x*x)*(x*x), c).
  std::string sub6 = contracted(R"(func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = integer_pow[y=6] %0 : f32[4]
  %3 = sub %1, %2 : f32[4]
  return %3
})");
  CHECK(has(sub6, "%6 = neg %4 : f32[4]\n  %3 = fma %6, %5, %1"));
}

TEST_CASE("contraction: a short sum of products becomes mul_reduce_sum", "[contract]") {
  std::string sq = contracted(R"(func @f(%0: f32[16,1]) -> (f32[]) {
  %1 = integer_pow[y=2] %0 : f32[16,1]
  %2 = reduce_sum[axes=[0, 1]] %1 : f32[]
  return %2
})");
  CHECK(has(sq, "%2 = mul_reduce_sum[axes=[0, 1] squares=true] %0, %0 : f32[]"));
  // A reduced axis longer than 32: XLA cuts it into reduce-windows first,
  // which do not take the multiply in.
  auto long_axis = std::make_shared<const Function>(
      parse_function(R"(func @f(%0: f32[4,33], %1: f32[4,33]) -> (f32[4]) {
  %2 = mul %0, %1 : f32[4,33]
  %3 = reduce_sum[axes=[1]] %2 : f32[4]
  return %3
})"));
  CHECK(contract_multiply_adds(long_axis) == long_axis);
  // 4096 elements or more: YNNPACK sums the rounded products.
  auto ynn = std::make_shared<const Function>(
      parse_function(R"(func @f(%0: f32[256,16], %1: f32[256,16]) -> (f32[256]) {
  %2 = mul %0, %1 : f32[256,16]
  %3 = reduce_sum[axes=[1]] %2 : f32[256]
  return %3
})"));
  CHECK(contract_multiply_adds(ynn) == ynn);
}

TEST_CASE("mul_reduce_sum: XLA's chains and lanes", "[contract]") {
  // Chains of fused multiply-adds where the box does not vectorize.
  CHECK(product_sum_lanes(12, 3, 4, false).lanes == 0);
  CHECK(product_sum_lanes(8, 9, 4, false).lanes == 0);
  CHECK(product_sum_lanes(2, 3, 4, false).lanes == 0);
  // Fused lanes for up to 4 columns; rounded products beyond.
  ProductLanes l = product_sum_lanes(16, 3, 4, false);
  CHECK((l.lanes == 8 && l.fused));
  l = product_sum_lanes(8, 5, 4, false);
  CHECK((l.lanes == 8 && !l.fused));
  l = product_sum_lanes(8, 7, 4, false);
  CHECK((l.lanes == 4 && !l.fused));
  l = product_sum_lanes(8, 7, 4, true);
  CHECK((l.lanes == 8 && !l.fused));
  l = product_sum_lanes(2, 3, 4, true);
  CHECK((l.lanes == 2 && l.fused));
  l = product_sum_lanes(12, 3, 8, false);
  CHECK((l.lanes == 4 && l.fused));
  // From 16 float32 rows on: row_loop_lanes, 2 lanes for pairs of factors
  // over 7 or 8 columns at 18 or 19 rows (across outputs, 8 columns only).
  l = product_sum_lanes(21, 3, 4, false);
  CHECK((l.lanes == 4 && l.fused));
  l = product_sum_lanes(18, 7, 4, false);
  CHECK((l.lanes == 2 && !l.fused));
  CHECK(product_sum_lanes(18, 7, 4, true).lanes == 4);
  CHECK(product_sum_lanes(18, 7, 4, false, true).lanes == 4);
  CHECK(product_sum_lanes(18, 8, 4, false, true).lanes == 2);

  // The kernel: a chain of fused multiply-adds over 1-D float32.
  Array a(DType::Float32, {3}, false), b(DType::Float32, {3}, false);
  float av[] = {1.0f + 0x1p-12f, 3.0f, -2.0f}, bv[] = {1.0f - 0x1p-12f, 0.5f, 0.25f};
  for (int i = 0; i < 3; ++i) a.as<float>()[i] = av[i], b.as<float>()[i] = bv[i];
  OpAttrs at;
  at.axes = {0};
  Array s = eval_ref(Op::MulReduceSum, at, std::vector<Array>{a, b});
  float want = std::fma(-2.0f, 0.25f, std::fma(3.0f, 0.5f, std::fma(av[0], bv[0], 0.0f)));
  CHECK(s.as<float>()[0] == want);
}

TEST_CASE("contraction: a reduce takes its own copy of a product used elsewhere", "[contract]") {
  // XLA duplicates the multiply into the reduce's fusion: both the sum and
  // the one elementwise add that also uses it contract it.
  std::string both =
      contracted(R"(func @f(%0: f32[4,8], %1: f32[4,8], %2: f32[4,8]) -> (f32[4], f32[4,8]) {
  %3 = mul %0, %1 : f32[4,8]
  %4 = reduce_sum[axes=[1]] %3 : f32[4]
  %5 = add %3, %2 : f32[4,8]
  return %4, %5
})");
  CHECK(has(both, "mul_reduce_sum[axes=[1]] %0, %1"));
  CHECK(has(both, "fma %0, %1, %2"));
  CHECK(!has(both, "mul %0, %1"));

  // Two elementwise users share the multiply's loop: only the sum fuses it.
  std::string shared =
      contracted(R"(func @f(%0: f32[4,8], %1: f32[4,8], %2: f32[4,8]) -> (f32[4], f32[4,8]) {
  %3 = mul %0, %1 : f32[4,8]
  %4 = reduce_sum[axes=[1]] %3 : f32[4]
  %5 = add %3, %2 : f32[4,8]
  %6 = add %3, %5 : f32[4,8]
  return %4, %6
})");
  CHECK(has(shared, "mul_reduce_sum[axes=[1]] %0, %1"));
  CHECK(has(shared, "%3 = mul %0, %1"));
  CHECK(!has(shared, "fma"));

  // A product of two arrays that is also a result (or a dot's operand) is
  // stored once: copying it would read more than it writes, and its other
  // user cannot fuse it. The sum adds the stored product.
  std::string returned = contracted(R"(func @f(%0: f32[4,8], %1: f32[4,8]) -> (f32[4], f32[4,8]) {
  %2 = mul %0, %1 : f32[4,8]
  %3 = reduce_sum[axes=[1]] %2 : f32[4]
  return %3, %2
})");
  CHECK(has(returned, "reduce_sum[axes=[1]] %2"));
  CHECK(!has(returned, "mul_reduce_sum"));
  std::string dotted =
      contracted(R"(func @f(%0: f32[4,8], %1: f32[4,8], %2: f32[4,3]) -> (f32[8], f32[8,3]) {
  %3 = mul %0, %1 : f32[4,8]
  %4 = reduce_sum[axes=[0]] %3 : f32[8]
  %5 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[0] rhs_contract=[0]] %3, %2 : f32[8,3]
  return %4, %5
})");
  CHECK(!has(dotted, "mul_reduce_sum"));

  // One full-size operand (the other a broadcast): copying reads no more.
  std::string scaled = contracted(R"(func @f(%0: f32[4,8], %1: f32[8]) -> (f32[4], f32[4,8]) {
  %2 = broadcast_in_dim[shape=(4, 8) dims=[1]] %1 : f32[4,8]
  %3 = mul %0, %2 : f32[4,8]
  %4 = reduce_sum[axes=[1]] %3 : f32[4]
  return %4, %3
})");
  CHECK(has(scaled, "mul_reduce_sum[axes=[1]"));
  CHECK(!has(scaled, "reduce_sum[axes=[1]] %3"));
}

TEST_CASE("contraction: a whole-array float32 sum records the work fused into its loop",
          "[contract]") {
  auto body_of = [](const std::string& ops) {
    std::string text = "func @f(%0: f32[8,7]) consts(%1: f32[]) -> (f32[]) {\n"
                       "  %2 = broadcast_in_dim[shape=(8, 7) dims=[]] %1 : f32[8,7]\n" +
                       ops + "  %9 = reduce_sum[axes=[0, 1]] %8 : f32[]\n  return %9\n}";
    std::string out = contracted(text);
    size_t at = out.find("reduce_sum[axes=[0, 1]");
    REQUIRE(at != std::string::npos);
    size_t body = out.find("body=", at);
    return body == std::string::npos || body > out.find('\n', at)
               ? LoopBody::Load
               : static_cast<LoopBody>(std::stoi(out.substr(body + 5)));
  };
  CHECK(body_of("  %8 = abs %0 : f32[8,7]\n") == LoopBody::Abs);
  CHECK(body_of("  %8 = exp %0 : f32[8,7]\n") == LoopBody::Exp);
  CHECK(body_of("  %8 = sin %0 : f32[8,7]\n") == LoopBody::Sine);

  // |a - b| of two loaded arrays is a class of its own; the square of a - b
  // marks its mul_reduce_sum.
  std::string l1 = contracted(R"(func @f(%0: f32[8,7], %1: f32[8,7]) -> (f32[]) {
  %2 = sub %0, %1 : f32[8,7]
  %3 = abs %2 : f32[8,7]
  %4 = reduce_sum[axes=[0, 1]] %3 : f32[]
  return %4
})");
  CHECK(has(l1, "body=" + std::to_string(static_cast<int>(LoopBody::Pair))));
  std::string l2 = contracted(R"(func @f(%0: f32[8,7], %1: f32[8,7]) -> (f32[]) {
  %2 = sub %0, %1 : f32[8,7]
  %3 = integer_pow[y=2] %2 : f32[8,7]
  %4 = reduce_sum[axes=[0, 1]] %3 : f32[]
  return %4
})");
  CHECK(has(l2, "mul_reduce_sum"));
  CHECK(has(l2, "body=" + std::to_string(static_cast<int>(LoopBody::Pair))));
  // A dense layer's output (a loaded array plus a row bias) counts as loaded:
  // always in an L1 loss, also with the difference read elsewhere (the
  // gradient's sign); in a squared error only for fewer than 8 rows.
  const std::string pair = "body=" + std::to_string(static_cast<int>(LoopBody::Pair));
  auto biased = [&](const char* shape, const char* loss, const char* more) {
    std::string s = shape;
    return contracted("func @f(%0: f32[" + s + "], %1: f32[" + s + "], %2: f32[" +
                      s.substr(s.find(',') + 1) + "]) -> (f32[]" +
                      (*more ? ", f32[" + s + "]" : "") + ") {\n  %3 = broadcast_in_dim[shape=(" +
                      s + ") dims=[1]] %2 : f32[" + s + "]\n  %4 = add %0, %3 : f32[" + s +
                      "]\n  %5 = sub %4, %1 : f32[" + s + "]\n  %6 = " + loss + " : f32[" + s +
                      "]\n  %7 = reduce_sum[axes=[0, 1]] %6 : f32[]\n" + more + "  return %7" +
                      (*more ? ", %8" : "") + "\n}");
  };
  CHECK(has(biased("3,7", "abs %5", ""), pair));
  CHECK(has(biased("12,7", "abs %5", ""), pair));
  CHECK(has(biased("3,7", "abs %5", "  %8 = sign %5 : f32[3,7]\n"), pair));
  CHECK(has(biased("3,7", "integer_pow[y=2] %5", ""), pair));
  CHECK(!has(biased("12,7", "integer_pow[y=2] %5", ""), pair));
  CHECK(!has(biased("3,7", "integer_pow[y=2] %5", "  %8 = mul %5, %5 : f32[3,7]\n"), pair));
  CHECK(body_of("  %7 = neg %0 : f32[8,7]\n  %8 = cos %7 : f32[8,7]\n") == LoopBody::Sine);
  CHECK(body_of("  %8 = add %0, %2 : f32[8,7]\n") == LoopBody::Light);
  CHECK(body_of("  %8 = neg %0 : f32[8,7]\n") == LoopBody::Load);
  CHECK(body_of("  %8 = sqrt %0 : f32[8,7]\n") == LoopBody::Sqrt);
  CHECK(body_of("  %8 = div %2, %0 : f32[8,7]\n") == LoopBody::Recip);
  // Cheap ops add up: abs then an add is tanh's class, max and min with
  // scalars (clip) too.
  CHECK(body_of("  %7 = abs %0 : f32[8,7]\n  %8 = add %7, %2 : f32[8,7]\n") == LoopBody::Tanh);
  CHECK(body_of("  %7 = max %0, %2 : f32[8,7]\n  %8 = min %7, %2 : f32[8,7]\n") == LoopBody::Tanh);
  CHECK(body_of("  %7 = abs %0 : f32[8,7]\n  %8 = sqrt %7 : f32[8,7]\n") == LoopBody::Logistic);
  // Not measured: sin in a chain.
  CHECK(body_of("  %7 = sin %0 : f32[8,7]\n  %8 = abs %7 : f32[8,7]\n") == LoopBody::Load);
  // A body that reads a value twice (a DAG): its work counted once.
  CHECK(body_of("  %7 = abs %0 : f32[8,7]\n  %8 = add %7, %0 : f32[8,7]\n") == LoopBody::Tanh);
  // (A square is a product: mul_reduce_sum's, no loop body.)
  CHECK(body_of("  %7 = exp %0 : f32[8,7]\n  %8 = mul %7, %7 : f32[8,7]\n") == LoopBody::Load);
  // A computed value times a scalar: mul_reduce_sum's scaled form with the
  // value's class, the multiply one more cheap op (tanh's class holds it).
  std::string scaled = contracted(R"(func @f(%0: f32[8,7]) consts(%1: f32[]) -> (f32[]) {
  %2 = broadcast_in_dim[shape=(8, 7) dims=[]] %1 : f32[8,7]
  %3 = abs %0 : f32[8,7]
  %4 = mul %3, %2 : f32[8,7]
  %5 = reduce_sum[axes=[0, 1]] %4 : f32[]
  return %5
})");
  CHECK(has(scaled, "mul_reduce_sum[axes=[0, 1] scaled=true body=3] %3, %2"));
  // The IR text refuses a class that does not exist.
  CHECK_THROWS(parse_function(R"(func @f(%0: f32[8,7]) -> (f32[]) {
  %1 = reduce_sum[axes=[0, 1] body=42] %0 : f32[]
  return %1
})"));
}

TEST_CASE("contraction: negations move out of a product's way", "[contract]") {
  // y - (-m) is y + m.
  std::string sub = contracted(R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4]) -> (f32[4]) {
  %3 = mul %0, %1 : f32[4]
  %4 = neg %3 : f32[4]
  %5 = sub %2, %4 : f32[4]
  return %5
})");
  CHECK(has(sub, "fma %0, %1, %2"));
  // --m + y is m + y.
  std::string twice = contracted(R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4]) -> (f32[4]) {
  %3 = mul %0, %1 : f32[4]
  %4 = neg %3 : f32[4]
  %5 = neg %4 : f32[4]
  %6 = add %5, %2 : f32[4]
  return %6
})");
  CHECK(has(twice, "fma %0, %1, %2"));
  // -m - y is -(m + y).
  std::string neg_first = contracted(R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4]) -> (f32[4]) {
  %3 = mul %0, %1 : f32[4]
  %4 = neg %3 : f32[4]
  %5 = sub %4, %2 : f32[4]
  return %5
})");
  CHECK(has(neg_first, "fma %0, %1, %2"));
  CHECK(has(neg_first, "neg"));
  // A negation used elsewhere stays where it is.
  std::string shared =
      contracted(R"(func @f(%0: f32[4], %1: f32[4], %2: f32[4]) -> (f32[4], f32[4]) {
  %3 = mul %0, %1 : f32[4]
  %4 = neg %3 : f32[4]
  %5 = sub %2, %4 : f32[4]
  return %5, %4
})");
  CHECK(has(shared, "sub %2, %4"));
}
