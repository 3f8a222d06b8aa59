// Eager execution of primitives: each bind runs the shape rule, then the
// reference kernel, on concrete arrays (JAX's default-device semantics: device 0).
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "ir/tensor.hpp"
#include "runtime/eager_jit.hpp"
#include "runtime/sharded.hpp"

namespace pxl {

// Runs a primitive some of whose operands are spread over a mesh on that mesh,
// as JAX runs every eager op as a jit of the primitive: the result keeps a
// sharding (stdlib/eager_sharded.cpp partitions the one-op program). Returns
// nothing to leave the op to the single-device path (operands gathered).
class ShardedOpRunner {
public:
  virtual ~ShardedOpRunner() = default;
  virtual std::optional<Tensor> run(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs,
                                    const Span& loc) = 0;
  // The result of an op run on one device, laid out where JAX puts it: under
  // jax.set_mesh JAX commits every eager result to the current mesh. Nothing
  // to leave it on its device.
  virtual std::optional<Tensor> place_result(const Tensor&) { return std::nullopt; }
};

// JAX's "Received incompatible devices for jitted computation. ..." for an
// eager op whose operands i and j are on different devices.
std::string incompatible_devices_message(Op op, std::span<const Tensor> inputs, size_t i, size_t j);

// jax_debug_nans / jax_debug_infs: which invalid values an eager op's result
// may not hold (JAX's FloatingPointError names the primitive).
struct FloatChecks {
  bool nans = false, infs = false;
  bool any() const { return nans || infs; }
};
// "nan" or "inf" when `a` (of an inexact dtype) holds a value `checks` refuses; "" otherwise.
std::string invalid_float(const Array& a, FloatChecks checks);
// The same for a tensor with values (a traced one has none: "").
std::string invalid_float(const Tensor& t, FloatChecks checks);

class EagerContext : public OpContext {
public:
  explicit EagerContext(int device = 0) : device_(device) {}
  // --exec jit: big elementwise ops and reductions run compiled (see eager_jit.hpp).
  void set_jit(EagerJit* jit) { jit_ = jit; }
  void set_sharded_runner(std::unique_ptr<ShardedOpRunner> r) { sharded_ = std::move(r); }
  Tensor bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  // Runs an SPMD call on the device threads (runtime/spmd_call.hpp), or a
  // while loop on this device (runtime/while_loop.hpp).
  std::vector<Tensor> bind_call(const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  const Array& concrete(const Tensor& t) override;
  Tensor constant(Array a) override;
  int device() const { return device_; }
  void set_float_checks(FloatChecks c) { float_checks_ = c; }
  FloatChecks float_checks() const { return float_checks_; }
  // Results of a program run whole (a loop, a cond branch, an SPMD program)
  // under jax_debug_nans/infs: fails at `where` with `message`, % replaced by
  // "nan" or "inf", when one holds such a value.
  std::vector<Tensor> checked_results(const std::string& message, std::vector<Tensor> out,
                                      const Span& where) const;
  // Where pulls of sharded arrays to the host are logged (--profile).
  const std::shared_ptr<PullLog>& pull_log() const { return pull_log_; }
  ~EagerContext() override { pull_log_->detach(); }

private:
  int placement(Op op, std::span<const Tensor> inputs) const;
  int device_;
  EagerJit* jit_ = nullptr;
  std::unique_ptr<ShardedOpRunner> sharded_;
  FloatChecks float_checks_;
  Tensor checked(Op op, Tensor t) const;
  std::shared_ptr<PullLog> pull_log_ = std::make_shared<PullLog>(this);
};

// Turns an eager context's float checks off for a scope: a program run whole
// (a jit, a cond branch), whose outputs alone are checked, as XLA runs it.
class FloatChecksOff {
public:
  explicit FloatChecksOff(EagerContext* e) : e_(e), saved_(e ? e->float_checks() : FloatChecks{}) {
    if (e_) e_->set_float_checks({});
  }
  ~FloatChecksOff() {
    if (e_) e_->set_float_checks(saved_);
  }
  FloatChecksOff(const FloatChecksOff&) = delete;
  FloatChecksOff& operator=(const FloatChecksOff&) = delete;
  FloatChecks saved() const { return saved_; }

private:
  EagerContext* e_;
  FloatChecks saved_;
};

} // namespace pxl
