// lax.while_loop with a traced predicate as one IR instruction (Op::While):
// the loop's cond and body are Functions of their own, held by the
// instruction like an spmd_call holds its callee. The carry is the
// instruction's trailing operands and all of its results.
//
// Text form (print_function prints the sub-Functions after the caller):
//
//   %4, %5 = while[cond=@cond body=@body cond_nconsts=0 body_nconsts=1] %1, %2, %3 : i32[], f32[3]
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/function.hpp"
#include "runtime/exec_mode.hpp"

namespace pxl {

class CodeCache;
struct WhileExecutables; // runtime/while_loop.cpp: the sub-Functions compiled per layout
struct JaxprRecord;      // lang/jaxpr_record.hpp

struct WhileLoop {
  // cond: (cond constants..., carry...) -> bool[]; body: (body constants...,
  // carry...) -> carry. Values they capture are their leading parameters
  // (neither has consts of its own); they share the caller's mesh axes.
  std::shared_ptr<const Function> cond, body;
  int cond_nconsts = 0, body_nconsts = 0;
  // How the runtime compiles them: the interpreter's --exec mode and code cache.
  ExecMode mode = ExecMode::Interp;
  CodeCache* cache = nullptr;
  std::shared_ptr<WhileExecutables> exes; // made with the loop, filled on first run
  // Where the jax.debug.print formats of cond and body start in the caller's
  // Function::debug_formats (copied there when the loop is traced): their
  // records are renumbered into the caller's table as the loop runs.
  int cond_format_base = 0, body_format_base = 0;
  // The number of iterations when it is known while tracing (a scan, a
  // fori_loop with static bounds), else -1: reverse mode transposes such a
  // loop (stdlib/autodiff_loops.cpp).
  int64_t trip_count = -1;
  // make_jaxpr's records of cond and body (what JAX's jaxpr shows of them),
  // null when not traced by make_jaxpr; nothing computed reads them.
  std::shared_ptr<const JaxprRecord> cond_record, body_record;
  size_t ncarry() const { return body->results.size(); }
};

// A loop over `cond` and `body` (whose consts must already be parameters),
// compiled with `mode` on first use (defined in runtime/while_loop.cpp).
std::shared_ptr<WhileLoop> make_while_loop(std::shared_ptr<const Function> cond,
                                           std::shared_ptr<const Function> body, int cond_nconsts,
                                           int body_nconsts, ExecMode mode = ExecMode::Interp,
                                           CodeCache* cache = nullptr);

// while's shape rule: the carry's types, after checking that the operands fit
// the sub-Functions' parameters, cond returns a bool scalar and body returns
// the carry's types.
std::vector<AVal> infer_while(const OpAttrs& attrs, std::span<const AVal> inputs);
// while's attributes as IR text without the sub-Functions' names:
// "cond_nconsts=1 body_nconsts=0".
std::string while_attrs_str(const WhileLoop& w);

// Whether running `f` needs the other participants: collectives, in `f` or in
// the loops it runs. Such a loop's predicate must agree on every participant.
bool has_collectives(const Function& f);

} // namespace pxl
