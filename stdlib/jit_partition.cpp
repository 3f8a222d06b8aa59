// The jit partitioner (see jit_partition.hpp). The global Function is walked
// once; each value is bound in a shard_map-like trace on its block, together
// with the sharding it has (one list of mesh axes per dimension). An op whose
// rule needs its operands laid out differently reshards them: all_gather to
// make a dimension whole, a local take of this device's block to split one.
#include "stdlib/jit_partition.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

#include <algorithm>

#include "ir/custom_call.hpp"
#include "lang/tracer.hpp"
#include "runtime/platform.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/debug_print.hpp"
#include "stdlib/np.hpp"

namespace pxl {

namespace {

DimSpec dims_of_spec(const PartitionSpec& s, size_t ndim) {
  DimSpec d(ndim);
  for (size_t i = 0; i < s.entries.size() && i < ndim; ++i) d[i] = s.entries[i];
  return d;
}

// JAX's form of a result's sharding: over Auto axes, XLA's (axes of size 1,
// which split nothing, and trailing whole dimensions dropped); over Explicit
// axes the sharding is part of the type and names every dimension (P('x', None)).
PartitionSpec spec_of_dims(DimSpec d, const Mesh& mesh) {
  if (!any_explicit_axis(mesh))
    for (Axes& e : d)
      std::erase_if(e, [&](const std::string& a) { return mesh.axis_size(a) == 1; });
  while (!any_explicit_axis(mesh) && !d.empty() && d.back().empty()) d.pop_back();
  PartitionSpec s;
  s.entries = std::move(d);
  return s;
}

bool uses_axis(const DimSpec& s, const std::string& axis) {
  for (const Axes& e : s)
    if (std::find(e.begin(), e.end(), axis) != e.end()) return true;
  return false;
}

class Partitioner {
public:
  // `eager`: the program is one eager op (JAX dispatches those as a jit of the
  // primitive, whose slices do not keep the sliced dimensions split).
  Partitioner(const Function& g, const Mesh& mesh, TraceContext& tc, bool eager,
              std::string platform, bool typed)
      : g_(g), mesh_(mesh), tc_(tc), eager_(eager), explicit_(typed && explicit_mesh(mesh)),
        platform_(std::move(platform)), env_(g.values.size()), recreatable_(g.values.size(), false),
        constrained_(g.values.size(), nullptr), constrained_ur_(g.values.size(), nullptr) {
    // A value whose first use constrains its layout (out_sharding=) is typed by
    // that constraint: JAX's ops take the result's sharding as a parameter.
    for (const Instr& i : g.body)
      if (i.op == Op::ShardingConstraint && !constrained_[i.operands[0]]) {
        constrained_[i.operands[0]] = &i.attrs.dim_axes;
        if (i.attrs.concat_axis == 0) constrained_ur_[i.operands[0]] = &i.attrs.unreduced;
      }
  }

  struct Local {
    Tensor t;
    DimSpec spec;
    // A shard_map's result with unreduced out_specs: per device a partial
    // sum over these axes. Any use sums them first (reshard); a jit result
    // keeps them (its sharding then names them).
    Axes unreduced = {};
    // Reduced over these axes (an argument or a shard_map result so typed):
    // replicated data, the type JAX gives it. Ops other than a shard_map's
    // in_specs drop it (pxl types only those: a gap).
    Axes reduced = {};
  };

  Shape local_shape(const Shape& global, const DimSpec& s) const {
    Shape out = global;
    for (size_t d = 0; d < s.size(); ++d) out[d] /= parts(s[d]);
    return out;
  }

  AxisSet vma_of(const DimSpec& s) const {
    AxisSet v = 0;
    for (const Axes& e : s)
      for (const std::string& a : e) v |= AxisSet{1} << tc_.function().axis_bit(a);
    return v;
  }

  void set_input(int gid, const DimSpec& spec, const Span& loc, const std::string& origin,
                 const Axes& unreduced = {}, const Axes& reduced = {}) {
    AVal block = g_.values[gid].aval;
    block.shape = local_shape(block.shape, spec);
    env_[gid] = {tc_.add_param(block, vma_of(spec), loc, origin), spec, unreduced, reduced};
  }

  void run(const Instr& ins) {
    LocScope loc(tc_, g_.values[ins.result].loc);
    // (a shard_map and a sharding constraint may take the partial sums)
    if (op_family(ins.op) != OpFamily::Call && ins.op != Op::ShardingConstraint)
      for (int o : ins.operands)
        if (!env_[o].unreduced.empty()) env_[o] = {reshard(o, env_[o].spec), env_[o].spec, {}};
    Op op = ins.op;
    if (op == Op::ShardingConstraint) return constrain(ins);
    if (is_elementwise(op)) return elementwise(ins);
    switch (op_family(op)) {
    case OpFamily::Reduce:
      return reduce(ins);
    case OpFamily::Dot:
      return dot(ins);
    case OpFamily::Scan:
      if (explicit_)
        explicit_scan_check(g_.values[ins.operands[0]].aval, env_[ins.operands[0]].spec,
                            ins.attrs.axis, loc_of(ins));
      return along_whole_dims(ins, {ins.attrs.axis});
    case OpFamily::Structural:
      return structural(ins);
    case OpFamily::Call:
      return spmd_call(ins);
    case OpFamily::Index:
      if (op == Op::Take) return take(ins);
      return replicated(ins);
    case OpFamily::Creation:
      recreatable_[ins.result] = op == Op::Iota;
      return define(ins, bind(op, ins.attrs, {}), whole(ins.result));
    case OpFamily::Effect:
      return debug_print(ins);
    default:
      return replicated(ins);
    }
  }

  const DimSpec& spec_of(int gid) const { return env_[gid].spec; }
  const Axes& unreduced_of(int gid) const { return env_[gid].unreduced; }
  const Axes& reduced_of(int gid) const { return env_[gid].reduced; }

