// Opens the NVIDIA libraries at run time (dlopen), so one pxl binary runs with
// or without a GPU: nothing CUDA is linked. Every failure is a pxl::Error
// (E0400) naming exactly what was missing: the library, a symbol, the device,
// or cuInit's own error text.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/api.hpp"

namespace pxl::cuda {

// Where each library is looked for, in order: a soname (the dynamic loader's
// search) or a path. The defaults also try the CUDA toolkit's own folders.
struct LibraryNames {
  std::vector<std::string> driver;
  std::vector<std::string> cublas;
  std::vector<std::string> nccl;
  static LibraryNames defaults(); // honours CUDA_HOME
};

// A dlopen'ed library; closes it when destroyed.
class Library {
public:
  Library() = default;
  explicit Library(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  ~Library();
  Library(Library&& o) noexcept : handle_(o.handle_), name_(std::move(o.name_)) {
    o.handle_ = nullptr;
  }
  Library& operator=(Library&& o) noexcept;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* symbol(const char* name) const;
  const std::string& name() const { return name_; }
  bool loaded() const { return handle_ != nullptr; }

private:
  void* handle_ = nullptr;
  std::string name_;
};

// The first of `candidates` that opens; throws E0400 "<what> not found (tried
// ...: <dlerror>)" when none does.
Library open_library(const std::vector<std::string>& candidates, const std::string& what);

// The driver, initialized: cuInit succeeded and at least one device exists.
// cuBLAS and NCCL are opened on first use, so a program without matmuls or
// collectives needs neither.
class Driver {
public:
  // Throws pxl::Error(E0400) naming what is missing.
  static std::unique_ptr<Driver> open(const LibraryNames& names = LibraryNames::defaults());
  ~Driver();

  const DriverApi& api() const { return api_; }
  int device_count() const { return device_count_; }
  int version() const { return version_; } // e.g. 13000
  // Throws E0400 "<what>: CUDA_ERROR_X (text)" unless `r` is CUDA_SUCCESS.
  void check(CUresult r, const std::string& what) const;
  std::string error_text(CUresult r) const;

  const CublasApi& cublas(); // throws E0400 when cuBLAS cannot be opened
  const NcclApi& nccl();     // throws E0400 when NCCL cannot be opened
  // Holds a reference to `dev`'s primary context until the driver goes (once
  // per GPU), so that devices made and dropped one after another (programs
  // of a `pxl --batch` run sharing the driver) do not recreate it each time.
  void keep_primary_context(CUdevice dev);

private:
  Driver() = default;
  template <class F>
  void open_once(Library& slot, const std::vector<std::string>& names, const char* what,
                 F resolve_all);
  LibraryNames names_;
  std::mutex mu_; // cuBLAS and NCCL are opened from the device threads
  Library driver_lib_, cublas_lib_, nccl_lib_;
  DriverApi api_;
  CublasApi cublas_;
  NcclApi nccl_;
  int device_count_ = 0;
  int version_ = 0;
  std::vector<CUdevice> kept_; // keep_primary_context, under mu_
};

} // namespace pxl::cuda
