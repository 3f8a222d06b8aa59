// The CUDA platform without a GPU: the driver is opened at run time and every
// way of not having one is a clear E0400; --platform auto falls back to the
// CPU mesh. On a machine with a usable GPU the same tests check that it is used.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "codegen/jit.hpp"
#include "codegen/ptx.hpp"
#include "fake_cuda.hpp"
#include "ir_builder.hpp"
#include "lang/diag.hpp"
#include "runtime/collectives.hpp"
#include "runtime/cuda/collectives.hpp"
#include "runtime/cuda/executable.hpp"
#include "runtime/cuda/loader.hpp"
#include "runtime/cuda/runtime.hpp"
#include "runtime/platform.hpp"

using namespace pxl;
#ifdef PXL_FAKE_CUDA
using namespace pxl::test;
#endif

namespace {

// The E0400 message of opening the driver from `driver` candidates ("" if it opened).
std::string open_error(std::vector<std::string> driver) {
  cuda::LibraryNames names = cuda::LibraryNames::defaults();
  names.driver = std::move(driver);
  try {
    cuda::Driver::open(names);
  } catch (const Error& e) {
    CHECK(e.code() == ErrCode::Device);
    return e.message();
  }
  return "";
}

bool gpu_usable() {
  try {
    cuda::Driver::open();
    return true;
  } catch (const Error&) {
    return false;
  }
}

} // namespace

TEST_CASE("cuda: a missing driver library is named", "[cuda]") {
  std::string m = open_error({"libpxl-no-such-driver.so.1", "/nonexistent/libcuda.so.1"});
  CHECK(m.find("NVIDIA driver library (libcuda) not found") != std::string::npos);
  CHECK(m.find("libpxl-no-such-driver.so.1, /nonexistent/libcuda.so.1") != std::string::npos);
}

TEST_CASE("cuda: a library without the driver's symbols is named", "[cuda]") {
  std::string m = open_error({"libm.so.6"});
  CHECK(m.find("libm.so.6 has no symbol cuInit") != std::string::npos);
}

TEST_CASE("cuda: the toolkit's stub driver fails in cuInit with its error text", "[cuda]") {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (std::FILE* f = std::fopen(stub, "r")) {
    std::fclose(f);
    std::string m = open_error({stub});
    // The stub resolves every symbol and refuses to initialize.
    CHECK(m.find("cuInit failed: ") != std::string::npos);
    CHECK(m.find("CUDA") != std::string::npos);
  } else {
    WARN("no CUDA toolkit stub driver at " << stub);
  }
}

TEST_CASE("cuda: the platform is CUDA only when a GPU is usable", "[cuda]") {
  PlatformOptions o;
  o.kind = PlatformKind::Cuda;
  o.cuda_devices = 2;
  o.cuda_logical = true;
  if (gpu_usable()) {
    Platform p(o);
    CHECK(p.name() == "cuda");
    CHECK(p.device_count() == 2);
    CHECK(p.devices()[1].repr() == "CudaDevice(id=1)");
  } else {
    try {
      Platform p(o);
      FAIL("a CUDA platform without a usable GPU");
    } catch (const Error& e) {
      CHECK(e.code() == ErrCode::Device);
      CHECK(e.message().rfind("the CUDA platform is not available: ", 0) == 0);
      CHECK_FALSE(e.hint().empty());
    }
    o.kind = PlatformKind::Auto;
    o.cpu_devices = 3;
    Platform p(o);
    CHECK(p.name() == "cpu");
    CHECK(p.device_count() == 3);
    CHECK_FALSE(p.cpu_fallback_reason().empty());
    CHECK(p.transfer_report().empty());
    CHECK(p.device_label(2) == "cpu:2");
    // Quiet without a sign of a GPU; JAX's warning when its device nodes exist.
    o.gpu_device_files = {"/nonexistent/nvidiactl"};
    CHECK(Platform(o).fallback_warning().empty());
    o.gpu_device_files = {"/nonexistent/nvidiactl", "/dev/null"};
    std::string w = Platform(o).fallback_warning();
    CHECK(w.rfind("An NVIDIA GPU may be present on this machine, but the CUDA platform could "
                  "not be used: ",
                  0) == 0);
    CHECK(w.find(p.cpu_fallback_reason()) != std::string::npos);
    CHECK(w.find("Falling back to cpu.") != std::string::npos);
  }
}

