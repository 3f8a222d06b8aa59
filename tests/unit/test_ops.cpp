// The primitive table: shape rules (including their error messages) and the
// reference kernels, with XLA's integer and NaN semantics.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "ir/op.hpp"
#include "lang/diag.hpp"
#include "runtime/array.hpp"

using namespace pxl;

namespace {

Array arr(const std::vector<double>& v, Shape s, DType d = DType::Float32) {
  Array a(d, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), Scalar::of_float(v[i]));
  return a;
}
Array iarr(const std::vector<int64_t>& v, Shape s, DType d = DType::Int32) {
  Array a(d, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) a.set(static_cast<int64_t>(i), Scalar::of_int(v[i]));
  return a;
}
std::vector<double> vals(const Array& a) {
  std::vector<double> out;
  for (int64_t i = 0; i < a.size(); ++i) out.push_back(a.get_f64(i));
  return out;
}
Array run(Op op, std::vector<Array> in, const OpAttrs& a = {}) { return eval_ref(op, a, in); }
std::string err(Op op, std::vector<AVal> in, const OpAttrs& a = {}) {
  try {
    infer(op, a, in);
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

} // namespace

TEST_CASE("op table names and families", "[ops]") {
  CHECK(std::string(op_name(Op::DotGeneral)) == "dot_general");
  CHECK(std::string(op_name(Op::ShiftRightLogical)) == "shift_right_logical");
  CHECK(op_arity(Op::Select) == 3);
  CHECK(op_arity(Op::Concatenate) == -1);
  CHECK(op_family(Op::Exp) == OpFamily::Unary);
  CHECK(is_elementwise(Op::Ge));
  CHECK_FALSE(is_elementwise(Op::Transpose));
  OpAttrs a;
  a.axes = {0, 2};
  CHECK(attrs_str(Op::ReduceSum, a) == "axes=[0, 2]");
  CHECK(attrs_str(Op::Add, a).empty());
}

TEST_CASE("binary shape rule demands equal shapes and dtypes", "[ops]") {
  AVal a{DType::Float32, {3}, false}, b{DType::Float32, {4}, false};
  CHECK(err(Op::Add, {a, b}) == "add: operands must have equal shapes, got (3,) and (4,)");
  AVal c{DType::Int32, {3}, false};
  CHECK(err(Op::Mul, {a, c}) == "mul: operands must have equal dtypes, got float32 and int32");
  AVal bl{DType::Bool, {3}, false};
  CHECK(err(Op::Add, {bl, bl}).find("bool is not supported") != std::string::npos);
  CHECK(infer(Op::Lt, {}, std::vector<AVal>{a, a}).dtype == DType::Bool);
  AVal w{DType::Float32, {3}, true};
  CHECK(infer(Op::Add, {}, std::vector<AVal>{w, w}).weak);
  CHECK_FALSE(infer(Op::Add, {}, std::vector<AVal>{w, a}).weak);
  CHECK(err(Op::Exp, {c}).find("int32 is not supported") != std::string::npos);
}

TEST_CASE("elementwise kernels", "[ops]") {
  Array x = arr({-1.5, 0.5, 2.5, 4}, {4});
  CHECK(vals(run(Op::Neg, {x})) == std::vector<double>{1.5, -0.5, -2.5, -4});
  CHECK(vals(run(Op::Round, {x})) == std::vector<double>{-2, 0, 2, 4}); // half to even
  CHECK(vals(run(Op::Floor, {x})) == std::vector<double>{-2, 0, 2, 4});
  CHECK(vals(run(Op::Sign, {x})) == std::vector<double>{-1, 1, 1, 1});
  CHECK(vals(run(Op::Sqrt, {arr({4, 9}, {2})})) == std::vector<double>{2, 3});
  CHECK(run(Op::Logistic, {arr({0}, {})}).get_f64(0) == 0.5);
  Array nan = arr({std::nan(""), 1}, {2}), one = arr({1, std::nan("")}, {2});
  std::vector<double> m = vals(run(Op::Max, {nan, one}));
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
  CHECK(vals(run(Op::IsFinite, {arr({1, INFINITY, NAN}, {3})})) == std::vector<double>{1, 0, 0});
  CHECK(run(Op::IsFinite, {x}).dtype() == DType::Bool);
}

TEST_CASE("integer kernels wrap and follow XLA at zero", "[ops]") {
  int64_t imin = std::numeric_limits<int32_t>::min(), imax = std::numeric_limits<int32_t>::max();
  Array a = iarr({7, -7, 0, imin, imax}, {5});
  Array z = iarr({0, 0, 0, -1, 1}, {5});
  CHECK(vals(run(Op::Div, {a, z})) == std::vector<double>{-1, -1, -1, double(imin), double(imax)});
  CHECK(vals(run(Op::Rem, {a, z})) == std::vector<double>{7, -7, 0, 0, 0});
  Array one = iarr({1, 1, 1, 1, 1}, {5});
  CHECK(run(Op::Add, {a, one}).get(4).i == imin); // wraps
  CHECK(run(Op::Neg, {a}).get(3).i == imin);
  CHECK(run(Op::Abs, {a}).get(3).i == imin);
  Array base = iarr({2, 1, -1, 2, 3}, {5}), e = iarr({10, -3, -3, -1, 0}, {5});
  CHECK(vals(run(Op::Pow, {base, e})) == std::vector<double>{1024, 1, -1, 0, 1});
  Array s = iarr({1, -8, -8}, {3}), by = iarr({33, 1, 1}, {3});
  CHECK(run(Op::ShiftLeft, {s, by}).get(0).i == 0);
  CHECK(run(Op::ShiftRightLogical, {s, by}).get(1).i == 2147483644);
  CHECK(run(Op::ShiftRightArithmetic, {s, by}).get(2).i == -4);
  Array u = iarr({5}, {1}, DType::UInt32), uz = iarr({0}, {1}, DType::UInt32);
  CHECK(run(Op::Div, {u, uz}).get(0).i == 4294967295);
}

TEST_CASE("float16 arithmetic is done in float32 and rounded", "[ops]") {
  Array a = arr({0.1}, {1}, DType::Float16), b = arr({0.2}, {1}, DType::Float16);
  CHECK(run(Op::Add, {a, b}).get_f64(0) == 0.2998046875); // JAX: float16(0.1)+float16(0.2)
}

TEST_CASE("convert_element_type", "[ops]") {
  OpAttrs a;
  a.dtype = DType::Int32;
  Array r = run(Op::ConvertElementType, {arr({1e10, -1e10, NAN, -1.5, 2.7}, {5})}, a);
  CHECK(vals(r) == std::vector<double>{2147483647, -2147483648.0, 0, -1, 2});
  a.dtype = DType::UInt32;
  r = run(Op::ConvertElementType, {arr({1e10, -1e10, NAN, -1.5, 2.7}, {5})}, a);
  CHECK(vals(r) == std::vector<double>{4294967295.0, 0, 0, 0, 2});
  a.dtype = DType::Bool;
  a.weak = false;
  CHECK(vals(run(Op::ConvertElementType, {arr({0, -0.0, 2, NAN}, {4})}, a)) ==
        std::vector<double>{0, 0, 1, 1});
  a.dtype = DType::Float32;
  a.weak = true;
  CHECK(run(Op::ConvertElementType, {iarr({1}, {1})}, a).weak_type());
  OpAttrs bc;
  bc.dtype = DType::UInt32;
  CHECK(run(Op::BitcastConvertType, {arr({1.0}, {1})}, bc).get(0).i == 0x3f800000);
  bc.dtype = DType::Float16;
  CHECK(err(Op::BitcastConvertType, {AVal{DType::Float32, {1}, false}}, bc)
            .find("different widths") != std::string::npos);
}

TEST_CASE("structural kernels", "[ops]") {
  Array x = iarr({0, 1, 2, 3, 4, 5}, {2, 3});
  OpAttrs t;
  t.perm = {1, 0};
  Array xt = run(Op::Transpose, {x}, t);
  CHECK(xt.shape() == Shape{3, 2});
  CHECK(vals(xt) == std::vector<double>{0, 3, 1, 4, 2, 5});
  OpAttrs b;
  b.shape = {2, 2, 3};
  b.axes = {0, 2};
  Array bx = run(Op::BroadcastInDim, {iarr({1, 2, 3, 4, 5, 6}, {2, 3})}, b);
  CHECK(vals(bx) == std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  b.axes = {0, 1};
  CHECK(err(Op::BroadcastInDim, {AVal{DType::Int32, {2, 3}, false}}, b) ==
        "broadcast_in_dim: cannot broadcast (2, 3) to (2, 2, 3) with dims [0, 1]");
  OpAttrs s;
  s.starts = {0, 0};
  s.limits = {2, 3};
  s.strides = {1, 2};
  CHECK(vals(run(Op::Slice, {x}, s)) == std::vector<double>{0, 2, 3, 5});
  OpAttrs r;
  r.axes = {1};
  CHECK(vals(run(Op::Rev, {x}, r)) == std::vector<double>{2, 1, 0, 5, 4, 3});
  OpAttrs c;
  c.axis = 1;
  Array cc = run(Op::Concatenate, {x, iarr({9, 9}, {2, 1})}, c);
  CHECK(cc.shape() == Shape{2, 4});
  CHECK(vals(cc) == std::vector<double>{0, 1, 2, 9, 3, 4, 5, 9});
  OpAttrs p;
  p.lo = {1};
  p.hi = {-1};
  p.interior = {1};
  CHECK(vals(run(Op::Pad, {iarr({1, 2, 3}, {3}), iarr({0}, {})}, p)) ==
        std::vector<double>{0, 1, 0, 2, 0});
  OpAttrs rs;
  rs.shape = {4};
  CHECK(err(Op::Reshape, {AVal{DType::Int32, {6}, false}}, rs) ==
        "reshape: cannot reshape array of shape (6,) (size 6) into shape (4,) (size 4)");
  OpAttrs io;
  io.dtype = DType::Int32;
  io.shape = {2, 3};
  io.axis = 1;
  CHECK(vals(run(Op::Iota, {}, io)) == std::vector<double>{0, 1, 2, 0, 1, 2});
}

TEST_CASE("reduction kernels", "[ops]") {
  Array x = arr({1, 5, 3, 4, NAN, 6}, {2, 3});
  OpAttrs a;
  a.axes = {1};
  std::vector<double> m = vals(run(Op::ReduceMax, {x}, a));
  CHECK(m[0] == 5);
  CHECK(std::isnan(m[1]));
  a.axes = {0};
  CHECK(vals(run(Op::ReduceSum, {iarr({1, 2, 3, 4, 5, 6}, {2, 3})}, a)) ==
        std::vector<double>{5, 7, 9});
  a.axes = {0, 1};
  CHECK(run(Op::ReduceProd, {iarr({1, 2, 3, 4}, {2, 2})}, a).get(0).i == 24);
  CHECK(run(Op::ReduceAnd, {iarr({1, 1, 0}, {3}, DType::Bool)}, OpAttrs{}).shape() == Shape{3});
  a.axes = {0, 0};
  CHECK(err(Op::ReduceSum, {AVal{DType::Float32, {2, 3}, false}}, a) ==
        "reduce_sum: repeated axis 0 in [0, 0]");
  OpAttrs am;
  am.axis = 0;
  am.dtype = DType::Int32;
  CHECK(run(Op::Argmax, {arr({3, 1, 3}, {3})}, am).get(0).i == 0);        // first wins
  CHECK(run(Op::Argmax, {arr({1, NAN, 3, NAN}, {4})}, am).get(0).i == 1); // NaN wins
  CHECK(run(Op::Argmin, {arr({1, NAN, -3}, {3})}, am).get(0).i == 1);
  am.axis = 1;
  CHECK(vals(run(Op::Argmin, {iarr({3, 1, 2, 0, 5, 0}, {2, 3})}, am)) == std::vector<double>{1, 0});
  OpAttrs cs;
  cs.axis = 1;
  CHECK(vals(run(Op::Cumsum, {iarr({1, 2, 3, 4, 5, 6}, {2, 3})}, cs)) ==
        std::vector<double>{1, 3, 6, 4, 9, 15});
  cs.reverse = true;
  CHECK(vals(run(Op::Cumsum, {iarr({1, 2, 3}, {1, 3})}, cs)) == std::vector<double>{6, 5, 3});
}

TEST_CASE("argsort kernel: stable, in lax.sort's order", "[ops]") {
  OpAttrs a;
  // Equal keys keep their order; -0.0 equals 0.0; NaNs last, in their order.
  CHECK(vals(run(Op::Argsort, {arr({2, NAN, -0.0, 1, 0, NAN, -INFINITY, 1}, {8})}, a)) ==
        std::vector<double>{6, 2, 4, 3, 7, 0, 1, 5});
  CHECK(run(Op::Argsort, {arr({1}, {1})}, a).dtype() == DType::Int32);
  // Along axis 0 of a matrix: each column sorted on its own.
  CHECK(vals(run(Op::Argsort, {iarr({3, 0, 1, 2, 2, 1}, {3, 2})}, a)) ==
        std::vector<double>{1, 0, 2, 2, 0, 1});
  a.axis = 1;
  CHECK(vals(run(Op::Argsort, {iarr({1, 0, 1, 0}, {1, 4}, DType::Bool)}, a)) ==
        std::vector<double>{1, 3, 0, 2});
  Array c(DType::Complex64, {4});
  c.set(0, Scalar::of_complex(1, 2));
  c.set(1, Scalar::of_complex(1, -1));
  c.set(2, Scalar::of_complex(NAN, 0));
  c.set(3, Scalar::of_complex(-1, 5));
  a.axis = 0;
  CHECK(vals(run(Op::Argsort, {c}, a)) == std::vector<double>{3, 1, 0, 2});
  CHECK(err(Op::Argsort, {AVal{DType::Float32, {3}}}, [] {
          OpAttrs b;
          b.axis = 1;
          return b;
        }()) == "argsort: axis 1 is out of range for an operand of rank 1");
}

TEST_CASE("dot_general kernel", "[ops]") {
  OpAttrs a;
  a.dot.lhs_contract = {1};
  a.dot.rhs_contract = {0};
  Array l = arr({1, 2, 3, 4, 5, 6}, {2, 3}), r = arr({1, 0, 0, 1, 1, 1}, {3, 2});
  Array o = run(Op::DotGeneral, {l, r}, a);
  CHECK(o.shape() == Shape{2, 2});
  CHECK(vals(o) == std::vector<double>{4, 5, 10, 11});
  // Integers and float64 take the other paths; the answer is the same.
  CHECK(vals(run(Op::DotGeneral,
                 {iarr({1, 2, 3, 4, 5, 6}, {2, 3}), iarr({1, 0, 0, 1, 1, 1}, {3, 2})}, a)) ==
        std::vector<double>{4, 5, 10, 11});
  CHECK(vals(run(Op::DotGeneral,
                 {arr({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64),
                  arr({1, 0, 0, 1, 1, 1}, {3, 2}, DType::Float64)},
                 a)) == std::vector<double>{4, 5, 10, 11});
  CHECK(vals(run(Op::DotGeneral,
                 {arr({1, 2, 3, 4, 5, 6}, {2, 3}, DType::BFloat16),
                  arr({1, 0, 0, 1, 1, 1}, {3, 2}, DType::BFloat16)},
                 a)) == std::vector<double>{4, 5, 10, 11});
  // Batched, contracting lhs dim 1 with rhs dim 2: out (b, lhs free, rhs free).
  OpAttrs bt;
  bt.dot.lhs_batch = {0};
  bt.dot.rhs_batch = {0};
  bt.dot.lhs_contract = {1};
  bt.dot.rhs_contract = {2};
  Array bl = arr({1, 2, 3, 4}, {2, 2, 1}), br = arr({1, 1, 2, 0, 0, 2}, {2, 1, 2});
  Array bo = run(Op::DotGeneral, {bl, br}, bt);
  CHECK(bo.shape() == Shape{2, 1, 1});
  CHECK(vals(bo) == std::vector<double>{3, 6});
  CHECK(err(Op::DotGeneral,
            {AVal{DType::Float32, {2, 3}, false}, AVal{DType::Float32, {4, 2}, false}}, a) ==
        "dot_general: contracting dimensions must have the same shape, got (3,) and (4,) "
        "(operands (2, 3) and (4, 2))");
  Array e = run(Op::DotGeneral, {arr({}, {2, 0}), arr({}, {0, 3})}, a);
  CHECK(vals(e) == std::vector<double>(6, 0.0));
}

TEST_CASE("take and scatter", "[ops]") {
  Array x = iarr({0, 1, 2, 3, 4, 5}, {3, 2});
  OpAttrs a;
  a.axis = 0;
  Array t = run(Op::Take, {x, iarr({2, 0, 7}, {3})}, a); // 7 is clamped to 2
  CHECK(t.shape() == Shape{3, 2});
  CHECK(vals(t) == std::vector<double>{4, 5, 0, 1, 4, 5});
  a.axis = 1;
  CHECK(vals(run(Op::Take, {x, iarr({1}, {})}, a)) == std::vector<double>{1, 3, 5});
  OpAttrs s;
  s.axis = 0;
  s.mode = ScatterMode::Add;
  Array v = iarr({0, 0, 0, 0}, {4});
  Array r = run(Op::Scatter, {v, iarr({1, 1, 3, 9}, {4}), iarr({5, 6, 7, 8}, {4})}, s);
  CHECK(vals(r) == std::vector<double>{0, 11, 0, 7}); // duplicates add, 9 is dropped
  s.mode = ScatterMode::Set;
  CHECK(err(Op::Scatter,
            {AVal{DType::Int32, {4}, false}, AVal{DType::Int32, {2}, false},
             AVal{DType::Int32, {3}, false}},
            s) == "scatter: updates must be int32(2,), got int32(3,)");
}
