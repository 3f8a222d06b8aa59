// Eager execution of primitives: each bind runs the shape rule, then the
// reference kernel, on concrete arrays (JAX's default-device semantics: device 0).
#pragma once
#include <vector>

#include "ir/tensor.hpp"
#include "runtime/eager_jit.hpp"
#include "runtime/sharded.hpp"

namespace pxl {

class EagerContext : public OpContext {
public:
  explicit EagerContext(int device = 0) : device_(device) {}
  // --exec jit: big elementwise ops and reductions run compiled (see eager_jit.hpp).
  void set_jit(EagerJit* jit) { jit_ = jit; }
  Tensor bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  // Runs an SPMD call on the device threads (runtime/spmd_call.hpp).
  std::vector<Tensor> bind_call(const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  const Array& concrete(const Tensor& t) override;
  Tensor constant(Array a) override;
  int device() const { return device_; }
  // Where pulls of sharded arrays to the host are logged (--profile).
  const std::shared_ptr<PullLog>& pull_log() const { return pull_log_; }
  ~EagerContext() override { pull_log_->detach(); }

private:
  int device_;
  EagerJit* jit_ = nullptr;
  std::shared_ptr<PullLog> pull_log_ = std::make_shared<PullLog>(this);
};

} // namespace pxl
