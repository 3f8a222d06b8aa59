// shard_map inside another shard_map's body, over mesh axes the outer one
// leaves automatic (axis_names=): inlined into the outer body (see
// shard_map_nested.pxl for the layout).
#pragma once
#include <string>
#include <vector>

#include "lang/value.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

class InterpreterImpl;
class TraceContext;

// The shard_map trace whose body is being traced (through jit/grad/vmap
// traces inside it), or nullptr (none, or a pmap is nearer).
TraceContext* enclosing_shard_map(OpContext& cx);

// Calls `fn` on `args` as shard_map(fn, mesh, in_specs, out_specs,
// axis_names=manual) inside `outer`'s body. `manual` empty: every axis the
// outer one leaves automatic. `per_leaf`: the in_specs entry of each argument
// leaf (None for a static one).
Value call_nested_shard_map(InterpreterImpl& in, TraceContext& outer, const Value& fn,
                            const Mesh& mesh, const std::vector<std::string>& manual,
                            const ValueList& per_leaf, const Value& out_specs, bool check_vma,
                            const ValueList& args, const Span& where);

} // namespace pxl
