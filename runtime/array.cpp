// Host buffers and concrete arrays.
#include "runtime/array.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>

#include <sys/mman.h>

#include "lang/diag.hpp"

namespace pxl {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kHugePage = size_t{2} << 20, kHugeMin = size_t{4} << 20;
// Refuse absurd allocations up front with a user error instead of a bad_alloc
// (or an overflowed size silently allocating a small buffer).
constexpr size_t kMaxBytes = size_t{1} << 40;

size_t checked_nbytes(DType dtype, const Shape& shape) {
  size_t n = dtype_size(dtype);
  for (int64_t d : shape)
    if (d < 0)
      throw Error(ErrCode::Value,
                  "negative dimension " + std::to_string(d) + " in shape " + shape_str(shape));
  // An empty array is empty whatever its other dimensions (JAX makes (2**40, 0)):
  // checking the running product first refused it when the 0 came last. Its
  // other extents' product must still fit in int64, as XLA's does (an array's
  // size is computed before its zero is seen).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    int64_t count = 1;
    for (int64_t d : shape)
      if (d > 0 && __builtin_mul_overflow(count, d, &count))
        throw Error(ErrCode::Value, "array of shape " + shape_str(shape) + " and dtype " +
                                        dtype_name(dtype) + " is too large");
    return 0;
  }
  for (int64_t d : shape) {
    if (n > kMaxBytes / static_cast<size_t>(d))
      throw Error(ErrCode::Value, "array of shape " + shape_str(shape) + " and dtype " +
                                      dtype_name(dtype) + " is too large");
    n *= static_cast<size_t>(d);
  }
  if (n > kMaxBytes)
    throw Error(ErrCode::Value, "array of shape " + shape_str(shape) + " and dtype " +
                                    dtype_name(dtype) + " is too large");
  return n;
}

// Float -> integer the way XLA's CPU backend converts: NaN -> 0, out of range saturates.
template <class I> I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void* host_alloc(size_t nbytes, bool zero) {
  // Big buffers get 2 MiB alignment and transparent huge pages: a fresh
  // buffer's first touch then faults once per 2 MiB instead of per 4 KiB,
  // which is most of the cost of writing a new 64 MB result.
  bool huge = nbytes >= kHugeMin;
  size_t align = huge ? kHugePage : kAlign;
  size_t alloc = (nbytes + align - 1) / align * align;
  if (alloc == 0) alloc = kAlign;
  void* data = std::aligned_alloc(align, alloc);
  if (!data) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) ::madvise(data, alloc, MADV_HUGEPAGE); // advice only: failure is harmless
#endif
  if (zero) std::memset(data, 0, alloc);
  return data;
}

} // namespace

Buffer::Buffer(size_t nbytes, bool zero) : data_(host_alloc(nbytes, zero)), nbytes_(nbytes) {}

Buffer::Buffer(size_t nbytes, std::shared_ptr<const DeviceStorage> device)
    : nbytes_(nbytes), device_(std::move(device)), fetch_mu_(std::make_unique<std::mutex>()) {
  PXL_ASSERT(device_, "Buffer: null device storage");
}

Buffer::~Buffer() { std::free(data_.load(std::memory_order_relaxed)); }

void* Buffer::fetch() {
  PXL_ASSERT(device_, "Buffer: no host copy and no device copy");
  std::lock_guard<std::mutex> lock(*fetch_mu_);
  if (void* p = data_.load(std::memory_order_acquire)) return p; // another thread fetched it
  void* p = host_alloc(nbytes_, false);
  try {
    device_->fetch(p, nbytes_);
  } catch (...) {
    std::free(p);
    throw;
  }
  data_.store(p, std::memory_order_release);
  return p;
}

Array::Array(DType dtype, Shape shape, bool weak, int device) : device_(device) {
  size_t nbytes = checked_nbytes(dtype, shape);
  aval_.dtype = dtype;
  aval_.shape = std::move(shape);
  aval_.weak = weak;
  buf_ = std::make_shared<Buffer>(nbytes);
}

Array Array::uninitialized(DType dtype, Shape shape, bool weak, int device) {
  Array a;
  size_t nbytes = checked_nbytes(dtype, shape);
  a.aval_ = AVal{dtype, std::move(shape), weak};
  a.device_ = device;
  a.buf_ = std::make_shared<Buffer>(nbytes, false);
  return a;
}

Array Array::device_backed(AVal aval, int device, std::shared_ptr<const DeviceStorage> storage) {
  Array a;
  size_t nbytes = checked_nbytes(aval.dtype, aval.shape);
  a.aval_ = std::move(aval);
  a.device_ = device;
  a.buf_ = std::make_shared<Buffer>(nbytes, std::move(storage));
  return a;
}

void Array::block_until_ready() const {
  if (const DeviceStorage* d = device_storage()) d->wait();
}

