#include "runtime/cuda/loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <dlfcn.h>

#include "lang/diag.hpp"

namespace pxl::cuda {

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrCode::Device, message); }

// Resolves every symbol of one function table, naming the first one missing.
template <class Fn> void resolve(const Library& lib, Fn*& slot, const char* symbol) {
  void* p = lib.symbol(symbol);
  if (!p)
    fail(lib.name() + " has no symbol " + symbol +
         " (the installed NVIDIA library is older than pxl needs)");
  slot = reinterpret_cast<Fn*>(p);
}

} // namespace

LibraryNames LibraryNames::defaults() {
  LibraryNames n;
  n.driver = {"libcuda.so.1"};
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    dirs = {std::string(home) + "/lib64/", std::string(home) + "/lib/"};
  dirs.push_back("/usr/local/cuda/lib64/");
  dirs.push_back("/usr/local/cuda/lib/");
  for (const char* soname : {"libcublas.so.13", "libcublas.so.12"}) {
    n.cublas.push_back(soname);
    for (const auto& d : dirs) n.cublas.push_back(d + soname);
  }
  n.nccl.push_back("libnccl.so.2");
  for (const auto& d : dirs) n.nccl.push_back(d + "libnccl.so.2");
  // Stand-ins named by the environment replace the search (tests run the
  // CUDA platform on tests/fake_cuda/'s host-memory driver this way).
  for (auto [var, list] : {std::pair{"PXL_CUDA_DRIVER", &n.driver},
                           std::pair{"PXL_CUBLAS", &n.cublas}, std::pair{"PXL_NCCL", &n.nccl}})
    if (const char* path = std::getenv(var); path && *path) *list = {path};
  return n;
}

Library::~Library() {
  if (handle_) dlclose(handle_);
}

Library& Library::operator=(Library&& o) noexcept {
  if (this != &o) {
    if (handle_) dlclose(handle_);
    handle_ = o.handle_;
    name_ = std::move(o.name_);
    o.handle_ = nullptr;
  }
  return *this;
}

void* Library::symbol(const char* name) const { return handle_ ? dlsym(handle_, name) : nullptr; }

Library open_library(const std::vector<std::string>& candidates, const std::string& what) {
  std::string first_error;
  for (const std::string& c : candidates) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return Library(h, c);
    if (first_error.empty())
      if (const char* e = dlerror()) first_error = e;
  }
  std::string tried;
  for (const std::string& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  fail(what + " not found (tried " + tried + (first_error.empty() ? "" : ": " + first_error) + ")");
}

std::unique_ptr<Driver> Driver::open(const LibraryNames& names) {
  std::unique_ptr<Driver> d(new Driver());
  d->names_ = names;
  d->driver_lib_ = open_library(names.driver, "NVIDIA driver library (libcuda)");
  DriverApi& a = d->api_;
  const Library& lib = d->driver_lib_;
#define PXL_RESOLVE(name, symbol, ret, params) resolve(lib, a.name, symbol);
  PXL_CUDA_DRIVER_FUNCTIONS(PXL_RESOLVE)
  CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) fail("cuInit failed: " + d->error_text(r));
  d->check(a.cuDriverGetVersion(&d->version_), "cuDriverGetVersion");
  r = a.cuDeviceGetCount(&d->device_count_);
  if (r != CUDA_SUCCESS) fail("cuDeviceGetCount failed: " + d->error_text(r));
  if (d->device_count_ < 1) fail("no CUDA device: the driver is loaded but sees no GPU");
  return d;
}

Driver::~Driver() {
  for (CUdevice dev : kept_) api_.cuDevicePrimaryCtxRelease(dev);
}

void Driver::keep_primary_context(CUdevice dev) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(kept_.begin(), kept_.end(), dev) != kept_.end()) return;
  CUcontext ctx = nullptr;
  check(api_.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  kept_.push_back(dev);
}

std::string Driver::error_text(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.cuGetErrorName) api_.cuGetErrorName(r, &name);
  if (api_.cuGetErrorString) api_.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void Driver::check(CUresult r, const std::string& what) const {
  if (r != CUDA_SUCCESS) fail(what + ": " + error_text(r));
}

// Opens `slot` from `names` the first time and fills its table with
// `resolve_all(lib)`; a failure leaves it unopened, to be reported again.
template <class F>
void Driver::open_once(Library& slot, const std::vector<std::string>& names, const char* what,
                       F resolve_all) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slot.loaded()) return;
  Library lib = open_library(names, what);
  resolve_all(lib);
  slot = std::move(lib);
}

const CublasApi& Driver::cublas() {
  open_once(cublas_lib_, names_.cublas, "cuBLAS", [&](const Library& lib) {
    CublasApi& a = cublas_;
    PXL_CUBLAS_FUNCTIONS(PXL_RESOLVE)
  });
  return cublas_;
}

const NcclApi& Driver::nccl() {
  open_once(nccl_lib_, names_.nccl, "NCCL", [&](const Library& lib) {
    NcclApi& a = nccl_;
    PXL_NCCL_FUNCTIONS(PXL_RESOLVE)
  });
  return nccl_;
}
#undef PXL_RESOLVE

} // namespace pxl::cuda
