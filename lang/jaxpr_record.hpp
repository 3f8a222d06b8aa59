// make_jaxpr's record of JAX's structure over a traced Function. pxl's IR is
// flat: a nested jit is inlined, a cond traces its branches and selects, a
// scan unrolls or loops. JAX's jaxprs nest instead (`jit[jaxpr={...}]`,
// `cond[branches=(...)]`, `scan[jaxpr={...}]`). While make_jaxpr traces, the
// code that builds those constructs marks where each begins and ends in the
// Function's body (instructions are appended in program order), which of its
// values are the construct's operands and results, and which instructions are
// pxl's own plumbing that JAX's equation does not show (a cond's selection, a
// scan's later steps). stdlib/jaxpr_print.cpp prints the Function through it.
// Recording changes nothing that is computed.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pxl {

struct JaxprRegion {
  // The equation's primitive ("jit", "cond", "scan", "while") or, for the
  // parts of one, "part" (a cond branch, a scan body).
  std::string prim;
  // Params printed before the sub-jaxprs (jit's name) and after them (scan's
  // length, num_carry, ...), as JAX's text shows them.
  std::vector<std::pair<std::string, std::string>> params;
  size_t begin = 0, end = 0; // Function::body range [begin, end)
  bool closed = false;
  int parent = -1;          // enclosing region, -1 at the top
  std::vector<int> inputs;  // the equation's operands (value ids)
  std::vector<int> outputs; // its results (value ids)
  // A part: the value ids its jaxpr's parameters stand for (uses of these
  // print as the parameter), and its results.
  std::vector<int> invars;
  std::vector<int> outvars;
  std::vector<int> parts; // a cond's branches, a scan's body (region indices)
  // One primitive of JAX's whose instructions here JAX's jaxpr does not show
  // (jnp.sort's values sort, computed as an argsort and a gather): printed as
  // `prim[params] inputs`, with no sub-jaxpr.
  bool opaque = false;
  // A jit's traced function (its jit cache entry): regions with the same
  // nonempty identity are one jaxpr in JAX, which traces a function once per
  // signature, so make_jaxpr prints it once, `let name = ...`, and names it.
  std::string identity;
};

struct JaxprRecord {
  std::vector<JaxprRegion> regions;
  std::vector<int> open; // the regions being recorded, innermost last
  // Instructions JAX's jaxpr does not show, as [begin, end) ranges.
  std::vector<std::pair<size_t, size_t>> hidden;
  int hide_depth = 0;
  size_t hide_from = 0;
  // A value that prints as another (a branch's gated input as the input).
  std::map<int, int> alias;
  // Reverse mode (stdlib/autodiff.cpp). JAX's grad jaxpr is its linearized
  // function's: every primal equation (a result grad discards prints as `_`),
  // each residual (a value of the primals alone, such as cos x for sin x)
  // right after the primal equation whose rule needs it, then the transposed
  // linear equations, with cotangents summed by add_any. pxl's transpose
  // rules compute residuals in the backward pass: instruction `first` prints
  // right after instruction `second` (in the order listed, where several follow one).
  std::vector<std::pair<size_t, size_t>> moved;
  std::vector<int> kept;       // values shown although nothing uses them
  std::vector<size_t> add_any; // instructions (adds) that print as add_any
  // Python floats passed to a jitted function (value id -> the float): JAX's
  // literal operand holds the float itself and prints its repr.
  std::map<int, double> python_floats;

  int innermost() const { return open.empty() ? -1 : open.back(); }
};

} // namespace pxl
