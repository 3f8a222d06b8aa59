// In-place updates (ir/ref_in_place.hpp): a scatter whose operand dies at it
// and whose bytes the executable's caller gave up writes into those bytes, in
// both executables; everywhere else the operand is left as it was.
#include <catch2/catch.hpp>

#include "codegen/jit.hpp"
#include "runtime/executable.hpp"
#include "tests/unit/ir_builder.hpp"

using namespace pxl;

namespace {

SpmdLayout one_participant() {
  SpmdLayout l;
  l.mesh.device_ids = {0};
  return l;
}

Array floats(Shape s, float start) {
  Array a(DType::Float32, std::move(s));
  for (int64_t i = 0; i < a.size(); ++i) a.as<float>()[i] = start + float(i);
  return a;
}

Array ints(std::vector<int32_t> v) {
  Array a(DType::Int32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) a.as<int32_t>()[i] = v[i];
  return a;
}

// x: f32[2,3] set at flat positions idx to upd, as `x.at[...].set` traces it
// (a reshape to one axis, the scatter, a reshape back). With `read_again`,
// the function also returns x + x, so the scatter is not x's last read.
std::shared_ptr<Function> set_rows(bool read_again) {
  Builder b;
  int x = b.param(DType::Float32, {2, 3});
  int idx = b.param(DType::Int32, {3});
  int upd = b.param(DType::Float32, {3});
  OpAttrs flat, back, sc;
  flat.shape = {6};
  back.shape = {2, 3};
  int r = b.op(Op::Reshape, flat, {x});
  int s = b.op(Op::Scatter, sc, {r, idx, upd});
  b.f.results.push_back(b.op(Op::Reshape, back, {s}));
  if (read_again) b.f.results.push_back(b.op(Op::Add, {}, {x, x}));
  return std::make_shared<Function>(b.f);
}

std::vector<std::unique_ptr<Executable>> both(const std::shared_ptr<Function>& fn,
                                              CodeCache& cache) {
  std::vector<std::unique_ptr<Executable>> out;
  out.push_back(make_reference_executable(fn, one_participant(), {}));
  out.push_back(make_llvm_executable(fn, one_participant(), {}, &cache));
  return out;
}

} // namespace

TEST_CASE("In place: a donated operand's bytes become the scatter's result", "[in_place]") {
  CodeCache cache;
  auto fn = set_rows(false);
  for (auto& exe : both(fn, cache)) {
    for (int donate = 0; donate < 2; ++donate) {
      INFO("donated " << donate);
      Array x = floats({2, 3}, 0.0f);
      const void* bytes = x.data();
      std::vector<std::vector<Array>> in{{x, ints({4, 1, 9}), floats({3}, 100.0f)}};
      CommWorld world(1, 1);
      std::vector<DebugRecord> debug;
      std::vector<std::vector<Array>> out;
      if (donate) {
        x = Array(); // the caller keeps no reference: the bytes are the run's
        out = exe->run_donated(0, std::move(in), world, debug);
      } else {
        out = exe->run(0, in, world, debug);
      }
      const Array& r = out[0][0];
      REQUIRE(r.shape() == Shape{2, 3});
      // Index 9 is out of range: dropped, as JAX's scatter drops it.
      std::vector<float> want{0, 101, 2, 3, 100, 5};
      for (int64_t i = 0; i < 6; ++i) CHECK(r.as<float>()[i] == want[static_cast<size_t>(i)]);
      CHECK((r.data() == bytes) == (donate == 1));
      if (!donate)
        for (int64_t i = 0; i < 6; ++i) CHECK(x.as<float>()[i] == float(i)); // untouched
    }
  }
}

TEST_CASE("In place: an operand the caller still holds, or read again, is copied", "[in_place]") {
  CodeCache cache;
  for (bool read_again : {false, true}) {
    auto fn = set_rows(read_again);
    for (auto& exe : both(fn, cache)) {
      INFO("read again " << read_again);
      Array x = floats({2, 3}, 1.0f);
      const void* bytes = x.data();
      std::vector<std::vector<Array>> in{{x, ints({0, 7, 2}), floats({3}, -5.0f)}};
      if (read_again) x = Array(); // given up, but the function reads it after the scatter
      CommWorld world(1, 1);
      std::vector<DebugRecord> debug;
      auto out = exe->run_donated(0, std::move(in), world, debug);
      CHECK(out[0][0].data() != bytes);
      CHECK(out[0][0].as<float>()[0] == -5.0f);
      if (read_again) {
        for (int64_t i = 0; i < 6; ++i) CHECK(out[0][1].as<float>()[i] == 2.0f * float(i + 1));
      } else {
        for (int64_t i = 0; i < 6; ++i) CHECK(x.as<float>()[i] == float(i + 1));
      }
    }
  }
}

// x: f32[6] read by a take (a host step, which copies the input it reads)
// before the scatter that reads it last, as a loop body `x.at[i].set(x[j])`.
TEST_CASE("In place: an input an earlier host step copied is still updated in place",
          "[in_place]") {
  Builder b;
  int x = b.param(DType::Float32, {6});
  int at = b.param(DType::Int32, {1});
  int idx = b.param(DType::Int32, {1});
  OpAttrs axis0;
  int read = b.op(Op::Take, axis0, {x, at});
  b.f.results.push_back(b.op(Op::Scatter, axis0, {x, idx, read}));
  auto fn = std::make_shared<Function>(b.f);
  CodeCache cache;
  for (auto& exe : both(fn, cache)) {
    Array x0 = floats({6}, 0.0f);
    const void* bytes = x0.data();
    std::vector<std::vector<Array>> in{{x0, ints({4}), ints({1})}};
    x0 = Array();
    CommWorld world(1, 1);
    std::vector<DebugRecord> debug;
    auto out = exe->run_donated(0, std::move(in), world, debug);
    const Array& r = out[0][0];
    std::vector<float> want{0, 4, 2, 3, 4, 5};
    for (int64_t i = 0; i < 6; ++i) CHECK(r.as<float>()[i] == want[static_cast<size_t>(i)]);
    CHECK(r.data() == bytes);
  }
}
