// custom_call (ir/custom_call.hpp): lowering inlines the primal (also nested
// calls) with fresh value ids; the shape and vma rules are the primal's.
#include <catch2/catch.hpp>

#include "ir/custom_call.hpp"
#include "lang/diag.hpp"

using namespace pxl;

namespace {

std::shared_ptr<const CustomCallee> callee(const char* text) {
  auto c = std::make_shared<CustomCallee>();
  c->kind = "custom_jvp";
  c->fn = std::make_shared<Function>(parse_function(text));
  c->num_args = c->fn->params.size();
  return c;
}

// Appends `c` called on `operands` to f; returns its first result's id.
int add_call(Function& f, std::shared_ptr<const CustomCallee> c, std::vector<int> operands) {
  Instr in{Op::CustomCall, {}, std::move(operands), -1};
  in.nresults = 0;
  in.attrs.custom = c;
  std::vector<AVal> avals;
  for (int o : in.operands) avals.push_back(f.values[o].aval);
  for (const AVal& a : infer_call(in.attrs, avals)) {
    IRValue v;
    v.aval = a;
    v.producer = static_cast<int>(f.body.size());
    int id = f.add_value(v);
    if (in.result < 0) in.result = id;
    ++in.nresults;
  }
  f.body.push_back(in);
  return in.result;
}

} // namespace

TEST_CASE("custom_call lowers to its primal's instructions", "[ir][custom]") {
  // inner(a) = a * a; outer(x, y) = (inner(x) + y, sin(y)); f(p, q) = outer(p, q)[0] - p
  auto inner = callee(R"(func @inner(%0: f32[3]) -> (f32[3]) {
  %1 = mul %0, %0 : f32[3]
  return %1
}
)");
  auto outer_fn = std::make_shared<Function>(
      parse_function(R"(func @outer(%0: f32[3], %1: f32[3]) -> (f32[3], f32[3]) {
  %2 = sin %1 : f32[3]
  return %0, %2
}
)"));
  // Put inner's call in front of outer's body: %3 = inner(%0); %4 = add %3, %1; results (%4, %2).
  Function& o = *outer_fn;
  int r = add_call(o, inner, {0});
  IRValue sum;
  sum.aval = o.values[0].aval;
  sum.producer = static_cast<int>(o.body.size());
  int s = o.add_value(sum);
  o.body.push_back(Instr{Op::Add, {}, {r, 1}, s});
  o.results = {s, 2};
  REQUIRE(verify_function(o).empty());
  auto outer = std::make_shared<CustomCallee>();
  outer->kind = "custom_vjp";
  outer->fn = outer_fn;
  outer->num_args = 2;

  auto f =
      std::make_shared<Function>(parse_function(R"(func @f(%0: f32[3], %1: f32[3]) -> (f32[3]) {
  return %0
}
)"));
  int call = add_call(*f, outer, {0, 1});
  REQUIRE(f->body.back().nresults == 2);
  IRValue d;
  d.aval = f->values[0].aval;
  d.producer = static_cast<int>(f->body.size());
  int diff = f->add_value(d);
  f->body.push_back(Instr{Op::Sub, {}, {call, 0}, diff});
  f->results = {diff};
  REQUIRE(verify_function(*f).empty());
  CHECK(has_custom_calls(*f));
  CHECK(print_function(*f).find("custom_call[custom_vjp @outer]") != std::string::npos);

  std::shared_ptr<const Function> g = lower_custom_calls(f);
  CHECK(verify_function(*g).empty());
  CHECK_FALSE(has_custom_calls(*g));
  std::vector<Op> ops;
  for (const Instr& in : g->body) ops.push_back(in.op);
  CHECK(ops == std::vector<Op>{Op::Sin, Op::Mul, Op::Add, Op::Sub});
  CHECK(g->params.size() == 2);
  CHECK(g->results.size() == 1);
  // A Function without calls is returned as it is.
  CHECK(lower_custom_calls(g) == g);
}

TEST_CASE("custom_call's shape and vma rules are its primal's", "[ir][custom]") {
  auto c = callee(R"(func @g(%0: f32[2]{x}, %1: f32[]) -> (f32[2]{x}, f32[2]) mesh(x=4) {
  %2 = psum[axis_names=(x) group_size=4] %0 : f32[2]
  %3 = mul %0, %0 : f32[2]{x}
  return %3, %2
}
)");
  std::vector<AVal> ok{{DType::Float32, {2}, false}, {DType::Float32, {}, false}};
  CHECK(custom_call_avals(*c, ok).size() == 2);
  std::vector<AxisSet> vma = custom_call_vma(*c, std::vector<AxisSet>{1, 0});
  CHECK(vma == std::vector<AxisSet>{1, 0});
  std::vector<AVal> bad{{DType::Float32, {3}, false}, {DType::Float32, {}, false}};
  CHECK_THROWS_AS(custom_call_avals(*c, bad), Error);
}
