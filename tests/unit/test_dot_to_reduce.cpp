// ir/dot_to_reduce: dots of vectors (batched or not) become multiply + reduce
// on CUDA, as XLA's GPU backend makes them; a matmul stays a dot.
#include <catch2/catch.hpp>

#include <map>

#include "ir/dot_to_reduce.hpp"
#include "ir/op.hpp"
#include "runtime/array.hpp"
#include "tests/unit/ir_builder.hpp"

using namespace pxl;

namespace {

Array filled(DType d, Shape s) {
  Array a = Array::uninitialized(d, std::move(s));
  for (int64_t i = 0; i < a.size(); ++i)
    a.set(i, is_integer(d) ? Scalar::of_int(i % 7 - 3) : Scalar::of_float(0.25 * (i % 9) - 1));
  return a;
}

// Runs `f`'s body with the reference kernels (single-result ops only).
std::vector<Array> run(const Function& f, const std::vector<Array>& params) {
  std::map<int, Array> env;
  for (size_t i = 0; i < f.params.size(); ++i) env[f.params[i]] = params[i];
  for (const Instr& in : f.body) {
    std::vector<Array> ops;
    for (int o : in.operands) ops.push_back(env.at(o));
    env[in.result] = eval_ref(in.op, in.attrs, ops);
  }
  std::vector<Array> out;
  for (int r : f.results) out.push_back(env.at(r));
  return out;
}

int dot(Builder& b, int l, int r, DotDims d) {
  OpAttrs a;
  a.dot = std::move(d);
  return b.op(Op::DotGeneral, a, {l, r});
}

bool has(const Function& f, Op op) {
  for (const Instr& in : f.body)
    if (in.op == op) return true;
  return false;
}

} // namespace

TEST_CASE("dots of vectors become multiply + reduce_sum; the values stay", "[cuda]") {
  struct Case {
    DType dtype;
    Shape lhs, rhs;
    DotDims dims;
    bool vectors;
  };
  std::vector<Case> cases = {
      {DType::Float32, {7}, {7}, {{}, {}, {0}, {0}}, true},                     // i,i->
      {DType::Float32, {5, 7}, {5, 7}, {{0}, {0}, {1}, {1}}, true},             // bi,bi->b
      {DType::Float32, {7, 5}, {5, 7}, {{1}, {0}, {0}, {1}}, true},             // ib,bi->b
      {DType::Float32, {2, 3, 4}, {2, 4, 3}, {{0}, {0}, {1, 2}, {2, 1}}, true}, // bij,bji->b
      {DType::Int32, {3, 4}, {3, 4}, {{0}, {0}, {1}, {1}}, true},
      {DType::Float16, {9}, {9}, {{}, {}, {0}, {0}}, true},
      {DType::Float32, {1, 7}, {7, 1}, {{}, {}, {1}, {0}}, true}, // (1, k) . (k, 1)
      {DType::Float16, {2, 1, 7}, {2, 7, 1}, {{0}, {0}, {2}, {1}}, true},
      {DType::Float32, {7}, {1, 7}, {{}, {}, {0}, {1}}, true},
      {DType::Float32, {4, 3}, {3, 5}, {{}, {}, {1}, {0}}, false}, // a matmul
      {DType::Float32, {4, 7}, {7, 1}, {{}, {}, {1}, {0}}, false}, // a matrix-vector product
  };
  for (const Case& c : cases) {
    Builder b;
    int l = b.param(c.dtype, c.lhs), r = b.param(c.dtype, c.rhs);
    b.f.results.push_back(dot(b, l, r, c.dims));
    auto f = std::make_shared<const Function>(b.f);
    auto g = dots_of_vectors_to_reduce(f);
    INFO(print_function(*f, false));
    CHECK(dot_of_vectors(*f, f->body[0]) == c.vectors);
    CHECK((g == f) == !c.vectors);
    CHECK(has(*g, Op::DotGeneral) == !c.vectors);
    CHECK(verify_function(*g) == "");
    const AVal& ga = g->values[static_cast<size_t>(g->results[0])].aval;
    const AVal& fa = f->values[static_cast<size_t>(f->results[0])].aval;
    CHECK(type_str(ga) == type_str(fa));
    std::vector<Array> in{filled(c.dtype, c.lhs), filled(c.dtype, c.rhs)};
    Array want = run(*f, in)[0], got = run(*g, in)[0];
    REQUIRE(got.shape() == want.shape());
    for (int64_t i = 0; i < want.size(); ++i) CHECK(got.get_f64(i) == Approx(want.get_f64(i)));
  }
}
