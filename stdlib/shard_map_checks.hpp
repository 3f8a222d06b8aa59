// shard_map's checks of in_specs and out_specs against the mesh and against the
// values they describe, with JAX 0.10's messages (jax/_src/shard_map.py:
// _check_specs, _check_specs_vs_args, _spec_rank_error,
// _spec_divisibility_error, _inout_vma_error). Leaves are named by key paths
// as JAX's keystr writes them: in_specs[0], args[0]['hi'][0].
#pragma once
#include <string>
#include <vector>

#include "ir/aval.hpp"
#include "lang/value.hpp"
#include "runtime/mesh.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

// keystr of each leaf of `def`, in flattening order: "[0]['hi'][0]".
std::vector<std::string> leaf_key_paths(const TreeDef& def);
// For each leaf of `def`, the key path (in `specs`) of the spec leaf of the
// pytree prefix `specs` that covers it; `is_spec` says what is a spec leaf.
std::vector<std::string> covering_spec_paths(const Value& specs, const TreeDef& def,
                                             bool (*is_spec)(const Value&));

// The function's name as JAX's messages give it ('<lambda>' for a lambda).
std::string shard_map_fun_name(const Value& fn);

// Every leaf of `specs` (in_specs when `input`, else out_specs) is a
// PartitionSpec naming axes of `mesh`, each at most once (JAX's TypeError /
// ValueError / DuplicateSpecError texts).
// `manual`, when not empty, lists the manual axes (shard_map's axis_names):
// the specs may name only those.
void check_spec_tree(InterpreterImpl& in, const Value& specs, bool input, const Mesh& mesh,
                     const Span& where, const std::vector<std::string>& manual = {});

// `prefix` (in_specs or out_specs; `is_spec` says what is a spec leaf) is a
// pytree prefix of `tree`: JAX's "pytree structure error" when a sequence of
// specs and the sequence it describes differ in length.
void check_prefix_structure(const Value& prefix, const Value& tree, const std::string& what,
                            bool (*is_spec)(const Value&), const Span& where);

// One array leaf of shard_map's arguments (or results) and its spec.
struct SpecLeaf {
  PartitionSpec spec;
  AVal aval;
  std::string spec_path; // in the in_specs/out_specs tree
  std::string leaf_path; // in the argument tuple / the result
  std::string mat = "";  // a result's varying axes as JAX's type shows them: "{V:y}"
};

// JAX's _check_specs_vs_args: no spec longer than its argument's rank, then
// every split dimension divisible by its mesh axes.
void check_in_specs_vs_args(const Value& fn, const Mesh& mesh, const std::vector<SpecLeaf>& leaves,
                            const Span& where);
// No out_specs entry longer than its result's rank.
void check_out_specs_rank(const Value& fn, const std::vector<SpecLeaf>& leaves, const Span& where);
// An output whose out_specs leave mesh axes out but which (by its type) may
// vary over them: JAX's "out_specs which require replication" error.
// `varying`: the mesh axes it may vary over; `fun`: the function's name as
// JAX gives it there (see spmd.cpp). Returns the message.
std::string out_vma_message(const std::string& fun, const Mesh& mesh, const SpecLeaf& leaf,
                            const std::vector<std::string>& varying);

// Values the body closes over (eager shard_map): one laid out over a mesh with
// Explicit axes raises JAX's NotImplementedError (its Primitive.bind check),
// unless the shard_map leaves Explicit axes automatic.
void check_closed_over(const std::vector<Tensor>& captured, const Mesh& mesh,
                       const std::vector<std::string>& manual, const Span& where);

} // namespace pxl
