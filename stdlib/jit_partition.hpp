// Partitioning a jitted program over a mesh (what XLA's SPMD partitioner does
// for jax.jit of sharded arrays): from the global Function and the shardings of
// its inputs, a per-device Function that computes each value on its block,
// with the collectives the shardings need (psum after a reduction or a matmul
// over a sharded dimension, all_gather where an op needs a whole dimension).
// Every value gets a sharding by simple propagation rules (elementwise ops keep
// their operands', reductions drop the reduced dimensions, transposes permute,
// matmuls keep batch and free dimensions, reshapes keep a sharded dimension
// when its blocks stay contiguous); the results keep theirs, so the call returns
// arrays sharded as JAX's would be.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "runtime/spmd_call.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

struct PartitionedJit {
  std::shared_ptr<SpmdCallee> callee; // operands: the arguments, then t.consts, then `extra`
  std::vector<Tensor> extra;          // constants the partitioned body captured
};

// The sharding of an operand of a partitioned call: replicated (an unsharded
// array) or its own spec over `mesh`.
using OperandSpecs = std::vector<PartitionSpec>;

// The mesh shared by the operands spread over more than one device: null when
// there is none, and `mixed` set when they lie on different meshes.
const Mesh* operands_mesh(std::span<const Tensor> operands, bool& mixed);
// Each operand's sharding over `mesh` (its own spec there, replicated
// otherwise), and `key` extended with the mesh, its devices and those specs
// (for caching the partitioned program).
OperandSpecs operand_specs(const Mesh& mesh, std::span<const Tensor> operands, std::string& key);

// Whether `f` can be partitioned over `mesh`: no collectives or effects, and
// SPMD calls only of shard_maps over that mesh (which are inlined).
bool partitionable(const Function& f, const Mesh& mesh);
// The mesh of the first shard_map call in `f`, or null.
const Mesh* shard_map_mesh(const Function& f);

// For a program that is not partitioned: the shard_map calls over Explicit
// axes whose operands are `f`'s own inputs (operands: its parameters, then its
// consts) must get them laid out as their in_specs say (JAX 0.10's check).
void check_shard_map_inputs(const Function& f, std::span<const Tensor> operands);

// Builds the partitioned call of `t` for operands (its parameters, then its
// consts) laid out by `specs` over `mesh`. `out_specs`, when given, are the
// shardings the caller wants for the results (jit's out_shardings; an empty
// optional entry leaves a result as propagated). `eager_op`: `t` is one eager
// op (stdlib/eager_sharded.cpp), whose slices lay out their results as JAX's
// eager dispatch does. `typed`: the values' types carry the mesh's Explicit
// shardings (false where jit's in_shardings placed arguments traced as
// unsharded: then the layouts propagate as over Auto axes, as XLA's do).
PartitionedJit partition_jit(InterpreterImpl& in, const TracedFunction& t, const Mesh& mesh,
                             const OperandSpecs& specs,
                             const std::vector<std::optional<PartitionSpec>>& out_specs,
                             const Span& where, bool eager_op = false, bool typed = true);

// The sharding the partitioner gives value `id` of the function `tc` is still
// tracing, its parameters laid out by `param_specs` over `mesh` and its captured
// constants by their own: what jax.typeof shows inside jit. Nullopt when what
// has been traced so far cannot be partitioned (a loop, a collective).
std::optional<PartitionSpec> traced_sharding(InterpreterImpl& in, TraceContext& tc,
                                             const Mesh& mesh, const OperandSpecs& param_specs,
                                             int id);

// What a trace of a function over `leaves` needs so that jax.typeof inside
// shows shardings: over a mesh whose axes are Explicit (the arguments', else
// the one jax.set_mesh made current), a `prepare` that sets the trace's
// type_sharding hook from the arguments' layouts -- a concrete array's own, a
// value of the enclosing trace as that trace types it, replicated otherwise.
// Empty (no hook) elsewhere and inside shard_map/pmap, whose axes are Manual.
// `key`, when given, is extended with the layouts (they key jit's trace).
// `mapped`, when given, is vmap's axis of each leaf (-1: none): the traced
// function sees one example, whose layout lacks that dimension.
// `placed_on`, when given, is the mesh jit's in_shardings placed the
// arguments on: the types are over it though `leaves` (as passed) are not.
// The hook also sets the trace's layout_sharding (unless `mapped`): the
// shardings the partitioner gives its values, from the arguments' layouts --
// `laid_out`'s where given (the arguments as placed), else `leaves`'.
std::function<void(TraceContext&)>
explicit_type_hook(InterpreterImpl& in, std::span<const Tensor> leaves, std::string* key = nullptr,
                   const std::vector<int>* mapped = nullptr, const Mesh* placed_on = nullptr,
                   std::span<const Tensor> laid_out = {});

} // namespace pxl
