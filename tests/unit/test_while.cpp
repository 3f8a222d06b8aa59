// The while instruction: its IR text round trip, the verifier's checks, and
// running it with the reference and the LLVM executables.
#include <catch2/catch.hpp>

#include "ir/function.hpp"
#include "ir/while_loop.hpp"
#include <sstream>

#include "lang/diag.hpp"
#include "lang/interp.hpp"
#include "runtime/executable.hpp"

using namespace pxl;

namespace {

// acc = x; i = i0; while i < limit: acc += x; i += 1
const char* kLoop = R"(func @f(%0: f32[3], %1: i32[], %2: i32[]) -> (i32[], f32[3]) {
  %3, %4 = while[cond=@cond body=@body cond_nconsts=1 body_nconsts=1] %1, %0, %2, %0 : i32[], f32[3]
  return %3, %4
}
func @cond(%0: i32[], %1: i32[], %2: f32[3]) -> (bool[]) {
  %3 = lt %1, %0 : bool[]
  return %3
}
func @body(%0: f32[3], %1: i32[], %2: f32[3]) -> (i32[], f32[3]) {
  %3 = add %2, %0 : f32[3]
  %4 = eq %1, %1 : bool[]
  %5 = convert_element_type[dtype=int32] %4 : i32[]
  %6 = add %1, %5 : i32[]
  return %6, %3
}
)";

