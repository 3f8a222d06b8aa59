// jax.experimental.checkify: functionalized run-time checks (stdlib/checkify.cpp).
#pragma once
#include <span>

#include "ir/op.hpp"
#include "ir/tensor.hpp"
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

// Whether `cx` traces inside checkify (so that indexing records its bounds
// check: JAX checks its gathers' indices, which pxl clamps before its take).
bool tracing_under_checkify(OpContext& cx);
// Marks, under checkify, where a branch of a traced lax.cond begins (with the
// predicate under which it is taken) or ends (the same predicate).
void record_branch(OpContext& cx, const Tensor& pred, bool begin);
// Records the bounds check of a gather from an array of shape `shape` (JAX's
// operand): `indices` (int32, one per indexed axis `axes`, broadcast to one
// shape, negative ones already wrapped) must lie in [0, limit], where the
// limit is the axis size less the slice size (`limits`, one per index; none:
// size - 1). The first out-of-bounds one, in row-major order over (index
// position, axis), is the payload of JAX's OOBError.
void record_index_check(OpContext& cx, const Shape& shape, std::span<const Tensor> indices,
                        std::span<const int64_t> axes, std::span<const int64_t> limits = {});

// Adds the module jax.experimental.checkify (and its attribute on `experimental`).
void add_checkify(InterpreterImpl& in, ModuleBuilder& experimental);

} // namespace pxl