  // The result `gid` laid out by `want` (or as propagated).
  Tensor result(int gid, const std::optional<PartitionSpec>& want, PartitionSpec& spec) {
    DimSpec d = want ? dims_of_spec(*want, g_.values[gid].aval.ndim()) : env_[gid].spec;
    spec = want ? *want : spec_of_dims(d, mesh_);
    if (!want) spec.reduced = env_[gid].reduced;
    if (!want && !env_[gid].unreduced.empty()) { // the partial sums, as they are
      spec.unreduced = env_[gid].unreduced;
      return env_[gid].t;
    }
    return reshard(gid, d);
  }

private:
  const Function& g_;
  const Mesh& mesh_;
  TraceContext& tc_;
  bool eager_;
  bool explicit_;        // sharding is part of the type (sharding_rules.hpp)
  std::string platform_; // (JAX's errors name the abstract mesh's device kind)
  std::vector<Local> env_;
  // Values that are cheaper to recreate in another layout than to reshard:
  // broadcasts (from their operand's block) and iotas (the block of an iota
  // along a dimension it does not count over is a smaller iota).
  std::vector<bool> recreatable_;
  std::vector<const DimSpec*> constrained_; // see the constructor
  std::vector<const Axes*> constrained_ur_; // the same constraints' unreduced axes

  int64_t parts(const Axes& axes) const {
    int64_t n = 1;
    for (const std::string& a : axes) n *= mesh_.axis_size(a);
    return n;
  }
  DimSpec whole(int gid) const { return DimSpec(g_.values[gid].aval.shape.size()); }
  const Shape& gshape(int gid) const { return g_.values[gid].aval.shape; }

  Tensor bind(Op op, const OpAttrs& a, std::vector<Tensor> xs) { return tc_.bind(op, a, xs); }
  void define(const Instr& ins, Tensor t, DimSpec spec) {
    env_[ins.result] = {std::move(t), std::move(spec)};
  }

  OpAttrs over(const Axes& axes) const {
    OpAttrs a;
    a.axis_names = axes;
    a.group_size = parts(axes);
    return a;
  }

  // Dimension d, split over `axes`, made whole on every device.
  Tensor gather(const Tensor& t, int d, const Axes& axes) {
    OpAttrs a = over(axes);
    a.axis = d;
    a.tiled = true;
    return bind(Op::AllGather, a, {t});
  }

  // This device's block of the whole dimension d, split over `axes`.
  Tensor split(const Tensor& t, int d, const Axes& axes) {
    int64_t chunk = t->aval.shape[static_cast<size_t>(d)] / parts(axes);
    Tensor rank = bind(Op::AxisIndex, over(axes), {});
    Tensor size = tc_.constant(Array::scalar(Scalar::of_int(chunk), DType::Int32));
    OpAttrs spread;
    spread.shape = {chunk};
    Tensor start = bind(Op::BroadcastInDim, spread, {bind(Op::Mul, {}, {rank, size})});
    OpAttrs io;
    io.shape = {chunk};
    io.dtype = DType::Int32;
    Tensor idx = bind(Op::Add, {}, {bind(Op::Iota, io, {}), start});
    OpAttrs take;
    take.axis = d;
    return bind(Op::Take, take, {t, idx});
  }

  // Value `gid` laid out by `to`: dimensions that change are gathered first,
  // then split, so an axis may move between dimensions.
  Tensor reshard(int gid, const DimSpec& to) {
    Local cur = env_[gid];
    if (!cur.unreduced.empty()) { // the partial sums summed
      cur.t = bind(Op::Psum, over(cur.unreduced), {cur.t});
      cur.unreduced.clear();
    }
    if (cur.spec == to) return cur.t;
    if (recreatable_[gid])
      if (std::optional<Tensor> t = recreate(gid, to)) return *t;
    for (size_t d = 0; d < to.size(); ++d)
      if (!cur.spec[d].empty() && cur.spec[d] != to[d]) {
        cur.t = gather(cur.t, static_cast<int>(d), cur.spec[d]);
        cur.spec[d].clear();
      }
    for (size_t d = 0; d < to.size(); ++d)
      if (!to[d].empty() && cur.spec[d] != to[d]) cur.t = split(cur.t, static_cast<int>(d), to[d]);
    return cur.t;
  }

  // Value `gid` (a broadcast or an iota) computed directly in layout `to`,
  // when that needs no data from other devices.
  std::optional<Tensor> recreate(int gid, const DimSpec& to) {
    const Instr& ins = g_.body[static_cast<size_t>(g_.values[gid].producer)];
    OpAttrs a = ins.attrs;
    a.shape = local_shape(gshape(gid), to);
    if (ins.op == Op::Iota) {
      if (!to[static_cast<size_t>(a.axis)].empty()) return std::nullopt;
      return bind(Op::Iota, a, {});
    }
    // A broadcast: dimensions that come from the operand keep its split; the
    // others (new, or expanded from size 1) may be split freely.
    int x = ins.operands[0];
    for (size_t i = 0; i < a.axes.size(); ++i) {
      auto d = static_cast<size_t>(a.axes[i]);
      bool from_operand = gshape(x)[i] == gshape(gid)[d];
      if (from_operand ? to[d] != env_[x].spec[i] : !to[d].empty() && !env_[x].spec[i].empty())
        return std::nullopt;
    }
    return bind(Op::BroadcastInDim, a, {env_[x].t});
  }

  // A result split like `like` along dimension d where it divides evenly and
  // the axes are free: JAX keeps the operand's sharding through ops (slices,
  // scans) that need the whole dimension.
  void restore(Local& l, const Shape& shape, size_t d, const Axes& like) {
    if (like.empty() || !l.spec[d].empty() || shape[d] % parts(like) != 0) return;
    for (const std::string& a : like)
      if (uses_axis(l.spec, a)) return;
    l.t = split(l.t, static_cast<int>(d), like);
    l.spec[d] = like;
  }

  // A shard_map call on this mesh: its operands laid out by its in_specs,
  // its per-device program inlined, its results laid out by its out_specs.
  void spmd_call(const Instr& ins) {
    const SpmdCallee& c = *ins.attrs.callee;
    std::vector<Tensor> params;
    for (size_t i = 0; i < ins.operands.size(); ++i) {
      int o = ins.operands[i];
      if (explicit_ && i < c.explicit_in_types.size() && c.explicit_in_types[i])
        explicit_in_spec_check(c.ins[i].spec, env_[o].spec, g_.values[o].aval, loc_of(ins),
                               env_[o].unreduced, env_[o].reduced);
      DimSpec want = dims_of_spec(c.ins[i].spec, gshape(o).size());
      // Unreduced in_specs take the partial sums as they are.
      bool partial = !c.ins[i].spec.unreduced.empty() && env_[o].spec == want &&
                     PartitionSpec{{}, {}, c.ins[i].spec.unreduced}.same_ur(
                         PartitionSpec{{}, {}, env_[o].unreduced});
      params.push_back(partial ? env_[o].t : reshard(o, want));
    }
    std::vector<Tensor> outs = inline_function(tc_, *c.fn, params, {});
    for (int r = 0; r < ins.nresults; ++r) {
      int id = ins.result + r;
      env_[id] = {outs[static_cast<size_t>(r)],
                  dims_of_spec(c.outs[static_cast<size_t>(r)].spec, gshape(id).size()),
                  c.outs[static_cast<size_t>(r)].spec.unreduced,
                  c.outs[static_cast<size_t>(r)].spec.reduced};
    }
  }

