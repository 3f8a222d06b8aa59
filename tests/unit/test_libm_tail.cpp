// Which jitted exp and log ops take the C library's function for a short
// vector's last lanes (ir/libm_tail.hpp), as measured against JAX 0.10.2.
#include <catch2/catch.hpp>

#include "ir/libm_tail.hpp"

using namespace pxl;

namespace {

// Whether mark_libm_tails marks the exp or log of `text` (there is one).
bool marked(const std::string& text) {
  auto f = std::make_shared<const Function>(parse_function(text));
  auto out = mark_libm_tails(f);
  CHECK(verify_function(*out).empty());
  for (const Instr& in : out->body)
    if (in.op == Op::Exp || in.op == Op::Log) return in.attrs.libm_tail;
  FAIL("no exp or log");
  return false;
}

std::string lone(const std::string& type, const char* op = "exp") {
  return "func @f(%0: " + type + ") -> (" + type + ") {\n  %1 = " + op + " %0 : " + type +
         "\n  return %1\n}";
}

} // namespace

TEST_CASE("libm tails: a lone exp or log of a short float32 vector", "[libm_tail]") {
  for (const char* t : {"f32[3]", "f32[5]", "f32[6]", "f32[7]", "f32[11]", "f32[15]"}) {
    CHECK(marked(lone(t)));
    CHECK(marked(lone(t, "log")));
  }
  // Whole vectors of 1, 2, 4 or 8 lanes, 16 elements and more, other ranks
  // and types are XLA's polynomials throughout.
  for (const char* t : {"f32[4]", "f32[8]", "f32[10]", "f32[12]", "f32[16]", "f32[21]", "f32[1,5]",
                        "f64[5]", "f16[5]"})
    CHECK_FALSE(marked(lone(t)));
}

TEST_CASE("libm tails: only the root of its loop", "[libm_tail]") {
  // Fused into a product: no.
  CHECK_FALSE(marked(R"(func @f(%0: f32[5], %1: f32[5]) -> (f32[5]) {
  %2 = exp %0 : f32[5]
  %3 = mul %2, %1 : f32[5]
  return %3
})"));
  // Read by two ops (XLA does not duplicate it): yes.
  CHECK(marked(R"(func @f(%0: f32[5], %1: f32[5]) -> (f32[5], f32[5]) {
  %2 = exp %0 : f32[5]
  %3 = mul %2, %1 : f32[5]
  %4 = add %2, %1 : f32[5]
  return %3, %4
})"));
}

TEST_CASE("libm tails: what is fused in front", "[libm_tail]") {
  auto in_front = [](const std::string& type, const std::string& ops) {
    return "func @f(%0: " + type + ", %1: " + type + ") -> (" + type + ") {\n" + ops +
           "  %9 = exp %2 : " + type + "\n  return %9\n}";
  };
  // One binary op of two loaded values: every tail.
  for (const char* t : {"f32[3]", "f32[7]", "f32[13]"})
    CHECK(marked(in_front(t, std::string("  %2 = sub %0, %1 : ") + t + "\n")));
  // A larger tree: tails of 5 or 6 lanes, and of 3 after 8.
  auto tree = [&](const std::string& t) {
    return in_front(t, "  %3 = mul %0, %0 : " + t + "\n  %2 = add %3, %1 : " + t + "\n");
  };
  CHECK(marked(tree("f32[5]")));
  CHECK(marked(tree("f32[14]")));
  CHECK(marked(tree("f32[11]")));
  CHECK_FALSE(marked(tree("f32[3]")));
  CHECK_FALSE(marked(tree("f32[7]")));
  // A constant among them (a splat): none.
  CHECK_FALSE(marked(R"(func @f(%0: f32[5]) consts(%1: f32[]) -> (f32[5]) {
  %2 = broadcast_in_dim[shape=(5,) dims=[]] %1 : f32[5]
  %3 = add %0, %2 : f32[5]
  %4 = exp %3 : f32[5]
  return %4
})"));
  // A reduction in front fuses: none.
  CHECK_FALSE(marked(R"(func @f(%0: f32[2,5]) -> (f32[5]) {
  %1 = reduce_max[axes=[0]] %0 : f32[5]
  %2 = exp %1 : f32[5]
  return %2
})"));
}
