// The CUDA platform without a GPU: the driver is opened at run time and every
// way of not having one is a clear E0400; --platform auto falls back to the
// CPU mesh. On a machine with a usable GPU the same tests check that it is used.
#include <catch2/catch.hpp>

#include <cstdio>

#include "lang/diag.hpp"
#include "runtime/cuda/loader.hpp"
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