  // The most split of the operands' shardings (rank-0 operands aside).
  DimSpec widest(const Instr& ins, size_t rank) const {
    DimSpec best(rank);
    int64_t best_parts = 1;
    for (int o : ins.operands) {
      const DimSpec& s = env_[o].spec;
      if (s.size() != rank) continue;
      int64_t n = 1;
      for (const Axes& e : s) n *= parts(e);
      if (n > best_parts) best = s, best_parts = n;
    }
    // A dimension the widest operand keeps whole takes another operand's
    // split when its axes are free, as XLA's propagation merges shardings
    // (P('x') + P(None, 'y') is P('x', 'y')).
    for (int o : ins.operands) {
      const DimSpec& s = env_[o].spec;
      if (s.size() != rank) continue;
      for (size_t d = 0; d < rank; ++d) {
        bool free = best[d].empty() && !s[d].empty();
        for (const std::string& a : s[d]) free = free && !uses_axis(best, a);
        if (free) best[d] = s[d];
      }
    }
    return best;
  }

  std::vector<Tensor> operands_as(const Instr& ins, const DimSpec& spec) {
    std::vector<Tensor> xs;
    for (int o : ins.operands)
      xs.push_back(reshard(o, env_[o].spec.size() == spec.size() ? spec : whole(o)));
    return xs;
  }

  // Value `gid` laid out as the Explicit-axes rule says it is typed.
  void conform(int gid, const DimSpec& typed) {
    if (env_[gid].spec != typed) env_[gid] = {reshard(gid, typed), typed};
  }
  const Span& loc_of(const Instr& ins) const { return g_.values[ins.result].loc; }

  // sharding_constraint: its operand laid out as asked, on any mesh.
  void constrain(const Instr& ins) {
    const DimSpec& want = ins.attrs.dim_axes;
    const Shape& shape = gshape(ins.result);
    for (size_t d = 0; d < want.size(); ++d)
      for (const std::string& a : want[d]) {
        if (mesh_.axis_of(a) < 0)
          throw Error(ErrCode::Spec,
                      "sharding constraint names mesh axis '" + a + "', which " + mesh_.jax_str() +
                          " does not have",
                      loc_of(ins));
        if (d < shape.size() && shape[d] % parts(want[d]) != 0)
          throw Error(ErrCode::Spec,
                      "sharding constraint splits dimension " + std::to_string(d) + " of size " +
                          std::to_string(shape[d]) + " over " + std::to_string(parts(want[d])) +
                          " devices, which does not divide it",
                      loc_of(ins));
      }
    const Axes& ur = ins.attrs.unreduced;
    int x = ins.operands[0];
    if (ins.attrs.concat_axis == 1) { // a cotangent laid out as its unreduced primal's: reduced
      define(ins, reshard(x, want), want);
      env_[ins.result].reduced = ur;
      return;
    }
    if (!ur.empty() && ins.attrs.tiled &&
        !PartitionSpec{{}, {}, ur}.same_ur(PartitionSpec{{}, {}, env_[x].unreduced})) {
      // A cotangent laid out as its reduced primal's (autodiff marks the
      // constraint `tiled`): partial sums, the whole on the first device
      // along the axes and zeros on the others (as device_put lays it out).
      Tensor t = reshard(x, want);
      Tensor rank = bind(Op::AxisIndex, over(ur), {});
      Tensor lead = np::binary(tc_, np::BinOp::Eq, rank, np::scalar(tc_, Scalar::of_int(0)));
      lead = np::broadcast_to(tc_, lead, t->aval.shape);
      t = bind(Op::Select, {}, {lead, t, np::full_like(tc_, t, Scalar::of_float(0.0))});
      env_[ins.result] = {t, want, ur};
      return;
    }
    if (!ur.empty()) { // the operand's partial sums, as a contraction left them
      if (!PartitionSpec{{}, {}, ur}.same_ur(PartitionSpec{{}, {}, env_[x].unreduced}))
        throw Error(ErrCode::Unsupported,
                    "out_sharding with unreduced axes " + PartitionSpec{{}, {}, ur}.repr() +
                        " of a result that holds no partial sums over them",
                    loc_of(ins),
                    "pxl makes unreduced results only of contractions (dot, einsum, matmul) "
                    "over dimensions split over those axes");
      DimSpec spec = env_[x].spec;
      if (spec != want)
        throw Error(ErrCode::Unsupported,
                    "out_sharding with unreduced axes laid out otherwise than the contraction's "
                    "result",
                    loc_of(ins));
      env_[ins.result] = env_[x];
      return;
    }
    define(ins, reshard(x, want), want);
  }

  void elementwise(const Instr& ins) {
    DimSpec spec = widest(ins, gshape(ins.result).size());
    if (explicit_) {
      std::vector<AVal> avals;
      std::vector<DimSpec> specs;
      for (int o : ins.operands) avals.push_back(g_.values[o].aval), specs.push_back(env_[o].spec);
      if (ins.op == Op::Select) // (cases in select_n's order: on_false, on_true)
        explicit_same_sharding("select", {specs[2], specs[1]}, mesh_, platform_, loc_of(ins));
      spec = explicit_elementwise(op_name(ins.op), avals, specs, loc_of(ins));
    }
    define(ins, bind(ins.op, ins.attrs, operands_as(ins, spec)), spec);
  }

  // Every operand whole, computed on every device: for ops with no rule.
  // jax.debug.print: JAX runs the callback once, on device 0, with the whole
  // values (a MAXIMAL sharding); each device gathers them, the first prints.
  void debug_print(const Instr& ins) {
    std::vector<Tensor> xs;
    for (int o : ins.operands) xs.push_back(reshard(o, whole(o)));
    OpAttrs attrs = attrs_for_rebind(tc_, g_, ins);
    attrs.first_participant = true;
    define(ins, bind(ins.op, attrs, xs), whole(ins.result));
  }

