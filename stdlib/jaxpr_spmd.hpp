// What make_jaxpr shows of a shard_map's body where JAX's jaxpr says it
// differently from pxl's IR (stdlib/jaxpr_print.cpp lays it out): JAX's
// varying axes, its untiled all_to_all, and its collectives' primitives and
// params. Also the Python-style text of params that both use.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/function.hpp"

namespace pxl {

using JaxprParams = std::vector<std::pair<std::string, std::string>>;

// Python's str of a tuple (list) of ints: "(0,)", "(0, 1)", "()" ("[0, 1]").
std::string py_seq(const std::vector<int64_t>& xs, bool list = false);
const char* py_bool(bool b);
// Python's str of a tuple of already printed items: "('x',)", "(a, b)".
std::string py_tuple_of(const std::vector<std::string>& xs);
// A tuple of quoted names: "('x', 'y')".
std::string quoted_names(const std::vector<std::string>& names);
// The axes of `s` (bit i: f.mesh_axes[i]) in mesh order, as a tuple.
std::string axes_tuple(const Function& f, AxisSet s);
AxisSet axis_bits(const Function& f, const std::vector<std::string>& names);
// lax.pcast(to='varying') (JAX's pvary) is bound as the identity ppermute.
bool is_pvary(const Instr& i);

struct SpmdBodyReading {
  // Per value: the axes JAX's type adds to pxl's vma (JAX types all_gather's
  // result as varying over its axes; pxl types it invariant, DESIGN.md).
  std::vector<AxisSet> jax_vma;
  // JAX's untiled all_to_all, which pxl traces as an expand_dims, the tiled
  // all_to_all and a squeeze: the all_to_all's index -> (its operand before
  // the expand, the squeeze's result); `folded`: the other two, not shown.
  std::map<size_t, std::pair<int, int>> untiled_all_to_all;
  std::set<size_t> folded;
  AxisSet vma(const Function& f, int v) const;
};
SpmdBodyReading read_spmd_body(const Function& f);

// A collective as JAX binds it: `prim` is set where JAX's primitive is not
// pxl's op's name (psum_invariant where vma is checked, reduce_scatter,
// pvary); the params sorted.
JaxprParams collective_params(const Instr& i, bool check_vma, std::string& prim);
// An untiled all_to_all's params (the axes as the user gave them).
JaxprParams untiled_all_to_all_params(const Instr& i);

} // namespace pxl
