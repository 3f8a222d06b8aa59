// Mutable array references (jax.new_ref, jax.Ref, jax.ref.*): a box holding
// an array that code reads with ref[idx] and writes with ref[idx] = v.
//
// Eagerly a write replaces the box's array. In a trace the box holds the
// trace's value. Where a transformation's trace writes a reference made
// outside it, the write is logged in a RefFrame and the transformation makes
// it explicit, as JAX discharges its Ref effects: jit returns the final value
// as one more result and writes it back after the call (trace_function's
// RefMode::Effects), a loop carries it (while_loop.cpp), a cond with a traced
// predicate selects between its branches' values (lax_loops.pxl). vmap, grad
// and the other transformations refuse such writes, as JAX does for batched
// or differentiated values.
#pragma once
#include <memory>
#include <vector>

#include "lang/interp_impl.hpp"

namespace pxl {

class TraceContext;
struct TracedFunction;

struct RefObj : OpaqueObj, std::enable_shared_from_this<RefObj> {
  Value value;              // an Array (concrete or traced)
  std::weak_ptr<int> owner; // the ref_token of the trace it was made in
  bool made_eagerly = true;

  std::string type_name() const override { return "Ref"; }
  std::string repr() const override;
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override;
  bool get_item(InterpreterImpl& in, const Value& index, Value& out) override;
  bool set_item(InterpreterImpl& in, const Value& index, const Value& v) override;
  bool items(InterpreterImpl& in, ValueList& out) override;
};

// JAX's name of its type: Ref{float32[3]}.
std::string ref_type_name(const RefObj& r);
// jax.typeof of a reference: its type (an AbstractRef printing Ref{float32[3]}).
Value ref_abstract_type(InterpreterImpl& in, RefObj& r);
// JAX's messages for writes vmap and the derivatives refuse: a batched or a
// differentiated value written to a reference from outside.
std::string vmapped_write_message(const RefObj& r);
std::string differentiated_write_message(const RefObj& r);
// `array` strongly typed (JAX's eager writes and loop carries of references).
Value strongly_typed(InterpreterImpl& in, const Value& array);
// The reference `v` holds, or null.
std::shared_ptr<RefObj> as_ref(const Value& v);
// Whether `r` was made while `tc` traced (its writes there are the trace's own).
bool ref_made_in(const RefObj& r, const TraceContext& tc);
// Whether `r` was made outside `tc` and outlives it (eagerly, or in an enclosing trace).
bool ref_from_outside(const RefObj& r, const TraceContext& tc);

// A write logged in a frame: the reference and its value before the first
// write the frame saw.
struct RefWrite {
  std::shared_ptr<RefObj> ref;
  Value saved;
};
struct RefFrame {
  std::vector<RefWrite> writes; // in the order of first writes
  bool touched = false;         // a reference was read or written
};

// Opens a frame for its lifetime; when it closes, every reference written
// meanwhile gets back its value from before (the frame's owner has made the
// writes explicit by then, or they are discarded: eval_shape).
class RefFrameScope {
public:
  explicit RefFrameScope(InterpreterImpl& in);
  ~RefFrameScope();
  RefFrameScope(const RefFrameScope&) = delete;
  RefFrameScope& operator=(const RefFrameScope&) = delete;
  RefFrame frame;

private:
  InterpreterImpl& in_;
};

// Sets the reference's value, logging the write in the innermost frame (no
// checks: the value is already the reference's type).
void store_ref(InterpreterImpl& in, const std::shared_ptr<RefObj>& r, Value v);
// The reference's value, noting the use in every open frame.
Value load_ref(InterpreterImpl& in, RefObj& r);

// JAX's ValueError for a function traced for `what` that returned a
// reference (`out` is its result).
// `passed`: the reference arguments and their names, which the message
// says a returned one was passed in as.
void refuse_ref_results(
    InterpreterImpl& in, const Value& out, const Value& fn, const std::string& what,
    const Span& where,
    const std::vector<std::pair<std::shared_ptr<RefObj>, std::string>>& passed = {});

// After running a function traced with RefMode::Effects: writes the final
// values of the references it wrote back and returns its own result.
// `strong`: stored strongly typed, as JAX's loops carry them (a scan's body).
Value apply_ref_outputs(InterpreterImpl& in, const TracedFunction& t, const Value& out,
                        bool strong = false);

// jax.new_ref, jax.freeze, jax.empty_ref, jax.Ref and the jax.ref module.
void add_mutable_refs(InterpreterImpl& in, Value& jax);

} // namespace pxl
