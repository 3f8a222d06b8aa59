// The static buffer planner of the compiled schedule (codegen/buffer_plan.hpp):
// dead values' bytes are reused, values alive at the same time never share
// bytes, and results or values seen outside the program are never placed in
// the arena; plus the compiled schedule against the reference on programs
// that exercise those cases, with several participants per thread.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "codegen/buffer_plan.hpp"
#include "codegen/jit.hpp"
#include "runtime/executable.hpp"
#include "tests/unit/ir_builder.hpp"

using namespace pxl;

namespace {

using Kind = BufferPlan::Kind;

int matmul(Builder& b, int x, int w) {
  OpAttrs a;
  a.dot.lhs_contract = {1};
  a.dot.rhs_contract = {0};
  return b.op(Op::DotGeneral, a, {x, w});
}

int reshape(Builder& b, int x, Shape s) {
  OpAttrs a;
  a.shape = std::move(s);
  return b.op(Op::Reshape, a, {x});
}

// Whether two planned arena values' bytes overlap.
bool overlap(const BufferPlan& p, int a, int b) {
  const auto &x = p.values[a], &y = p.values[b];
  return x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
}

bool live_together(const BufferPlan& p, int a, int b) {
  const auto &x = p.values[a], &y = p.values[b];
  return x.def <= y.last && y.def <= x.last;
}

// Every pair of arena values alive at the same step has disjoint bytes.
void check_no_conflicts(const BufferPlan& p) {
  for (size_t a = 0; a < p.values.size(); ++a)
    for (size_t b = a + 1; b < p.values.size(); ++b) {
      if (p.values[a].kind != Kind::Arena || p.values[b].kind != Kind::Arena) continue;
      INFO("%" << a << " and %" << b);
      CHECK(!(live_together(p, int(a), int(b)) && overlap(p, int(a), int(b))));
    }
}

SpmdLayout participants_on_one_thread(int k) {
  SpmdLayout l;
  l.mesh.device_ids.assign(static_cast<size_t>(k), 0);
  l.mesh.axis_names = {"i"};
  l.mesh.axis_sizes = {k};
  l.threads = 1;
  l.per_thread = k;
  return l;
}

std::vector<std::vector<Array>> run_all(Executable& exe,
                                        const std::vector<std::vector<Array>>& in) {
  CommWorld world(1, static_cast<int>(in.size()));
  std::vector<DebugRecord> debug;
  return exe.run(0, in, world, debug);
}

Array filled(Shape s, float start, float step) {
  Array a(DType::Float32, std::move(s));
  for (int64_t i = 0; i < a.size(); ++i) a.as<float>()[i] = start + step * float(i % 97);
  return a;
}

} // namespace

TEST_CASE("Buffer plan: a dead value's bytes are reused", "[buffers]") {
  // exp -> dot -> tanh -> dot -> log: each kernel output dies at the dot that
  // reads it, so the second one reuses the first one's bytes.
  Builder b;
  int x = b.param(DType::Float32, {16, 16}), w = b.param(DType::Float32, {16, 16});
  int e = b.op(Op::Exp, {}, {x});
  int t = b.op(Op::Tanh, {}, {matmul(b, e, w)});
  int r = b.op(Op::Log, {}, {matmul(b, t, w)});
  b.f.results.push_back(r);
  KernelPlan kp = plan_kernels(b.f);
  REQUIRE(kp.kernels.size() == 3);
  BufferPlan p = plan_buffers(b.f, kp);
  INFO(describe_buffers(p));
  CHECK(p.values[e].kind == Kind::Arena);
  CHECK(p.values[t].kind == Kind::Arena);
  CHECK(p.values[e].offset == p.values[t].offset);
  CHECK(p.arena_bytes == 16 * 16 * 4);
  CHECK(p.values[r].kind == Kind::Owned); // a result never lives in the arena
  CHECK(p.values[x].kind == Kind::Input);
}