TEST_CASE("cuda: device requests and platform names", "[cuda]") {
  CHECK(parse_device_request("6").count == 6);
  CHECK_FALSE(parse_device_request("6").cuda_logical);
  DeviceRequest r = parse_device_request("cuda:4");
  CHECK(r.count == 4);
  CHECK(r.cuda_logical);
  CHECK_THROWS_AS(parse_device_request("cuda:"), Error);
  CHECK_THROWS_AS(parse_device_request("cuda:-1"), Error);
  CHECK_THROWS_AS(parse_device_request("gpu:2"), Error);
  CHECK(parse_platform("cuda") == PlatformKind::Cuda);
  CHECK(parse_platform("auto") == PlatformKind::Auto);
  CHECK_THROWS_AS(parse_platform("CUDA"), Error);
}

namespace {

// Assembles `ptx` for `arch` with the toolkit's ptxas; false (and a warning)
// where there is none.
bool ptxas_accepts(const std::string& ptx, const std::string& arch) {
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  std::FILE* probe = std::fopen(ptxas, "r");
  if (!probe) {
    WARN("ptxas not found at /usr/local/cuda/bin: PTX not assembled");
    return true;
  }
  std::fclose(probe);
  std::string path = "/tmp/pxl_cuda_test_" + std::to_string(::getpid()) + ".ptx";
  std::FILE* out = std::fopen(path.c_str(), "w");
  REQUIRE(out);
  std::fwrite(ptx.data(), 1, ptx.size(), out);
  std::fclose(out);
  std::string cmd = std::string(ptxas) + " -arch=" + arch + " -o /dev/null " + path;
  int rc = std::system(cmd.c_str());
  std::remove(path.c_str());
  return rc == 0;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct ReduceCase {
  const char* what;
  DType dtype;
  Shape shape;
  std::vector<int64_t> axes;
  int64_t extent; // threads wanted
  int block;
  bool shuffles, barriers, finish;
  Op op = Op::ReduceMax;
};

} // namespace

// Only the lowering is checked here (no GPU in CI): each reduction gets the
// thread groups designed for it, and its PTX has the shuffles and barriers of
// the tree and assembles. tests/gpu/run.sh checks the results on a GPU.
TEST_CASE("cuda: reductions use warps and blocks with a fixed tree, no atomics", "[cuda]") {
  // Max (and integer reductions) may take any order; a float sum or product
  // follows XLA's (ir/reduce_tree.hpp): a warp per row of 1024 or more (its
  // lanes compute one level of the row's tree), else one thread per row.
  const ReduceCase cases[] = {
      // Many long rows: a warp each (32 lanes, the CPU's order), 8 per block.
      {"warp rows", DType::Float32, {256, 1024}, {1}, 256 * 32, 256, true, false, false},
      // f64 rows: the CPU's 16 lanes, in a warp.
      {"f64 rows", DType::Float64, {256, 1024}, {1}, 256 * 32, 256, true, false, false},
      // Few very long rows: a block of 1024 lanes each, through shared memory.
      {"block rows", DType::Float32, {4, 65536}, {1}, 4 * 1024, 1024, true, true, false},
      // Short rows: one thread each, in order (as the CPU).
      {"short rows", DType::Float32, {1000, 40}, {1}, 1000, 256, false, false, false},
      // Two trailing axes of a 3-d array: still one row per group.
      {"2 trailing axes",
       DType::Int32,
       {512, 16, 16},
       {1, 2},
       512 * 32,
       256,
       true,
       false,
       false,
       Op::ReduceSum},
      // Leading axes: a thread per output, in the reference's order.
      {"leading axis", DType::Float32, {4096, 64}, {0}, 64, 256, false, false, false},
      // 2^21 elements to one: a warp per 2^16-element block, then one warp.
      {"split", DType::Float32, {1 << 21}, {0}, 32 * 32, 256, true, false, true},
      // Float sums in XLA's order: a warp per long row, 4 per block (their
      // nodes in shared memory), a thread per short row; a long one to one
      // value splits into the nodes of one level of its tree (2048 here).
      {"sum rows",
       DType::Float32,
       {256, 1024},
       {1},
       256 * 32,
       128,
       false,
       false,
       false,
       Op::ReduceSum},
      {"sum short rows",
       DType::Float32,
       {256, 1000},
       {1},
       256,
       256,
       false,
       false,
       false,
       Op::ReduceSum},
      {"sum split", DType::Float32, {1 << 21}, {0}, 2048, 256, false, false, true, Op::ReduceSum},
  };
  for (const ReduceCase& c : cases) {
    INFO(c.what);
    Builder b;
    OpAttrs red;
    red.axes = c.axes;
    b.f.results.push_back(b.op(c.op, red, {b.param(c.dtype, c.shape)}));
    PtxProgram p = compile_ptx(b.f);
    REQUIRE(p.plan.kernels.size() == 1);
    CHECK(p.on_device[0]);
    CHECK(p.grid_extent[0] == c.extent);
    CHECK(p.block_threads[0] == c.block);
    CHECK(p.finish[0] == c.finish);
    CHECK(has(p.ptx, "shfl.sync.down") == c.shuffles);
    CHECK(has(p.ptx, "bar.sync") == c.barriers);
    CHECK(has(p.ptx, ".maxntid " + std::to_string(c.block) + ", 1, 1"));
    CHECK(has(p.ptx, ".entry k0_finish") == c.finish);
    bool warp_tree = c.op == Op::ReduceSum && is_floating(c.dtype) && c.extent == c.shape[0] * 32;
    CHECK(has(p.ptx, "bar.warp.sync") == warp_tree);
    CHECK_FALSE(has(p.ptx, "atom.")); // deterministic: no atomics anywhere
    CHECK(ptxas_accepts(p.ptx, "sm_90"));
  }
  // Softmax: one row kernel; per row of 1024 its warp reduces the max, sums
  // the row in XLA's order (the window chains shared out among its lanes) and
  // computes its outputs. Rows of 2048 or more get a block each, which copies
  // the row into shared memory once (16-byte loads) and reads it from there
  // three times; its threads compute the sum's window chains.
  PtxOptions turing;
  turing.arch = "sm_75";
  for (int64_t n : {1024, 2048}) {
    Builder b;
    b.f.results.push_back(b.softmax(b.param(DType::Float32, {512, n})));
    bool block = n >= 2048;
    for (const PtxOptions& o : {PtxOptions{}, turing}) {
      PtxProgram p = compile_ptx(b.f, o);
      INFO(o.arch << " rows of " << n);
      REQUIRE(p.plan.kernels.size() == 1);
      CHECK(p.grid_extent == std::vector<int64_t>{512 * (block ? 256 : 32)});
      CHECK(p.block_threads[0] == (block ? 256 : 128));
      CHECK(has(p.ptx, "bar.warp.sync") == !block);
      CHECK(has(p.ptx, "ld.global.v4.f32") == block);
      CHECK(has(p.ptx, ".shared .align 16 .b8 k0_$_body_$_row") == block);
      CHECK(has(p.ptx, "shfl.sync.idx")); // the max's result, to every lane
      CHECK(ptxas_accepts(p.ptx, o.arch));
    }
  }
}

TEST_CASE("cuda: flat elementwise kernels load and store 16 bytes a thread", "[cuda]") {
  // Each thread takes 4 float32 (2 float64, 8 float16) when every buffer is
  // 16-byte aligned, else one element at a time (an input at an offset).
  for (DType d : {DType::Float32, DType::Float64, DType::Float16}) {
    Builder b;
    int x = b.param(d, {1 << 20});
    b.f.results.push_back(b.op(Op::Mul, {}, {x, x}));
    PtxProgram p = compile_ptx(b.f, PtxOptions{});
    int64_t width = 16 / static_cast<int64_t>(dtype_size(d));
    INFO(dtype_size(d));
    CHECK(p.grid_extent == std::vector<int64_t>{(1 << 20) / width});
    CHECK(has(p.ptx, "ld.global.v" + std::to_string(d == DType::Float16 ? 4 : width)));
    CHECK(has(p.ptx, "st.global.v"));
    CHECK(ptxas_accepts(p.ptx, "sm_90"));
  }
}

TEST_CASE("cuda: which collectives run on the device", "[cuda]") {
  // axis_index has no operand; complex values stay on the host (the device
  // reductions and NCCL calls have no complex arithmetic).
  Builder b;
  int x = b.param(DType::Float32, {4});
  int z = b.param(DType::Complex64, {4});
  auto instr = [&](Op op, std::vector<int> operands, DType d) {
    IRValue v;
    v.aval = AVal{d, {4}, false};
    int id = b.f.add_value(v);
    return Instr{op, OpAttrs{}, std::move(operands), id};
  };
  CHECK(cuda::gpu_collective(b.f, instr(Op::Psum, {x}, DType::Float32)));
  CHECK_FALSE(cuda::gpu_collective(b.f, instr(Op::Psum, {z}, DType::Complex64)));
  CHECK_FALSE(cuda::gpu_collective(b.f, instr(Op::AxisIndex, {}, DType::Int32)));
}

TEST_CASE("cuda: the rank-order reduction of logical devices is one kernel", "[cuda]") {
  struct Case {
    ReduceKind kind;
    DType dtype;
    const char* ops; // its fused ops, in order
  };
  for (const Case& c : {Case{ReduceKind::Sum, DType::Float32, "add add add"},
                        Case{ReduceKind::Sum, DType::Float16,
                             "convert_element_type convert_element_type add convert_element_type "
                             "add convert_element_type add convert_element_type"},
                        Case{ReduceKind::Max, DType::Bool, "or or or"},
                        Case{ReduceKind::Min, DType::Bool, "and and and"},
                        Case{ReduceKind::Min, DType::Int32, "min min min"}}) {
    auto f = cuda::rank_order_reduction(c.kind, c.dtype, 4, 1000);
    INFO(c.ops);
    CHECK(f->params.size() == 4);
    std::string ops;
    for (const Instr& in : f->body) ops += (ops.empty() ? "" : " ") + std::string(op_name(in.op));
    CHECK(ops == c.ops);
    PtxProgram p = compile_ptx(*f);
    REQUIRE(p.plan.kernels.size() == 1);
    // Every rank's buffer is an input (the launch maps them back to ranks by parameter).
    std::vector<int> inputs = p.plan.kernels[0].inputs;
    std::sort(inputs.begin(), inputs.end());
    CHECK(inputs == f->params);
    CHECK(p.on_device[0]);
    CHECK(ptxas_accepts(p.ptx, "sm_90"));
  }
  CHECK(cuda::rank_order_reduction(ReduceKind::Sum, DType::Float32, 1, 8)->body.empty());
}

TEST_CASE("cuda: launch sizes follow the kernel's groups", "[cuda]") {
  auto launch = [](int64_t extent, int block, int sms) {
    PtxLaunch l = ptx_launch(extent, block, sms);
    return std::pair<unsigned, unsigned>{l.blocks, l.threads};
  };
  CHECK(launch(8192, 256, 132) == std::pair<unsigned, unsigned>{32, 256});
  CHECK(launch(4 * 1024, 1024, 132) == std::pair<unsigned, unsigned>{4, 1024});
  CHECK(launch(32, 256, 132) == std::pair<unsigned, unsigned>{1, 32});                // one warp
  CHECK(launch(0, 256, 132) == std::pair<unsigned, unsigned>{1, 1});                  // one thread
  CHECK(launch(int64_t{1} << 30, 256, 4) == std::pair<unsigned, unsigned>{128, 256}); // capped
}

#ifdef PXL_FAKE_CUDA

TEST_CASE("cuda: the executable's copies and cuBLAS layouts, on a fake driver", "[cuda]") {
  cuda::CudaRuntime rt(0, false, fake_libraries());
  REQUIRE(rt.device_count() == 2);
  CHECK(rt.describe() == "Fake GPU (GPU 0, sm_90), Fake GPU (GPU 1, sm_90); driver CUDA 13.0");
  // Row-major products with each operand plain or transposed in memory: the
  // column-major cuBLAS call must give the reference's result.
  struct Case {
    std::vector<int64_t> lc, rc;
    Shape xs, ys;
  };
  for (const Case& c : {Case{{1}, {0}, {4, 3}, {3, 5}}, Case{{0}, {0}, {3, 4}, {3, 5}},
                        Case{{1}, {1}, {4, 3}, {5, 3}}, Case{{0}, {1}, {3, 4}, {5, 3}}}) {
    OpAttrs a;
    a.dot.lhs_contract = c.lc;
    a.dot.rhs_contract = c.rc;
    Array x = counting(c.xs, 1), y = counting(c.ys, -3);
    auto f = one_op(Op::DotGeneral, a, c.xs, c.ys);
    size_t before = rt.transfers().transfers().size();
    auto out = run_on_fake(rt, f, {x, y});
    std::vector<Array> xy{x, y};
    Array want = eval_ref(Op::DotGeneral, a, xy);
    REQUIRE(out[0][0].shape() == want.shape());
    for (int64_t i = 0; i < want.size(); ++i)
      CHECK(out[0][0].as<float>()[i] == want.as<float>()[i]);
    auto log = rt.transfers().transfers();
    REQUIRE(log.size() == before + 3); // both operands up, the product down
    CHECK(log[before].to_device);
    CHECK(log[before + 1].to_device);
    CHECK_FALSE(log[before + 2].to_device);
    CHECK(log[before + 2].bytes == want.size() * 4);
  }
}

TEST_CASE("cuda: batched and half-precision matmuls are one strided cuBLAS call", "[cuda]") {
  cuda::CudaRuntime rt(1, true, fake_libraries());
  struct Case {
    DType dtype;
    std::vector<int64_t> lc, rc, lb, rb;
    Shape xs, ys;
  };
  // Halves are exact here (small multiples of 1/2, sums rounded once), so the
  // f32-accumulating cuBLAS call must give the reference's bits.
  for (const Case& c : {Case{DType::Float32, {2}, {1}, {0}, {0}, {3, 4, 2}, {3, 2, 5}},
                        Case{DType::Float64, {1}, {2}, {0}, {0}, {2, 2, 4}, {2, 5, 2}},
                        Case{DType::Float16, {1}, {0}, {}, {}, {4, 3}, {3, 5}},
                        Case{DType::Float16, {0}, {1}, {}, {}, {3, 4}, {5, 3}},
                        Case{DType::BFloat16, {2}, {1}, {0}, {0}, {2, 4, 3}, {2, 3, 5}},
                        Case{DType::BFloat16, {1}, {1}, {}, {}, {4, 3}, {5, 3}}}) {
    INFO(dtype_name(c.dtype) << " " << shape_str(c.xs) << " x " << shape_str(c.ys));
    OpAttrs a;
    a.dot.lhs_contract = c.lc;
    a.dot.rhs_contract = c.rc;
    a.dot.lhs_batch = c.lb;
    a.dot.rhs_batch = c.rb;
    auto halves = [&](Shape s, int start) {
      Array h(c.dtype, s);
      for (int64_t i = 0; i < h.size(); ++i)
        h.set(i, Scalar::of_float(0.5 * static_cast<double>((start + i) % 9 - 4)));
      return h;
    };
    std::vector<Array> xy{halves(c.xs, 1), halves(c.ys, 3)};
    Array want = eval_ref(Op::DotGeneral, a, xy);
    Array out = run_on_fake(rt, one_op(Op::DotGeneral, a, c.xs, c.ys, c.dtype), xy)[0][0];
    CHECK(out.device_storage() != nullptr); // cuBLAS computed it (no host fallback)
    REQUIRE(out.shape() == want.shape());
    REQUIRE(out.dtype() == c.dtype);
    CHECK(std::memcmp(out.data(), want.data(), want.nbytes()) == 0);
  }
}

TEST_CASE("cuda: float32 products at DEFAULT precision run in TF32", "[cuda]") {
  // 1 + 2^-12 needs 12 mantissa bits: TF32 keeps 10, so the product is 1.
  // (2x2 matrices: a (1, 1) . (1, 1) dot is one of vectors, a multiply.)
  cuda::CudaRuntime rt(1, true, fake_libraries());
  Array x(DType::Float32, {2, 2}), y(DType::Float32, {2, 2});
  x.set(0, Scalar::of_float(1.0 + 1.0 / 4096));
  y.set(0, Scalar::of_float(1.0));
  auto product = [&](uint8_t precision) {
    OpAttrs a;
    a.dot.lhs_contract = {1};
    a.dot.rhs_contract = {0};
    a.dot.precision = {precision, precision};
    return run_on_fake(rt, one_op(Op::DotGeneral, a, {2, 2}, {2, 2}), {x, y})[0][0].as<float>()[0];
  };
  const float exact = 1.0f + 1.0f / 4096;
  CHECK(product(kPrecisionNone) == 1.0f);
  CHECK(product(kPrecisionDefault) == 1.0f);
  CHECK(product(kPrecisionHigh) == exact);
  CHECK(product(kPrecisionHighest) == exact);
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  CHECK(product(kPrecisionNone) == exact);
  unsetenv("NVIDIA_TF32_OVERRIDE");
}

TEST_CASE("cuda: arrays stay on the GPU between calls while the host array lives", "[cuda]") {
  cuda::CudaRuntime rt(1, true, fake_libraries());
  OpAttrs a;
  a.dot.lhs_contract = {1};
  a.dot.rhs_contract = {0};
  auto uploads = [&](size_t from) {
    auto log = rt.transfers().transfers();
    size_t n = 0;
    for (size_t i = from; i < log.size(); ++i) n += log[i].to_device;
    return n;
  };
  Array x = counting({4, 3}, 1), y = counting({3, 5}, -3), z = counting({5, 2}, 2);
  auto f = one_op(Op::DotGeneral, a, {4, 3}, {3, 5});
  size_t start = rt.transfers().transfers().size();
  Array first = run_on_fake(rt, f, {x, y})[0][0];
  CHECK(uploads(start) == 2);
  // The same inputs again: already on the GPU.
  size_t again = rt.transfers().transfers().size();
  Array second = run_on_fake(rt, f, {x, y})[0][0];
  CHECK(uploads(again) == 0);
  for (int64_t i = 0; i < first.size(); ++i) CHECK(second.as<float>()[i] == first.as<float>()[i]);
  // A result feeds the next call without going back up.
  size_t chained = rt.transfers().transfers().size();
  auto g = one_op(Op::DotGeneral, a, {4, 5}, {5, 2});
  std::vector<Array> args{second, z};
  Array third = run_on_fake(rt, g, args)[0][0];
  CHECK(uploads(chained) == 1); // z only
  Array want = eval_ref(Op::DotGeneral, a, args);
  for (int64_t i = 0; i < want.size(); ++i) CHECK(third.as<float>()[i] == want.as<float>()[i]);
  // Freed host arrays free their copies; new arrays are copied up again.
  size_t kept = rt.device(0).resident_count();
  CHECK(kept >= 3); // x, y, z (results are device-backed, not copies of host arrays)
  x = Array();
  y = Array();
  first = Array();
  second = Array();
  third = Array();
  CHECK(rt.device(0).resident_count() < kept);
  size_t fresh = rt.transfers().transfers().size();
  Array x2 = counting({4, 3}, 5), y2 = counting({3, 5}, 1);
  std::vector<Array> args2{x2, y2};
  Array out = run_on_fake(rt, f, args2)[0][0];
  CHECK(uploads(fresh) == 2);
  Array want2 = eval_ref(Op::DotGeneral, a, args2);
  for (int64_t i = 0; i < want2.size(); ++i) CHECK(out.as<float>()[i] == want2.as<float>()[i]);
}

TEST_CASE("cuda: a failed kernel launch is an E0400 naming the driver error", "[cuda]") {
  cuda::CudaRuntime one(1, true, fake_libraries());
  auto f = one_op(Op::Add, {}, {2, 3}, {2, 3});
  try {
    run_on_fake(one, f, {counting({2, 3}, 0), counting({2, 3}, 1)});
    FAIL("the fake driver ran a kernel");
  } catch (const Error& e) {
    CHECK(e.code() == ErrCode::Device);
    CHECK(e.message().find("cuLaunchKernel on GPU 0: CUDA_ERROR_LAUNCH_FAILED") !=
          std::string::npos);
  }
}
#endif

#if defined(PXL_FAKE_CUDA) && defined(PXL_FAKE_NCCL)
#include <dlfcn.h>

namespace {

// What the fake NCCL saw: the GPUs of each clique created ("0,1;2,3;"), the
// groups and the collective calls, since the library was loaded.
struct NcclSeen {
  std::string cliques;
  int groups = 0, calls = 0, destroyed = 0;
};

NcclSeen nccl_seen() {
  // The same handle the runtime's dlopen got, so the same counters.
  void* lib = dlopen(PXL_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(lib);
  auto cliques = reinterpret_cast<const char* (*)()>(dlsym(lib, "pxl_fake_nccl_cliques"));
  auto counts = reinterpret_cast<void (*)(int*, int*, int*)>(dlsym(lib, "pxl_fake_nccl_counts"));
  REQUIRE(cliques);
  REQUIRE(counts);
  NcclSeen s;
  s.cliques = cliques();
  counts(&s.groups, &s.calls, &s.destroyed);
  dlclose(lib);
  return s;
}

// A runtime over `gpus` fake GPUs (or `gpus` logical devices on one) with the fake NCCL.
std::unique_ptr<cuda::CudaRuntime> fake_runtime(int gpus, bool logical, bool with_nccl) {
  cuda::LibraryNames n = fake_libraries();
  if (with_nccl) n.nccl = {PXL_FAKE_NCCL};
  setenv("PXL_FAKE_GPUS", std::to_string(logical ? 1 : gpus).c_str(), 1);
  auto rt = std::make_unique<cuda::CudaRuntime>(logical ? gpus : 0, logical, n);
  unsetenv("PXL_FAKE_GPUS");
  return rt;
}

OpAttrs over(std::vector<std::string> axes, int64_t group) {
  OpAttrs a;
  a.axis_names = std::move(axes);
  a.group_size = group;
  return a;
}

std::vector<std::vector<Array>> run_mesh(cuda::CudaRuntime& rt, const Function& f, const Mesh& mesh,
                                         const std::vector<std::vector<Array>>& inputs) {
  CodeCache host;
  int n = static_cast<int>(mesh.size());
  SpmdLayout layout{mesh, n, 1};
  auto exe = cuda::make_cuda_executable(std::make_shared<Function>(f), layout, {}, rt, host);
  DeviceThreads pool(n);
  return launch(*exe, pool, layout, inputs);
}

Array filled(DType d, Shape s, double start) {
  Array a(d, s);
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, Scalar::of_float(start + static_cast<double>(i)));
  return a;
}

double at(const Array& a, int64_t i) { return a.get(i).f; }

} // namespace

TEST_CASE("cuda: NCCL collectives: a cached clique per mesh-axis group, grouped calls", "[cuda]") {
  auto rt = fake_runtime(4, false, true);
  REQUIRE(rt->device_count() == 4);
  Mesh mesh{{"x", "y"}, {2, 2}, {0, 1, 2, 3}};
  SpmdLayout layout{mesh, 4, 1};
  CHECK(cuda::collective_path(*rt, layout) == cuda::CollectivePath::Nccl);
  // A pytree psum over 'y' (two leaves) and a pmax over 'x': three calls in
  // one group; cliques {0,1} and {2,3} for 'y', {0,2} and {1,3} for 'x'.
  Builder b;
  int a = b.param(DType::Float32, {3});
  int i = b.param(DType::Int32, {2});
  b.f.results = {b.op(Op::Psum, over({"y"}, 2), {a}), b.op(Op::Psum, over({"y"}, 2), {i}),
                 b.op(Op::Pmax, over({"x"}, 2), {a})};
  std::vector<std::vector<Array>> in;
  for (int p = 0; p < 4; ++p)
    in.push_back({filled(DType::Float32, {3}, 10.0 * p), filled(DType::Int32, {2}, -p)});
  NcclSeen before = nccl_seen();
  for (int round = 0; round < 2; ++round) {
    auto out = run_mesh(*rt, b.f, mesh, in);
    for (int p = 0; p < 4; ++p) {
      INFO("participant " << p);
      int q = p ^ 1; // its 'y' partner
      int x_partner = p ^ 2;
      for (int64_t e = 0; e < 3; ++e) {
        CHECK(at(out[p][0], e) == at(in[p][0], e) + at(in[q][0], e));
        CHECK(at(out[p][2], e) == std::max(at(in[p][0], e), at(in[x_partner][0], e)));
      }
      for (int64_t e = 0; e < 2; ++e) CHECK(at(out[p][1], e) == at(in[p][1], e) + at(in[q][1], e));
    }
  }
  NcclSeen after = nccl_seen();
  std::string made = after.cliques.substr(before.cliques.size());
  // Created once (the second run reuses them), one clique per group.
  for (const char* g : {"0,1;", "2,3;", "0,2;", "1,3;"}) {
    INFO(made);
    CHECK(made.find(g) != std::string::npos);
  }
  CHECK(made.size() == 4 * 4);
  CHECK(after.groups - before.groups == 2 * 4); // one group per thread and run
  CHECK(after.calls - before.calls == 2 * 4 * 3);
}

TEST_CASE("cuda: NCCL all_gather, psum_scatter and ppermute on fake GPUs", "[cuda]") {
  auto rt = fake_runtime(2, false, true);
  Mesh mesh{{"i"}, {2}, {0, 1}};
  Builder b;
  int a = b.param(DType::Float32, {4});
  OpAttrs gather = over({"i"}, 2), scatter = over({"i"}, 2), perm = over({"i"}, 2);
  gather.axis = 0;
  scatter.axis = 0;
  scatter.tiled = true;
  perm.pairs = {{0, 1}}; // rank 0 sends to 1; rank 0 receives nothing: zeros
  b.f.results = {b.op(Op::AllGather, gather, {a}), b.op(Op::PsumScatter, scatter, {a}),
                 b.op(Op::Ppermute, perm, {a})};
  std::vector<std::vector<Array>> in{{filled(DType::Float32, {4}, 1)},
                                     {filled(DType::Float32, {4}, 100)}};
  auto out = run_mesh(*rt, b.f, mesh, in);
  for (int p = 0; p < 2; ++p) {
    INFO("participant " << p);
    REQUIRE(out[p][0].shape() == Shape{2, 4});
    for (int64_t e = 0; e < 8; ++e) CHECK(at(out[p][0], e) == at(in[e / 4][0], e % 4));
    REQUIRE(out[p][1].shape() == Shape{2});
    for (int64_t e = 0; e < 2; ++e)
      CHECK(at(out[p][1], e) == at(in[0][0], 2 * p + e) + at(in[1][0], 2 * p + e));
    for (int64_t e = 0; e < 4; ++e) CHECK(at(out[p][2], e) == (p == 1 ? at(in[0][0], e) : 0.0));
  }
}

TEST_CASE("cuda: logical devices on one GPU exchange on the device, never through NCCL", "[cuda]") {
  auto rt = fake_runtime(4, true, false); // NCCL missing: using it would fail
  Mesh mesh{{"i"}, {4}, {0, 1, 2, 3}};
  CHECK(cuda::collective_path(*rt, SpmdLayout{mesh, 4, 1}) == cuda::CollectivePath::SharedGpu);
  Builder b;
  int a = b.param(DType::Int32, {3});
  OpAttrs gather = over({"i"}, 4), perm = over({"i"}, 4);
  gather.axis = 0;
  perm.pairs = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
  b.f.results = {b.op(Op::AllGather, gather, {a}), b.op(Op::Ppermute, perm, {a})};
  std::vector<std::vector<Array>> in;
  for (int p = 0; p < 4; ++p) in.push_back({filled(DType::Int32, {3}, 7 * p)});
  size_t before = rt->transfers().transfers().size();
  auto out = run_mesh(*rt, b.f, mesh, in);
  for (int p = 0; p < 4; ++p) {
    INFO("participant " << p);
    for (int64_t e = 0; e < 12; ++e) CHECK(at(out[p][0], e) == at(in[e / 3][0], e % 3));
    for (int64_t e = 0; e < 3; ++e) CHECK(at(out[p][1], e) == at(in[(p + 3) % 4][0], e));
  }
  // Each operand goes up once and each result comes down once: no staging
  // through the host between them.
  CHECK(rt->transfers().transfers().size() - before == 4 * 3);
  // A psum among them is a rank-order reduction kernel on the GPU (which the
  // fake driver cannot run), not NCCL.
  Builder s;
  s.f.results = {s.op(Op::Psum, over({"i"}, 4), {s.param(DType::Float32, {5})})};
  std::vector<std::vector<Array>> fin(4, {filled(DType::Float32, {5}, 0)});
  try {
    run_mesh(*rt, s.f, mesh, fin);
    FAIL("the fake driver ran a kernel");
  } catch (const Error& e) {
    CHECK(e.message().find("cuLaunchKernel") != std::string::npos);
  }
}
#endif
