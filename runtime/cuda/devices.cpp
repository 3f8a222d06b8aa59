#include "runtime/cuda/devices.hpp"

#include "lang/phase_times.hpp"

namespace pxl::cuda {

DeviceBuffer::~DeviceBuffer() {
  std::lock_guard<std::mutex> lock(life_->mu);
  if (life_->dev) life_->dev->release(ptr_, bytes_);
}

void TransferLog::add(Transfer t) {
  std::lock_guard<std::mutex> lock(mu_);
  log_.push_back(std::move(t));
}

std::vector<Transfer> TransferLog::transfers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

void TransferLog::set_sites(std::shared_ptr<const PullLog> sites) {
  std::lock_guard<std::mutex> lock(mu_);
  sites_ = std::move(sites);
}

Span TransferLog::site() const {
  std::shared_ptr<const PullLog> sites;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sites = sites_;
  }
  return sites ? sites->site() : Span{};
}

GpuDevice::GpuDevice(Driver& driver, int ordinal, TransferLog& log)
    : driver_(driver), log_(log), ordinal_(ordinal) {
  const DriverApi& a = driver.api();
  std::string at = "GPU " + std::to_string(ordinal);
  driver.check(a.cuDeviceGet(&dev_, ordinal), "cuDeviceGet(" + at + ")");
  char name[256] = {0};
  driver.check(a.cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName(" + at + ")");
  name_ = name;
  int major = 0, minor = 0;
  driver.check(a.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_),
               "compute capability of " + at);
  driver.check(a.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_),
               "compute capability of " + at);
  cc_ = major * 10 + minor;
  if (cc_ < 75)
    throw Error(ErrCode::Device, at + " (" + name_ + ") has compute capability " +
                                     std::to_string(major) + "." + std::to_string(minor) +
                                     "; pxl needs 7.5 or newer");
  driver.check(a.cuDeviceGetAttribute(&sms_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_),
               "multiprocessor count of " + at);
  driver.check(a.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain(" + at + ")");
  driver.keep_primary_context(dev_);
  bind();
  driver.check(a.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate(" + at + ")");
  life_->dev = this;
}

GpuDevice::~GpuDevice() {
  // Teardown errors are ignored: there is no one left to report them to.
  const DriverApi& a = driver_.api();
  a.cuCtxSetCurrent(ctx_);
  if (stream_) a.cuStreamSynchronize(stream_);
  drop_resident(); // their buffers go to the pool, freed below
  {
    // Buffers arrays still hold are freed with the rest; they see a dead device.
    std::lock_guard<std::mutex> lock(life_->mu);
    life_->dev = nullptr;
  }
  if (blas_) driver_.cublas().cublasDestroy(blas_);
  for (auto& [bytes, ptr] : pool_) a.cuMemFree(ptr);
  for (CUdeviceptr ptr : in_use_) a.cuMemFree(ptr);
  if (stream_) a.cuStreamDestroy(stream_);
  if (ctx_) a.cuDevicePrimaryCtxRelease(dev_);
}

void GpuDevice::check(CUresult r, const char* what) const {
  if (r != CUDA_SUCCESS)
    driver_.check(r, std::string(what) + " on GPU " + std::to_string(ordinal_));
}

void GpuDevice::bind() const { check(driver_.api().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

std::shared_ptr<DeviceBuffer> GpuDevice::alloc(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (auto it = pool_.find(bytes); it != pool_.end()) {
      CUdeviceptr p = it->second;
      pool_.erase(it);
      in_use_.insert(p);
      return std::make_shared<DeviceBuffer>(life_, p, bytes);
    }
  }
  CUdeviceptr p = 0;
  CUresult r = driver_.api().cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    // Out of memory with buffers parked in the pool or kept for host arrays:
    // return them and retry.
    drop_resident();
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (auto& [b, q] : pool_) driver_.api().cuMemFree(q);
    pool_.clear();
    r = driver_.api().cuMemAlloc(&p, bytes);
  }
  check(r, ("cuMemAlloc of " + std::to_string(bytes) + " bytes").c_str());
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    in_use_.insert(p);
  }
  return std::make_shared<DeviceBuffer>(life_, p, bytes);
}

void GpuDevice::release(CUdeviceptr ptr, size_t bytes) {
  // Work queued on the stream may still use the buffer; the pool hands it out
  // again only to work queued later on the same stream, which runs after.
  std::lock_guard<std::mutex> lock(pool_mu_);
  in_use_.erase(ptr);
  pool_.emplace(bytes, ptr);
}

void GpuDevice::upload(const DeviceBuffer& dst, const void* src, size_t bytes, const Span& loc) {
  if (bytes == 0) return;
  check(driver_.api().cuMemcpyHtoDAsync(dst.ptr(), src, bytes, stream_), "host-to-device copy");
  // The host buffer may be freed once we return: wait for the copy.
  synchronize();
  log_.add({true, static_cast<int64_t>(bytes), loc, {}});
}

