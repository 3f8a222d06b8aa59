// The IR text form, its parser and verifier; vma rules; mesh groups and specs.
#include <catch2/catch.hpp>

#include "ir/function.hpp"
#include "ir/vma.hpp"
#include "lang/diag.hpp"
#include "lang/interp.hpp"
#include "runtime/mesh.hpp"

using namespace pxl;

TEST_CASE("IR text round-trips", "[ir]") {
  const char* text =
      R"(func @step(%0: f32[2,2]{x,y}, %1: f32[3]) consts(%2: ~i32[]) -> (f32[2,2]{x}, f32[4,2]{y}) mesh(x=2, y=4) {
  %3 = convert_element_type[dtype=float32] %2 : f32[]
  %4 = broadcast_in_dim[shape=(2, 2) dims=[]] %3 : f32[2,2]
  %5 = mul %0, %4 : f32[2,2]{x,y}
  %6 = reduce_sum[axes=[0]] %1 : f32[]
  %9 = psum[axis_names=(y) group_size=4] %5 : f32[2,2]{x}
  %10 = all_gather[axis_names=(x) group_size=2 axis=0 tiled=true] %5 : f32[4,2]{y}
  %11 = ppermute[axis_names=(x) group_size=2 pairs=[(0, 1), (1, 0)]] %9 : f32[2,2]{x}
  return %9, %10
}
)";
  Function f = parse_function(text);
  CHECK(f.params.size() == 2);
  CHECK(f.consts.size() == 1);
  CHECK(f.body.size() == 7);
  CHECK(f.body[4].attrs.axis_names == std::vector<std::string>{"y"});
  CHECK(f.body[6].attrs.pairs.size() == 2);
  CHECK(f.values[f.params[0]].vma == 3);
  std::string printed = print_function(f);
  CHECK(print_function(parse_function(printed)) == printed);
}

TEST_CASE("a convolution's dot keeps its summation order in the IR text", "[ir]") {
  const char* text = R"(func @f(%0: f32[4,6], %1: f32[6,2]) -> (f32[4,2], f32[4,2]) {
  %2 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0] order=chain] %0, %1 : f32[4,2]
  %3 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0] order=ynn preferred=none precision=HIGHEST,DEFAULT] %0, %1 : f32[4,2]
  return %2, %3
}
)";
  Function f = parse_function(text);
  CHECK(f.body[0].attrs.dot.precision[0] == kPrecisionNone);
  CHECK(f.body[1].attrs.dot.precision ==
        std::array<uint8_t, 2>{kPrecisionHighest, kPrecisionDefault});
  CHECK(f.body[0].attrs.dot.order == DotOrder::Chain);
  CHECK(f.body[1].attrs.dot.order == DotOrder::Ynn);
  CHECK(parse_function(R"(func @f(%0: f32[6], %1: f32[2,6]) -> (f32[2]) {
  %2 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[0] rhs_contract=[1] order=elemental] %0, %1 : f32[2]
  return %2
}
)")
            .body[0]
            .attrs.dot.order == DotOrder::Elemental);
  CHECK(!f.body[0].attrs.dot.preferred_none);
  CHECK(f.body[1].attrs.dot.preferred_none); // lax.dot_general's preferred_element_type=None
  // Texts (the caches' keys) differ from the plain dot's.
  std::string printed = print_function(f);
  CHECK(printed.find("order=chain") != std::string::npos);
  CHECK(printed.find("order=ynn") != std::string::npos);
  CHECK(printed.find("precision=HIGHEST,DEFAULT") != std::string::npos);
  CHECK(print_function(parse_function(printed)) == printed);
  CHECK_THROWS(parse_function(R"(func @f(%0: f32[4,6], %1: f32[6,2]) -> (f32[4,2]) {
  %2 = dot_general[lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0] order=fast] %0, %1 : f32[4,2]
  return %2
}
)"));
}

TEST_CASE("random primitives round-trip and check their operands", "[ir]") {
  const char* text =
      R"(func @bits(%0: u32[3], %1: u32[3], %2: u32[3], %3: f32[3]) -> (u32[3], f32[3]) {
  %4 = threefry2x32[word=1] %0, %1, %2, %2 : u32[3]
  %5 = fma %3, %3, %3 : f32[3]
  %6 = erf_inv %5 : f32[3]
  return %4, %6
}
)";
  Function f = parse_function(text);
  CHECK(f.body[0].attrs.axis == 1);
  std::string printed = print_function(f);
  CHECK(print_function(parse_function(printed)) == printed);
  const AVal u{DType::UInt32, {3}, false}, i{DType::Int32, {3}, false},
      u2{DType::UInt32, {2}, false};
  const AVal fl{DType::Float32, {3}, false};
  OpAttrs w2;
  w2.axis = 2;
  CHECK_THROWS_AS(infer(Op::Threefry2x32, {}, std::vector<AVal>{u, u, u, i}), Error);
  CHECK_THROWS_AS(infer(Op::Threefry2x32, {}, std::vector<AVal>{u, u, u, u2}), Error);
  CHECK_THROWS_AS(infer(Op::Threefry2x32, w2, std::vector<AVal>{u, u, u, u}), Error);
  CHECK_THROWS_AS(infer(Op::Fma, {}, std::vector<AVal>{u, u, u}), Error);
  CHECK_THROWS_AS(infer(Op::ErfInv, {}, std::vector<AVal>{i}), Error);
  CHECK(infer(Op::Fma, {}, std::vector<AVal>{fl, fl, fl}).shape == fl.shape);
}

