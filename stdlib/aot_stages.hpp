// Ahead-of-time stages (JAX's jax.stages): `f.lower(*args)` gives a Lowered
// for the arguments' types, `.compile()` a Compiled that checks each call's
// arguments against them (JAX's TypeErrors) and then calls `f`.
#pragma once
#include <string>
#include <vector>

#include "ir/function.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

struct StagedCall {
  Value fn;                           // the transformed function a Compiled calls
  TreeDef in_tree;                    // of (args, kwargs), as JAX's in_tree
  std::vector<AVal> in_avals;         // one per leaf of in_tree
  std::vector<std::string> arg_names; // one per leaf, as JAX's errors name them
  std::string text;                   // the traced program, for as_text()/compiler_ir()
  Value attrs;                        // a dict of further attributes (out_info, ...), or None
};

// The TreeDef of (args, kwargs) and the leaves' types, as lower() records them.
void stage_arguments(InterpreterImpl& in, const CallArgs& a, const Span& where, StagedCall& s);
Value make_lowered(StagedCall s);

// types._lowered(fn, args, kwargs, arg_names, attrs): a Lowered staged by pxl
// code (jit's stages, stdlib/jax_rest.pxl) for arguments (args, kwargs).
Value lowered_builtin(InterpreterImpl& in, CallArgs& a);

} // namespace pxl
