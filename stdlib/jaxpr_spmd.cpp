// What make_jaxpr shows of a shard_map's body (stdlib/jaxpr_spmd.hpp).
#include "stdlib/jaxpr_spmd.hpp"

#include <algorithm>

#include "stdlib/jaxpr_eqns.hpp"

namespace pxl {

std::string py_seq(const std::vector<int64_t>& xs, bool list) {
  std::string s = list ? "[" : "(";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  if (!list && xs.size() == 1) s += ",";
  return s + (list ? "]" : ")");
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

std::string py_tuple_of(const std::vector<std::string>& xs) {
  std::string s = "(";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + xs[i];
  return s + (xs.size() == 1 ? ",)" : ")");
}

std::string quoted_names(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back("'" + n + "'");
  return py_tuple_of(q);
}

std::string axes_tuple(const Function& f, AxisSet s) {
  std::vector<std::string> names;
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    if (s & (AxisSet{1} << i)) names.push_back(f.mesh_axes[i]);
  return quoted_names(names);
}

AxisSet axis_bits(const Function& f, const std::vector<std::string>& names) {
  AxisSet s = 0;
  for (const std::string& n : names)
    if (int b = f.axis_bit(n); b >= 0) s |= AxisSet{1} << b;
  return s;
}

bool is_pvary(const Instr& i) {
  return i.op == Op::Ppermute && std::all_of(i.attrs.pairs.begin(), i.attrs.pairs.end(),
                                             [](const auto& p) { return p.first == p.second; });
}

namespace {
// A collective's axis_name as JAX keeps it: the string the user passed for one
// axis (all_to_all, axis_index), else the tuple.
std::string axis_name_param(const std::vector<std::string>& names) {
  return names.size() == 1 ? names[0] : quoted_names(names);
}
} // namespace

AxisSet SpmdBodyReading::vma(const Function& f, int v) const {
  if (v < 0 || static_cast<size_t>(v) >= f.values.size()) return 0;
  AxisSet extra = static_cast<size_t>(v) < jax_vma.size() ? jax_vma[static_cast<size_t>(v)] : 0;
  return f.values[static_cast<size_t>(v)].vma | extra;
}

SpmdBodyReading read_spmd_body(const Function& fn) {
  SpmdBodyReading r;
  r.jax_vma.assign(fn.values.size(), 0);
  std::vector<int> uses_of(fn.values.size(), 0);
  for (const Instr& i : fn.body)
    for (int o : i.operands) ++uses_of[static_cast<size_t>(o)];
  for (size_t k = 0; k < fn.body.size(); ++k) {
    const Instr& i = fn.body[k];
    AxisSet extra = 0;
    for (int o : i.operands) extra |= r.vma(fn, o);
    const AxisSet named = axis_bits(fn, i.attrs.axis_names);
    if (i.op == Op::AllGather && i.attrs.index_groups.empty()) extra |= named;
    if (i.op == Op::Psum || i.op == Op::Pmax || i.op == Op::Pmin) extra &= ~named;
    for (int n = 0; n < i.nresults; ++n)
      r.jax_vma[static_cast<size_t>(i.result + n)] =
          extra & ~fn.values[static_cast<size_t>(i.result + n)].vma;
    // stdlib/collectives.cpp's untiled all_to_all: expand_dims, all_to_all, squeeze.
    if (i.op != Op::AllToAll || i.operands.size() != 1 || k + 1 >= fn.body.size()) continue;
    const int x = i.operands[0];
    const int producer = fn.values[static_cast<size_t>(x)].producer;
    const Instr& sq = fn.body[k + 1];
    if (producer < 0 || uses_of[static_cast<size_t>(x)] != 1 ||
        uses_of[static_cast<size_t>(i.result)] != 1 || sq.op != Op::Reshape ||
        sq.operands != std::vector<int>{i.result} ||
        sq.attrs.axes != std::vector<int64_t>{i.attrs.axis})
      continue;
    const Instr& ex = fn.body[static_cast<size_t>(producer)];
    if (!is_expand(ex) || expand_broadcast_dims(ex.attrs).size() + 1 !=
                              static_cast<size_t>(fn.values[static_cast<size_t>(x)].aval.ndim()))
      continue;
    r.untiled_all_to_all[k] = {ex.operands[0], sq.result};
    r.folded.insert(static_cast<size_t>(producer));
    r.folded.insert(k + 1);
  }
  return r;
}

JaxprParams untiled_all_to_all_params(const Instr& i) {
  // The untiled form expanded at the concat axis (moved past the split axis
  // when after it) and split past the new axis (stdlib/collectives.cpp).
  const int64_t c1 = i.attrs.concat_axis, s1 = i.attrs.axis;
  const int64_t split = s1 > c1 ? s1 - 1 : s1, concat = c1 > split ? c1 - 1 : c1;
  return {{"axis_index_groups", "None"},
          {"axis_name", axis_name_param(i.attrs.axis_names)},
          {"concat_axis", std::to_string(concat)},
          {"split_axis", std::to_string(split)},
          {"tiled", "False"}};
}

JaxprParams collective_params(const Instr& i, bool check_vma, std::string& prim) {
  const OpAttrs& a = i.attrs;
  const std::string names = quoted_names(a.axis_names);
  std::string groups = "None";
  if (!a.index_groups.empty()) {
    std::vector<std::string> gs;
    for (const auto& g : a.index_groups) gs.push_back(py_seq(g));
    groups = py_tuple_of(gs);
  }
  const std::string size = std::to_string(a.group_size);
  JaxprParams p;
  switch (i.op) {
  case Op::Psum:
    // Where vma is checked, psum binds psum_invariant (no axis_index_groups).
    if (check_vma && a.index_groups.empty()) {
      prim = "psum_invariant";
      p = {{"axes", names}};
    } else {
      p = {{"axes", names}, {"axis_index_groups", groups}};
    }
    break;
  case Op::Pmax:
  case Op::Pmin:
    p = {{"axes", names}, {"axis_index_groups", groups}};
    break;
  case Op::AllGather:
    p = {{"all_gather_dimension", std::to_string(a.axis)},
         {"axis_index_groups", groups},
         {"axis_name", names},
         {"axis_size", size},
         {"tiled", py_bool(a.tiled)}};
    break;
  case Op::PsumScatter:
    prim = "reduce_scatter";
    p = {{"axis_index_groups", groups},
         {"axis_name", names},
         {"axis_size", size},
         {"scatter_dimension", std::to_string(a.axis)},
         {"tiled", py_bool(a.tiled)}};
    break;
  case Op::Ppermute: {
    if (is_pvary(i)) {
      prim = "pvary";
      p = {{"axes", names}};
      break;
    }
    std::vector<std::string> perm;
    for (auto [src, dst] : a.pairs) perm.push_back(py_seq({src, dst}));
    p = {{"axis_name", names}, {"perm", py_tuple_of(perm)}};
    break;
  }
  case Op::AllToAll:
    p = {{"axis_index_groups", groups},
         {"axis_name", axis_name_param(a.axis_names)},
         {"concat_axis", std::to_string(a.concat_axis)},
         {"split_axis", std::to_string(a.axis)},
         {"tiled", "True"}};
    break;
  case Op::AxisIndex:
    p = {{"axis_name", axis_name_param(a.axis_names)}};
    break;
  default:
    break;
  }
  return p;
}

} // namespace pxl
