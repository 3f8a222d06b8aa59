// The array IR: a Function of SSA values. Every value has a static abstract
// type (shape, dtype, weak flag), a vma -- the set of mesh axes it may vary
// over -- and the source location of the .pxl code that produced it.
//
// Text form (printed by `pxl --dump=ir`, parsed back by parse_function):
//
//   func @step(%0: f32[4,3]{batch}, %1: f32[3]) -> (f32[4,3]) mesh(batch=4) {
//     %2 = mul %0, %0 : f32[4,3]{batch}                  # t.pxl:3:12
//     %3 = broadcast_in_dim[shape=(4, 3) axes=[1]] %1 : f32[4,3]
//     %4 = psum[axis_names=(batch)] %2 : f32[4,3]
//     return %4
//   }
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <memory>

#include "ir/op.hpp"
#include "lang/source.hpp"

namespace pxl {

struct Mesh; // runtime/mesh.hpp

// A set of mesh axes, as a bitmask over the function's mesh axis list.
using AxisSet = uint64_t;

struct IRValue {
  AVal aval;
  AxisSet vma = 0;
  // Inside shard_map: the mesh axes over which the value is unreduced (each
  // device holds a partial sum; JAX's aval.mat.unreduced). Never also in vma.
  AxisSet unreduced = 0;
  // Inside shard_map: the mesh axes over which the value is reduced (replicated,
  // typed as the result of a reduction: its cotangent is unreduced there; JAX's
  // aval.mat.reduced). Never also in vma or unreduced.
  AxisSet reduced = 0;
  Span loc;           // where it was created (param: the call site)
  int producer = -1;  // index of the instruction that defines it, -1 for params/consts
  std::string origin; // for vma diagnostics: why it varies ("the in_specs of argument 0")
};

struct Instr {
  Op op;
  OpAttrs attrs;
  std::vector<int> operands;
  int result = -1;
  // Multi-result instructions (spmd_call) define the values result ..
  // result + nresults - 1; every other op has one result.
  int nresults = 1;
};

struct Function {
  std::string name;
  std::vector<std::string> mesh_axes; // the mesh axes in scope (bit i = mesh_axes[i])
  std::vector<int64_t> mesh_sizes;
  std::vector<IRValue> values;
  std::vector<int> params; // value ids of the per-device inputs
  std::vector<int> consts; // value ids of captured constants (replicated inputs)
  std::vector<Instr> body;
  std::vector<int> results;
  // jax.debug.print format strings (debug_print's attrs.axis indexes them) and
  // the keyword names of their arguments (the rest are positional).
  using DebugFormat = pxl::DebugFormat; // ir/op.hpp
  std::vector<DebugFormat> debug_formats;
  // The mesh of the first with_sharding_constraint given a NamedSharding: a
  // jit of unsharded arguments is partitioned over it (runtime/mesh.hpp).
  std::shared_ptr<const Mesh> constraint_mesh;

  int add_value(IRValue v) {
    values.push_back(std::move(v));
    return static_cast<int>(values.size()) - 1;
  }
  int axis_bit(const std::string& name) const; // -1 if not a mesh axis
  std::string axes_str(AxisSet s) const;       // "{batch,model}" or "" when empty
};

std::string type_str(const AVal& a); // "f32[4,3]", "i32[]", "bool[2]"
// JAX's suffix for a value's manual axis types, axes in mesh order:
// "{V:x, U:(y,z), R:w}" (varying, unreduced, reduced), "" when it has none.
std::string mat_suffix(const Function& f, const IRValue& v);
std::string print_function(const Function& f, bool with_locations = true);
// Parses the text form; throws pxl::Error(Syntax) naming the line on bad input.
Function parse_function(const std::string& text);
// Whether `in` must run even when nothing uses its results: debug_print, an
// io_callback (a pure_callback's host_callback is not), and loops and
// custom_calls holding one.
bool has_effect(const Instr& in);
// Drops the instructions whose results no result depends on (effects, such as
// debug_print and loops that print, stay). Every participant drops the same collectives, so an SPMD
// Function stays consistent. Value ids are kept; producers are renumbered.
void remove_dead_code(Function& f);

// Structural check of a Function (operand ids defined before use, types agree
// with the shape rules); returns the first problem or "".
std::string verify_function(const Function& f);

} // namespace pxl
