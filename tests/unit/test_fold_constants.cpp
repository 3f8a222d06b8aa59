// Constant folding in a jitted program (ir/fold_constants.hpp): which values
// become constants, and the folder's values.
#include <catch2/catch.hpp>

#include <cmath>

#include "ir/fold_constants.hpp"

using namespace pxl;

namespace {

struct Folded {
  std::shared_ptr<const Function> fn;
  std::vector<Array> added;
};

Folded folded(const std::string& text, std::vector<Array> consts) {
  auto f = std::make_shared<const Function>(parse_function(text));
  Folded out;
  out.fn = fold_constants(f, consts, &out.added, false);
  CHECK(verify_function(*out.fn).empty());
  return out;
}

bool has(const Function& f, Op op) {
  for (const Instr& in : f.body)
    if (in.op == op) return true;
  return false;
}

Array f32(float v) { return Array::scalar(Scalar::of_float(v), DType::Float32); }

} // namespace

TEST_CASE("fold constants: transcendental functions of constants", "[fold]") {
  const std::string text = R"(func @f(%0: f32[3]) consts(%1: f32[]) -> (f32[3]) {
  %2 = tanh %1 : f32[]
  %3 = broadcast_in_dim[shape=(3,) dims=[]] %2 : f32[3]
  %4 = mul %0, %3 : f32[3]
  return %4
})";
  Folded r = folded(text, {f32(0.93f)});
  REQUIRE(r.added.size() == 1);
  // Double precision, rounded once (glibc's tanhf is one ulp off here).
  CHECK(r.added[0].as<float>()[0] == static_cast<float>(std::tanh(static_cast<double>(0.93f))));
  CHECK_FALSE(has(*r.fn, Op::Tanh));
  CHECK(has(*r.fn, Op::BroadcastInDim)); // the splat stays one
  // expm1 is the C library's float function.
  Folded e = folded(R"(func @f() consts(%0: f32[]) -> (f32[]) {
  %1 = expm1 %0 : f32[]
  return %1
})",
                    {f32(-1.52f)});
  REQUIRE(e.added.size() == 1);
  volatile float x = -1.52f; // (not folded by the C++ compiler, which rounds correctly)
  CHECK(e.added[0].as<float>()[0] == std::expm1(x));
  // Unknown constant values: nothing folds.
  Folded u = folded(text, {Array()});
  CHECK(u.added.empty());
  CHECK(has(*u.fn, Op::Tanh));
}

TEST_CASE("fold constants: a product and a sum round separately", "[fold]") {
  Array w(DType::Float32, {4}, false);
  for (int i = 0; i < 4; ++i) w.as<float>()[i] = 0.1f + 0.37f * static_cast<float>(i);
  Folded r = folded(R"(func @f() consts(%0: f32[4], %1: f32[], %2: f32[]) -> (f32[4]) {
  %3 = broadcast_in_dim[shape=(4,) dims=[]] %1 : f32[4]
  %4 = mul %0, %3 : f32[4]
  %5 = broadcast_in_dim[shape=(4,) dims=[]] %2 : f32[4]
  %6 = add %4, %5 : f32[4]
  return %6
})",
                    {w, f32(0.0197f), f32(0.05f)});
  REQUIRE(r.added.size() == 1);
  for (int i = 0; i < 4; ++i) {
    volatile float p = w.as<float>()[i] * 0.0197f; // rounded on its own
    CHECK(r.added[0].as<float>()[i] == p + 0.05f);
  }
  CHECK(r.fn->body.empty());
}

TEST_CASE("fold constants: a short iota's arithmetic, as LLVM's unrolled loop", "[fold]") {
  const std::string text =
      R"(func @f(%0: f32[]) consts(%1: f32[], %2: f32[]) -> (f32[N], f32[N], f32[]) {
  %3 = iota[dtype=float32 shape=(N,) axis=0] : f32[N]
  %4 = broadcast_in_dim[shape=(N,) dims=[]] %1 : f32[N]
  %5 = mul %3, %4 : f32[N]
  %6 = broadcast_in_dim[shape=(N,) dims=[]] %2 : f32[N]
  %7 = add %5, %6 : f32[N]
  %8 = exp %3 : f32[N]
  %9 = exp %0 : f32[]
  return %7, %8, %9
})";
  auto with_n = [&](int n) {
    std::string t = text;
    for (size_t at; (at = t.find('N')) != std::string::npos;) t.replace(at, 1, std::to_string(n));
    return t;
  };
  Folded r = folded(with_n(5), {f32(0.0197f), f32(0.05f)});
  REQUIRE(r.added.size() == 1); // the product plus a constant, not the exps
  for (int i = 0; i < 5; ++i) {
    volatile float p = static_cast<float>(i) * 0.0197f;
    CHECK(r.added[0].as<float>()[i] == p + 0.05f);
  }
  CHECK(has(*r.fn, Op::Exp)); // of the iota (not modelled) and of a parameter
  // Longer loops are vectorized, not folded.
  Folded big = folded(with_n(352), {f32(0.0197f), f32(0.05f)});
  CHECK(big.added.empty());
  CHECK(has(*big.fn, Op::Iota));
}
