// A Tensor is what the array namespace (np / lax) manipulates: either a concrete
// Array (eager) or, later, a symbolic value in a function being traced. Every
// array primitive goes through OpContext::bind, so the same np code both runs
// eagerly and records IR when traced (JAX's primitive.bind).
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "ir/aval.hpp"
#include "ir/op.hpp"
#include "lang/source.hpp"
#include "runtime/array.hpp"

namespace pxl {

struct ShardedData; // runtime/sharded.hpp

struct TensorImpl {
  AVal aval;
  std::optional<Array> concrete;              // set for eager single-device values
  std::shared_ptr<const ShardedData> sharded; // set for values spread over a mesh
  const void* trace = nullptr;                // the TraceContext that owns a traced value
  int64_t trace_id = -1;                      // its value id in that trace's Function
};
using Tensor = std::shared_ptr<const TensorImpl>;

inline Tensor make_tensor(Array a) {
  auto t = std::make_shared<TensorImpl>();
  t->aval = a.aval();
  t->concrete = std::move(a);
  return t;
}

class OpContext {
public:
  virtual ~OpContext() = default;
  // Applies primitive `op` to `inputs`; the shape rule runs first and throws
  // pxl::Error (no span) on bad input.
  virtual Tensor bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) = 0;
  // Applies a multi-result op to `inputs`: spmd_call (attrs.callee) or while
  // (attrs.loop).
  virtual std::vector<Tensor> bind_call(const OpAttrs& attrs, std::span<const Tensor> inputs) = 0;
  // The concrete array behind `t`; throws ErrCode::ConcreteValue when `t` is traced.
  virtual const Array& concrete(const Tensor& t) = 0;
  // Wraps a host array as a tensor (a constant when tracing).
  virtual Tensor constant(Array a) = 0;

  // The .pxl source location of the operation being bound; the interpreter sets
  // it so that traced IR and errors point at the user's code.
  Span loc;
  // Whether the builtin binding the operation was called from pxl's standard
  // library: part of a composite function that JAX compiles whole, not an op
  // XLA compiles alone (np_elementwise.cpp's exp and log).
  bool library_call = false;
};

// Sets the source location of the array operations bound while it lives and
// restores the previous one after.
struct LocScope {
  OpContext& cx;
  Span saved;
  LocScope(OpContext& c, const Span& s) : cx(c), saved(c.loc) {
    if (s.valid()) cx.loc = s;
  }
  ~LocScope() { cx.loc = saved; }
};

// Sets OpContext::library_call while it lives and restores it after.
struct LibraryCallScope {
  OpContext& cx;
  bool saved;
  LibraryCallScope(OpContext& c, bool library) : cx(c), saved(c.library_call) {
    cx.library_call = library;
  }
  ~LibraryCallScope() { cx.library_call = saved; }
};

} // namespace pxl
