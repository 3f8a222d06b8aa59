// The host_callback op (jax.pure_callback / io_callback with results): dead
// code elimination keeps only io ones, and both executables call the callee
// per participant, skipping it (zeros) where the gate says the branch is not
// taken.
#include <catch2/catch.hpp>

#include <atomic>

#include "codegen/jit.hpp"
#include "runtime/executable.hpp"
#include "tests/unit/ir_builder.hpp"

using namespace pxl;

namespace {

// Doubles its operand and counts its calls.
struct Doubler : HostCallee {
  mutable std::atomic<int> calls{0};
  std::vector<Array> call(std::span<const Array> operands) const override {
    ++calls;
    Array out(DType::Float32, operands[0].shape());
    for (int64_t i = 0; i < out.size(); ++i) out.as<float>()[i] = 2 * operands[0].as<float>()[i];
    return {out};
  }
};

// Binds a host_callback of `callee` on `operands` (one result, its type).
int host_call(Builder& b, std::shared_ptr<const HostCallee> callee, std::vector<int> operands) {
  OpAttrs a;
  a.host = std::move(callee);
  IRValue v;
  v.aval = a.host->results[0];
  v.producer = static_cast<int>(b.f.body.size());
  int id = b.f.add_value(v);
  Instr in{Op::HostCallback, a, std::move(operands), id};
  b.f.body.push_back(in);
  return id;
}

std::shared_ptr<Doubler> doubler(bool pure, bool gated = false) {
  auto d = std::make_shared<Doubler>();
  d->results = {AVal{DType::Float32, {3}, false}};
  d->pure = pure;
  d->gated = gated;
  return d;
}

SpmdLayout participants(int k) {
  SpmdLayout l;
  l.mesh.device_ids.assign(static_cast<size_t>(k), 0);
  l.mesh.axis_names = {"i"};
  l.mesh.axis_sizes = {k};
  l.per_thread = k;
  return l;
}

} // namespace

TEST_CASE("remove_dead_code drops an unused pure host_callback, keeps an io one", "[ir]") {
  for (bool pure : {true, false}) {
    Builder b;
    int x = b.param(DType::Float32, {3});
    host_call(b, doubler(pure), {x});
    b.f.results.push_back(b.op(Op::Sin, {}, {x}));
    CHECK(has_effect(b.f.body[0]) == !pure);
    remove_dead_code(b.f);
    CHECK(b.f.body.size() == (pure ? 1u : 2u));
  }
}

TEST_CASE("host_callback runs per participant in both executables", "[runtime]") {
  auto d = doubler(true, true);
  Builder b;
  int x = b.param(DType::Float32, {3});
  int gate = b.param(DType::Bool, {});
  int y = host_call(b, d, {b.op(Op::Exp, {}, {x}), gate});
  b.f.results.push_back(b.op(Op::Add, {}, {y, x}));
  auto fn = std::make_shared<Function>(b.f);
  const int k = 2;
  CodeCache cache;
  for (int which = 0; which < 2; ++which) {
    auto exe = which == 0 ? make_reference_executable(fn, participants(k), {})
                          : make_llvm_executable(fn, participants(k), {}, &cache);
    d->calls = 0;
    std::vector<std::vector<Array>> in;
    for (int j = 0; j < k; ++j) {
      Array xs(DType::Float32, {3}), g(DType::Bool, {});
      for (int i = 0; i < 3; ++i) xs.as<float>()[i] = float(i + j);
      g.as<uint8_t>()[0] = j == 0; // participant 1's branch is not taken
      in.push_back({xs, g});
    }
    CommWorld world(1, k);
    std::vector<DebugRecord> debug;
    auto out = exe->run(0, in, world, debug);
    INFO((which == 0 ? "reference" : "llvm"));
    CHECK(d->calls == 1);
    for (int i = 0; i < 3; ++i) {
      CHECK(out[0][0].as<float>()[i] == Approx(2 * std::exp(float(i)) + float(i)));
      CHECK(out[1][0].as<float>()[i] == Approx(float(i + 1))); // zeros + x
    }
  }
}