std::string error_of(const std::string& text) {
  try {
    parse_function(text);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

std::string run(const std::string& code, int devices, bool dump_ir = false) {
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  o.num_devices = devices;
  o.dump_ir = dump_ir;
  Interpreter in(o);
  in.run_string("import jax\nimport jax.numpy as jnp\nfrom jax import lax\n" + code, "t.pxl");
  return out.str();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("while prints, parses back and verifies", "[ir][while]") {
  Function f = parse_function(kLoop);
  REQUIRE(f.body.size() == 1);
  const Instr& in = f.body[0];
  CHECK(in.op == Op::While);
  CHECK(in.nresults == 2);
  REQUIRE(in.attrs.loop);
  CHECK(in.attrs.loop->cond_nconsts == 1);
  CHECK(in.attrs.loop->body_nconsts == 1);
  CHECK(in.attrs.loop->cond->params.size() == 3);
  CHECK(in.attrs.loop->body->results.size() == 2);
  CHECK(verify_function(f).empty());
  std::string printed = print_function(f);
  CHECK(printed == kLoop);
  CHECK(print_function(parse_function(printed)) == printed);
}

TEST_CASE("sub-Functions with the same name print under distinct names", "[ir][while]") {
  Function f = parse_function(kLoop);
  auto loop = std::make_shared<WhileLoop>(*f.body[0].attrs.loop);
  auto renamed = std::make_shared<Function>(*loop->body);
  renamed->name = "cond"; // collides with the cond's name
  loop->body = renamed;
  f.body[0].attrs.loop = loop;
  std::string printed = print_function(f);
  CHECK(printed.find("body=@cond_1") != std::string::npos);
  CHECK(print_function(parse_function(printed)) == printed);
}

TEST_CASE("the verifier rejects ill-typed while loops", "[ir][while]") {
  // The body returns a carry of another type.
  CHECK(error_of(replaced(replaced(kLoop, "-> (i32[], f32[3]) {\n  %3 = add",
                                   "-> (i32[], f32[]) {\n  %3 = add"),
                          "return %6, %3\n",
                          "%7 = reduce_sum[axes=[0]] %3 : f32[]\n  return %6, %7\n"))
            .find("carry 1 is f32[3] but cond takes f32[3], body takes f32[3] and returns f32[]") !=
        std::string::npos);
  // cond returns an int.
  CHECK(error_of(replaced(replaced(kLoop, "-> (bool[])", "-> (i32[])"), "%3 = lt %1, %0 : bool[]",
                          "%3 = add %1, %0 : i32[]"))
            .find("cond must return one bool scalar") != std::string::npos);
  // A sub-Function that is not there.
  CHECK(error_of(replaced(kLoop, "body=@body", "body=@nobody")).find("@nobody") !=
        std::string::npos);
  // Too few operands.
  CHECK(error_of(replaced(kLoop, "%1, %0, %2, %0 :", "%1, %0, %2 :")).find("takes 4 operands") !=
        std::string::npos);
  // A one-result op cannot define two values.
  CHECK(error_of(
            "func @f(%0: f32[2]) -> (f32[2]) {\n  %1, %2 = neg %0 : f32[2], f32[2]\n  return %1\n}")
            .find("neg has one result") != std::string::npos);
}

TEST_CASE("while runs in the reference and the LLVM executables", "[while]") {
  auto fn = std::make_shared<const Function>(parse_function(kLoop));
  for (ExecMode mode : {ExecMode::Interp, ExecMode::Jit}) {
    SpmdLayout layout;
    layout.mesh.device_ids = {0};
    auto exe = make_executable(mode, nullptr, fn, layout, {});
    Array x(DType::Float32, {3});
    for (int i = 0; i < 3; ++i) x.as<float>()[i] = static_cast<float>(i + 1);
    for (auto [i0, limit] : {std::pair{0, 4}, std::pair{5, 2}}) {
      Array lim = Array::scalar(Scalar::of_int(limit), DType::Int32);
      Array start = Array::scalar(Scalar::of_int(i0), DType::Int32);
      CommWorld world(1, 1);
      std::vector<DebugRecord> debug;
      auto out = exe->run(0, {{x, lim, start}}, world, debug);
      REQUIRE(out.size() == 1);
      REQUIRE(out[0].size() == 2);
      int steps = std::max(limit - i0, 0);
      CHECK(out[0][0].get_f64(0) == std::max(i0, limit));
      for (int i = 0; i < 3; ++i) CHECK(out[0][1].get_f64(i) == (i + 1) * (steps + 1));
    }
  }
}

TEST_CASE("jax.debug.print inside a traced loop prints each step", "[while]") {
  std::string out = run(R"(
def f(x):
    def body(c):
        jax.debug.print("step {} {}", c[0], c[1])
        return c[0] + 1, c[1] * 2
    return lax.while_loop(lambda c: c[0] < 2, body, (0, x))[1]
print(jax.pmap(f, axis_name='i')(jnp.array([1.0, 2.0])))
)",
                        2);
  CHECK(out == "step 0 1.0\nstep 1 2.0\nstep 0 2.0\nstep 1 4.0\n[4. 8.]\n");
}

TEST_CASE("pmap over more elements than devices runs each element's loop", "[while]") {
  // Four elements on two devices: two participants per device thread, which
  // stop at their own step without collectives and together with them.
  std::string out = run(R"(
print(jax.pmap(lambda x: lax.while_loop(lambda v: v < 10.0, lambda v: v * 2.0 + 1.0, x))(jnp.array([0.0, 3.0, 9.0, 20.0])))
def g(x):
    return lax.while_loop(lambda c: lax.psum(c[0], 'i') < 8, lambda c: (c[0] + 1, c[1] + lax.psum(c[1], 'i')), (0, x))[1]
print(jax.pmap(g, axis_name='i')(jnp.array([1.0, 2.0, 3.0, 4.0])))
)",
                        2);
  CHECK(out == "[15. 15. 19. 20.]\n[61. 62. 63. 64.]\n");
}

TEST_CASE("--dump=ir prints a loop's cond and body after the caller", "[while]") {
  std::string out =
      run("print(jax.jit(lambda n: lax.fori_loop(0, n, lambda i, s: s + i, 0))(jnp.int32(5)))\n", 1,
          true);
  CHECK(out.find("= while[cond=@fori_cond body=@fori_body cond_nconsts=0") != std::string::npos);
  CHECK(out.find("func @fori_cond(") != std::string::npos);
  CHECK(out.find("func @fori_body(") != std::string::npos);
  CHECK(out.find("10\n") != std::string::npos);
}