TEST_CASE("IR parser and verifier reject bad programs", "[ir]") {
  auto error_of = [](const std::string& text) {
    try {
      parse_function(text);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string();
  };
  CHECK(error_of("func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = add %0, %7 : f32[2]\n  return %1\n}")
            .find("used before its definition") != std::string::npos);
  CHECK(error_of("func @f(%0: f32[2]) -> (f32[3]) {\n  %1 = neg %0 : f32[3]\n  return %1\n}")
            .find("shape rule gives f32[2]") != std::string::npos);
  CHECK(error_of("func @f(%0: f32[2]) -> (f32[2]) {\n  %1 = frobnicate %0 : f32[2]\n  return %1\n}")
            .find("unknown op 'frobnicate'") != std::string::npos);
  CHECK(
      error_of("func @f(%0: f32[2]{q}) -> (f32[2]) {\n  return %0\n}").find("unknown mesh axis") !=
      std::string::npos);
  CHECK(error_of("func @f(%0: f32[4]) -> (f32[4]) mesh(i=4) {\n"
                 "  %1 = ppermute[axis_names=(i) group_size=4 pairs=[(0, 1), (2, 1)]] %0 : f32[4]\n"
                 "  return %1\n}")
            .find("ppermute sources and destinations must be unique, got ((0, 1), (2, 1)).") !=
        std::string::npos);
}

TEST_CASE("vma rules", "[ir]") {
  AxisSet x = 1, y = 2;
  AxisSet both[] = {x, y};
  CHECK(infer_vma(Op::Add, both, 0) == (x | y));
  AxisSet one[] = {x | y};
  CHECK(infer_vma(Op::Psum, one, y) == x);
  CHECK(infer_vma(Op::AllGather, one, x) == y);
  AxisSet none[] = {0};
  CHECK(infer_vma(Op::Ppermute, none, x) == x);
  CHECK(infer_vma(Op::AxisIndex, {}, y) == y);
}

TEST_CASE("mesh groups follow the listed axis order", "[ir]") {
  Mesh m{{"x", "y"}, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}};
  GroupLayout gy = m.groups({"y"});
  REQUIRE(gy.groups.size() == 2);
  CHECK(gy.groups[0] == std::vector<int>{0, 1, 2, 3});
  CHECK(gy.groups[1] == std::vector<int>{4, 5, 6, 7});
  GroupLayout gx = m.groups({"x"});
  REQUIRE(gx.groups.size() == 4);
  CHECK(gx.groups[2] == std::vector<int>{2, 6});
  CHECK(m.groups({"x", "y"}).groups[0] == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(m.groups({"y", "x"}).groups[0] == std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
  Mesh cube{{"a", "b", "c"}, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}};
  CHECK(cube.groups({"b"}).groups.size() == 4);
  CHECK(cube.groups({"c", "a"}).groups[0] == std::vector<int>{0, 4, 1, 5});
}

TEST_CASE("axis_index_groups split the mesh groups and print in the IR", "[ir]") {
  Mesh m{{"x", "y"}, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}};
  GroupLayout g = m.groups({"y"}, {{0, 2}, {1, 3}});
  REQUIRE(g.groups.size() == 4);
  CHECK(g.groups[0] == std::vector<int>{0, 2});
  CHECK(g.groups[1] == std::vector<int>{1, 3});
  CHECK(g.groups[3] == std::vector<int>{5, 7});
  CHECK(m.groups({"y"}, {}).groups == m.groups({"y"}).groups);
  // Ranks within a group follow the listed order.
  CHECK(m.groups({"x"}, {{1}, {0}}).groups[0] == std::vector<int>{4});
  Function f = parse_function(R"(func @f(%0: f32[2]{y}) -> (f32[2]{y}, f32[2,2]{y}) mesh(x=2, y=4) {
  %1 = psum[axis_names=(y) group_size=2 axis_index_groups=[[0, 2], [1, 3]]] %0 : f32[2]{y}
  %2 = all_gather[axis_names=(y) group_size=2 axis_index_groups=[[0, 1], [2, 3]] axis=0] %0 : f32[2,2]{y}
  return %1, %2
}
)");
  CHECK(f.body[0].attrs.index_groups == std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}});
  std::string printed = print_function(f);
  CHECK(printed.find("axis_index_groups=[[0, 1], [2, 3]] axis=0") != std::string::npos);
  CHECK(print_function(parse_function(printed)) == printed);
  // The vma of a grouped psum keeps the axis: the groups' results differ.
  AxisSet one[] = {2};
  CHECK(infer_vma(Op::Psum, one, 2, /*grouped=*/true) == 2);
  auto error_of = [](const std::vector<std::vector<int64_t>>& groups) {
    OpAttrs a;
    a.axis_names = {"y"};
    a.group_size = 2;
    a.index_groups = groups;
    AVal x{DType::Float32, {2}, false};
    try {
      infer(Op::Psum, a, std::span<const AVal>(&x, 1));
    } catch (const Error& e) {
      return e.message();
    }
    return std::string();
  };
  CHECK(error_of({{0, 1}, {2, 3}}).empty());
  CHECK(error_of({{0, 1}, {1, 3}}).find("cover all indices exactly once") != std::string::npos);
  CHECK(error_of({{0, 1}, {2, 3, 4}}).find("the same size") != std::string::npos);
}

