// Kernel timings in isolation (hidden from the normal run): the LLVM
// executable on one device, no pmap sharding, inputs built once. Run with
//   build/bin/unit_tests "[.bench]"
// and compare with numpy on the same machine (bench/README.md, "Kernels").
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "codegen/jit.hpp"
#include "runtime/executable.hpp"
#include "tests/unit/ir_builder.hpp"

using namespace pxl;

namespace {

Array filled(DType d, Shape s, double v) {
  Array a = Array::uninitialized(d, std::move(s));
  float* p = a.as<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = static_cast<float>(v + 1e-3 * double(i % 1000));
  return a;
}

// Mean ms per call of `fn` over `reps` calls after one warm-up call.
void time_case(const char* name, Function f, const std::vector<Array>& inputs, int reps = 10) {
  auto fn = std::make_shared<Function>(std::move(f));
  SpmdLayout layout;
  layout.mesh.device_ids = {0};
  CodeCache cache;
  auto exe = make_llvm_executable(fn, layout, {}, &cache);
  CommWorld world(1, 1);
  std::vector<DebugRecord> debug;
  exe->run(0, {inputs}, world, debug);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) exe->run(0, {inputs}, world, debug);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
      reps;
  std::printf("%-22s %8.2f ms\n", name, ms);
}

} // namespace

TEST_CASE("Kernel timings", "[.bench]") {
  OpAttrs none;
  const int64_t n16 = 16 << 20, n64 = 64 << 20;
  {
    Builder b;
    int a = b.param(DType::Float32, {n16}), x = b.param(DType::Float32, {n16}),
        c = b.param(DType::Float32, {n16});
    // The Python constants arrive as 0-d arrays broadcast to the shape.
    auto scalar = [&] {
      OpAttrs bc;
      bc.shape = {n16};
      return b.op(Op::BroadcastInDim, bc, {b.param(DType::Float32, {})});
    };
    int two = scalar(), one = scalar();
    int t = b.op(Op::Mul, none, {a, two});
    t = b.op(Op::Mul, none, {b.op(Op::Add, none, {t, x}), c});
    t = b.op(Op::Sub, none, {t, one});
    b.f.results.push_back(t);
    Array s2 = Array::scalar(Scalar::of_float(2), DType::Float32);
    Array s1 = Array::scalar(Scalar::of_float(1), DType::Float32);
    Array in = filled(DType::Float32, {n16}, 1.0);
    time_case("(a*2+b)*c-1 16M", b.f, {in, in, in, s2, s1});
  }
  for (Op op : {Op::ReduceSum, Op::ReduceMax}) {
    Builder b;
    int x = b.param(DType::Float32, {n64});
    OpAttrs red;
    red.axes = {0};
    b.f.results.push_back(b.op(op, red, {x}));
    time_case(op == Op::ReduceSum ? "sum 64M" : "max 64M", b.f,
              {filled(DType::Float32, {n64}, 0.5)});
  }
  {
    Builder b;
    b.f.results.push_back(b.softmax(b.param(DType::Float32, {4096, 4096})));
    time_case("softmax 4096x4096", b.f, {filled(DType::Float32, {4096, 4096}, -1.0)});
  }
}
