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
};

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
  // Where pulls of sharded arrays to the host are logged (--profile).
  const std::shared_ptr<PullLog>& pull_log() const { return pull_log_; }
  ~EagerContext() override { pull_log_->detach(); }

private:
  int device_;
  EagerJit* jit_ = nullptr;
  std::unique_ptr<ShardedOpRunner> sharded_;
  std::shared_ptr<PullLog> pull_log_ = std::make_shared<PullLog>(this);
};

} // namespace pxl