void GpuDevice::download(void* dst, CUdeviceptr src, size_t bytes, const Span& loc,
                         const Span& value) {
  if (bytes == 0) return;
  check(driver_.api().cuMemcpyDtoHAsync(dst, src, bytes, stream_), "device-to-host copy");
  synchronize();
  log_.add({false, static_cast<int64_t>(bytes), loc, value});
}

void GpuDevice::synchronize() const {
  check(driver_.api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

cublasHandle_t GpuDevice::blas() {
  if (!blas_) {
    ScopedPhase timing(times_, "cuda: cuBLAS start-up");
    const CublasApi& b = driver_.cublas();
    bind();
    if (b.cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS)
      throw Error(ErrCode::Device, "cublasCreate failed on GPU " + std::to_string(ordinal_));
    b.cublasSetStream(blas_, stream_);
    b.cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH); // plain f32 (no tf32): CPU-like results
  }
  return blas_;
}

} // namespace pxl::cuda

namespace pxl::cuda {

std::shared_ptr<DeviceBuffer> GpuDevice::resident(const Array& host) {
  if (!host.defined()) return nullptr;
  std::lock_guard<std::mutex> lock(resident_mu_);
  auto it = resident_.find({host.buffer().get(), host.byte_offset(), host.nbytes()});
  // An expired entry's buffer address may have been reused by another array.
  if (it == resident_.end() || it->second.host.lock() != host.buffer()) return nullptr;
  return it->second.copy;
}

void GpuDevice::keep_resident(const Array& host, std::shared_ptr<DeviceBuffer> copy) {
  if (!host.defined()) return;
  std::vector<std::shared_ptr<DeviceBuffer>> expired; // released after the lock
  std::lock_guard<std::mutex> lock(resident_mu_);
  for (auto it = resident_.begin(); it != resident_.end();)
    if (it->second.host.expired()) {
      expired.push_back(std::move(it->second.copy));
      it = resident_.erase(it);
    } else {
      ++it;
    }
  resident_[{host.buffer().get(), host.byte_offset(), host.nbytes()}] = {host.buffer(),
                                                                         std::move(copy)};
}

size_t GpuDevice::resident_count() {
  std::lock_guard<std::mutex> lock(resident_mu_);
  size_t n = 0;
  for (auto& [key, r] : resident_) n += !r.host.expired();
  return n;
}

void GpuDevice::drop_resident() {
  std::map<ResidentKey, Resident> gone;
  {
    std::lock_guard<std::mutex> lock(resident_mu_);
    gone.swap(resident_);
  }
  // `gone` releases its buffers to the pool here, outside resident_mu_.
}

} // namespace pxl::cuda

namespace pxl::cuda {

namespace {

// Makes `dev`'s context current for a scope, then restores the calling
// thread's: a device thread reading another device's array (or the
// interpreter's thread) keeps the context it works in.
class ContextScope {
public:
  explicit ContextScope(GpuDevice& dev) : api_(dev.driver().api()) {
    if (api_.cuCtxGetCurrent(&saved_) != CUDA_SUCCESS) saved_ = nullptr;
    dev.bind();
  }
  ~ContextScope() { api_.cuCtxSetCurrent(saved_); }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

private:
  const DriverApi& api_;
  CUcontext saved_ = nullptr;
};

} // namespace

void CudaStorage::fetch(void* host, size_t nbytes) const {
  PXL_ASSERT(nbytes <= buf_->bytes(), "CudaStorage::fetch: more bytes than the buffer");
  // Holding the lock keeps the device alive until the copy is done.
  std::lock_guard<std::mutex> lock(buf_->life().mu);
  GpuDevice* dev = buf_->life().dev;
  if (!dev)
    throw Error(ErrCode::Device,
                "an array computed on a GPU was read after its CUDA runtime was "
                "closed; its contents went with the runtime",
                loc_);
  ContextScope scope(*dev); // the reading thread may not be the device's
  Span reading = dev->transfers().site();
  if (reading.valid())
    dev->download(host, buf_->ptr(), nbytes, reading, loc_);
  else
    dev->download(host, buf_->ptr(), nbytes, loc_);
}

void CudaStorage::wait() const {
  std::lock_guard<std::mutex> lock(buf_->life().mu);
  if (GpuDevice* dev = buf_->life().dev) {
    ContextScope scope(*dev);
    dev->synchronize();
  }
}

std::shared_ptr<DeviceBuffer> CudaStorage::buffer_on(const GpuDevice& dev) const {
  std::lock_guard<std::mutex> lock(buf_->life().mu);
  return buf_->life().dev == &dev ? buf_ : nullptr;
}

} // namespace pxl::cuda