  void replicated(const Instr& ins) {
    std::vector<Tensor> xs;
    for (int o : ins.operands) xs.push_back(reshard(o, whole(o)));
    define(ins, bind(ins.op, ins.attrs, xs), whole(ins.result));
  }

  // An op on one operand that needs `dims` whole: they are gathered, and the
  // result split again as the operand was where it divides.
  void along_whole_dims(const Instr& ins, const std::vector<int64_t>& dims) {
    int x = ins.operands[0];
    DimSpec before = env_[x].spec, spec = before;
    for (int64_t d : dims) spec[static_cast<size_t>(d)].clear();
    Local l{bind(ins.op, ins.attrs, {reshard(x, spec)}), spec};
    for (int64_t d : dims)
      restore(l, gshape(ins.result), static_cast<size_t>(d), before[static_cast<size_t>(d)]);
    env_[ins.result] = std::move(l);
  }

  void reduce(const Instr& ins) {
    int x = ins.operands[0];
    std::vector<int64_t> dims = ins.attrs.axes;
    if (ins.op == Op::Argmax || ins.op == Op::Argmin) dims = {ins.attrs.axis};
    const DimSpec& s = env_[x].spec;
    Axes reduced_axes;
    for (int64_t d : dims)
      for (const std::string& a : s[static_cast<size_t>(d)]) reduced_axes.push_back(a);
    // Sums, maxima and minima combine per-device partial results; the rest
    // need the reduced dimensions whole.
    std::optional<Op> combine;
    if (ins.op == Op::ReduceSum) combine = Op::Psum;
    if (ins.op == Op::ReduceMax) combine = Op::Pmax;
    if (ins.op == Op::ReduceMin) combine = Op::Pmin;
    bool partial = combine && !reduced_axes.empty() && g_.values[x].aval.dtype != DType::Bool;
    DimSpec in_spec = s;
    if (!partial)
      for (int64_t d : dims) in_spec[static_cast<size_t>(d)].clear();
    Tensor t = bind(ins.op, ins.attrs, {reshard(x, in_spec)});
    if (partial) {
      std::sort(reduced_axes.begin(), reduced_axes.end(),
                [&](const auto& a, const auto& b) { return mesh_.axis_of(a) < mesh_.axis_of(b); });
      t = bind(*combine, over(reduced_axes), {t});
    }
    DimSpec out;
    for (size_t d = 0; d < in_spec.size(); ++d)
      if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end())
        out.push_back(in_spec[d]);
    define(ins, t, out);
  }

  // dot_general: the result's dimensions are claimed first (batch dimensions
  // as the lhs is split, else as the rhs; then the lhs's and the rhs's free
  // dimensions as they are), then the contracting dimensions take a split
  // whose axes are still free (the lhs's, else the rhs's): a split contraction
  // is a local product and a psum, the other dimensions are gathered. Keeping
  // the result split before splitting the contraction is XLA's choice too.
  void dot(const Instr& ins) {
    const DotDims& dd = ins.attrs.dot;
    int l = ins.operands[0], r = ins.operands[1];
    DimSpec ls = env_[l].spec, rs = env_[r].spec;
    DimSpec lt(ls.size()), rt(rs.size());
    std::optional<DimSpec> typed;
    if (explicit_) {
      auto pick = [](const DimSpec& s, const std::vector<int64_t>& dims) {
        DimSpec out;
        for (int64_t d : dims) out.push_back(s[static_cast<size_t>(d)]);
        return out;
      };
      // The result's type when given: dot_general's out_sharding (a transpose
      // rule's), else a sharding_constraint on it (jnp.dot's out_sharding=).
      const DimSpec* given = ins.attrs.dim_axes.size() == gshape(ins.result).size()
                                 ? &ins.attrs.dim_axes
                                 : constrained_[ins.result];
      if (!given)
        explicit_dot_check(pick(ls, dd.lhs_contract), pick(rs, dd.rhs_contract),
                           pick(ls, dd.lhs_batch), pick(rs, dd.rhs_batch), loc_of(ins));
      // Batch dimensions as the lhs's, then each side's free dimensions.
      typed = pick(ls, dd.lhs_batch);
      for (size_t d = 0; d < ls.size(); ++d)
        if (!is_in_dims(dd.lhs_batch, d) && !is_in_dims(dd.lhs_contract, d))
          typed->push_back(ls[d]);
      for (size_t d = 0; d < rs.size(); ++d)
        if (!is_in_dims(dd.rhs_batch, d) && !is_in_dims(dd.rhs_contract, d))
          typed->push_back(rs[d]);
      if (given)
        typed = *given;
      else
        explicit_result_check("dot_general", {g_.values[l].aval, g_.values[r].aval}, {ls, rs},
                              g_.values[ins.result].aval, *typed, loc_of(ins));
    }
    std::vector<std::string> used;
    auto free_axes = [&](const Axes& e) {
      for (const std::string& a : e)
        if (std::find(used.begin(), used.end(), a) != used.end()) return false;
      return true;
    };
    auto claim = [&](const Axes& e) {
      if (!free_axes(e)) return Axes{};
      used.insert(used.end(), e.begin(), e.end());
      return e;
    };
    auto pair = [&](const std::vector<int64_t>& ld, const std::vector<int64_t>& rd) {
      for (size_t i = 0; i < ld.size(); ++i) {
        auto li = static_cast<size_t>(ld[i]), ri = static_cast<size_t>(rd[i]);
        Axes e = claim(!ls[li].empty() && free_axes(ls[li]) ? ls[li] : rs[ri]);
        lt[li] = rt[ri] = e;
      }
    };
    auto is_in = [](const std::vector<int64_t>& v, size_t d) {
      return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
    };
    pair(dd.lhs_batch, dd.rhs_batch);
    for (size_t d = 0; d < ls.size(); ++d)
      if (!is_in(dd.lhs_batch, d) && !is_in(dd.lhs_contract, d)) lt[d] = claim(ls[d]);
    for (size_t d = 0; d < rs.size(); ++d)
      if (!is_in(dd.rhs_batch, d) && !is_in(dd.rhs_contract, d)) rt[d] = claim(rs[d]);
    pair(dd.lhs_contract, dd.rhs_contract);
    DimSpec out;
    for (int64_t d : dd.lhs_batch) out.push_back(lt[static_cast<size_t>(d)]);
    for (size_t d = 0; d < ls.size(); ++d)
      if (!is_in(dd.lhs_batch, d) && !is_in(dd.lhs_contract, d)) out.push_back(lt[d]);
    for (size_t d = 0; d < rs.size(); ++d)
      if (!is_in(dd.rhs_batch, d) && !is_in(dd.rhs_contract, d)) out.push_back(rt[d]);
    OpAttrs local = ins.attrs;
    local.dim_axes.clear(); // (a type of the global value, not of the block)
    Tensor t = bind(Op::DotGeneral, local, {reshard(l, lt), reshard(r, rt)});
    Axes contracted, partial;
    // out_sharding=P(..., unreduced=...): the partial sums over those of the
    // contracted axes stay on their devices (JAX's unreduced result).
    const Axes* keep = constrained_ur_[ins.result];
    for (int64_t d : dd.lhs_contract)
      for (const std::string& a : lt[static_cast<size_t>(d)])
        (keep && std::find(keep->begin(), keep->end(), a) != keep->end() ? partial : contracted)
            .push_back(a);
    if (!contracted.empty()) t = bind(Op::Psum, over(contracted), {t});
    define(ins, t, out);
    env_[ins.result].unreduced = partial;
    if (typed) conform(ins.result, *typed);
  }
  static bool is_in_dims(const std::vector<int64_t>& v, size_t d) {
    return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
  }

