// The np layer against values, dtypes and weak types produced by JAX 0.10.2
// (x64 disabled), run eagerly over the reference kernels.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "lang/diag.hpp"
#include "runtime/eager.hpp"
#include "stdlib/np.hpp"

using namespace pxl;
using namespace pxl::np;

namespace {

using V = std::vector<double>;

V vals(const Tensor& t) {
  V out;
  for (int64_t i = 0; i < t->concrete->size(); ++i) out.push_back(t->concrete->get_f64(i));
  return out;
}
std::string type(const Tensor& t) {
  return std::string(dtype_name(t->aval.dtype)) + (t->aval.weak ? "*" : "") +
         shape_str(t->aval.shape);
}
Scalar I(int64_t v) { return Scalar::of_int(v); }
Scalar F(double v) { return Scalar::of_float(v); }

struct Fixture {
  EagerContext cx;
  Tensor ar(int64_t n) { return arange(cx, I(0), I(n), I(1)); }
  Tensor arf(int64_t n) { return astype(cx, ar(n), DType::Float32); }
  Tensor ar(int64_t n, const Shape& s) { return reshape(cx, ar(n), s); }
  Tensor f32(const V& v) { return arr(v, DType::Float32); }
  Tensor arr(const V& v, DType d) {
    std::vector<Scalar> s;
    for (double x : v) s.push_back(F(x));
    return from_host(cx, s, {static_cast<int64_t>(v.size())}, d);
  }
  Tensor bools(const std::vector<bool>& v) {
    std::vector<Scalar> s;
    for (bool x : v) s.push_back(Scalar::of_bool(x));
    return from_host(cx, s, {static_cast<int64_t>(v.size())});
  }
  Tensor py(int64_t v) { return scalar(cx, I(v)); }
  Tensor py(double v) { return scalar(cx, F(v)); }
  std::string error(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.message();
    }
    return "no error";
  }
};

IndexItem iint(int64_t i) {
  IndexItem it;
  it.kind = IndexItem::Kind::Int;
  it.index = i;
  return it;
}
IndexItem islice(std::optional<int64_t> a, std::optional<int64_t> b,
                 std::optional<int64_t> c = {}) {
  IndexItem it;
  it.kind = IndexItem::Kind::Slice;
  it.start = a, it.stop = b, it.step = c;
  return it;
}
IndexItem iall() { return islice({}, {}); }
IndexItem iell() {
  IndexItem it;
  it.kind = IndexItem::Kind::Ellipsis;
  return it;
}
IndexItem inew() {
  IndexItem it;
  it.kind = IndexItem::Kind::NewAxis;
  return it;
}
IndexItem iarr(Tensor t) {
  IndexItem it;
  it.kind = IndexItem::Kind::Array;
  it.array = std::move(t);
  return it;
}

} // namespace

