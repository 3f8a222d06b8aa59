// jax.experimental.checkify: functionalized run-time checks (stdlib/checkify.cpp).
#pragma once
#include <span>

#include "ir/op.hpp"
#include "runtime/array.hpp"

namespace pxl {

class InterpreterImpl;
struct ModuleBuilder;

// A checkify.check / check_error in traced code is recorded as a debug_print
// instruction whose format's args are a CheckSite: so it survives jit, vmap
// (one check per example), autodiff and loops as a print does, and checkify's
// walk over the traced Function recognises and functionalizes it. Where the
// instruction runs without checkify (eagerly under vmap), run() raises the
// error its operands describe, as JAX's check_p impl does.
struct CheckSite : DebugFormatArgs {
  virtual void run(std::span<const Array> values) const = 0;
};

// Adds the module jax.experimental.checkify (and its attribute on `experimental`).
void add_checkify(InterpreterImpl& in, ModuleBuilder& experimental);

} // namespace pxl