  void structural(const Instr& ins) {
    int x = ins.operands.empty() ? -1 : ins.operands[0];
    const Shape& out_shape = gshape(ins.result);
    switch (ins.op) {
    case Op::Transpose: {
      DimSpec out;
      for (int64_t p : ins.attrs.perm) out.push_back(env_[x].spec[static_cast<size_t>(p)]);
      return define(ins, bind(Op::Transpose, ins.attrs, {env_[x].t}), out);
    }
    case Op::BroadcastInDim:
      return broadcast(ins);
    case Op::Reshape:
      return reshape(ins);
    case Op::Slice: {
      std::vector<int64_t> cut;
      const OpAttrs& a = ins.attrs;
      for (size_t d = 0; d < out_shape.size(); ++d) {
        bool strided = d < a.strides.size() && a.strides[d] != 1;
        if (a.starts[d] != 0 || a.limits[d] != gshape(x)[d] || strided)
          cut.push_back(static_cast<int64_t>(d));
      }
      return sliced(ins, cut);
    }
    case Op::Rev:
      return along_whole_dims(ins, ins.attrs.axes);
    case Op::Pad: {
      std::vector<int64_t> padded;
      const OpAttrs& a = ins.attrs;
      for (size_t d = 0; d < out_shape.size(); ++d)
        if (a.lo[d] != 0 || a.hi[d] != 0 || a.interior[d] != 0)
          padded.push_back(static_cast<int64_t>(d));
      // The padding value (operand 1) is a scalar.
      DimSpec before = env_[x].spec, spec = before;
      if (explicit_)
        explicit_varying_shape_check("padding", g_.values[x].aval, before, out_shape, mesh_,
                                     loc_of(ins));
      for (int64_t d : padded) spec[static_cast<size_t>(d)].clear();
      Local l{bind(Op::Pad, ins.attrs, {reshard(x, spec), reshard(ins.operands[1], {})}), spec};
      for (int64_t d : padded)
        restore(l, out_shape, static_cast<size_t>(d), before[static_cast<size_t>(d)]);
      env_[ins.result] = std::move(l);
      if (explicit_) conform(ins.result, before); // typed as the operand
      return;
    }
    case Op::Concatenate: {
      auto axis = static_cast<size_t>(ins.attrs.axis);
      DimSpec spec = widest(ins, out_shape.size());
      std::optional<DimSpec> typed;
      if (explicit_) {
        std::vector<DimSpec> specs;
        for (int o : ins.operands) specs.push_back(env_[o].spec);
        explicit_same_sharding("concatenate", specs, mesh_, platform_, loc_of(ins));
        typed = spec;
      }
      Axes like = spec[axis];
      spec[axis].clear();
      Local l{bind(Op::Concatenate, ins.attrs, operands_as(ins, spec)), spec};
      restore(l, out_shape, axis, like);
      env_[ins.result] = std::move(l);
      if (typed) conform(ins.result, *typed);
      return;
    }
    default:
      return replicated(ins);
    }
  }

  // A slice keeps the split of the dimensions it takes whole.
  void sliced(const Instr& ins, const std::vector<int64_t>& cut) {
    int x = ins.operands[0];
    DimSpec before = env_[x].spec, spec = before;
    // (Eagerly, indexing checks what JAX's gather refuses: np_index.cpp.)
    if (explicit_ && !eager_)
      explicit_varying_shape_check("slicing", g_.values[x].aval, before, gshape(ins.result), mesh_,
                                   loc_of(ins));
    for (int64_t d : cut) spec[static_cast<size_t>(d)].clear();
    OpAttrs a = ins.attrs;
    Shape local = local_shape(gshape(x), spec);
    for (size_t d = 0; d < spec.size(); ++d)
      if (!spec[d].empty()) a.limits[d] = local[d];
    Local l{bind(Op::Slice, a, {reshard(x, spec)}), spec};
    if (!eager_)
      for (int64_t d : cut)
        restore(l, gshape(ins.result), static_cast<size_t>(d), before[static_cast<size_t>(d)]);
    env_[ins.result] = std::move(l);
    if (explicit_ && !eager_) conform(ins.result, before); // typed as the operand
  }

  // take along `axis`: that dimension is gathered whole, the indices are
  // replicated, the other dimensions keep their split (XLA's gather rule).
  void take(const Instr& ins) {
    int x = ins.operands[0], idx = ins.operands[1];
    auto axis = static_cast<size_t>(ins.attrs.axis);
    DimSpec spec = env_[x].spec;
    if (explicit_ && !eager_ && !spec[axis].empty()) {
      Shape indices = gshape(idx);
      indices.push_back(1); // (JAX's index arrays end in the indexed dimensions)
      explicit_gather_error(g_.values[x].aval, spec, indices, loc_of(ins));
    }
    spec[axis].clear();
    DimSpec out(spec.begin(), spec.begin() + static_cast<std::ptrdiff_t>(axis));
    out.resize(out.size() + gshape(idx).size());
    out.insert(out.end(), spec.begin() + static_cast<std::ptrdiff_t>(axis) + 1, spec.end());
    define(ins, bind(Op::Take, ins.attrs, {reshard(x, spec), reshard(idx, whole(idx))}), out);
  }