TEST_CASE("Buffer plan: values alive together never share bytes", "[buffers]") {
  // e and t are read again by the last kernel, so e, t and s are all alive
  // when s is made.
  Builder b;
  int x = b.param(DType::Float32, {8, 8}), w = b.param(DType::Float32, {8, 8});
  int e = b.op(Op::Exp, {}, {x});
  int t = b.op(Op::Tanh, {}, {matmul(b, e, w)});
  int s = b.op(Op::Sin, {}, {matmul(b, t, w)});
  int sum = b.op(Op::Add, {}, {b.op(Op::Add, {}, {e, t}), matmul(b, s, w)});
  b.f.results.push_back(sum);
  BufferPlan p = plan_buffers(b.f, plan_kernels(b.f));
  INFO(describe_buffers(p));
  REQUIRE(p.values[e].kind == Kind::Arena);
  REQUIRE(p.values[t].kind == Kind::Arena);
  REQUIRE(p.values[s].kind == Kind::Arena);
  CHECK(live_together(p, e, t));
  CHECK(!overlap(p, e, t));
  CHECK(!overlap(p, e, s));
  CHECK(!overlap(p, t, s));
  CHECK(p.values[sum].kind == Kind::Owned);
  check_no_conflicts(p);
}

TEST_CASE("Buffer plan: views and kept values stay out of the arena", "[buffers]") {
  SECTION("a reshape (a view) that is a result") {
    Builder b;
    int x = b.param(DType::Float32, {4, 8});
    int e = b.op(Op::Exp, {}, {x});
    int r = reshape(b, e, {32});
    b.f.results.push_back(r);
    BufferPlan p = plan_buffers(b.f, plan_kernels(b.f));
    INFO(describe_buffers(p));
    CHECK(p.values[e].kind == Kind::Owned);
    CHECK(p.values[r].kind == Kind::Host);
    CHECK(p.arena_bytes == 0);
  }
  SECTION("a reshape read later: the alias keeps the bytes alive") {
    Builder b;
    int x = b.param(DType::Float32, {4, 8}), w = b.param(DType::Float32, {32, 32});
    int e = b.op(Op::Exp, {}, {x});
    int r = reshape(b, e, {1, 32});
    int d = matmul(b, r, w);
    b.f.results.push_back(b.op(Op::Sin, {}, {d}));
    BufferPlan p = plan_buffers(b.f, plan_kernels(b.f));
    INFO(describe_buffers(p));
    CHECK(p.values[e].kind == Kind::Arena);
    CHECK(p.values[r].kind == Kind::Alias);
    CHECK(p.values[r].root == e);
    CHECK(p.values[r].offset == p.values[e].offset);
    // e's bytes live until the dot that reads its reshape.
    CHECK(p.values[e].last == p.values[d].def);
    check_no_conflicts(p);
  }
  SECTION("a value jax.debug.print keeps") {
    Builder b;
    int x = b.param(DType::Float32, {8});
    int e = b.op(Op::Exp, {}, {x});
    OpAttrs a;
    b.op(Op::DebugPrint, a, {e});
    b.f.results.push_back(b.op(Op::Sin, {}, {e}));
    BufferPlan p = plan_buffers(b.f, plan_kernels(b.f));
    INFO(describe_buffers(p));
    CHECK(p.values[e].kind == Kind::Owned);
  }
}

