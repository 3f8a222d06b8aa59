// lax.Precision and a dot's `precision` argument (ir/op.hpp
// DotDims::precision): the CPU computes in the operands' type whatever it
// says; on CUDA a float32 product below HIGHEST may run in TF32.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "lang/value.hpp"

namespace pxl {

class InterpreterImpl;

// lax.Precision (the class, named "Precision") and its DEFAULT/HIGH/HIGHEST.
struct PrecisionObj : OpaqueObj {
  std::string name;
  explicit PrecisionObj(std::string n) : name(std::move(n)) {}
  std::string type_name() const override { return "Precision"; }
  // JAX's enum: repr `Precision.HIGHEST`, str `HIGHEST`; the class `<enum 'Precision'>`.
  std::string repr() const override {
    return name == "Precision" ? "<enum 'Precision'>" : "Precision." + name;
  }
  std::string str() const override { return name == "Precision" ? repr() : name; }
  bool get_attr(InterpreterImpl&, const std::string& attr, Value& out) override;
  std::vector<std::string> attr_names() const override { return {"DEFAULT", "HIGH", "HIGHEST"}; }
};

// JAX's canonicalize_precision for dot_general's `precision`: None takes
// jax_default_matmul_precision (read at trace time, as JAX does); one value
// (a lax.Precision or a name JAX accepts) serves both operands; else a pair.
std::array<uint8_t, 2> dot_precision(InterpreterImpl& in, Value v);

// The jaxpr parameter: None, or a pair of lax.Precision values.
Value precision_value(const std::array<uint8_t, 2>& p);

} // namespace pxl
