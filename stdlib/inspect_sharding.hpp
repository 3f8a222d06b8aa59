// jax.debug.inspect_array_sharding: the sharding the compiled program gives a
// value, handed to a callback. Eagerly that is the array's own sharding, at
// once; inside a trace JAX calls the callback when the program is compiled --
// after the whole trace, before anything runs, once per compilation -- so a
// trace queues it (InterpreterImpl::compile_callbacks) and the outermost
// trace runs the queue when it ends (PendingCompileCallbacks).
#pragma once
#include <functional>
#include <string>

#include "lang/interp_impl.hpp"

namespace pxl {

struct ModuleBuilder;

// Held by a trace while it runs: what the trace queued is dropped if it fails
// (the destructor, unless finish() ran), and finish() -- called once the
// trace's context is popped -- runs it when that trace was the outermost,
// unless it was abstract (make_jaxpr, eval_shape: JAX compiles nothing).
class PendingCompileCallbacks {
public:
  explicit PendingCompileCallbacks(InterpreterImpl& in)
      : in_(in), mark_(in.compile_callbacks.size()) {}
  ~PendingCompileCallbacks();
  void finish(const std::string& what);
  PendingCompileCallbacks(const PendingCompileCallbacks&) = delete;
  PendingCompileCallbacks& operator=(const PendingCompileCallbacks&) = delete;

private:
  InterpreterImpl& in_;
  size_t mark_;
  bool finished_ = false;
};

// The sharding JAX's compiled program gives `leaf` (an array or a Python
// scalar) in the current context: a NamedSharding over the mesh the trace is
// laid out on (its axes Auto), GSPMDSharding({replicated}) in a program
// compiled for one device, the SingleDeviceSharding of device 0 under eager
// transformations (grad, vmap) of unsharded values.
Value compiled_sharding(InterpreterImpl& in, const Value& leaf);

// Runs `f` when the program being traced is compiled (at once outside a trace).
void at_compile(InterpreterImpl& in, std::function<void()> f);

// jax.debug.inspect_array_sharding(value, *, callback).
void add_inspect_array_sharding(ModuleBuilder& debug);

} // namespace pxl
