// The LLVM executable against the reference executable (the oracle): random op
// graphs over every dtype, with broadcasting, reductions over each axis,
// slices, transposes and reversals, must give bit-identical integer and bool
// results and float results within the bound of SPEC.md §11 (long float
// reductions are reassociated); and the fusion planner's kernel counts.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "codegen/jit.hpp"
#include "codegen/kernel_pool.hpp"
#include "codegen/plan.hpp"
#include "codegen/ptx.hpp"
#include "runtime/executable.hpp"
#include "runtime/threefry.hpp"
#include "tests/unit/ir_builder.hpp"

using namespace pxl;

namespace {

Array random_array(std::mt19937& rng, DType d, const Shape& s) {
  Array a(d, s);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::uniform_int_distribution<int> pick(0, 19);
  const double specials[] = {0.0,
                             -0.0,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             1e30,
                             -1e-30,
                             0.5};
  for (int64_t i = 0; i < a.size(); ++i) {
    int p = pick(rng);
    if (d == DType::Bool) {
      a.set(i, Scalar::of_bool(p & 1));
    } else if (is_integer(d)) {
      // The shift widths of 8/16/32 bits and the extremes (they wrap into narrow types).
      const int64_t ints[] = {0, 1, -1, 7, 16, 32, INT32_MIN, INT32_MAX, -128, 65535};
      a.set(i, Scalar::of_int(p < 10 ? ints[p] : static_cast<int64_t>(u(rng) * 10)));
    } else {
      a.set(i, Scalar::of_float(p < 2 ? specials[rng() % 8] : u(rng)));
    }
  }
  return a;
}

bool bits_equal(const Array& a, const Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Integers and bools bitwise; floats equal as values (so -0 == +0, which a
// reassociated max may pick differently), both NaN (the sign of a NaN is not
// kept: LLVM and GCC pick different operands of an fma to propagate), or
// within `rel` of each other relative to max(1, |want|): the error of a
// reassociated reduction, carried through the random ops that follow it.
bool close(const Array& want, const Array& got, double rel) {
  if (!is_floating(want.dtype())) return bits_equal(want, got);
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) return false;
  for (int64_t i = 0; i < want.size(); ++i) {
    double w = want.get_f64(i), g = got.get_f64(i);
    if (w == g || (std::isnan(w) && std::isnan(g))) continue;
    if (!(std::fabs(w - g) <= rel * std::max(1.0, std::fabs(w)))) {
      UNSCOPED_INFO("element " << i << ": want " << w << ", got " << g);
      return false;
    }
  }
  return true;
}

std::vector<Array> run(Executable& exe, const std::vector<Array>& inputs) {
  CommWorld world(1, 1);
  std::vector<DebugRecord> debug;
  return exe.run(0, {inputs}, world, debug)[0];
}

SpmdLayout one_device() {
  SpmdLayout l;
  l.mesh.device_ids = {0};
  return l;
}

const Op kUnaryFloat[] = {Op::Neg,   Op::Exp,  Op::Log,   Op::Log1p,    Op::Expm1, Op::Sqrt,
                          Op::Rsqrt, Op::Tanh, Op::Sin,   Op::Cos,      Op::Abs,   Op::Sign,
                          Op::Floor, Op::Ceil, Op::Round, Op::Logistic, Op::Erf,   Op::ErfInv};
const Op kBinaryFloat[] = {Op::Add, Op::Sub, Op::Mul, Op::Div,  Op::Rem,
                           Op::Max, Op::Min, Op::Pow, Op::Atan2};
const Op kBinaryInt[] = {Op::Add,
                         Op::Sub,
                         Op::Mul,
                         Op::Div,
                         Op::Rem,
                         Op::Max,
                         Op::Min,
                         Op::And,
                         Op::Or,
                         Op::Xor,
                         Op::ShiftLeft,
                         Op::ShiftRightLogical,
                         Op::ShiftRightArithmetic,
                         Op::Pow};
const Op kCompare[] = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
const Op kReduce[] = {Op::ReduceSum, Op::ReduceMax, Op::ReduceMin, Op::ReduceProd};
// The real dtypes: complex64 is never fused (codegen/plan.cpp runs it on the
// reference kernels) and has no order for the comparisons these graphs use;
// the golden programs under tests/programs/complex cover its jit path.
const DType kDtypes[] = {DType::Bool,     DType::Int2,    DType::Int4,   DType::Int8,
                         DType::Int16,    DType::Int32,   DType::UInt2,  DType::UInt4,
                         DType::UInt8,    DType::UInt16,  DType::UInt32, DType::Float16,
                         DType::BFloat16, DType::Float32, DType::Float64};

template <class T, size_t N> T pick(std::mt19937& rng, const T (&xs)[N]) { return xs[rng() % N]; }

// A random graph: a few parameters, then ops on random earlier values of the
// right kind; a handful of values become results.
Function random_graph(std::mt19937& rng, DType d) {
  Builder b;
  Shape shape;
  for (int r = static_cast<int>(rng() % 4); r > 0; --r) shape.push_back(1 + rng() % 5);
  std::vector<int> vals = {b.param(d, shape), b.param(d, shape)};
  auto same = [&](int like) {
    std::vector<int> c;
    for (int v : vals)
      if (b.aval(v).shape == b.aval(like).shape && b.aval(v).dtype == b.aval(like).dtype)
        c.push_back(v);
    return c[rng() % c.size()];
  };
  for (int step = 0; step < 12; ++step) {
    int x = vals[rng() % vals.size()];
    const AVal xa = b.aval(x); // a copy: b.op() grows the value list
    DType xd = xa.dtype;
    OpAttrs a;
    int r = -1;
    switch (rng() % 9) {
    case 0:
      if (xd != DType::Bool && rng() % 4 == 0) {
        // integer_pow: negative exponents for floats only (the shape rule).
        a.exponent = static_cast<int64_t>(rng() % 9) - (is_floating(xd) ? 4 : 0);
        r = b.op(Op::IntegerPow, a, {x});
      } else if (is_floating(xd))
        r = b.op(pick(rng, kUnaryFloat), a, {x});
      else if (xd != DType::Bool) // (abs refuses the narrow integers, as JAX's)
        r = b.op(rng() % 2 || is_narrow_int(xd) ? Op::Neg : Op::Abs, a, {x});
      else
        r = b.op(Op::Not, a, {x});
      break;
    case 1:
    case 2: {
      Op op = is_floating(xd)     ? pick(rng, kBinaryFloat)
              : xd == DType::Bool ? (rng() % 2 ? Op::And : Op::Max)
                                  : pick(rng, kBinaryInt);
      r = b.op(op, a, {x, same(x)});
      break;
    }
    case 3:
      r = b.op(pick(rng, kCompare), a, {x, same(x)});
      break;
    case 4: {
      a.dtype = pick(rng, kDtypes);
      r = b.op(Op::ConvertElementType, a, {x});
      break;
    }
    case 5: {
      if (xa.ndim() == 0 || xd == DType::Bool) break;
      for (int64_t ax = 0; ax < xa.ndim(); ++ax)
        if (rng() % 2) a.axes.push_back(ax);
      r = b.op(pick(rng, kReduce), a, {x});
      // Broadcast it back so later ops can combine it with full-shape values.
      OpAttrs bc;
      bc.shape = xa.shape;
      for (int64_t ax = 0, j = 0; ax < xa.ndim(); ++ax)
        if (std::find(a.axes.begin(), a.axes.end(), ax) == a.axes.end()) bc.axes.push_back(ax), ++j;
      vals.push_back(r);
      r = b.op(Op::BroadcastInDim, bc, {r});
      break;
    }
    case 6: {
      a.perm.resize(static_cast<size_t>(xa.ndim()));
      std::iota(a.perm.begin(), a.perm.end(), 0);
      std::shuffle(a.perm.begin(), a.perm.end(), rng);
      r = b.op(Op::Transpose, a, {x});
      if (rng() % 2) break;
      OpAttrs ra;
      ra.axes = a.perm.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{0};
      vals.push_back(r);
      r = b.op(Op::Rev, ra, {r});
      break;
    }
    case 7: {
      for (int64_t n : xa.shape) {
        int64_t s = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
        a.starts.push_back(s);
        a.limits.push_back(n);
        a.strides.push_back(1 + static_cast<int64_t>(rng() % 2));
      }
      r = b.op(Op::Slice, a, {x});
      break;
    }
    case 8: {
      int p = b.op(Op::Gt, a, {x, same(x)});
      r = b.op(Op::Select, a, {p, x, same(x)});
      break;
    }
    }
    if (r >= 0) vals.push_back(r);
  }
  for (size_t i = 2; i < vals.size(); ++i)
    if (i + 3 >= vals.size() || rng() % 3 == 0) b.f.results.push_back(vals[i]);
  if (b.f.results.empty()) b.f.results.push_back(vals[0]);
  return b.f;
}

} // namespace

TEST_CASE("LLVM executable matches the reference on random op graphs", "[codegen]") {
  std::mt19937 rng(1234);
  CodeCache cache;
  int graphs = 0;
  for (int round = 0; round < 25; ++round)
    for (DType d : kDtypes) {
      auto fn = std::make_shared<Function>(random_graph(rng, d));
      INFO(print_function(*fn, false));
      std::vector<Array> inputs;
      for (int p : fn->params) inputs.push_back(random_array(rng, d, fn->values[p].aval.shape));
      auto ref = make_reference_executable(fn, one_device(), {});
      auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
      std::vector<Array> want = run(*ref, inputs), got = run(*jit, inputs);
      REQUIRE(want.size() == got.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO("result " << i);
        CHECK(close(want[i], got[i], 1e-4));
      }
      ++graphs;
    }
  CHECK(graphs == 25 * static_cast<int>(std::size(kDtypes)));
}

TEST_CASE("Inlined transcendental math is bit-identical to the reference", "[codegen]") {
  // Long enough that the vectorized loop body runs, with every special value.
  std::mt19937 rng(7);
  CodeCache cache;
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
    for (Op op : kUnaryFloat) {
      Builder b;
      int x = b.param(d, {1027});
      b.f.results.push_back(b.op(op, {}, {x}));
      auto fn = std::make_shared<Function>(b.f);
      Array in(d, {1027});
      std::uniform_real_distribution<double> wide(-100.0, 100.0), narrow(-1.0, 1.0),
          expo(-20.0, 127.0);
      // The ends of every range of the algorithms (sin/cos: 2^-12, pi/4, 120).
      const double specials[] = {
          0.0,   -0.0,   INFINITY, -INFINITY, NAN,     1e-40,    -1e-30,  0.5,
          88.7,  -87.9,  20.0,     4e-4,      1e30,    709.0,    -745.0,  0.3,
          -3e38, 3.4e38, 120.0,    -119.99,   0x1p-12, -0x1p-13, 0.78539, 0.7854,
          1e10,  -1.5e7, 102943.0, 6.2831855, 1e-300,  -4e300,   1.0,     -2.0};
      const int64_t ns = std::size(specials);
      for (int64_t i = 0; i < in.size(); ++i)
        in.set(i, Scalar::of_float(i < ns       ? specials[i]
                                   : i % 3 == 0 ? wide(rng)
                                   : i % 3 == 1 ? narrow(rng)
                                                : (rng() % 2 ? -1 : 1) * std::exp2(expo(rng))));
      auto ref = make_reference_executable(fn, one_device(), {});
      auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
      Array want = run(*ref, {in})[0], got = run(*jit, {in})[0];
      INFO(op_name(op) << " " << dtype_name(d));
      int bad = 0;
      for (int64_t i = 0; i < want.size(); ++i) {
        double w = want.get_f64(i), g = got.get_f64(i);
        bool same =
            std::isnan(w)
                ? std::isnan(g)
                : std::memcmp(static_cast<const char*>(want.data()) + i * int64_t(dtype_size(d)),
                              static_cast<const char*>(got.data()) + i * int64_t(dtype_size(d)),
                              dtype_size(d)) == 0;
        if (!same && bad++ < 3) UNSCOPED_INFO("x = " << in.get_f64(i) << ": " << w << " vs " << g);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("threefry2x32 and fma kernels are bit-identical to the reference", "[codegen]") {
  // Fused together as jax.random's uniform fuses them: bits = y0 ^ y1 of the
  // hash, a float in [1, 2) from its mantissa bits, then fma(f, span, lo).
  const int64_t n = 1031;
  Builder b;
  int k0 = b.param(DType::UInt32, {n}), k1 = b.param(DType::UInt32, {n});
  int x0 = b.param(DType::UInt32, {n}), x1 = b.param(DType::UInt32, {n});
  OpAttrs w0, w1, bc;
  w1.axis = 1;
  bc.dtype = DType::Float32;
  int y0 = b.op(Op::Threefry2x32, w0, {k0, k1, x0, x1});
  int y1 = b.op(Op::Threefry2x32, w1, {k0, k1, x0, x1});
  int bits = b.op(Op::Xor, {}, {y0, y1});
  int f = b.op(Op::BitcastConvertType, bc, {bits});
  int span = b.param(DType::Float32, {n}), lo = b.param(DType::Float32, {n});
  b.f.results = {y0, y1, b.op(Op::Fma, {}, {f, span, lo})};
  auto fn = std::make_shared<Function>(b.f);
  std::mt19937 rng(11);
  std::vector<Array> in;
  for (int i = 0; i < 4; ++i) {
    Array a(DType::UInt32, {n});
    for (int64_t j = 0; j < n; ++j) a.as<uint32_t>()[j] = j < 8 && i >= 2 ? uint32_t(j) : rng();
    in.push_back(a);
  }
  in.push_back(random_array(rng, DType::Float32, {n}));
  in.push_back(random_array(rng, DType::Float32, {n}));
  CodeCache cache;
  auto ref = make_reference_executable(fn, one_device(), {});
  auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
  std::vector<Array> want = run(*ref, in), got = run(*jit, in);
  CHECK(bits_equal(want[0], got[0]));
  CHECK(bits_equal(want[1], got[1]));
  CHECK(close(want[2], got[2], 0.0));
  // One kernel: the hash, the xor, the bitcast and the fma fuse.
  Function fused = *fn;
  fused.results = {fused.results[2]};
  CHECK(plan_kernels(fused).kernels.size() == 1);
  // The reference is runtime/threefry.cpp's hash, word by word.
  for (int64_t j = 0; j < n; j += 97) {
    auto h = threefry2x32({in[0].as<uint32_t>()[j], in[1].as<uint32_t>()[j]},
                          in[2].as<uint32_t>()[j], in[3].as<uint32_t>()[j]);
    CHECK(want[0].as<uint32_t>()[j] == h[0]);
    CHECK(want[1].as<uint32_t>()[j] == h[1]);
  }
  // fma rounds once: (1 + 2^-23) * (1 - 2^-23) - 1 = -2^-46, which mul + add loses.
  Builder fb;
  int a = fb.param(DType::Float32, {}), c = fb.param(DType::Float32, {}),
      d = fb.param(DType::Float32, {});
  fb.f.results = {fb.op(Op::Fma, {}, {a, c, d})};
  auto ffn = std::make_shared<Function>(fb.f);
  std::vector<Array> fin = {Array::scalar(Scalar::of_float(1 + 0x1p-23), DType::Float32),
                            Array::scalar(Scalar::of_float(1 - 0x1p-23), DType::Float32),
                            Array::scalar(Scalar::of_float(-1.0), DType::Float32)};
  CHECK(run(*make_reference_executable(ffn, one_device(), {}), fin)[0].get_f64(0) == -0x1p-46);
  CHECK(run(*make_llvm_executable(ffn, one_device(), {}, &cache), fin)[0].get_f64(0) == -0x1p-46);
}

TEST_CASE("Inlined binary math is bit-identical to the reference", "[codegen]") {
  // Every pair of special values, then negative bases with integer and
  // half-integer exponents, overflow and underflow, and wide random pairs.
  const double sp[] = {0.0,    -0.0,       INFINITY,    -INFINITY, NAN,    1.0,  -1.0,
                       2.0,    -2.0,       0.5,         -0.5,      3.0,    -3.0, 1e-40,
                       -1e-40, 1e38,       -1e38,       127.0,     -150.0, 0.75, 1.5,
                       25.0,   16777216.0, -16777217.0, 1e-300};
  const int64_t ns = std::size(sp), n = ns * ns + 2048;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> base(-30.0, 30.0), ex(-40.0, 40.0);
  std::vector<double> xs, ys;
  for (int64_t i = 0; i < n; ++i) {
    double x, y;
    if (i < ns * ns) {
      x = sp[i % ns], y = sp[i / ns];
    } else if (i % 3 == 0) {
      x = base(rng), y = std::round(ex(rng)) * (rng() % 2 ? 0.5 : 1.0);
    } else if (i % 3 == 1) {
      x = std::fabs(base(rng)), y = ex(rng);
    } else {
      x = std::ldexp(base(rng), static_cast<int>(rng() % 200) - 100), y = ex(rng) / 8;
    }
    xs.push_back(x), ys.push_back(y);
  }
  CodeCache cache;
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64})
    for (Op op : {Op::Pow, Op::Atan2}) {
      Builder b;
      b.f.results.push_back(b.op(op, {}, {b.param(d, {n}), b.param(d, {n})}));
      auto fn = std::make_shared<Function>(b.f);
      Array x(d, {n}), y(d, {n});
      for (int64_t i = 0; i < n; ++i) {
        x.set(i, Scalar::of_float(xs[size_t(i)]));
        y.set(i, Scalar::of_float(ys[size_t(i)]));
      }
      auto ref = make_reference_executable(fn, one_device(), {});
      auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
      Array want = run(*ref, {x, y})[0], got = run(*jit, {x, y})[0];
      INFO(op_name(op) << " " << dtype_name(d));
      int bad = 0;
      size_t w = dtype_size(d);
      for (int64_t i = 0; i < n; ++i) {
        bool same =
            std::isnan(want.get_f64(i))
                ? std::isnan(got.get_f64(i))
                : std::memcmp(static_cast<const char*>(want.data()) + i * int64_t(w),
                              static_cast<const char*>(got.data()) + i * int64_t(w), w) == 0;
        if (!same && bad++ < 3)
          UNSCOPED_INFO(x.get_f64(i) << ", " << y.get_f64(i) << ": " << want.get_f64(i) << " vs "
                                     << got.get_f64(i));
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("Inlined float16 conversions are bit-identical to the reference", "[codegen]") {
  // f32 -> f16 -> f32 over every half bit pattern, the midpoints between
  // neighbours (ties round to even), their neighbours, and wide random floats.
  std::vector<uint32_t> xs;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint32_t f = std::bit_cast<uint32_t>(half_to_float(static_cast<uint16_t>(h)));
    xs.insert(xs.end(), {f, f + 0x1000, f + 0x0fff, f + 0x1001});
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 4096; ++i) xs.push_back(static_cast<uint32_t>(rng()));
  int64_t n = static_cast<int64_t>(xs.size());
  Builder b;
  OpAttrs to16, to32;
  to16.dtype = DType::Float16;
  to32.dtype = DType::Float32;
  int h = b.op(Op::ConvertElementType, to16, {b.param(DType::Float32, {n})});
  b.f.results.push_back(h);
  b.f.results.push_back(b.op(Op::ConvertElementType, to32, {h}));
  auto fn = std::make_shared<Function>(b.f);
  Array in(DType::Float32, {n});
  std::memcpy(in.data(), xs.data(), xs.size() * 4);
  CodeCache cache;
  auto ref = make_reference_executable(fn, one_device(), {});
  auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
  std::vector<Array> want = run(*ref, {in}), got = run(*jit, {in});
  for (int r = 0; r < 2; ++r) {
    int bad = 0;
    size_t w = dtype_size(want[r].dtype());
    for (int64_t i = 0; i < n; ++i)
      if (std::memcmp(static_cast<const char*>(want[r].data()) + i * int64_t(w),
                      static_cast<const char*>(got[r].data()) + i * int64_t(w), w) != 0 &&
          bad++ < 3)
        UNSCOPED_INFO("result " << r << ", input bits " << std::hex << xs[size_t(i)]);
    CHECK(bad == 0);
  }
}

TEST_CASE("A traced softmax runs as 2 kernels with the reference's results", "[codegen]") {
  std::mt19937 rng(11);
  Builder b;
  b.f.results.push_back(b.softmax_traced(b.param(DType::Float32, {6, 300})));
  b.f.results.push_back(b.softmax_traced(b.param(DType::Float32, {3, 5})));
  auto fn = std::make_shared<Function>(b.f);
  std::vector<Array> inputs;
  for (int p : fn->params) {
    const Shape& s = fn->values[p].aval.shape;
    inputs.push_back(s.empty() ? Array::scalar(Scalar::of_float(1), DType::Float32)
                               : random_array(rng, DType::Float32, s));
  }
  CodeCache cache;
  auto ref = make_reference_executable(fn, one_device(), {});
  auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
  std::vector<Array> want = run(*ref, inputs), got = run(*jit, inputs);
  CHECK(close(want[0], got[0], 1e-5)); // rows of 300: the sum is reassociated
  CHECK(close(want[1], got[1], 0));    // rows of 5: in order, the same values
}

TEST_CASE("The code cache compiles a Function once", "[codegen]") {
  Builder b;
  int x = b.param(DType::Float32, {8});
  b.f.results.push_back(b.op(Op::Exp, {}, {x}));
  CodeCache cache;
  auto p1 = cache.compile(b.f);
  auto p2 = cache.compile(b.f);
  CHECK(p1 == p2);
  CHECK(cache.compilations() == 1);
}

TEST_CASE("Fusion: kernel counts", "[codegen]") {
  OpAttrs none;
  SECTION("an elementwise chain is one kernel") {
    Builder b;
    int x = b.param(DType::Float32, {16});
    int y = b.param(DType::Float32, {16});
    int t = b.op(Op::Mul, none, {x, y});
    t = b.op(Op::Add, none, {t, x});
    t = b.op(Op::Exp, none, {t});
    b.f.results.push_back(b.op(Op::Tanh, none, {t}));
    CHECK(plan_kernels(b.f).kernels.size() == 1);
  }
  SECTION("softmax over the last axis, written out and as jax.nn.softmax traces it") {
    for (bool traced : {false, true}) {
      Builder b;
      int x = b.param(DType::Float32, {4, 8});
      // Traced: keepdims reshapes to (4, 1), times 1/sum, a dead broadcast.
      b.f.results.push_back(traced ? b.softmax_traced(x) : b.softmax(x));
      KernelPlan p = plan_kernels(b.f);
      INFO(describe_plan(b.f, p));
      // One row kernel: per row the max, then the sum with its exp(x - max)
      // prologue, then the normalisation as its epilogue (the exp recomputed,
      // not stored).
      CHECK(p.kernels.size() == 1);
      CHECK(p.steps.size() == 1);
      CHECK(describe_plan(b.f, p).rfind("1 kernels", 0) == 0);
      CHECK(p.kernels[0].row_reduce >= 0);
      CHECK(p.kernels[0].row_before.size() == 1);
    }
  }
  SECTION("a mean is one kernel; a sum that is also a result is not fused") {
    Builder b;
    int x = b.param(DType::Float32, {4, 8});
    OpAttrs red;
    red.axes = {1};
    int s = b.op(Op::ReduceSum, red, {x});
    int n = b.op(Op::ConvertElementType,
                 [] {
                   OpAttrs a;
                   a.dtype = DType::Float32;
                   return a;
                 }(),
                 {b.op(Op::Iota,
                       [] {
                         OpAttrs a;
                         a.dtype = DType::Int32;
                         a.shape = {4};
                         a.axis = 0;
                         return a;
                       }(),
                       {})});
    b.f.results.push_back(b.op(Op::Div, none, {s, n}));
    CHECK(plan_kernels(b.f).kernels.size() == 1);
    b.f.results.push_back(s);
    CHECK(plan_kernels(b.f).kernels.size() == 2);
  }
  SECTION("a reduction read along another axis is not a row reduction") {
    Builder b;
    int x = b.param(DType::Float32, {8, 8});
    OpAttrs red;
    red.axes = {1};
    OpAttrs bc;
    bc.shape = {8, 8};
    bc.axes = {1}; // s[j] broadcast along the rows: not the current row's value
    int s = b.op(Op::ReduceSum, red, {x});
    b.f.results.push_back(b.op(Op::Sub, none, {x, b.op(Op::BroadcastInDim, bc, {s})}));
    KernelPlan p = plan_kernels(b.f);
    CHECK(p.kernels.size() == 2);
    CHECK(p.kernels[1].row_reduce == -1);
  }
}

namespace {

// `op` over the trailing `axes` of prologue(x) for long rows (the reassociated
// path), against the reference: ints bitwise; float sums and products within
// SPEC.md's bound 2·(n-1)·eps·sum|x_i| (products: 2·(n-1)·eps·|want|); max
// and min equal as values.
void check_long_reduction(DType d, Shape shape, std::vector<int64_t> axes, Op op, Op prologue,
                          std::mt19937& rng) {
  Builder b;
  int x = b.param(d, shape);
  int y = b.param(d, shape);
  int t = prologue == Op::Mul   ? b.op(Op::Mul, {}, {x, y})
          : prologue == Op::Add ? x
                                : b.op(prologue, {}, {x});
  OpAttrs red;
  red.axes = axes;
  b.f.results.push_back(b.op(op, red, {t}));
  b.f.results.push_back(b.op(Op::ReduceSum, red, {b.op(Op::Abs, {}, {t})}));
  auto fn = std::make_shared<Function>(b.f);
  INFO(print_function(*fn, false));
  std::vector<Array> inputs;
  std::uniform_real_distribution<double> u(op == Op::ReduceProd ? 0.9 : -4.0,
                                           op == Op::ReduceProd ? 1.1 : 4.0);
  for (int p : fn->params) {
    Array a(d, fn->values[p].aval.shape);
    for (int64_t i = 0; i < a.size(); ++i)
      a.set(i, is_floating(d) ? Scalar::of_float(u(rng))
                              : Scalar::of_int(static_cast<int64_t>(rng() % 2000000) - 1000000));
    inputs.push_back(a);
  }
  CodeCache cache;
  auto ref = make_reference_executable(fn, one_device(), {});
  auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
  std::vector<Array> want = run(*ref, inputs), got = run(*jit, inputs);
  if (!is_floating(d)) {
    CHECK(bits_equal(want[0], got[0]));
    return;
  }
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[static_cast<size_t>(a)];
  double eps = d == DType::Float64 ? 0x1p-52 : 0x1p-23; // half types accumulate in f32
  double half_ulp = d == DType::Float16 ? 0x1p-10 : d == DType::BFloat16 ? 0x1p-7 : 0;
  for (int64_t i = 0; i < want[0].size(); ++i) {
    double w = want[0].get_f64(i), g = got[0].get_f64(i), mag = want[1].get_f64(i);
    double bound =
        (op == Op::ReduceProd ? std::fabs(w) : mag) * 2.0 * static_cast<double>(n - 1) * eps +
        std::fabs(w) * half_ulp; // and one rounding to the half type
    if (op == Op::ReduceMax || op == Op::ReduceMin) bound = 0;
    INFO("element " << i << ": want " << w << ", got " << g << ", bound " << bound);
    CHECK((w == g || std::fabs(w - g) <= bound));
  }
}

} // namespace

TEST_CASE("Big kernels split over threads keep the reference's results", "[codegen]") {
  // Over 1M elements the CodeCache's pool runs the outermost loop in pieces;
  // a reduction to one value is split into blocks combined in order.
  std::mt19937 rng(5);
  check_long_reduction(DType::Float32, {(1 << 20) + 12345}, {0}, Op::ReduceSum, Op::Exp, rng);
  check_long_reduction(DType::Float32, {1 << 21}, {0}, Op::ReduceMax, Op::Add, rng);
  check_long_reduction(DType::Int32, {(1 << 20) + 7}, {0}, Op::ReduceSum, Op::Mul, rng);
  check_long_reduction(DType::Float32, {64, 1 << 15}, {1}, Op::ReduceSum, Op::Tanh, rng);
  Builder b;
  int x = b.param(DType::Float32, {(1 << 20) + 3});
  b.f.results.push_back(b.op(Op::Mul, {}, {b.op(Op::Exp, {}, {x}), x}));
  b.f.results.push_back(b.softmax(b.param(DType::Float32, {512, 2048})));
  auto fn = std::make_shared<Function>(b.f);
  std::vector<Array> inputs;
  for (int p : fn->params)
    inputs.push_back(random_array(rng, DType::Float32, fn->values[p].aval.shape));
  CodeCache cache;
  auto ref = make_reference_executable(fn, one_device(), {});
  auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
  std::vector<Array> want = run(*ref, inputs), got = run(*jit, inputs);
  CHECK(close(want[0], got[0], 0));    // elementwise: the same values
  CHECK(close(want[1], got[1], 1e-5)); // the sum of each row is reassociated
}

namespace {
int reduce_split_axis_of(Shape shape, std::vector<int64_t> axes, DType d, Op op) {
  Builder b;
  OpAttrs red;
  red.axes = axes;
  b.f.results.push_back(b.op(op, red, {b.param(d, shape)}));
  KernelPlan plan = plan_kernels(b.f);
  return reduce_split_axis(b.f, plan.kernels.at(0));
}
} // namespace

TEST_CASE("Big reductions over leading axes split over threads with the reference's bits",
          "[codegen]") {
  // Split over the first kept axis: each output is still accumulated in the
  // reference's order, whatever the pool's pieces (1, 3 or 7 workers).
  // (Float32, float64 and float16 sums this big are YNNPACK's, host steps.)
  CHECK(reduce_split_axis_of({64, 128, 160}, {1}, DType::Float16, Op::ReduceMax) == 0);
  CHECK(reduce_split_axis_of({3, 1100, 520}, {0}, DType::BFloat16, Op::ReduceSum) == 1);
  CHECK(reduce_split_axis_of({1024, 1100}, {0}, DType::Float32, Op::ReduceMin) == -1);
  std::mt19937 rng(8);
  struct Case {
    DType d;
    Shape shape;
    std::vector<int64_t> axes;
    Op op;
  };
  // Split over axis 0, over a later axis with long runs, and not split.
  const Case cases[] = {{DType::Float16, {64, 128, 160}, {1}, Op::ReduceMax},
                        {DType::Int32, {100, 60, 200}, {1}, Op::ReduceSum},
                        {DType::BFloat16, {3, 1100, 520}, {0}, Op::ReduceSum},
                        {DType::Float64, {3, 512, 700}, {0}, Op::ReduceProd},
                        {DType::Float32, {1024, 1100}, {0}, Op::ReduceMin},
                        {DType::Float16, {16, 300, 256}, {0, 2}, Op::ReduceMax}};
  for (const Case& c : cases) {
    Builder b;
    int x = b.param(c.d, c.shape);
    OpAttrs red;
    red.axes = c.axes;
    int t = is_floating(c.d) ? b.op(Op::Tanh, {}, {x}) : x;
    b.f.results.push_back(b.op(c.op, red, {t}));
    auto fn = std::make_shared<Function>(b.f);
    INFO(print_function(*fn, false));
    std::vector<Array> inputs = {random_array(rng, c.d, c.shape)};
    auto ref = make_reference_executable(fn, one_device(), {});
    std::vector<Array> want = run(*ref, inputs);
    for (int workers : {1, 3, 7}) {
      CodeCacheOptions opts;
      opts.workers = workers;
      CodeCache cache(opts);
      auto jit = make_llvm_executable(fn, one_device(), {}, &cache);
      CHECK(close(want[0], run(*jit, inputs)[0], 0));
    }
  }
}

TEST_CASE("Sums XLA hands to YNNPACK are host steps on the CPU, kernels on CUDA", "[codegen]") {
  Builder b;
  OpAttrs red;
  red.axes = {1};
  int x = b.param(DType::Float32, {64, 64});
  b.f.results.push_back(b.op(Op::ReduceSum, red, {b.op(Op::Exp, {}, {x})}));
  KernelPlan host = plan_kernels(b.f);
  REQUIRE(host.kernels.size() == 1); // the exp, then the sum as a host step
  CHECK(!host.kernels[0].reduce);
  CHECK(host.steps.size() == 2);
  KernelPlan cuda = plan_kernels(b.f, PlanTarget::Cuda);
  REQUIRE(cuda.kernels.size() == 1); // the exp fused into the sum
  CHECK(cuda.kernels[0].reduce);
}

TEST_CASE("The kernel pool runs every index of a range once", "[codegen]") {
  KernelPool pool(3);
  for (int64_t n : {0, 1, 5, 1000, 12345}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    for (int rep = 0; rep < 3; ++rep)
      pool.parallel_for(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
      });
    CHECK(std::all_of(hits.begin(), hits.end(), [](const std::atomic<int>& h) { return h == 3; }));
  }
}

TEST_CASE("Long reductions are reassociated within the stated bound", "[codegen]") {
  std::mt19937 rng(99);
  for (Op op : kReduce)
    for (Op pro : {Op::Add, Op::Mul, Op::Exp, Op::Tanh}) {
      // A product of exps or tanhs over- or underflows, in any order.
      if (op == Op::ReduceProd && (pro == Op::Exp || pro == Op::Tanh)) continue;
      check_long_reduction(DType::Float32, {5, 300}, {1}, op, pro, rng);
      check_long_reduction(DType::Float64, {3, 77}, {1}, op, pro, rng);
      check_long_reduction(DType::Float32, {2, 3, 50}, {1, 2}, op, pro, rng);
      check_long_reduction(DType::Float32, {4099}, {0}, op, pro, rng);
    }
  for (Op op : kReduce) {
    check_long_reduction(DType::BFloat16, {3, 200}, {1}, op, Op::Add, rng);
    check_long_reduction(DType::Float16, {3, 200}, {1}, op, Op::Add, rng);
    check_long_reduction(DType::Int32, {3, 1001}, {1}, op, Op::Mul, rng);
    check_long_reduction(DType::UInt32, {2, 3, 40}, {1, 2}, op, Op::Add, rng);
  }
}

namespace {

// Assembles `ptx` with ptxas for sm_90 where it is installed.
void assemble(const std::string& ptx) {
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (std::FILE* probe = std::fopen(ptxas, "r")) {
    std::fclose(probe);
    std::string path = "/tmp/pxl_codegen_test_" + std::to_string(::getpid()) + ".ptx";
    std::FILE* out = std::fopen(path.c_str(), "w");
    REQUIRE(out);
    std::fwrite(ptx.data(), 1, ptx.size(), out);
    std::fclose(out);
    std::string cmd = std::string(ptxas) + " -arch=sm_90 -o /dev/null " + path;
    int rc = std::system(cmd.c_str());
    std::remove(path.c_str());
    CHECK(rc == 0);
  } else {
    WARN("ptxas not found at /usr/local/cuda/bin: PTX not assembled");
  }
}

} // namespace

TEST_CASE("PTX for the kernels assembles with ptxas", "[codegen]") {
  Builder b;
  int x = b.param(DType::Float32, {64, 32});
  int y = b.param(DType::Float32, {64, 32});
  OpAttrs red;
  red.axes = {1};
  int t = b.op(Op::Add, {}, {b.op(Op::Mul, {}, {x, y}), x});
  b.f.results.push_back(t);
  b.f.results.push_back(b.op(Op::ReduceMax, red, {t}));
  // Runtime math (tanh, exp) comes from libdevice on the GPU.
  b.f.results.push_back(b.op(Op::Exp, {}, {b.op(Op::Tanh, {}, {t})}));
  std::string ptx = kernels_ptx(b.f);
  CHECK(ptx.find(".target sm_90") != std::string::npos);
  PtxProgram prog = compile_ptx(b.f);
  REQUIRE(prog.plan.kernels.size() == 3);
  // Elementwise kernels spread all 64*32 elements over the grid; the row
  // reduction one thread per row.
  CHECK(prog.grid_extent == std::vector<int64_t>{2048, 64, 2048});
  if (!find_libdevice().empty()) {
    CHECK(prog.notes.empty());
    CHECK(prog.on_device == std::vector<bool>{true, true, true});
    CHECK(ptx.find("left out") == std::string::npos);
  } else {
    WARN("libdevice.10.bc not found: kernels with runtime math stay on the host");
  }
  // GPUs older than Hopper get PTX for their own compute capability.
  PtxOptions turing;
  turing.arch = "sm_75";
  std::string ptx75 = compile_ptx(b.f, turing).ptx;
  CHECK(ptx75.find(".target sm_75") != std::string::npos);
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (std::FILE* probe = std::fopen(ptxas, "r")) {
    std::fclose(probe);
    for (auto [arch, text] : {std::pair{"sm_90", &ptx}, std::pair{"sm_75", &ptx75}}) {
      std::string path = "/tmp/pxl_codegen_test_" + std::to_string(::getpid()) + ".ptx";
      std::FILE* out = std::fopen(path.c_str(), "w");
      REQUIRE(out);
      std::fwrite(text->data(), 1, text->size(), out);
      std::fclose(out);
      std::string cmd = std::string(ptxas) + " -arch=" + arch + " -o /dev/null " + path;
      int rc = std::system(cmd.c_str());
      std::remove(path.c_str());
      INFO(arch);
      CHECK(rc == 0);
    }
  } else {
    WARN("ptxas not found at /usr/local/cuda/bin: PTX not assembled");
  }
}

TEST_CASE("PTX of inlined math, lane reductions and row kernels assembles", "[codegen]") {
  Builder b;
  int x = b.param(DType::Float32, {16, 128});
  int y = b.param(DType::Float32, {16, 128});
  // Softmax: one row kernel, per row a max, then a sum in XLA's tree.
  b.f.results.push_back(b.softmax(x));
  b.f.results.push_back(b.op(Op::Tanh, {}, {b.op(Op::Log, {}, {y})}));
  std::string ptx = kernels_ptx(b.f);
  CHECK(ptx.find("left out") == std::string::npos); // no runtime calls left
  PtxProgram prog = compile_ptx(b.f);
  REQUIRE(prog.plan.kernels.size() == 2);
  // Rows of 128 (under 1024, the sum's tree is one thread's): a thread per
  // row computes its max, sum and outputs; then a thread per element.
  CHECK(prog.grid_extent == std::vector<int64_t>{16, 2048});
  assemble(ptx);
}
TEST_CASE("PTX of 8- and 16-bit integer kernels assembles", "[codegen]") {
  // i8/i16 loads and stores, their wrapping arithmetic, conversions and a row reduction.
  Builder b;
  int x = b.param(DType::Int8, {8, 32});
  int y = b.param(DType::UInt16, {8, 32});
  OpAttrs to_u16, to_f32, red;
  to_u16.dtype = DType::UInt16;
  to_f32.dtype = DType::Float32;
  red.axes = {1};
  int s = b.op(Op::Add, {}, {b.op(Op::ConvertElementType, to_u16, {x}), y});
  b.f.results.push_back(b.op(Op::Div, {}, {s, y}));
  b.f.results.push_back(b.op(Op::ReduceMax, red, {b.op(Op::Mul, {}, {x, x})}));
  b.f.results.push_back(
      b.op(Op::ConvertElementType, to_f32, {b.op(Op::ShiftRightArithmetic, {}, {x, x})}));
  std::string ptx = kernels_ptx(b.f);
  CHECK(ptx.find("left out") == std::string::npos);
  CHECK(compile_ptx(b.f).plan.kernels.size() == 3);
  assemble(ptx);
}