TEST_CASE("Compiled schedule with arena reuse matches the reference, k participants", "[buffers]") {
  // Arena values, a reshape alias read by a host dot, a result that is a
  // reshape of a kernel output and a 0-d output, for 3 participants in lock
  // step on one thread (each with its own arena).
  Builder b;
  int x = b.param(DType::Float32, {4, 8}), w = b.param(DType::Float32, {8, 8});
  int e = b.op(Op::Exp, {}, {b.op(Op::Mul, {}, {x, x})});
  int t = b.op(Op::Tanh, {}, {matmul(b, e, w)});
  int u = b.op(Op::Sin, {}, {matmul(b, t, w)});
  int flat = reshape(b, b.op(Op::Add, {}, {u, e}), {32});
  OpAttrs red;
  red.axes = {0};
  b.f.results.push_back(b.op(Op::ReduceSum, red, {flat}));
  b.f.results.push_back(reshape(b, b.op(Op::Cos, {}, {t}), {32}));
  b.f.results.push_back(flat);
  auto fn = std::make_shared<Function>(b.f);
  const int k = 3;
  std::vector<std::vector<Array>> in;
  for (int j = 0; j < k; ++j)
    in.push_back({filled({4, 8}, -1.0f + 0.1f * float(j), 0.02f), filled({8, 8}, -0.5f, 0.01f)});
  CodeCache cache;
  auto ref = make_reference_executable(fn, participants_on_one_thread(k), {});
  auto jit = make_llvm_executable(fn, participants_on_one_thread(k), {}, &cache);
  auto want = run_all(*ref, in);
  for (int call = 0; call < 2; ++call) { // the second run reuses the arenas
    auto got = run_all(*jit, in);
    REQUIRE(got.size() == want.size());
    for (int j = 0; j < k; ++j)
      for (size_t r = 0; r < want[j].size(); ++r) {
        INFO("participant " << j << " result " << r << " call " << call);
        REQUIRE(got[j][r].shape() == want[j][r].shape());
        for (int64_t i = 0; i < want[j][r].size(); ++i)
          CHECK(std::abs(got[j][r].as<float>()[i] - want[j][r].as<float>()[i]) <=
                1e-5f * (1 + std::abs(want[j][r].as<float>()[i])));
      }
    // Results never share bytes with each other or with another participant's.
    for (int j = 0; j < k; ++j)
      for (int j2 = 0; j2 < k; ++j2)
        if (j != j2) CHECK(got[j][2].data() != got[j2][2].data());
  }
  const BufferPlan& p = cache.compile(*fn)->buffers;
  INFO(describe_buffers(p));
  CHECK(p.arena_bytes > 0);
}

TEST_CASE("A failing host step stops the compiled schedule with its error", "[buffers]") {
  // exp (arena) -> psum -> sin: the psum fails (its world was aborted), the
  // error comes back out of run(), and the executable runs fine afterwards.
  Builder b;
  int x = b.param(DType::Float32, {2, 8});
  int e = b.op(Op::Exp, {}, {x});
  OpAttrs ps;
  ps.axis_names = {"i"};
  ps.group_size = 2;
  b.f.results.push_back(b.op(Op::Sin, {}, {b.op(Op::Psum, ps, {e})}));
  auto fn = std::make_shared<Function>(b.f);
  CodeCache cache;
  auto jit = make_llvm_executable(fn, participants_on_one_thread(2), {}, &cache);
  REQUIRE(cache.compile(*fn)->buffers.values[e].kind == Kind::Arena);
  std::vector<std::vector<Array>> in = {{filled({2, 8}, 0.0f, 0.1f)}, {filled({2, 8}, 1.0f, 0.1f)}};
  {
    CommWorld world(1, 2);
    world.abort("stopped by the test");
    std::vector<DebugRecord> debug;
    CHECK_THROWS_WITH(jit->run(0, in, world, debug),
                      Catch::Matchers::Contains("stopped by the test"));
  }
  auto out = run_all(*jit, in);
  REQUIRE(out.size() == 2);
  for (int64_t i = 0; i < 16; ++i) {
    float want = std::sin(std::exp(in[0][0].as<float>()[i]) + std::exp(in[1][0].as<float>()[i]));
    CHECK(std::abs(out[0][0].as<float>()[i] - want) <= 1e-5f);
    CHECK(out[1][0].as<float>()[i] == out[0][0].as<float>()[i]);
  }
}
