// JAX's sharding-in-types rules for meshes whose axes are Explicit (the kind
// jax.make_mesh makes): the sharding of an op's result is part of its type,
// computed from its operands' by a rule per primitive, and an op whose result
// sharding would be ambiguous is a ShardingTypeError instead of a silent
// reshard. The jit partitioner (stdlib/jit_partition.cpp) lays each value out
// as these rules say; over Auto axes it propagates as XLA does instead.
#pragma once
#include <string>
#include <vector>

#include "ir/aval.hpp"
#include "lang/diag.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

using Axes = std::vector<std::string>;
using DimSpec = std::vector<Axes>; // one entry per dimension; empty = whole

// Whether sharding is part of the type on `mesh`: every axis is Explicit.
bool explicit_mesh(const Mesh& mesh);
// Whether some axis of `mesh` is Explicit (a type's sharding may name it).
bool any_explicit_axis(const Mesh& mesh);
// `spec` with only the Explicit axes of `mesh` left: the part of a layout that
// is the type's (JAX's modify_spec_for_auto_manual).
PartitionSpec explicit_part(const PartitionSpec& spec, const Mesh& mesh);

// Mesh axes as JAX's types name them: "x", or "(x,y)" for several.
std::string axes_label(const Axes& axes);

// A value's type as JAX's errors print it: float32[8@x,4@(y,z)] (`short_dtype`:
// f32[8@x,4]).
std::string sharded_type_str(const AVal& aval, const DimSpec& spec, bool short_dtype = false);

// Each rule returns the result's sharding or throws JAX's ShardingTypeError
// text as an ErrCode::Spec error at `loc`.

// An elementwise op of same-rank operands (lax.broadcasting_sharding_rule; a
// result split twice over one axis is an error).
DimSpec explicit_elementwise(const std::string& op, const std::vector<AVal>& avals,
                             const std::vector<DimSpec>& specs, const Span& loc);
// One mesh axis can split only one dimension of `op`'s result (typed `spec`).
void explicit_result_check(const std::string& op, const std::vector<AVal>& avals,
                           const std::vector<DimSpec>& specs, const AVal& result,
                           const DimSpec& spec, const Span& loc);
// lax.reshape to `new_sizes` (lax._reshape_sharding_rule).
DimSpec explicit_reshape(const AVal& operand, const DimSpec& spec, const Shape& new_sizes,
                         const Mesh& mesh, const Span& loc);
// dot_general: the contracting dimensions may be split on one side only.
void explicit_dot_check(const DimSpec& lhs_contracting, const DimSpec& rhs_contracting,
                        const DimSpec& lhs_batch, const DimSpec& rhs_batch, const Span& loc);
// cumsum and the other cumulative reductions: the scanned axis must be whole.
void explicit_scan_check(const AVal& operand, const DimSpec& spec, int64_t axis, const Span& loc);

// The type's sharding as JAX's errors print it: NamedSharding(mesh=
// AbstractMesh('x': 2, axis_types=(Explicit,), device_kind=cpu, ...), spec=P('x', None)).
std::string abstract_sharding_str(const Mesh& mesh, const DimSpec& spec,
                                  const std::string& platform);

// slice and pad (lax's _get_sharding_for_varying_out_shape; `what` is
// "slicing" or "padding"): a split dimension whose size changes must still
// divide by its axes; the result keeps the operand's sharding.
void explicit_varying_shape_check(const std::string& what, const AVal& operand, const DimSpec& spec,
                                  const Shape& out_shape, const Mesh& mesh, const Span& loc);
// gather from / scatter into a dimension that is split (JAX's gather rule
// cannot type the result): JAX's ShardingTypeError asking for out_sharding=.
// `indices` is the shape of JAX's index array.
[[noreturn]] void explicit_gather_error(const AVal& operand, const DimSpec& spec,
                                        const Shape& indices, const Span& loc);
[[noreturn]] void explicit_scatter_error(const AVal& operand, const DimSpec& spec,
                                         const Shape& indices, const AVal& updates,
                                         const DimSpec& updates_spec, const Span& loc);
// concatenate ("concatenate") and select ("select", operands in select_n's
// order: on_false, on_true): every split operand typed alike.
void explicit_same_sharding(const std::string& op, const std::vector<DimSpec>& specs,
                            const Mesh& mesh, const std::string& platform, const Span& loc);

// shard_map over Explicit axes: an argument whose type's sharding is `have`
// must already be laid out as its in_specs entry `want` says (JAX 0.10 does not
// reshard; a plain array is replicated, P(None, ...)); else JAX's ValueError.
// `have_unreduced`: the axes the argument is unreduced over (partial sums),
// which must be the entry's unreduced= set.
void explicit_in_spec_check(const PartitionSpec& want, const DimSpec& have, const AVal& aval,
                            const Span& loc, const std::vector<std::string>& have_unreduced = {},
                            const std::vector<std::string>& have_reduced = {});

} // namespace pxl