  void broadcast(const Instr& ins) {
    int x = ins.operands[0];
    const OpAttrs& a = ins.attrs;
    DimSpec spec = env_[x].spec, out(a.shape.size());
    for (size_t i = 0; i < a.axes.size(); ++i) {
      if (gshape(x)[i] == a.shape[static_cast<size_t>(a.axes[i])])
        out[static_cast<size_t>(a.axes[i])] = spec[i];
      else
        spec[i].clear(); // expanded from size 1
    }
    OpAttrs local = a;
    local.shape = local_shape(a.shape, out);
    define(ins, bind(Op::BroadcastInDim, local, {reshard(x, spec)}), out);
    recreatable_[ins.result] = env_[x].spec == spec;
  }

  // A split dimension d stays split through a reshape when the dimensions
  // before it hold as many elements as some leading output dimensions e and the
  // split divides output dimension e: each device's block then stays one
  // contiguous run of the merged or split dimensions.
  void reshape(const Instr& ins) {
    int x = ins.operands[0];
    const Shape& in_shape = gshape(x);
    const Shape& out_shape = gshape(ins.result);
    DimSpec spec = env_[x].spec, out(out_shape.size());
    int64_t before = 1;
    for (size_t d = 0; d < in_shape.size(); before *= in_shape[d], ++d) {
      if (spec[d].empty()) continue;
      int64_t prefix = 1;
      size_t e = 0;
      while (e < out_shape.size() && prefix < before) prefix *= out_shape[e++];
      // Inserted unit dimensions (x[None], expand_dims) come before it.
      while (e + 1 < out_shape.size() && out_shape[e] == 1 && in_shape[d] != 1) ++e;
      bool kept = prefix == before && e < out_shape.size() && out[e].empty() &&
                  out_shape[e] % parts(spec[d]) == 0;
      if (kept)
        out[e] = spec[d];
      else
        spec[d].clear();
    }
    std::optional<DimSpec> typed;
    if (explicit_)
      typed = explicit_reshape(g_.values[x].aval, env_[x].spec, out_shape, mesh_, loc_of(ins));
    OpAttrs local = ins.attrs;
    local.shape = local_shape(out_shape, out);
    define(ins, bind(Op::Reshape, local, {reshard(x, spec)}), out);
    if (typed) conform(ins.result, *typed);
  }
};

} // namespace

namespace {

// A shard_map's own program, to be inlined: collectives are its business;
// effects and further calls are not inlined.
bool inlinable(const Function& f) {
  for (const Instr& i : f.body) {
    OpFamily fam = op_family(i.op);
    if (fam == OpFamily::Effect || fam == OpFamily::Call) return false;
  }
  return true;
}

} // namespace

const Mesh* operands_mesh(std::span<const Tensor> operands, bool& mixed) {
  const Mesh* mesh = nullptr;
  mixed = false;
  for (const Tensor& t : operands) {
    if (!t->sharded || !t->sharded->spans_devices()) continue;
    if (!mesh) {
      mesh = &t->sharded->mesh;
    } else if (!(t->sharded->mesh == *mesh)) {
      mixed = true;
      return nullptr;
    }
  }
  return mesh;
}

OperandSpecs operand_specs(const Mesh& mesh, std::span<const Tensor> operands, std::string& key) {
  key += mesh.jax_str(); // the axis types too: they change the result types
  for (int id : mesh.device_ids) key += " " + std::to_string(id);
  OperandSpecs specs;
  for (const Tensor& t : operands) {
    // An array of partial sums (unreduced) enters as such (its spec names the axes).
    bool own = t->sharded && t->sharded->mesh == mesh;
    specs.push_back(own ? t->sharded->spec : PartitionSpec{});
    key += " " + specs.back().repr();
  }
  return specs;
}

bool partitionable(const Function& f, const Mesh& mesh) {
  // What is partitioned is the program that runs: custom_calls inlined.
  if (has_custom_calls(f))
    return partitionable(*lower_custom_calls(std::make_shared<Function>(f)), mesh);
  for (const Instr& i : f.body) {
    OpFamily fam = op_family(i.op);
    if (fam == OpFamily::Collective || fam == OpFamily::Loop) return false;
    // (A print in a cond's branch is gated by it; a host callback has results.)
    if (fam == OpFamily::Effect &&
        (i.op != Op::DebugPrint || !i.attrs.debug || !is_ungated_print(*i.attrs.debug)))
      return false;
    if (fam == OpFamily::Call) {
      const SpmdCallee& c = *i.attrs.callee;
      // With check_vma=False an output need not be replicated over the axes its
      // out_specs leave out (the call keeps the first participant's block), so
      // such calls run whole; but one with unreduced specs is inlined: JAX's
      // jit takes each device's block as its partial sum (and hands partial
      // sums to unreduced in_specs as they are), which only a per-device
      // program keeps.
      bool ur = false;
      for (const auto* maps : {&c.ins, &c.outs})
        for (const SpmdMapping& m : *maps) ur = ur || !m.spec.unreduced.empty();
      if (c.kind != "shard_map" || !(c.check_vma || ur) || !(c.layout.mesh == mesh) ||
          !inlinable(*c.fn))
        return false;
    }
  }
  return true;
}

const Mesh* shard_map_mesh(const Function& f) {
  if (has_custom_calls(f))
    return shard_map_mesh(*lower_custom_calls(std::make_shared<Function>(f)));
  for (const Instr& i : f.body)
    if (i.op == Op::SpmdCall && i.attrs.callee->kind == "shard_map")
      return &i.attrs.callee->layout.mesh;
  return nullptr;
}

void check_shard_map_inputs(const Function& f, std::span<const Tensor> operands) {
  std::vector<int> inputs = f.params;
  inputs.insert(inputs.end(), f.consts.begin(), f.consts.end());
  for (const Instr& i : f.body) {
    if (i.op != Op::SpmdCall) continue;
    const SpmdCallee& c = *i.attrs.callee;
    for (size_t k = 0; k < i.operands.size() && k < c.explicit_in_types.size(); ++k) {
      if (!c.explicit_in_types[k]) continue;
      auto at = std::find(inputs.begin(), inputs.end(), i.operands[k]);
      size_t pos = static_cast<size_t>(at - inputs.begin());
      if (at == inputs.end() || pos >= operands.size() || operands[pos]->trace) continue;
      explicit_in_spec_check(
          c.ins[k].spec, *explicit_type_spec(operands[pos]), f.values[i.operands[k]].aval,
          i.result >= 0 ? f.values[i.result].loc : Span{},
          operands[pos]->sharded ? operands[pos]->sharded->spec.unreduced : Axes{},
          operands[pos]->sharded ? operands[pos]->sharded->spec.reduced : Axes{});
    }
  }
}

