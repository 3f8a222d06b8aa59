// The CUDA platform without a GPU: the driver is opened at run time and every
// way of not having one is a clear E0400; --platform auto falls back to the
// CPU mesh. On a machine with a usable GPU the same tests check that it is used.
#include <catch2/catch.hpp>

#include <cstdio>

#include "codegen/jit.hpp"
#include "lang/diag.hpp"
#include "runtime/collectives.hpp"
#include "runtime/cuda/executable.hpp"
#include "runtime/cuda/loader.hpp"
#include "runtime/cuda/runtime.hpp"
#include "runtime/platform.hpp"

using namespace pxl;

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

#ifdef PXL_FAKE_CUDA
namespace {

cuda::LibraryNames fake_libraries() {
  cuda::LibraryNames n;
  n.driver = {PXL_FAKE_CUDA};
  n.cublas = {PXL_FAKE_CUDA};
  n.nccl = {"libpxl-no-such-nccl.so"};
  return n;
}

// f(x, y) = op(x, y) on one device, `op` over 2-d f32 operands.
std::shared_ptr<Function> one_op(Op op, const OpAttrs& a, Shape xs, Shape ys) {
  auto f = std::make_shared<Function>();
  std::vector<AVal> avals;
  for (Shape s : {xs, ys}) {
    IRValue v;
    v.aval = AVal{DType::Float32, s, false};
    f->params.push_back(f->add_value(v));
    avals.push_back(v.aval);
  }
  IRValue r;
  r.aval = infer(op, a, avals);
  r.producer = 0;
  int id = f->add_value(r);
  f->body.push_back(Instr{op, a, {f->params[0], f->params[1]}, id});
  f->results.push_back(id);
  return f;
}

Array counting(Shape s, float start) {
  Array a(DType::Float32, s);
  for (int64_t i = 0; i < a.size(); ++i) a.as<float>()[i] = start + static_cast<float>(i % 7);
  return a;
}

std::vector<std::vector<Array>> run_on_fake(cuda::CudaRuntime& rt, std::shared_ptr<Function> f,
                                            std::vector<Array> args) {
  CodeCache host;
  SpmdLayout layout{Mesh{{"i"}, {1}, {0}}, 1, 1};
  auto exe = cuda::make_cuda_executable(f, layout, {}, rt, host);
  DeviceThreads pool(1);
  return launch(*exe, pool, layout, {std::move(args)});
}

} // namespace

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
    for (int64_t i = 0; i < want.size(); ++i) CHECK(out[0][0].as<float>()[i] == want.as<float>()[i]);
    auto log = rt.transfers().transfers();
    REQUIRE(log.size() == before + 3); // both operands up, the product down
    CHECK(log[before].to_device);
    CHECK(log[before + 1].to_device);
    CHECK_FALSE(log[before + 2].to_device);
    CHECK(log[before + 2].bytes == want.size() * 4);
  }
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