Scalar Array::get(int64_t flat) const {
  switch (dtype()) {
  case DType::Bool:
    return Scalar::of_bool(as<uint8_t>()[flat] != 0);
  case DType::Int8:
  case DType::Int2:
  case DType::Int4:
    return Scalar::of_int(as<int8_t>()[flat]);
  case DType::UInt8:
  case DType::UInt2:
  case DType::UInt4:
    return Scalar::of_int(as<uint8_t>()[flat]);
  case DType::Int16:
    return Scalar::of_int(as<int16_t>()[flat]);
  case DType::UInt16:
    return Scalar::of_int(as<uint16_t>()[flat]);
  case DType::Int32:
    return Scalar::of_int(as<int32_t>()[flat]);
  case DType::UInt32:
    return Scalar::of_int(as<uint32_t>()[flat]);
  case DType::Float16:
    return Scalar::of_float(half_to_float(as<uint16_t>()[flat]));
  case DType::BFloat16:
    return Scalar::of_float(bfloat16_to_float(as<uint16_t>()[flat]));
  PXL_SMALL_FLOAT_CASES:
    return Scalar::of_float(small_to_float(dtype(), as<uint8_t>()[flat]));
  case DType::Float32:
    return Scalar::of_float(as<float>()[flat]);
  case DType::Float64:
    return Scalar::of_float(as<double>()[flat]);
  case DType::Complex64: {
    const float* p = as<float>() + 2 * flat;
    return Scalar::of_complex(p[0], p[1]);
  }
  }
  return {};
}

void Array::set(int64_t flat, const Scalar& v) {
  // A complex written to a real dtype keeps its real part (numpy's cast).
  bool is_float = v.kind == Scalar::Kind::Float || v.kind == Scalar::Kind::Complex;
  switch (dtype()) {
  case DType::Bool:
    as<uint8_t>()[flat] = is_float ? (v.f != 0 || v.im != 0) : (v.i != 0);
    return;
  // Integers wrap (two's complement, like a C cast); floats saturate like XLA.
  case DType::Int8:
    as<int8_t>()[flat] = is_float ? saturate<int8_t>(v.f) : static_cast<int8_t>(v.i);
    return;
  case DType::UInt8:
    as<uint8_t>()[flat] = is_float ? saturate<uint8_t>(v.f) : static_cast<uint8_t>(v.i);
    return;
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4: { // one per byte, kept within the type's range
    int64_t x = is_float ? (std::isnan(v.f)                   ? 0
                            : v.f <= double(int_min(dtype())) ? int_min(dtype())
                            : v.f >= double(int_max(dtype())) ? int_max(dtype())
                                                              : static_cast<int64_t>(v.f))
                         : wrap_to(dtype(), v.i);
    as<uint8_t>()[flat] = static_cast<uint8_t>(x);
    return;
  }
  case DType::Int16:
    as<int16_t>()[flat] = is_float ? saturate<int16_t>(v.f) : static_cast<int16_t>(v.i);
    return;
  case DType::UInt16:
    as<uint16_t>()[flat] = is_float ? saturate<uint16_t>(v.f) : static_cast<uint16_t>(v.i);
    return;
  case DType::Int32:
    as<int32_t>()[flat] = is_float ? saturate<int32_t>(v.f) : static_cast<int32_t>(v.i);
    return;
  case DType::UInt32:
    as<uint32_t>()[flat] = is_float ? saturate<uint32_t>(v.f) : static_cast<uint32_t>(v.i);
    return;
  case DType::Float16:
    as<uint16_t>()[flat] = float_to_half(static_cast<float>(is_float ? v.f : v.i));
    return;
  case DType::BFloat16:
    as<uint16_t>()[flat] = float_to_bfloat16(static_cast<float>(is_float ? v.f : v.i));
    return;
  PXL_SMALL_FLOAT_CASES:
    as<uint8_t>()[flat] = float_to_small(dtype(), is_float ? v.f : static_cast<double>(v.i));
    return;
  case DType::Float32:
    as<float>()[flat] = static_cast<float>(is_float ? v.f : v.i);
    return;
  case DType::Float64:
    as<double>()[flat] = is_float ? v.f : static_cast<double>(v.i);
    return;
  case DType::Complex64: {
    float* p = as<float>() + 2 * flat;
    p[0] = static_cast<float>(is_float ? v.f : static_cast<double>(v.i));
    p[1] = v.kind == Scalar::Kind::Complex ? static_cast<float>(v.im) : 0.0f;
    return;
  }
  }
}

double Array::get_f64(int64_t flat) const { return get(flat).real(); }

bool Array::sole_owner() const {
  if (!buf_ || buf_.use_count() != 1 || offset_ != 0 || buf_->nbytes() != nbytes() ||
      buf_->device_storage())
    return false;
  // The count is read relaxed: this orders the caller's writes after the
  // reads of a holder on another thread that has just let go.
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

Array Array::with_weak(bool weak) const {
  Array a = *this;
  a.aval_.weak = weak;
  return a;
}

Array Array::reshaped(Shape shape) const {
  PXL_ASSERT(shape_size(shape) == size(), "reshaped: size mismatch");
  Array a = *this;
  a.aval_.shape = std::move(shape);
  return a;
}

Array Array::view(int64_t first, Shape shape) const {
  PXL_ASSERT(first >= 0 && first + shape_size(shape) <= size(), "view: out of range");
  Array a = *this;
  a.offset_ += static_cast<size_t>(first) * dtype_size(dtype());
  a.aval_.shape = std::move(shape);
  return a;
}

Array Array::view_bytes(size_t offset, AVal aval) const {
  PXL_ASSERT(offset + static_cast<size_t>(aval.size()) * dtype_size(aval.dtype) <= nbytes(),
             "view_bytes: out of range");
  Array a; // not a copy of *this: its aval would be copied only to be replaced
  a.buf_ = buf_;
  a.offset_ = offset_ + offset;
  a.aval_ = std::move(aval);
  a.device_ = device_;
  return a;
}

Array Array::on_device(int device) const {
  Array a = *this;
  a.device_ = device;
  return a;
}

Array Array::scalar(const Scalar& v, DType dtype, bool weak) {
  Array a(dtype, {}, weak);
  a.set(0, v);
  return a;
}

} // namespace pxl