PartitionedJit partition_jit(InterpreterImpl& in, const TracedFunction& t, const Mesh& mesh,
                             const OperandSpecs& specs,
                             const std::vector<std::optional<PartitionSpec>>& out_specs,
                             const Span& where, bool eager_op, bool typed) {
  std::shared_ptr<const Function> program = lower_custom_calls(t.fn);
  const Function& g = *program;
  auto f = std::make_shared<Function>();
  f->name = g.name;
  f->mesh_axes = mesh.axis_names;
  f->mesh_sizes = mesh.axis_sizes;
  TraceContext tc(*f, in.ops(), "jit");
  Partitioner p(g, mesh, tc, eager_op, in.platform().name(), typed);
  std::vector<int> inputs = g.params;
  inputs.insert(inputs.end(), g.consts.begin(), g.consts.end());
  PXL_ASSERT(inputs.size() == specs.size(), "partition_jit: one spec per operand");
  std::vector<SpmdMapping> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    p.set_input(inputs[i], dims_of_spec(specs[i], g.values[inputs[i]].aval.ndim()), where,
                "the sharding " + specs[i].repr() + " of argument " + std::to_string(i),
                specs[i].unreduced, specs[i].reduced);
    ins.push_back(SpmdMapping{specs[i], -1});
  }
  for (const Instr& i : g.body) p.run(i);
  std::vector<SpmdMapping> outs;
  for (size_t r = 0; r < g.results.size(); ++r) {
    PartitionSpec spec;
    std::optional<PartitionSpec> want = r < out_specs.size() ? out_specs[r] : std::nullopt;
    if (want) {
      const Shape& shape = g.values[g.results[r]].aval.shape;
      std::string problem = check_spec(mesh, *want, shape,
                                       "jit: out_shardings of output " + std::to_string(r) + ": ");
      if (!problem.empty()) throw Error(ErrCode::Spec, problem, where);
    }
    f->results.push_back(tc.value_of(p.result(g.results[r], want, spec)));
    outs.push_back(SpmdMapping{std::move(spec), -1});
  }
  PartitionedJit out;
  out.extra = tc.captured_tensors();
  consts_to_replicated_params(*f, ins);
  remove_dead_code(*f);
  Platform& pf = in.platform();
  // One XLA program: rewritten as XLA does, its multiply-adds contracted
  // (ir/simplify.hpp, ir/contract.hpp); the constants the rewrites add (a
  // reciprocal's 1) are replicated inputs too.
  std::vector<Array> added;
  auto rewritten = std::make_shared<Function>(*contract_program(std::move(f), {}, &added));
  consts_to_replicated_params(*rewritten, ins);
  for (Array& a : added) out.extra.push_back(make_tensor(std::move(a)));
  out.callee = make_spmd_callee("shard_map", std::move(rewritten),
                                SpmdLayout{mesh, static_cast<int>(mesh.size()), 1}, std::move(ins),
                                std::move(outs), &pf.threads(), in.options().exec, &pf.code_cache(),
                                in.phase_times(), &pf);
  return out;
}

namespace {

// The mesh and spec of a traced value's type as its trace's hook gives them
// (the trace is live: the value is an argument of the call being traced).
std::optional<std::pair<Mesh, PartitionSpec>> hooked_type(const Tensor& t) {
  if (!t->trace || t->trace_id < 0) return std::nullopt;
  auto& tc = *const_cast<TraceContext*>(static_cast<const TraceContext*>(t->trace));
  if (!tc.type_sharding) return std::nullopt;
  Value s = tc.type_sharding(t->trace_id);
  if (s.is_none()) return std::nullopt;
  auto* so = static_cast<ShardingObj*>(s.as<OpaqueObj>());
  return std::make_pair(static_cast<AbstractMeshObj*>(so->abstract_mesh.as<OpaqueObj>())->mesh,
                        so->spec);
}

} // namespace

std::optional<PartitionSpec> traced_sharding(InterpreterImpl& in, TraceContext& tc,
                                             const Mesh& mesh, const OperandSpecs& param_specs,
                                             int id) {
  auto partial = std::make_shared<Function>(tc.function());
  partial->results = {id};
  std::shared_ptr<const Function> program = lower_custom_calls(partial);
  const Function& g = *program;
  if (g.params.size() != param_specs.size() || !partitionable(g, mesh)) return std::nullopt;
  std::vector<Tensor> consts = tc.captured_tensors();
  Function scratch_fn;
  scratch_fn.mesh_axes = mesh.axis_names;
  scratch_fn.mesh_sizes = mesh.axis_sizes;
  TraceContext scratch(scratch_fn, in.ops(), "jit");
  Partitioner p(g, mesh, scratch, false, in.platform().name(), true);
  for (size_t i = 0; i < g.params.size(); ++i)
    p.set_input(g.params[i], dims_of_spec(param_specs[i], g.values[g.params[i]].aval.ndim()),
                Span{}, "argument " + std::to_string(i), param_specs[i].unreduced,
                param_specs[i].reduced);
  for (size_t i = 0; i < g.consts.size() && i < consts.size(); ++i) {
    bool own = consts[i]->sharded && consts[i]->sharded->mesh == mesh &&
               consts[i]->sharded->spec.unreduced.empty();
    PartitionSpec spec = own ? consts[i]->sharded->spec : PartitionSpec{};
    if (auto typed = hooked_type(consts[i])) spec = typed->second; // an enclosing trace's value
    p.set_input(g.consts[i], dims_of_spec(spec, g.values[g.consts[i]].aval.ndim()), Span{},
                "a captured constant");
  }
  for (const Instr& i : g.body) p.run(i);
  PartitionSpec out = spec_of_dims(p.spec_of(g.results[0]), mesh);
  out.unreduced = p.unreduced_of(g.results[0]);
  out.reduced = p.reduced_of(g.results[0]);
  return out;
}

