// The checks JAX makes of where a jit call's arrays live before it runs
// (pjit._resolve_in_shardings and pxla._get_and_check_device_assignment):
// shardings given to jit against the arguments' own, and every device
// assignment involved (committed arguments, in/out shardings, the context
// mesh) against each other.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lang/interp_impl.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

struct JitCallPlacement {
  std::string fun_name;               // as JAX names the function in its messages
  std::vector<std::string> arg_names; // one per argument (positional, then keywords)
  ValueList args;                     // the dynamic arguments, before in_shardings places them
  size_t n_positional = 0;            // in_shardings covers these
  Value in_shardings, out_shardings;  // None when not given
};

// Over Auto axes a result's sharding is XLA's (P('x',): trailing whole
// dimensions and size-1 axes dropped), except that JAX names a result laid out
// as its first sharded argument by that argument's NamedSharding as written
// (P('x', None)): pxla's _get_out_sharding_from_orig_sharding, for jit calls
// and eager ops alike.
void name_like_first_argument(std::vector<Tensor>& results, std::span<const Tensor> params);

// `array` (laid out as `sharding` says) with `sharding`'s spec as written
// (P(None, None) rather than P()): jit's results of explicit out_shardings.
Value named_as(const Value& array, const Value& sharding);

// The results of a call whose first sharded argument lives on a one-device
// mesh keep a NamedSharding over that mesh (as that argument's spec when of
// its rank, else replicated), as in JAX; `out` itself otherwise.
Value keep_one_device_mesh(InterpreterImpl& in, std::span<const Tensor> params, const Value& out);

// Under jax.set_mesh JAX commits the arrays it makes to the current mesh,
// replicated: `t` so laid out, its spec P() for what JAX places as device_put
// does (jnp.array, x.copy(); `computed` false) or over a mesh without
// Explicit axes, else P(None, ...) naming every dimension (what a computation
// gives: eager ops, jnp.zeros, jit results). Nullopt when no mesh is set or
// `t` is traced (stdlib/eager_sharded.cpp).
std::optional<Tensor> on_current_mesh(InterpreterImpl& in, const Tensor& t, bool computed);

// on_current_mesh of each uncommitted array leaf of `out` on the default
// device (a jit call's or a creation function's results, which JAX commits
// to the jax.set_mesh mesh).
Value results_on_current_mesh(InterpreterImpl& in, const Value& out, bool computed = true);

// JAX's error for an eager grad over arrays laid out over a mesh with
// Explicit axes outside jax.set_mesh: its cotangent seed, typed over that
// mesh, would lie on one device ("Length of device assignment 1 is not equal
// to the size of the mesh 2 of aval f32[]({Explicit: ('x',)}). ..."). `out`
// is the function's (scalar) output.
void check_grad_mesh(InterpreterImpl& in, std::span<const Tensor> params, const AVal& out);

// JAX's jax.Array.committed: placed on purpose (ArrayObj::committed), laid out
// over a mesh, or on a device other than the default one.
bool array_committed(const Value& array);

// JAX's errors for a spec naming an axis `mesh` lacks ("Resource axis: x of
// P('x',) is not found in mesh: ('z',).") or one axis twice ("A single
// in_shardings specification can map ..."; `what` names the specification).
void check_spec_names(const Mesh& mesh, const PartitionSpec& spec, const std::string& what);
// JAX's error for a sharding of more dimensions than the value it annotates
// ("One of pjit arguments with pytree key path x is incompatible ...";
// `which`: "pjit arguments with pytree key path x", "with_sharding_constraint arguments").
void check_sharding_rank(const std::string& which, const std::string& sharding_repr,
                         const PartitionSpec& spec, int rank);

// check_sharding_rank of each result of a jit call against its out_shardings leaf.
void check_out_sharding_ranks(InterpreterImpl& in, const Value& out_shardings, const Value& out);

// JAX's TypeError when a leaf of jit's `what` (in_shardings/out_shardings) is
// neither a Sharding, a PartitionSpec nor None.
void check_sharding_leaves(InterpreterImpl& in, const Value& shardings, const char* what);
// JAX's RuntimeError when `shardings` holds a PartitionSpec and no mesh is in
// context (`api`: "jit" or "pjit").
void check_specs_have_mesh(InterpreterImpl& in, const Value& shardings, const char* what,
                           const std::string& api);
// JAX's ValueErrors of a call whose arrays cannot run together.
void check_jit_placement(InterpreterImpl& in, const JitCallPlacement& c);

} // namespace pxl
