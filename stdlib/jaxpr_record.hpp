// Recording JAX's structure while make_jaxpr traces (lang/jaxpr_record.hpp):
// the region calls jit makes, and the lax._jaxpr_* marks for lax_loops.pxl.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/function.hpp"
#include "ir/tensor.hpp"
#include "lang/value.hpp"

namespace pxl {

class TraceContext;
struct JaxprRecord;
struct JaxprRegion;
struct BatchLanding; // stdlib/transforms.hpp

// Opens a region for primitive `prim` at the trace's current instruction, with
// the equation's operands (value ids); returns its index. tc.jaxpr_record set.
int jaxpr_begin_region(TraceContext& tc, std::string prim, std::vector<int> inputs,
                       std::vector<std::pair<std::string, std::string>> params);
// Opens the region of an equation (jit, checkpoint) whose body takes
// `operands` as its parameters: each operand is replaced by a fresh copy
// (jaxpr_fresh_copy) that the body uses, recorded as the region's invars.
int jaxpr_begin_body(TraceContext& tc, std::string prim,
                     std::vector<std::pair<std::string, std::string>> params,
                     std::vector<Tensor>& operands);
// Closes `region` (and any region an error left open inside it) with the
// equation's results.
void jaxpr_end_region(TraceContext& tc, int region, std::vector<int> outputs);

// A jit's operand `operand` as the caller passed it (`passed`): a Python
// float prints as itself, as JAX's literal holds it. tc.jaxpr_record set.
void jaxpr_note_passed(TraceContext& tc, const Value& passed, const Tensor& operand);

// A scatter's update_jaxpr param, `{ lambda ; a:f32[] b:f32[]. let c:f32[] =
// OP a b in (c,) }`, as a placeholder that the printer fills with fresh names
// (after the equation's binders, as JAX names them).
std::string jaxpr_binary_update_param(const std::string& op, DType dtype);
// Such a placeholder's OP and short type name ("f32"); false for other params.
bool read_binary_update_param(const std::string& v, std::string& op, std::string& type);

// JAX's copy of a traced array (lax._array_copy: jnp.array, x.copy()): a
// `copy` equation under make_jaxpr, else `t` itself (arrays are immutable).
Tensor jaxpr_copy(InterpreterImpl& in, const Tensor& t);

// A new value equal to `t` (a hidden copy): what a sub-jaxpr's parameter
// stands for, told apart from other uses of `t` in the same body.
Tensor jaxpr_fresh_copy(TraceContext& tc, const Tensor& t);

// dot_general takes operands of different dtypes in JAX; pxl converts them
// first. Under make_jaxpr the conversions (the instructions from `begin` on)
// are hidden and each converted operand prints as the original, so the
// jaxpr shows JAX's one dot_general. Does nothing when not recording.
void jaxpr_hide_operand_converts(OpContext& cx, size_t begin,
                                 const std::vector<std::pair<Tensor, Tensor>>& converted);
// Where the next instruction goes (for jaxpr_hide_operand_converts); 0 when not tracing.
size_t jaxpr_body_size(OpContext& cx);

// Carries the record `inner` of function f over to the recording trace tc,
// nested in its innermost open region, for an evaluation of f that put f's
// instruction k at [after[k-1], after[k]) of tc's body (from `start`): the
// regions, hidden steps, aliases and reverse mode's notes, their values
// through `id` (f's value -> tc's value id, -1 for none). A region `keep`
// refuses is dropped with everything inside it (its instructions print flat).
// Regions the evaluation recorded itself (from index `regions_before` on) are
// nested in the carried region around them.
void carry_jaxpr_record(TraceContext& tc, const Function& f, const JaxprRecord& inner, size_t start,
                        const std::vector<size_t>& after, const std::function<int(int)>& id,
                        const std::function<bool(const JaxprRegion&)>& keep, size_t regions_before);

// carry_jaxpr_record for f's batched evaluation (vmap, batch_function with
// `landing`): JAX's structure under vmap (a jit stays a jit, a sort a sort
// along its shifted dimension, a cond of a batched index is a select).
void carry_batched_record(TraceContext& tc, const Function& f, JaxprRecord& inner,
                          const BatchLanding& landing, size_t regions_before);

// Inlines `f` (traced with its own record `inner`) into the recording trace
// `tc`, as inline_function does, and carries inner's regions, hidden steps and
// aliases over to tc's record, nested in its innermost open region.
std::vector<Tensor> inline_recorded(TraceContext& tc, const Function& f, const JaxprRecord& inner,
                                    std::span<const Tensor> params, std::span<const Tensor> consts);

// Calls f(in, a) as JAX calls a jnp function it wraps in jit: while make_jaxpr
// records, the call is a jit[name=`name`] equation whose operands are the
// arguments named in `dynamic` (positional i is dynamic[i]; keywords by name)
// that are arrays or numbers (JAX's jit lifts a number to a weak-typed
// operand); the others are static. Otherwise it is just f(in, a).
Value call_as_jitted(InterpreterImpl& in, const std::string& name,
                     const std::vector<std::string>& dynamic, CallArgs& a, const NativeFn& f);

// _jaxpr_jit(name, *dynamic): a decorator making a stdlib function's calls
// call_as_jitted (lax._jaxpr_jit, types._jaxpr_jit).
Value jaxpr_jit_decorator();

void add_jaxpr_record(Value& lax); // lax._jaxpr_* (see stdlib/jaxpr_record.cpp)

} // namespace pxl
