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
// (a literal in a jaxpr) and the broadcast of a scalar that only feeds
// elementwise binary ops (JAX's binary primitives take rank-0 operands).
// Which instructions are JAX equations and how the others' values print.
struct JaxprReading {
  std::vector<const Instr*> eqns; // in order
  // Per value id: the value it prints as (a skipped scalar broadcast's operand).
  std::vector<int> stands_for;
  // Per value id: a literal (a scalar constant, or a scalar constant's skipped
  // conversion, whose source converted_from names).
  std::vector<bool> literal;
  std::map<int, int> converted_from;
};
// `roots`: values needed besides fn's results; `bound`: scalar constants that
// stand for a sub-jaxpr's parameters (not literals there).
JaxprReading read_jaxpr(const Function& fn, const std::vector<int>& roots = {},
                        const std::vector<int>& bound = {});

// make_jaxpr's top-level equations in order: an instruction of fn, or a
// region of the record (with its operands and results, value ids).
struct JaxprTopEqn {
  const Instr* instr = nullptr;
  const JaxprRegion* region = nullptr;
  std::string prim;
  std::vector<int> ins, outs;
};
std::vector<JaxprTopEqn> jaxpr_top_eqns(const Function& fn, const JaxprRecord* record);

Value jaxpr_eqns(const Function& fn, const JaxprRecord* record,
                 const std::function<Value(const AVal&)>& aval_value);

// JAX's text of the jaxpr (core.pp_jaxpr at width 80): `{ lambda ; a:f32[]. let
// b:f32[] = sin a in (b,) }`; `consts` are the values of fn.consts. With a
// record (make_jaxpr's), nested jit, cond and scan print as JAX's equations.
std::string jaxpr_text(const Function& fn, const std::vector<Tensor>& consts,
                       const JaxprRecord* record = nullptr);

} // namespace pxl
