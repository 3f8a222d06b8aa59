// The CUDA devices of a Platform: one per GPU, or K logical devices sharing
// GPU 0 (PXL_DEVICES=cuda:K). Each has its own stream and memory pool on the
// GPU's primary context; memory is plain device allocations (never managed).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "lang/diag.hpp"
#include "runtime/array.hpp"
#include "runtime/cuda/loader.hpp"
#include "runtime/sharded.hpp"

namespace pxl {
class PhaseTimes; // lang/phase_times.hpp
}

namespace pxl::cuda {

class GpuDevice;

// What outlives a GpuDevice for the buffers it handed out: an array may keep
// a device buffer after its platform is gone (a value an embedding holds past
// its runtime). The device frees all its memory when destroyed; later
// releases then do nothing, and reading such an array is a clear error.
struct DeviceLife {
  std::mutex mu;
  GpuDevice* dev = nullptr; // null once the device is destroyed
};

// A device allocation; goes back to its device's pool when destroyed.
class DeviceBuffer {
public:
  DeviceBuffer(std::shared_ptr<DeviceLife> life, CUdeviceptr ptr, size_t bytes)
      : life_(std::move(life)), ptr_(ptr), bytes_(bytes) {}
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  DeviceLife& life() const { return *life_; }

private:
  std::shared_ptr<DeviceLife> life_;
  CUdeviceptr ptr_;
  size_t bytes_;
};

// One host<->device copy, for --profile: its direction, size and the .pxl
// line that caused it: a call's, for copies it makes of its values (the line
// of the value carried), or, for a result read on the host later, the line
// reading it (`value`: the line that computed it).
struct Transfer {
  bool to_device = true;
  int64_t bytes = 0;
  Span loc;
  Span value;
};

class TransferLog {
public:
  void add(Transfer t);
  std::vector<Transfer> transfers() const;
  // Where the interpreter is (the operation being bound), for copies made
  // when the host reads an array.
  void set_sites(std::shared_ptr<const PullLog> sites);
  Span site() const;

private:
  mutable std::mutex mu_;
  std::vector<Transfer> log_;
  std::shared_ptr<const PullLog> sites_;
};

class GpuDevice {
public:
  GpuDevice(Driver& driver, int ordinal, TransferLog& log);
  ~GpuDevice();
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  Driver& driver() { return driver_; }
  int ordinal() const { return ordinal_; }
  CUdevice handle() const { return dev_; }
  CUstream stream() const { return stream_; }
  const std::string& name() const { return name_; }
  int compute_capability() const { return cc_; } // e.g. 90
  int multiprocessors() const { return sms_; }

  // Makes this device's context current on the calling thread.
  void bind() const;
  // A buffer of `bytes` (at least 1), from the pool when one fits exactly.
  std::shared_ptr<DeviceBuffer> alloc(size_t bytes);
  void upload(const DeviceBuffer& dst, const void* src, size_t bytes, const Span& loc);
  // Copies `bytes` at device address `src` (in one of this device's buffers) to `dst`.
  // `value`, when given, is the line that computed what is copied (see Transfer).
  void download(void* dst, CUdeviceptr src, size_t bytes, const Span& loc, const Span& value = {});
  TransferLog& transfers() { return log_; }
  void synchronize() const;
  // This device's cuBLAS handle (created on first use, bound to its stream).
  cublasHandle_t blas();
  // --time-passes: where cuBLAS's start-up time goes (null: not timed).
  void set_phase_times(PhaseTimes* times) { times_ = times; }

  // Device copies of host arrays, kept while the host array lives: a call
  // whose input is already here (an earlier call's input or result) does not
  // copy it again. Host arrays are immutable once a call has used them, so a
  // live host buffer's copy stays valid; the copy goes back to the pool when
  // the host array is freed, and every copy is dropped when memory runs out.
  std::shared_ptr<DeviceBuffer> resident(const Array& host);
  void keep_resident(const Array& host, std::shared_ptr<DeviceBuffer> copy);
  size_t resident_count();
  void check(CUresult r, const char* what) const;

private:
  friend class DeviceBuffer;
  void release(CUdeviceptr ptr, size_t bytes);

  std::shared_ptr<DeviceLife> life_ = std::make_shared<DeviceLife>();
  Driver& driver_;
  TransferLog& log_;
  int ordinal_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  std::string name_;
  int cc_ = 0, sms_ = 0;
  cublasHandle_t blas_ = nullptr;
  PhaseTimes* times_ = nullptr;
  std::mutex pool_mu_;
  std::multimap<size_t, CUdeviceptr> pool_;
  std::set<CUdeviceptr> in_use_; // handed out, not yet back in the pool
  struct Resident {
    std::weak_ptr<Buffer> host;
    std::shared_ptr<DeviceBuffer> copy;
  };
  using ResidentKey = std::tuple<const Buffer*, size_t, size_t>; // buffer, offset, bytes
  std::mutex resident_mu_;
  std::map<ResidentKey, Resident> resident_;
  void drop_resident();
};

// The contents of an array a CUDA call computed: a device buffer, copied to
// the host (and counted, with the .pxl line of the value) only when the host
// reads the array. A later call on the same device uses the buffer directly.
class CudaStorage final : public DeviceStorage {
public:
  CudaStorage(std::shared_ptr<DeviceBuffer> buf, Span loc)
      : buf_(std::move(buf)), loc_(std::move(loc)) {}
  void fetch(void* host, size_t nbytes) const override;
  void wait() const override;
  // The buffer, when it is on `dev` (null otherwise).
  std::shared_ptr<DeviceBuffer> buffer_on(const GpuDevice& dev) const;

private:
  std::shared_ptr<DeviceBuffer> buf_;
  Span loc_;
};

} // namespace pxl::cuda
