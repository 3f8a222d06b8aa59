// make_jaxpr(f)(*args).eqns: pxl's IR of the call read as JAX's jaxpr
// equations (stdlib/jax_rest.pxl builds the JaxprEqn objects).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/function.hpp"
#include "ir/tensor.hpp"
#include "lang/value.hpp"

namespace pxl {

struct JaxprRecord; // lang/jaxpr_record.hpp
struct JaxprRegion;

// A list of (primitive name, params dict, [input avals], [output avals]) per
// equation, avals as `aval_value` makes them. The IR's steps that JAX's
// jaxprs leave implicit are left out: the conversion of a scalar constant
// (a literal in a jaxpr) and the broadcasting that jnp's binary ops do (JAX's
// binary primitives take rank-0 operands and stretch unit dimensions, so only
// jnp's rank promotion shows: a broadcast to the shape with leading 1s).
// Which instructions are JAX equations and how the others' values print.
struct JaxprReading {
  std::vector<const Instr*> eqns; // in order
  // Per value id: the value it prints as (a skipped scalar broadcast's operand).
  std::vector<int> stands_for;
  // Per value id: a literal (a scalar constant, or a scalar constant's skipped
  // conversion, whose source converted_from names).
  std::vector<bool> literal;
  std::map<int, int> converted_from;
  // Per value id: the type it prints with where it differs from the IR's (a
  // rank promotion's result, f32[1,4] where the IR broadcasts to f32[3,4]).
  std::map<int, AVal> retyped;
  // Per instruction index: the primitive it shows as where that is not its
  // op's (a mul by a reciprocal as div, a same-type bitcast as stop_gradient).
  std::map<size_t, std::string> prim;
};
// `roots`: values needed besides fn's results; `bound`: scalar constants that
// stand for a sub-jaxpr's parameters (not literals there); `constants`: the
// values of fn.consts, where known.
JaxprReading read_jaxpr(const Function& fn, const std::vector<int>& roots = {},
                        const std::vector<int>& bound = {},
                        const std::vector<Tensor>* constants = nullptr);

// An expand_dims (a reshape that only inserts unit dimensions, attrs.perm,
// np_internal.hpp's expand_dims_at): JAX's broadcast_in_dim, whose
// broadcast_dimensions this gives.
bool is_expand(const Instr& i);
std::vector<int64_t> expand_broadcast_dims(const OpAttrs& a);

// make_jaxpr's top-level equations in order: an instruction of fn, or a
// region of the record (with its operands and results, value ids).
struct JaxprTopEqn {
  const Instr* instr = nullptr;
  const JaxprRegion* region = nullptr;
  std::string prim;
  bool renamed = false; // prim is not the op's own (JaxprReading::prim): no params
  std::vector<int> ins, outs;
  // An SPMD call: its operands' positions in the shard_map equation's order
  // (ins holds those operands).
  std::vector<size_t> spmd_operands;
};
struct JaxprView; // stdlib/jaxpr_view.hpp
// (The equations point into `shown`.)
std::vector<JaxprTopEqn> jaxpr_top_eqns(const JaxprView& shown, const std::vector<Tensor>& consts);

// `consts`: the values of fn.consts.
Value jaxpr_eqns(const Function& fn, const std::vector<Tensor>& consts, const JaxprRecord* record,
                 const std::function<Value(const AVal&)>& aval_value);

// JAX's text of the jaxpr (core.pp_jaxpr at width 80): `{ lambda ; a:f32[]. let
// b:f32[] = sin a in (b,) }`; `consts` are the values of fn.consts. With a
// record (make_jaxpr's), nested jit, cond and scan print as JAX's equations.
std::string jaxpr_text(const Function& fn, const std::vector<Tensor>& consts,
                       const JaxprRecord* record = nullptr);

} // namespace pxl
