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
  Value fn;                   // the transformed function a Compiled calls
  TreeDef in_tree;            // of (args, kwargs), as JAX's in_tree
  std::vector<AVal> in_avals; // one per leaf of in_tree
  std::string arg_prefix;     // the leaves' names in messages: "flat_args" (pmap)
  std::string text;           // the traced program, for as_text()/compiler_ir()
};

// The TreeDef of (args, kwargs) and the leaves' types, as lower() records them.
void stage_arguments(InterpreterImpl& in, const CallArgs& a, const Span& where, StagedCall& s);
Value make_lowered(StagedCall s);

} // namespace pxl
