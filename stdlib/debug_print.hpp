// jax.debug.print and jax.debug.callback: the builtins, and how recorded
// values are printed (or handed to the callback).
#pragma once
#include <optional>
#include <span>
#include <string>

#include "ir/op.hpp"
#include "lang/interp_impl.hpp"
#include "runtime/array.hpp"
#include "runtime/executable.hpp"

namespace pxl {

struct ModuleBuilder;

// Adds jax.debug.print and jax.debug.callback to `debug` and installs the single-device printer
// (runtime/debug_print.hpp) that writes to the interpreter's stdout.
void add_debug_print(InterpreterImpl& in, ModuleBuilder& debug);

// One print's text (without the newline): the format string applied to the
// arguments rebuilt from the recorded values, as JAX's callback formats them;
// nothing for a print in a branch that was not taken, or for a callback
// (which this calls).
std::optional<std::string> format_debug(InterpreterImpl& in, const DebugFormat& f,
                                        std::span<const Array> values);

// vmap's checks of a debug_print it batches (gate_batched: whether the
// branch-taken operand varies over the batch): JAX's errors for an ordered
// io_callback and for an io_callback in a cond whose predicate is batched.
void check_debug_batching(const DebugFormat& f, bool gate_batched);
// A print in a cond branch (its last operand the branch's gate) as one that
// prints unconditionally: what vmap makes of it when the predicate is
// batched, as JAX's select runs every branch for every example. Null for a
// print without a gate.
std::shared_ptr<const DebugFormat> without_gate(const DebugFormat& f);

// The prints an eager shard_map's run recorded, one per device, as JAX's
// eager rule prints them: each operand is a list of blocks, one per
// combination of the mesh axes it varies over, and the lists are zipped, so
// a statement prints as many times as its least varying operand has blocks
// (a print of no operands not at all), with each operand's k-th block.
void zip_eager_blocks(const Mesh& mesh, std::vector<DebugRecord>& recs);

// Whether `f` is a jax.debug.print or callback (not a checkify check) that
// prints wherever it runs (not gated by a cond's branch).
bool is_ungated_print(const DebugFormat& f);

// Whether `f` is an io_callback without results; `ordered` says whether it
// is an ordered one.
bool is_io_callback(const DebugFormat& f, bool& ordered);

} // namespace pxl