TEST_CASE("spec checks name the dimension, the sizes and the axes", "[ir]") {
  Mesh m{{"x", "y"}, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}};
  PartitionSpec s;
  s.entries = {{"x"}, {"y"}};
  CHECK(check_spec(m, s, {4, 8}).empty());
  CHECK(check_spec(m, s, {4, 6}) ==
        "Sharding NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), spec=P('x', "
        "'y'), memory_kind=device) implies that array axis 1 is partitioned 4 times, but the "
        "dimension size is 6 (full shape: (4, 6), per-dimension tiling factors: [2, 4] should "
        "evenly divide the shape)");
  s.entries = {{"x", "y"}};
  CHECK(check_spec(m, s, {6}).find("axis 0 is partitioned 8 times") != std::string::npos);
  s.entries = {{"z"}};
  CHECK(check_spec(m, s, {4}).find("unknown mesh axis 'z'") != std::string::npos);
  s.entries = {{"x"}, {"x"}};
  CHECK(check_spec(m, s, {4, 4}).find("used twice") != std::string::npos);
  ShardBlock b = block_of(m, PartitionSpec{{{"x"}, {"y"}}, {}}, {4, 8}, 6);
  CHECK(b.start == std::vector<int64_t>{2, 4});
  CHECK(b.shape == Shape{2, 2});
}

TEST_CASE("a traced SPMD function lowers to IR that verifies", "[ir]") {
  Interpreter in;
  // Auto axes: over Explicit ones (make_mesh's default) a plain array would have
  // to be laid out as in_specs already.
  in.run_string(
      "mesh = make_mesh((2, 2), ('x', 'y'), axis_types=(jax.sharding.AxisType.Auto,) * 2)\n"
      "f = shard_map(lambda a: psum(a * 2, 'y'), mesh=mesh, in_specs=P('x', 'y'), "
      "out_specs=P('x'))\nA = np.ones((4, 4))\n",
      "t.pxl");
  std::string ir = in.ir_of("f(A)");
  Function fn = parse_function(ir);
  CHECK(verify_function(fn).empty());
  CHECK(ir.find("psum[axis_names=(y) group_size=2]") != std::string::npos);
  CHECK(ir.find("f32[2,2]{x}") != std::string::npos);
  CHECK(in.comm_of("f(A)").find("psum over 'y' (groups of 2)") != std::string::npos);
}

TEST_CASE("remove_dead_code keeps what the results and effects need", "[ir]") {
  Function f = parse_function(R"(func @f(%0: f32[2]{x}) -> (f32[2]{x}) mesh(x=4) {
  %1 = mul %0, %0 : f32[2]{x}
  %2 = psum[axis_names=(x) group_size=4] %1 : f32[2]
  %3 = sin %0 : f32[2]{x}
  %4 = debug_print[format=0] %2 : bool[]
  %5 = add %3, %0 : f32[2]{x}
  return %5
}
)");
  remove_dead_code(f);
  CHECK(f.body.size() == 5); // mul feeds psum, which the debug_print (an effect) prints
  f = parse_function(R"(func @f(%0: f32[2]{x}) -> (f32[2]{x}) mesh(x=4) {
  %1 = mul %0, %0 : f32[2]{x}
  %2 = psum[axis_names=(x) group_size=4] %1 : f32[2]
  %3 = sin %0 : f32[2]{x}
  %4 = cos %3 : f32[2]{x}
  %5 = add %3, %0 : f32[2]{x}
  return %5
}
)");
  remove_dead_code(f);
  REQUIRE(f.body.size() == 2);
  CHECK(f.body[0].op == Op::Sin);
  CHECK(f.body[1].op == Op::Add);
  CHECK(f.values[f.body[1].result].producer == 1);
  CHECK(f.values[f.body[0].result].producer == 0);
  CHECK(verify_function(f).empty());
}