std::function<void(TraceContext&)>
explicit_type_hook(InterpreterImpl& in, std::span<const Tensor> leaves, std::string* key,
                   const std::vector<int>* mapped, const Mesh* placed_on,
                   std::span<const Tensor> laid_out) {
  auto* enclosing = dynamic_cast<TraceContext*>(&in.ops());
  if (enclosing && !enclosing->function().mesh_axes.empty()) return {};
  bool mixed = false;
  const Mesh* found = operands_mesh(leaves, mixed);
  if (mixed) return {};
  // A traced value's type names an abstract mesh (axes, no devices): the
  // concrete one with those axes is the arguments' or the current one.
  auto same_axes = [](const Mesh& a, const Mesh& b) {
    return a.axis_names == b.axis_names && a.axis_sizes == b.axis_sizes;
  };
  const Mesh* current = in.context_mesh() ? value_to_mesh(*in.context_mesh()) : nullptr;
  std::optional<Mesh> mesh;
  if (found)
    mesh = *found;
  else if (placed_on)
    mesh = *placed_on;
  std::vector<std::optional<std::pair<Mesh, PartitionSpec>>> hooked(leaves.size());
  if (enclosing)
    for (size_t i = 0; i < leaves.size(); ++i) {
      hooked[i] = hooked_type(leaves[i]);
      if (!hooked[i]) continue;
      if (!mesh)
        mesh = current && same_axes(*current, hooked[i]->first) ? *current : hooked[i]->first;
      else if (!same_axes(hooked[i]->first, *mesh))
        return {};
    }
  if (!mesh && current) mesh = *current;
  if (!mesh || mesh->axis_names.empty()) return {};
  std::string layout;
  OperandSpecs specs = operand_specs(*mesh, leaves, layout);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (hooked[i]) specs[i] = hooked[i]->second;
  if (mapped)
    for (size_t i = 0; i < specs.size() && i < mapped->size(); ++i) {
      auto d = static_cast<size_t>((*mapped)[i]);
      if ((*mapped)[i] >= 0 && d < specs[i].entries.size())
        specs[i].entries.erase(specs[i].entries.begin() + static_cast<std::ptrdiff_t>(d));
    }
  // Keyed by the abstract mesh and the Explicit part of the layouts (as JAX's
  // types are): a call from inside a trace finds the trace made for concrete
  // arrays laid out alike. Over Auto axes the layout is not the type's.
  if (key && any_explicit_axis(*mesh)) {
    *key = mesh->jax_str();
    for (const PartitionSpec& s : specs) {
      PartitionSpec typed = explicit_part(s, *mesh);
      while (!typed.entries.empty() && typed.entries.back().empty()) typed.entries.pop_back();
      typed.unreduced = s.unreduced, typed.reduced = s.reduced; // (the types have them)
      *key += " " + typed.repr();
    }
  }
  // How the compiled program lays each value out (inspect_array_sharding),
  // worked out when first asked: from where the arguments are (a value of an
  // enclosing trace where that trace lays it out), over the concrete mesh.
  // Not for vmap's per-example trace.
  struct Layout {
    bool known = false;
    std::optional<Mesh> mesh;
    OperandSpecs specs;
  };
  auto placement = mapped ? nullptr : std::make_shared<Layout>();
  std::vector<Tensor> placed(laid_out.empty() ? leaves.begin() : laid_out.begin(),
                             laid_out.empty() ? leaves.end() : laid_out.end());
  auto work_out_layout = [&in, m = *mesh, placed](Layout& l) {
    l.known = true;
    std::string unused;
    l.specs = operand_specs(m, placed, unused);
    if (!m.device_ids.empty()) l.mesh = m;
    for (size_t i = 0; i < placed.size(); ++i) {
      TraceContext* owner = live_trace_of(in, placed[i]);
      Value s =
          owner && owner->layout_sharding ? owner->layout_sharding(placed[i]->trace_id) : Value();
      auto* so = s.is_none() ? nullptr : static_cast<ShardingObj*>(s.as<OpaqueObj>());
      if (!so || so->single_device || so->mesh.axis_names != m.axis_names) continue;
      l.specs[i] = so->spec;
      if (!l.mesh) l.mesh = so->mesh;
    }
  };
  return [&in, m = *mesh, specs, placement, work_out_layout](TraceContext& tc) {
    if (placement)
      tc.layout_sharding = [&in, &tc, placement, work_out_layout](int id) -> Value {
        if (!placement->known) work_out_layout(*placement);
        if (!placement->mesh) return Value();
        std::optional<PartitionSpec> s;
        if (id >= 0) s = traced_sharding(in, tc, *placement->mesh, placement->specs, id);
        PartitionSpec spec = s.value_or(PartitionSpec{});
        // (XLA's sharding, as JAX reports it: over Auto axes, trailing whole
        // dimensions unnamed.)
        while (!spec.entries.empty() && spec.entries.back().empty()) spec.entries.pop_back();
        Mesh auto_mesh = *placement->mesh;
        std::fill(auto_mesh.axis_types.begin(), auto_mesh.axis_types.end(), AxisType::Auto);
        return Value::object(std::make_shared<ShardingObj>(auto_mesh, std::move(spec)));
      };
    Value start = current_abstract_mesh(in);
    tc.type_sharding = [&in, &tc, m, specs, start](int id) {
      // The axis types are the arguments' mesh's, unless the code being
      // traced changed them for a while (use_abstract_mesh, auto_axes,
      // explicit_axes) to a mesh with the same axes. A value's type names
      // only Explicit axes, so without any nothing need be partitioned.
      Value am = current_abstract_mesh(in);
      const Mesh& cur = static_cast<AbstractMeshObj*>(am.as<OpaqueObj>())->mesh;
      if (am.as<OpaqueObj>()->equals(*start.as<OpaqueObj>()) || cur.axis_names != m.axis_names ||
          cur.axis_sizes != m.axis_sizes)
        am = make_abstract_mesh_value(m, in.platform().name());
      const Mesh& typed = static_cast<AbstractMeshObj*>(am.as<OpaqueObj>())->mesh;
      if (!any_explicit_axis(typed)) return make_abstract_sharding(am, PartitionSpec{});
      std::optional<PartitionSpec> s = traced_sharding(in, tc, m, specs, id);
      return s ? make_abstract_sharding(am, *s) : Value();
    };
  };
}

} // namespace pxl
