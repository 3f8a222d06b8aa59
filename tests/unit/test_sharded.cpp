// Blocks of arrays for sharding: contiguous blocks are views of the buffer,
// the others copies; both hold the right elements.
#include <thread>

#include <catch2/catch.hpp>

#include "runtime/sharded.hpp"

using namespace pxl;

namespace {
Array iota(Shape shape) {
  Array a(DType::Int32, shape);
  for (int64_t i = 0; i < a.size(); ++i) a.as<int32_t>()[i] = static_cast<int32_t>(i);
  return a;
}
} // namespace

TEST_CASE("slice_block views contiguous blocks and copies the others", "[runtime]") {
  Array a = iota({4, 3, 2});
  SECTION("leading-axis rows are a view") {
    Array b = slice_block(a, {2, 0, 0}, {2, 3, 2});
    CHECK(b.data() == static_cast<const char*>(a.data()) + 2 * 6 * 4);
    CHECK(b.shape() == Shape{2, 3, 2});
    CHECK(b.nbytes() == 2 * 6 * 4);
    CHECK(b.as<int32_t>()[0] == 12);
    CHECK(b.as<int32_t>()[11] == 23);
  }
  SECTION("one index then a partial axis is a view") {
    Array b = slice_block(a, {1, 1, 0}, {1, 2, 2});
    CHECK(b.data() == static_cast<const char*>(a.data()) + (6 + 2) * 4);
    CHECK(b.as<int32_t>()[3] == 11);
  }
  SECTION("a partial inner axis is copied") {
    Array b = slice_block(a, {0, 0, 1}, {4, 3, 1});
    CHECK(b.data() != a.data());
    for (int64_t i = 0; i < 12; ++i) CHECK(b.as<int32_t>()[i] == 2 * i + 1);
  }
  SECTION("views of views") {
    Array b = slice_block(a, {2, 0, 0}, {2, 3, 2});
    Array c = slice_block(b, {1, 2, 0}, {1, 1, 2});
    CHECK(c.as<int32_t>()[0] == 22);
    CHECK(c.as<int32_t>()[1] == 23);
  }
}

#include "runtime/collectives.hpp"
#include "runtime/executable.hpp"

TEST_CASE("Small independent launches run on the calling thread, with the same results",
          "[runtime]") {
  // f(x) = x * x per participant: no collectives, so launch may run inline.
  auto f = std::make_shared<Function>();
  IRValue p;
  p.aval = AVal{DType::Int32, {4}, false};
  int x = f->add_value(p);
  f->params.push_back(x);
  IRValue r = p;
  r.producer = 0;
  int y = f->add_value(r);
  f->body.push_back(Instr{Op::Mul, {}, {x, x}, y});
  f->results.push_back(y);
  CHECK(participants_independent(*f));
  SpmdLayout layout;
  layout.mesh.axis_names = {"i"};
  layout.mesh.axis_sizes = {4};
  layout.mesh.device_ids = {0, 1, 2, 3};
  layout.threads = 4;
  DeviceThreads pool(4);
  for (ExecMode mode : {ExecMode::Interp, ExecMode::Jit}) {
    auto exe = make_executable(mode, nullptr, f, layout, {});
    CHECK(exe->independent());
    std::vector<std::vector<Array>> inputs;
    for (int d = 0; d < 4; ++d) {
      Array a = iota({4});
      for (int i = 0; i < 4; ++i) a.as<int32_t>()[i] += d;
      inputs.push_back({a});
    }
    auto out = launch(*exe, pool, layout, inputs);
    REQUIRE(out.size() == 4);
    for (int d = 0; d < 4; ++d)
      for (int i = 0; i < 4; ++i) CHECK(out[d][0].as<int32_t>()[i] == (i + d) * (i + d));
  }
}

namespace {
// Records the thread each device thread's part ran on; never independent
// (as if it had collectives), so only the layout decides where it runs.
struct WhereItRan : Executable {
  std::vector<std::thread::id> ran_on;
  explicit WhereItRan(int threads) : ran_on(static_cast<size_t>(threads)) {}
  std::vector<std::vector<Array>> run(int thread, const std::vector<std::vector<Array>>& inputs,
                                      CommWorld&, std::vector<DebugRecord>&) override {
    ran_on[static_cast<size_t>(thread)] = std::this_thread::get_id();
    return inputs;
  }
};
} // namespace

TEST_CASE("A program on one device thread runs on the calling thread", "[runtime]") {
  DeviceThreads pool(2);
  for (int threads : {1, 2}) {
    SpmdLayout layout;
    layout.mesh.axis_names = {"i"};
    layout.mesh.axis_sizes = {threads};
    layout.mesh.device_ids = threads == 1 ? std::vector<int>{0} : std::vector<int>{0, 1};
    layout.threads = threads;
    WhereItRan exe(threads);
    std::vector<std::vector<Array>> inputs(static_cast<size_t>(threads), {iota({2})});
    auto out = launch(exe, pool, layout, inputs);
    CHECK(out.size() == static_cast<size_t>(threads));
    for (std::thread::id id : exe.ran_on)
      CHECK((id == std::this_thread::get_id()) == (threads == 1)); // else the device threads'
  }
}