TEST_CASE_METHOD(Fixture, "creation dtypes and weak types", "[np]") {
  CHECK(type(ar(5)) == "int32(5,)");
  CHECK(vals(ar(5)) == V{0, 1, 2, 3, 4});
  CHECK(vals(arange(cx, I(5), I(0), I(-2))) == V{5, 3, 1});
  Tensor af = arange(cx, F(0.1), F(1.0), F(0.3));
  CHECK(type(af) == "float32(3,)");
  CHECK(vals(af)[2] == Approx(0.7000000476837158));
  CHECK(type(py(int64_t{1})) == "int32*()");
  CHECK(type(py(1.0)) == "float32*()");
  CHECK(type(scalar(cx, Scalar::of_bool(true))) == "bool()");
  CHECK(type(full(cx, {2}, I(2))) == "int32*(2,)");
  CHECK(type(full(cx, {2}, F(2.0))) == "float32*(2,)");
  CHECK(type(ones(cx, {2})) == "float32(2,)");
  CHECK(type(full_like(cx, ar(2), F(2.5))) == "int32(2,)");
  CHECK(vals(full_like(cx, ar(2), F(2.5))) == V{2, 2});
  CHECK(type(full_like(cx, py(1.0), I(0))) == "float32*()");
  CHECK(vals(eye(cx, 3, 4, 1)) == V{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  CHECK(vals(eye(cx, 3, {}, -1, DType::Int32)) == V{0, 0, 0, 1, 0, 0, 0, 1, 0});
  CHECK(vals(linspace(cx, 0, 1, 5)) == V{0, 0.25, 0.5, 0.75, 1});
  CHECK(vals(linspace(cx, 0, 1, 4, false)) == V{0, 0.25, 0.5, 0.75});
  CHECK(vals(linspace(cx, 0, 10, 4, true, DType::Int32)) == V{0, 3, 6, 10});
  CHECK(vals(linspace(cx, -1, 1, 7))[1] == Approx(-0.6666666269302368));
  CHECK(type(from_host(cx, {I(1), F(2)}, {2})) == "float32(2,)");
  CHECK(type(from_host(cx, {Scalar::of_bool(true), I(2)}, {2})) == "int32(2,)");
  CHECK(error([&] { scalar(cx, I(3000000000)); }) ==
        "Python int 3000000000 too large to convert to int32");
  CHECK(type(astype(cx, py(1.0), DType::Float32)) == "float32()");
}

TEST_CASE_METHOD(Fixture, "binary promotion and weak types", "[np]") {
  CHECK(type(binary(cx, BinOp::Mul, ones(cx, {3}), py(int64_t{2}))) == "float32(3,)");
  CHECK(type(binary(cx, BinOp::Mul, bools({true}), py(int64_t{2}))) == "int32*(1,)");
  CHECK(type(binary(cx, BinOp::Add, ar(3), py(1.5))) == "float32*(3,)");
  CHECK(type(binary(cx, BinOp::TrueDiv, ar(3), py(int64_t{2}))) == "float32(3,)");
  CHECK(vals(binary(cx, BinOp::TrueDiv, ar(3), py(int64_t{2}))) == V{0, 0.5, 1});
  CHECK(type(binary(cx, BinOp::Pow, ar(3), py(int64_t{2}))) == "int32(3,)");
  CHECK(vals(binary(cx, BinOp::Pow, ar(3), py(int64_t{2}))) == V{0, 1, 4});
  Tensor u = arr({1}, DType::UInt32);
  CHECK(type(binary(cx, BinOp::Sub, u, py(int64_t{2}))) == "uint32(1,)");
  CHECK(vals(binary(cx, BinOp::Sub, u, py(int64_t{2}))) == V{4294967295.0});
  CHECK(type(binary(cx, BinOp::Add, u, ar(1))) == "int32(1,)");
  Tensor h = arr({0.1}, DType::Float16), b = arr({1}, DType::BFloat16);
  CHECK(type(binary(cx, BinOp::Add, h, b)) == "float32(1,)");
  CHECK(type(binary(cx, BinOp::Add, h, py(1.0))) == "float16(1,)");
  CHECK(type(binary(cx, BinOp::Lt, ar(3), py(1.5))) == "bool*(3,)"); // weak, as the promoted type
  CHECK(vals(binary(cx, BinOp::Add, bools({true, false}), bools({true, true}))) == V{1, 1});
  CHECK(type(binary(cx, BinOp::Mul, bools({true, false}), bools({true, true}))) == "bool(2,)");
  CHECK(error([&] {
          binary(cx, BinOp::Sub, bools({true}), bools({true}));
        }).find("sub does not accept dtype bool") != std::string::npos);
  CHECK(error([&] { binary(cx, BinOp::BitAnd, ones(cx, {2}), ones(cx, {2})); }) ==
        "and does not accept dtype float32 at position 0. Accepted dtypes at position 0 are "
        "subtypes of integer, bool.");
}

TEST_CASE_METHOD(Fixture, "broadcasting", "[np]") {
  Tensor r = binary(cx, BinOp::Add, ar(6, {2, 3}), ar(3));
  CHECK(type(r) == "int32(2, 3)");
  CHECK(vals(r) == V{0, 2, 4, 3, 5, 7});
  Tensor c = binary(cx, BinOp::Mul, reshape(cx, ar(2), {2, 1}), ar(3));
  CHECK(vals(c) == V{0, 0, 0, 0, 1, 2});
  CHECK(error([&] { binary(cx, BinOp::Add, ones(cx, {3}), ones(cx, {4})); }) ==
        "add got incompatible shapes for broadcasting: (3,), (4,).");
  CHECK(type(broadcast_to(cx, ar(3), {2, 3})) == "int32(2, 3)");
  CHECK(error([&] { broadcast_to(cx, ar(3), {4}); }) ==
        "Incompatible types for broadcasting: input type=int32[3] and requested type=int32[4]");
}

TEST_CASE_METHOD(Fixture, "integer division and remainder match jnp", "[np]") {
  Tensor a = arr({7, -7, 0}, DType::Int32), z = arr({0, 0, 0}, DType::Int32);
  CHECK(vals(binary(cx, BinOp::FloorDiv, a, z)) == V{-2, -2, -1});
  CHECK(vals(binary(cx, BinOp::Mod, a, z)) == V{0, 0, 0});
  Tensor m = arr({-7, 7}, DType::Int32);
  CHECK(vals(binary(cx, BinOp::FloorDiv, m, py(int64_t{2}))) == V{-4, 3});
  CHECK(vals(binary(cx, BinOp::Mod, m, py(int64_t{-2}))) == V{-1, -1});
  CHECK(vals(binary(cx, BinOp::FloorDiv, arr({-2147483648.0}, DType::Int32), py(int64_t{-1}))) ==
        V{-2147483648.0});
  CHECK(vals(binary(cx, BinOp::FloorDiv, f32({-7.5, 7.5}), py(int64_t{2}))) == V{-4, 3});
  CHECK(vals(binary(cx, BinOp::Mod, f32({-7.5, 7.5}), py(int64_t{-2}))) == V{-1.5, -0.5});
  CHECK(vals(binary(cx, BinOp::Mod, f32({5.5, -5.5}), py(2.0))) == V{1.5, 0.5});
  V fd = vals(binary(cx, BinOp::FloorDiv, f32({1, -1, 0}), py(0.0)));
  CHECK(fd[0] == INFINITY);
  CHECK(fd[1] == -INFINITY);
  CHECK(std::isnan(fd[2]));
  // A known negative integer exponent of integers is refused, as JAX's integer_pow.
  CHECK_THROWS_WITH(binary(cx, BinOp::Pow, arr({1, 2, -1}, DType::Int32), py(int64_t{-1})),
                    "Integers cannot be raised to negative powers, got integer_pow(int32[3], -1)");
}

TEST_CASE_METHOD(Fixture, "unary functions", "[np]") {
  CHECK(type(unary(cx, UnOp::Exp, ar(2))) == "float32(2,)");
  CHECK(vals(unary(cx, UnOp::Exp, ar(2)))[1] == Approx(2.7182817459106445));
  CHECK(type(unary(cx, UnOp::Floor, ar(3))) == "int32(3,)");
  CHECK(vals(unary(cx, UnOp::Round, f32({0.5, 1.5, 2.5, -0.5, -1.5}))) == V{0, 2, 2, -0.0, -2});
  CHECK(type(unary(cx, UnOp::Abs, ar(3))) == "int32(3,)");
  CHECK(vals(unary(cx, UnOp::Sign, arr({-1, 0, 1}, DType::Int32))) == V{-1, 0, 1});
  CHECK(type(unary(cx, UnOp::Sqrt, bools({true}))) == "float32(1,)");
  CHECK(type(unary(cx, UnOp::Square, bools({true}))) == "int32(1,)");
  CHECK(type(unary(cx, UnOp::IsNan, ar(3))) == "bool(3,)");
  CHECK(vals(unary(cx, UnOp::IsInf, f32({INFINITY, -INFINITY, 1, NAN}))) == V{1, 1, 0, 0});
  CHECK(vals(unary(cx, UnOp::IsNan, f32({NAN, 1}))) == V{1, 0});
  CHECK(vals(unary(cx, UnOp::Invert, ar(2))) == V{-1, -2});
  CHECK(vals(unary(cx, UnOp::Invert, bools({true, false}))) == V{0, 1});
  CHECK(vals(unary(cx, UnOp::LogicalNot, f32({0, 2}))) == V{1, 0});
  CHECK(vals(unary(cx, UnOp::Reciprocal, f32({4}))) == V{0.25});
  CHECK(type(unary(cx, UnOp::Reciprocal, ar(2))) == "float32(2,)");
  CHECK(vals(unary(cx, UnOp::Logistic, f32({0}))) == V{0.5});
  CHECK(error([&] {
          unary(cx, UnOp::Neg, bools({true}));
        }).find("neg does not accept dtype bool") != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "where and clip", "[np]") {
  Tensor w = where(cx, bools({true, false}), ar(2), py(2.0));
  CHECK(type(w) == "float32*(2,)");
  CHECK(vals(w) == V{0, 2});
  CHECK(type(where(cx, scalar(cx, Scalar::of_bool(true)), py(int64_t{1}), py(int64_t{2}))) ==
        "int32*()");
  CHECK(vals(where(cx, ar(3), py(int64_t{1}), py(int64_t{0}))) == V{0, 1, 1});
  CHECK(vals(clip(cx, ar(5), py(int64_t{1}), py(int64_t{3}))) == V{1, 1, 2, 3, 3});
  Tensor cf = clip(cx, ar(5), py(1.5), py(int64_t{3}));
  CHECK(type(cf) == "float32*(5,)");
  CHECK(vals(cf) == V{1.5, 1.5, 2, 3, 3});
  CHECK(vals(clip(cx, ar(5), {}, py(int64_t{2}))) == V{0, 1, 2, 2, 2});
}

TEST_CASE_METHOD(Fixture, "shape functions", "[np]") {
  CHECK(type(reshape(cx, ar(6), {-1, 2})) == "int32(3, 2)");
  CHECK(error([&] {
          reshape(cx, ar(6), {4, 2});
        }) == "cannot reshape array of shape (6,) (size 6) into shape (4, 2) (size 8)");
  CHECK(error([&] { reshape(cx, ar(6), {-1, -1}); }).find("one unknown") != std::string::npos);
  CHECK(vals(transpose(cx, ar(6, {2, 3}), {})) == V{0, 3, 1, 4, 2, 5});
  CHECK(type(transpose(cx, ar(24, {2, 3, 4}), std::vector<int>{1, -1, 0})) == "int32(3, 4, 2)");
  CHECK(type(swapaxes(cx, ar(24, {2, 3, 4}), 0, 2)) == "int32(4, 3, 2)");
  CHECK(type(moveaxis(cx, ar(24, {2, 3, 4}), 0, -1)) == "int32(3, 4, 2)");
  CHECK(type(expand_dims(cx, ar(3), {0, -1})) == "int32(1, 3, 1)");
  CHECK(type(squeeze(cx, zeros(cx, {1, 3, 1}), {})) == "float32(3,)");
  CHECK(type(squeeze(cx, zeros(cx, {1, 3, 1}), std::vector<int>{-1})) == "float32(1, 3)");
  CHECK(error([&] {
          squeeze(cx, zeros(cx, {1, 3}), std::vector<int>{1});
        }).find("size not equal to one") != std::string::npos);
  Tensor c = concatenate(cx, {ar(2), arf(2)}, 0);
  CHECK(type(c) == "float32(4,)");
  CHECK(vals(c) == V{0, 1, 0, 1});
  CHECK(vals(concatenate(cx, {ar(4, {2, 2}), ar(2, {2, 1})}, -1)) == V{0, 1, 0, 2, 3, 1});
  CHECK(error([&] {
          concatenate(cx, {ar(4, {2, 2}), ar(3, {3, 1})}, 1);
        }).find("differ in dimensions other than the one being concatenated") != std::string::npos);
  Tensor s = stack(cx, {ar(2), ar(2)}, 1);
  CHECK(type(s) == "int32(2, 2)");
  CHECK(vals(s) == V{0, 0, 1, 1});
  std::vector<Tensor> parts = split_sections(cx, ar(6), 3, 0);
  REQUIRE(parts.size() == 3);
  CHECK(vals(parts[2]) == V{4, 5});
  CHECK(error([&] { split_sections(cx, ar(5), 2, 0); }).find("equal division") !=
        std::string::npos);
  parts = split_indices(cx, ar(10), {3, 5}, 0);
  REQUIRE(parts.size() == 3);
  CHECK(vals(parts[1]) == V{3, 4});
  CHECK(vals(parts[2]) == V{5, 6, 7, 8, 9});
  CHECK(error([&] { swapaxes(cx, ar(3), 0, 2); }) ==
        "index 2 is out of bounds for axis 0 with size 1");
}

TEST_CASE_METHOD(Fixture, "np reductions", "[np]") {
  Tensor x = ar(6, {2, 3});
  CHECK(vals(reduce(cx, ReduceOp::Sum, x, std::vector<int>{1})) == V{3, 12});
  CHECK(type(reduce(cx, ReduceOp::Sum, bools({true, true}), {})) == "int32()");
  CHECK(type(reduce(cx, ReduceOp::Prod, bools({true, true}), {})) == "int32()");
  CHECK(type(reduce(cx, ReduceOp::Sum, arr({1}, DType::UInt32), {})) == "uint32()");
  CHECK(type(reduce(cx, ReduceOp::Sum, full(cx, {3}, F(2.0)), {})) == "float32()");
  Tensor m = reduce(cx, ReduceOp::Mean, x, std::vector<int>{0}, true);
  CHECK(type(m) == "float32(1, 3)");
  CHECK(vals(m) == V{1.5, 2.5, 3.5});
  CHECK(type(reduce(cx, ReduceOp::Mean, arr({1, 2, 3, 4}, DType::Float16), {})) == "float16()");
  CHECK(vals(reduce(cx, ReduceOp::Mean, bools({true, false}), {})) == V{0.5});
  CHECK(vals(reduce(cx, ReduceOp::Max, x, std::vector<int>{-1})) == V{2, 5});
  CHECK(type(reduce(cx, ReduceOp::Max, bools({true, false}), {})) == "bool()");
  CHECK(vals(reduce(cx, ReduceOp::Min, x, {})) == V{0});
  CHECK(vals(reduce(cx, ReduceOp::Prod, arange(cx, I(1), I(6), I(1)), {})) == V{120});
  CHECK(vals(reduce(cx, ReduceOp::Any, binary(cx, BinOp::Gt, ar(3), py(int64_t{1})), {})) == V{1});
  CHECK(vals(reduce(cx, ReduceOp::All, ar(3), {})) == V{0});
  CHECK(std::isnan(vals(reduce(cx, ReduceOp::Max, f32({1, NAN}), {}))[0]));
  CHECK(error([&] { reduce(cx, ReduceOp::Max, zeros(cx, {0}), {}); }).find("zero-size array") !=
        std::string::npos);
  CHECK(error([&] { reduce(cx, ReduceOp::Sum, ones(cx, {3}), std::vector<int>{2}); }) ==
        "axis 2 is out of bounds for array of dimension 1");
  CHECK(vals(argmax(cx, f32({1, NAN, 3, NAN}), {})) == V{1});
  CHECK(vals(argmax(cx, arr({3, 1, 3}, DType::Int32), {})) == V{0});
  Tensor am = argmax(cx, x, {}, true);
  CHECK(type(am) == "int32(1, 1)");
  CHECK(vals(am) == V{5});
  CHECK(vals(argmin(cx, x, 1)) == V{0, 0});
  VarOptions ddof1;
  ddof1.correction = 1;
  Tensor v = var(cx, arf(6), {}, false, ddof1);
  CHECK(vals(v) == V{3.5});
  CHECK(vals(var(cx, ar(6, {2, 3}), std::vector<int>{1}))[0] == Approx(0.6666666865348816));
  CHECK(type(var(cx, ar(4), {})) == "float32()");
  Tensor cs = cumsum(cx, x, {});
  CHECK(type(cs) == "int32(6,)");
  CHECK(vals(cs) == V{0, 1, 3, 6, 10, 15});
  CHECK(type(cumsum(cx, bools({true, true}), 0)) == "int32(2,)");
  CHECK(vals(cumsum(cx, x, 0)) == V{0, 1, 2, 3, 5, 7});
}

TEST_CASE_METHOD(Fixture, "matmul, dot, outer", "[np]") {
  Tensor a = reshape(cx, arf(6), {2, 3});
  CHECK(vals(matmul(cx, a, arf(3))) == V{5, 14});
  CHECK(vals(matmul(cx, arf(3), reshape(cx, arf(6), {3, 2}))) == V{10, 13});
  Tensor bm = matmul(cx, ones(cx, {2, 1, 2, 3}), ones(cx, {3, 3, 2}));
  CHECK(type(bm) == "float32(2, 3, 2, 2)");
  CHECK(vals(bm) == V(24, 3.0));
  CHECK(vals(matmul(cx, ar(4, {2, 2}), ar(4, {2, 2}))) == V{2, 3, 6, 11});
  CHECK(type(matmul(cx, ar(4, {2, 2}), ar(4, {2, 2}))) == "int32(2, 2)");
  CHECK(error([&] {
          matmul(cx, ones(cx, {2, 3}), ones(cx, {4, 5}));
        }) ==
        "dot_general requires contracting dimensions to have the same shape, got (3,) and (4,).");
  Tensor d = dot(cx, reshape(cx, arf(24), {2, 3, 4}), reshape(cx, arf(20), {5, 4, 1}));
  CHECK(type(d) == "float32(2, 3, 5, 1)");
  CHECK(vals(d)[6] == 126);
  CHECK(vals(dot(cx, arf(3), arf(3))) == V{5});
  CHECK(vals(dot(cx, py(2.0), arf(3))) == V{0, 2, 4});
  CHECK(type(dot(cx, bools({true, false}), bools({true, true}))) == "bool()");
  CHECK(error([&] {
          dot(cx, ones(cx, {2, 3}), ones(cx, {4}));
        }) ==
        "dot_general requires contracting dimensions to have the same shape, got (3,) and (4,).");
  Tensor o = outer(cx, ar(3), arf(2));
  CHECK(type(o) == "float32(3, 2)");
  CHECK(vals(o) == V{0, 0, 0, 1, 0, 2});
}

TEST_CASE_METHOD(Fixture, "np einsum", "[np]") {
  Tensor a = reshape(cx, arf(6), {2, 3}), b = reshape(cx, arf(12), {3, 4});
  CHECK(vals(einsum(cx, "ij,jk", {a, b})) == V{20, 23, 26, 29, 56, 68, 80, 92});
  Tensor sq = reshape(cx, arf(9), {3, 3});
  CHECK(vals(einsum(cx, "ii", {sq})) == V{12});
  CHECK(vals(einsum(cx, "ii->i", {sq})) == V{0, 4, 8});
  CHECK(vals(einsum(cx, "ba", {a})) == V{0, 3, 1, 4, 2, 5});
  CHECK(vals(einsum(cx, "ij->", {a})) == V{15});
  CHECK(vals(einsum(cx, "bij,bjk->bik",
                    {reshape(cx, arf(12), {2, 2, 3}), reshape(cx, arf(12), {2, 3, 2})})) ==
        V{10, 13, 28, 40, 172, 193, 244, 274});
  Tensor t3 = einsum(cx, "i,j,k->ijk", {arf(2), arf(3), arf(2)});
  CHECK(type(t3) == "float32(2, 3, 2)");
  CHECK(vals(t3) == V{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2});
  CHECK(vals(einsum(cx, "...ij,...jk->...ik",
                    {reshape(cx, arf(12), {2, 2, 3}), reshape(cx, arf(6), {3, 2})})) ==
        V{10, 13, 28, 40, 46, 67, 64, 94});
  CHECK(vals(einsum(cx, "abc,cd->da",
                    {reshape(cx, arf(24), {2, 3, 4}), reshape(cx, arf(8), {4, 2})})) ==
        V{228, 660, 294, 870});
  CHECK(type(einsum(cx, "i,i", {ar(3), ar(3)})) == "int32()");
  CHECK(vals(einsum(cx, "i,i", {ar(3), ar(3)})) == V{5});
  // opt_einsum's messages, as JAX raises them.
  CHECK(error([&] {
          einsum(cx, "ij,jk", {a, a});
        }) == "Size of label 'j' for operand 1 (3) does not match previous terms (2).");
  CHECK(error([&] { einsum(cx, "ij,jk", {a}); }) ==
        "Number of einsum subscripts, 2, must be equal to the number of operands, 1.");
  CHECK(
      error([&] { einsum(cx, "ijk", {a}); }) ==
      "Einstein sum subscript 'ijk' does not contain the correct number of indices for operand 0.");
}

TEST_CASE_METHOD(Fixture, "basic indexing", "[np]") {
  Tensor x = ar(24, {2, 3, 4});
  CHECK(type(index(cx, x, {iint(1)})) == "int32(3, 4)");
  CHECK(vals(index(cx, x, {iint(-1), iint(0), iint(2)})) == V{14});
  Tensor r = index(cx, x, {iall(), islice({}, {}, -1)});
  CHECK(vals(r) ==
        V{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15});
  CHECK(vals(index(cx, x, {iell(), iint(1)})) == V{1, 5, 9, 13, 17, 21});
  Tensor n = index(cx, x, {inew(), iint(0), iall(), inew(), iint(2)});
  CHECK(type(n) == "int32(1, 3, 1)");
  CHECK(vals(n) == V{2, 6, 10});
  Tensor st = index(cx, x, {islice({}, {}, -2), islice(1, {}), islice(-3, {}, 2)});
  CHECK(type(st) == "int32(1, 2, 2)");
  CHECK(vals(st) == V{17, 19, 21, 23});
  CHECK(vals(index(cx, x, {iell(), islice({}, {}, -3)})) ==
        V{3, 0, 7, 4, 11, 8, 15, 12, 19, 16, 23, 20});
  CHECK(type(index(cx, ar(5), {islice(4, 1)})) == "int32(0,)");
  CHECK(vals(index(cx, ar(5), {islice(-2, -10, -1)})) == V{3, 2, 1, 0});
  // Static indices out of range clamp, as JAX's gather; an empty axis has nothing.
  CHECK(vals(index(cx, ar(3), {iint(5)})) == V{2});
  CHECK(vals(index(cx, ar(3), {iint(-7)})) == V{0});
  CHECK(error([&] {
          index(cx, zeros(cx, {2, 0}), {iint(0), iint(0)});
        }) == "index is out of bounds for axis 1 with size 0");
  CHECK(error([&] {
          index(cx, ar(3), {iint(0), iint(0)});
        }) == "Too many indices: array is 1-dimensional, but 2 were indexed");
  CHECK(error([&] {
          index(cx, ar(3), {iell(), iell()});
        }).find("single ellipsis") != std::string::npos);
  CHECK(error([&] { index(cx, ar(3), {islice({}, {}, 0)}); }) == "slice step cannot be zero");
}

TEST_CASE_METHOD(Fixture, "advanced indexing", "[np]") {
  Tensor x = ar(24, {2, 3, 4});
  Tensor i20 = arr({2, 0}, DType::Int32), i13 = arr({1, 3}, DType::Int32),
         i02 = arr({0, 2}, DType::Int32);
  Tensor g = index(cx, x, {iall(), iarr(i20)});
  CHECK(type(g) == "int32(2, 2, 4)");
  CHECK(vals(g) == V{8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15});
  Tensor g2 = index(cx, x, {iint(0), iall(), iarr(i13)}); // non-adjacent: array dims first
  CHECK(type(g2) == "int32(2, 3)");
  CHECK(vals(g2) == V{1, 5, 9, 3, 7, 11});
  CHECK(vals(index(cx, x, {iall(), iarr(i02), iarr(i13)})) == V{1, 11, 13, 23});
  CHECK(vals(index(cx, x, {iarr(arr({1, 0}, DType::Int32)), iall(), iarr(i13)})) ==
        V{13, 17, 21, 3, 7, 11});
  Tensor g3 = index(cx, x, {iint(1), iarr(i02)});
  CHECK(type(g3) == "int32(2, 4)");
  CHECK(vals(g3) == V{12, 13, 14, 15, 20, 21, 22, 23});
  Tensor g4 = index(cx, x, {iall(), iint(1), iarr(i02)}); // adjacent: stays in place
  CHECK(type(g4) == "int32(2, 2)");
  CHECK(vals(g4) == V{4, 6, 16, 18});
  // Negative indices wrap; out-of-range ones clamp (JAX's gather).
  CHECK(vals(index(cx, ar(10), {iarr(arr({-1, 20, -30}, DType::Int32))})) == V{9, 9, 0});
  Tensor y = arf(6);
  CHECK(vals(index(cx, y, {iarr(binary(cx, BinOp::Gt, y, py(int64_t{2})))})) == V{3, 4, 5});
  Tensor x0 = index(cx, x, {iint(0)});
  Tensor mask = binary(cx, BinOp::Eq, binary(cx, BinOp::Mod, x0, py(int64_t{3})), py(int64_t{0}));
  CHECK(vals(index(cx, x0, {iarr(mask)})) == V{0, 3, 6, 9});
  CHECK(error([&] {
          index(cx, x, {iarr(i20), iarr(arr({0, 1, 2}, DType::Int32))});
        }) == "Incompatible shapes for broadcasting: shapes=[(2,), (3,)]");
}

TEST_CASE_METHOD(Fixture, "at[] updates", "[np]") {
  Tensor z = zeros(cx, {5});
  Tensor i13 = arr({1, 3}, DType::Int32);
  CHECK(vals(index_update(cx, z, {iarr(i13)}, py(7.0), UpdateMode::Set)) == V{0, 7, 0, 7, 0});
  CHECK(vals(index_update(cx, z, {iarr(arr({1, 1, 3}, DType::Int32))}, py(1.0), UpdateMode::Add)) ==
        V{0, 2, 0, 1, 0});
  Tensor s = index_update(cx, ar(10), {islice({}, {}, 3)}, py(int64_t{-1}), UpdateMode::Set);
  CHECK(type(s) == "int32(10,)");
  CHECK(vals(s) == V{-1, 1, 2, -1, 4, 5, -1, 7, 8, -1});
  Tensor two = index_update(cx, zeros(cx, {2, 3}), {iall(), iint(1)}, f32({1, 2}), UpdateMode::Add);
  CHECK(vals(two) == V{0, 1, 0, 0, 2, 0});
  CHECK(vals(index_update(cx, arf(4), {islice(1, {})}, py(int64_t{2}), UpdateMode::Mul)) ==
        V{0, 2, 4, 6});
  CHECK(vals(index_update(cx, arf(4), {iall()}, py(int64_t{2}), UpdateMode::Min)) == V{0, 1, 2, 2});
  CHECK(vals(index_update(cx, arf(4), {iint(-1)}, py(9.0), UpdateMode::Max)) == V{0, 1, 2, 9});
  CHECK(vals(index_update(cx, ar(4), {iint(0)}, py(2.7), UpdateMode::Set)) == V{2, 1, 2, 3});
  CHECK(error([&] {
          index_update(cx, z, {iarr(i13)}, f32({1, 2, 3}), UpdateMode::Set);
        }) ==
        "Incompatible types for broadcasting: input type=float32[3] and requested type=float32[2]");
}
