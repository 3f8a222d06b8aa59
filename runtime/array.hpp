// A concrete array: a contiguous row-major buffer on one device. Arrays are
// immutable values once built (ops produce new arrays), so buffers are shared.
#pragma once
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <variant>

#include "ir/aval.hpp"

namespace pxl {

// A host scalar as the interpreter sees it (Python bool, int, float or
// complex). A complex keeps its real part in `f` (so real dtypes read it as
// a float, dropping the imaginary part) and its imaginary part in `im`.
struct Scalar {
  enum class Kind : uint8_t { Bool, Int, Float, Complex } kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  double im = 0;
  static Scalar of_bool(bool b) { return {Kind::Bool, b ? 1 : 0, b ? 1.0 : 0.0}; }
  static Scalar of_int(int64_t v) { return {Kind::Int, v, static_cast<double>(v)}; }
  // The integer view only where it exists: casting NaN, an infinity or a value
  // beyond int64's range to an integer is undefined behaviour.
  static Scalar of_float(double v) {
    bool fits = v > -9.2e18 && v < 9.2e18; // false for NaN
    return {Kind::Float, fits ? static_cast<int64_t>(v) : 0, v};
  }
  static Scalar of_complex(double re, double im) {
    Scalar s = of_float(re);
    s.kind = Kind::Complex;
    s.im = im;
    return s;
  }
  // The value as a double (real part), whatever its kind.
  double real() const {
    return kind == Kind::Float || kind == Kind::Complex ? f : static_cast<double>(i);
  }
};

// A buffer's contents where an accelerator computed them (runtime/cuda/):
// the platform's device memory, released through the platform when the last
// array using it goes. A buffer with one makes its host copy on first host
// access; device calls use the device copy directly.
class DeviceStorage {
public:
  virtual ~DeviceStorage() = default;
  // Copies the contents to `host` (`nbytes` bytes); counted by the platform.
  virtual void fetch(void* host, size_t nbytes) const = 0;
  // Waits for the work computing the contents (block_until_ready).
  virtual void wait() const = 0;
};

class Buffer {
public:
  // 64-byte aligned; zero-filled unless `zero` is false (then the caller must
  // write every byte before the buffer is read).
  explicit Buffer(size_t nbytes, bool zero = true);
  // Contents on a device: host memory is allocated and filled on first data().
  Buffer(size_t nbytes, std::shared_ptr<const DeviceStorage> device);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  // An acquire load and a branch never taken for host buffers (the same
  // instruction as a plain load on x86): host arrays pay nothing for this.
  void* data() {
    void* p = data_.load(std::memory_order_acquire);
    return p ? p : fetch();
  }
  const void* data() const { return const_cast<Buffer*>(this)->data(); }
  size_t nbytes() const { return nbytes_; }
  // The device copy (null for buffers made on the host).
  const std::shared_ptr<const DeviceStorage>& device_storage() const { return device_; }
  // Whether the host copy exists (always, without a device copy).
  bool on_host() const { return data_.load(std::memory_order_acquire) != nullptr; }

private:
  void* fetch(); // makes the host copy once, whichever thread asks first
  std::atomic<void*> data_{nullptr};
  size_t nbytes_ = 0;
  std::shared_ptr<const DeviceStorage> device_;
  std::unique_ptr<std::mutex> fetch_mu_; // only with a device copy
};

class Array {
public:
  Array() = default;
  Array(DType dtype, Shape shape, bool weak = false, int device = 0); // zero-filled
  // An array whose contents are garbage until written: for results a kernel
  // (or BLAS) overwrites completely, where zero-filling would cost a second
  // pass over memory.
  static Array uninitialized(DType dtype, Shape shape, bool weak = false, int device = 0);
  // An array computed on an accelerator: `storage` holds its contents and the
  // host copy is fetched on first host access (data(), get(), ...).
  static Array device_backed(AVal aval, int device, std::shared_ptr<const DeviceStorage> storage);

  const AVal& aval() const { return aval_; }
  DType dtype() const { return aval_.dtype; }
  const Shape& shape() const { return aval_.shape; }
  int ndim() const { return aval_.ndim(); }
  int64_t size() const { return aval_.size(); }
  bool weak_type() const { return aval_.weak; }
  int device() const { return device_; }
  bool defined() const { return buf_ != nullptr; }
  size_t nbytes() const { return buf_ ? static_cast<size_t>(size()) * dtype_size(dtype()) : 0; }

  void* data() { return static_cast<char*>(buf_->data()) + offset_; }
  const void* data() const { return static_cast<const char*>(buf_->data()) + offset_; }
  template <class T> T* as() { return static_cast<T*>(data()); }
  template <class T> const T* as() const { return static_cast<const T*>(data()); }

  // Element access by flat (row-major) index, converting to/from host scalars.
  Scalar get(int64_t flat) const;
  void set(int64_t flat, const Scalar& v);
  double get_f64(int64_t flat) const; // any dtype as double

  Array with_weak(bool weak) const;  // same buffer, different weak flag
  Array reshaped(Shape shape) const; // same buffer, new shape (sizes must agree)
  Array on_device(int device) const; // same buffer, tagged with another device
  // A contiguous part of this array's buffer, without copying: `shape`'s
  // elements starting at flat element `first` (a block of leading-axis rows,
  // such as a pmap or shard_map argument's block).
  Array view(int64_t first, Shape shape) const;
  // `aval`'s elements at byte `offset` of this array's buffer, reinterpreted
  // without copying (a value the compiled schedule keeps in its arena).
  Array view_bytes(size_t offset, AVal aval) const;

  static Array scalar(const Scalar& v, DType dtype, bool weak = false);

  // The buffer holding the elements (shared with views) and the byte offset
  // of the first one: identifies the contents, e.g. for a GPU's cached copy.
  const std::shared_ptr<Buffer>& buffer() const { return buf_; }
  size_t byte_offset() const { return offset_; }
  // The device copy of the contents, if an accelerator computed them (null
  // otherwise); the array's elements start at byte_offset() in it.
  const DeviceStorage* device_storage() const {
    return buf_ ? buf_->device_storage().get() : nullptr;
  }
  // Whether this array alone holds its buffer, all of it, on the host (no
  // view, no other array, no device copy): its holder may then write over its
  // elements without anyone else seeing them change.
  bool sole_owner() const;
  // Waits until the contents are computed (a no-op for host arrays).
  void block_until_ready() const;

private:
  std::shared_ptr<Buffer> buf_;
  size_t offset_ = 0; // bytes into buf_ (views)
  AVal aval_;
  int device_ = 0;
};

} // namespace pxl
