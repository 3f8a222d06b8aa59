// Eager execution of primitives: each bind runs the shape rule, then the
// reference kernel, on concrete arrays (JAX's default-device semantics: device 0).
#pragma once
#include "ir/tensor.hpp"

namespace pxl {

class EagerContext : public OpContext {
public:
  explicit EagerContext(int device = 0) : device_(device) {}
  Tensor bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) override;
  const Array& concrete(const Tensor& t) override;
  Tensor constant(Array a) override;
  int device() const { return device_; }

private:
  int device_;
};

} // namespace pxl
