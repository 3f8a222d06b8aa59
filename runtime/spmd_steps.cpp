// Host steps shared by the SPMD executables (reference and LLVM): the
// collectives -- bringing each operand into the layout the runtime collective
// works on, running it through CommWorld, and back into the result's layout --
// and jax.debug.print records.
#include "runtime/spmd_steps.hpp"

#include <algorithm>

#include "ir/ref_in_place.hpp"
#include "lang/diag.hpp"
#include "lang/phase_times.hpp"
#include "runtime/while_loop.hpp"

namespace pxl {

namespace {

Array transpose(const Array& x, std::vector<int64_t> perm) {
  OpAttrs a;
  a.perm = std::move(perm);
  return eval_ref(Op::Transpose, a, std::span<const Array>(&x, 1));
}

// Moves axis `from` to position `to` (numpy moveaxis).
Array moveaxis(const Array& x, int64_t from, int64_t to) {
  if (from == to) return x;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return transpose(x, perm);
}

Array with_shape(const Array& x, Shape s) { return x.reshaped(std::move(s)); }

std::string site_what(const Instr& in) {
  std::string axes;
  for (const auto& a : in.attrs.axis_names) axes += (axes.empty() ? "'" : ", '") + a + "'";
  return std::string(op_name(in.op)) + " over " +
         (in.attrs.axis_names.size() == 1 ? axes : "(" + axes + ")");
}

std::string site_location(const Span& s) {
  if (!s.valid()) return "";
  return s.file->path() + ":" + std::to_string(s.file->line_of(s.begin)) + ":" +
         std::to_string(s.file->column_of(s.begin));
}

} // namespace

CollectiveSite collective_site(const Function& f, const Instr& in) {
  return CollectiveSite{site_what(in), site_location(f.values[in.result].loc)};
}

CollectiveGroups collective_groups(const Function& f, const SpmdLayout& layout) {
  CollectiveGroups groups;
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Instr& in = f.body[i];
    if (is_collective(in.op) && in.op != Op::AxisIndex)
      groups[i] = layout.mesh.groups(in.attrs.axis_names, in.attrs.index_groups);
  }
  return groups;
}

namespace {

void run_reference_one(const Function& f, const Instr& in, std::vector<Array>& env) {
  std::vector<Array> args;
  for (int o : in.operands) args.push_back(env[o]);
  try {
    env[in.result] = eval_ref(in.op, in.attrs, args);
  } catch (Error& e) {
    e.set_span_if_missing(f.values[in.result].loc);
    throw;
  }
}

} // namespace

void run_reference_instr(const Function& f, size_t index, int per_thread,
                         std::vector<std::vector<Array>>& env) {
  for (int j = 0; j < per_thread; ++j) run_reference_one(f, f.body[index], env[j]);
}

LastReads last_reads(const Function& f, const std::vector<int>& last_read,
                     const std::vector<int>& when) {
  std::vector<bool> result(f.values.size(), false);
  for (int r : f.results) result[static_cast<size_t>(r)] = true;
  LastReads out;
  out.dying.assign(f.body.size(), {});
  out.in_place.assign(f.body.size(), false);
  for (size_t i = 0; i < f.body.size(); ++i) {
    if (when[i] < 0) continue;
    std::vector<int>& dying = out.dying[i];
    for (int o : f.body[i].operands)
      if (!result[static_cast<size_t>(o)] && last_read[static_cast<size_t>(o)] == when[i] &&
          std::find(dying.begin(), dying.end(), o) == dying.end())
        dying.push_back(o);
    out.in_place[i] = updates_in_place(f.body[i].op) &&
                      std::find(dying.begin(), dying.end(), f.body[i].operands[0]) != dying.end();
  }
  return out;
}

void run_instr_in_place(const Function& f, size_t index, int per_thread,
                        std::vector<std::vector<Array>>& env) {
  const Instr& in = f.body[index];
  PXL_ASSERT(updates_in_place(in.op), "no in-place kernel for this op");
  const int x = in.operands[0];
  const auto rest_ops = std::span<const int>(in.operands).subspan(1);
  const bool read_again = std::find(rest_ops.begin(), rest_ops.end(), x) != rest_ops.end();
  const bool weak = f.values[in.result].aval.weak;
  for (int j = 0; j < per_thread; ++j) {
    std::vector<Array>& e = env[static_cast<size_t>(j)];
    Array a = std::move(e[x]); // not read after this instruction: the caller says so
    if (read_again || !a.sole_owner()) {
      e[x] = std::move(a);
      run_reference_one(f, in, e);
      continue;
    }
    std::vector<Array> rest;
    for (int o : rest_ops) rest.push_back(e[o]);
    eval_ref_in_place(in.op, in.attrs, a, rest);
    e[in.result] = a.weak_type() == weak ? std::move(a) : a.with_weak(weak);
  }
}

void run_host_instr(const Function& f, const SpmdLayout& layout, const CollectiveGroups& groups,
                    int thread, size_t index, std::vector<std::vector<Array>>& env,
                    CommWorld& world, std::vector<DebugRecord>& debug, PhaseTimes* times) {
  const Instr& in = f.body[index];
  int k = layout.per_thread;
  if (in.op == Op::DebugPrint) {
    run_debug_print(in, thread, k, env, debug);
  } else if (in.op == Op::HostCallback) {
    run_host_callback(f, in, k, env);
  } else if (in.op == Op::SpmdCall) {
    run_spmd_call_instr(f, index, k, env, debug);
  } else if (in.op == Op::While) {
    run_while_instr(f, layout, thread, index, env, world, debug);
  } else if (is_collective(in.op)) {
    ScopedPhase timing(times, kCollectivesPhase);
    run_collective(f, layout, groups, thread, index, env, world);
  } else {
    run_reference_instr(f, index, k, env);
  }
}

void run_host_callback(const Function& f, const Instr& in, int per_thread,
                       std::vector<std::vector<Array>>& env) {
  const HostCallee& host = *in.attrs.host;
  for (int j = 0; j < per_thread; ++j) {
    std::vector<Array> args;
    for (int o : in.operands) args.push_back(env[j][o]);
    std::vector<Array> outs;
    if (host.gated && args.back().as<uint8_t>()[0] == 0) { // in a cond branch not taken
      for (const AVal& a : host.results) outs.push_back(Array(a.dtype, a.shape));
    } else {
      if (host.gated) args.pop_back();
      try {
        outs = host.call(args);
      } catch (Error& e) {
        e.set_span_if_missing(f.values[in.result].loc);
        throw;
      }
    }
    for (int r = 0; r < in.nresults; ++r) env[j][in.result + r] = std::move(outs[r]);
  }
}

void run_debug_print(const Instr& in, int thread, int per_thread,
                     std::vector<std::vector<Array>>& env, std::vector<DebugRecord>& debug) {
  for (int j = 0; j < per_thread; ++j) {
    env[j][in.result] = Array(DType::Bool, {});
    if (in.attrs.first_participant && thread * per_thread + j != 0) continue;
    DebugRecord rec{thread * per_thread + j, static_cast<int>(in.attrs.axis), {}, in.attrs.debug};
    for (int o : in.operands) rec.values.push_back(env[j][o]);
    debug.push_back(std::move(rec));
  }
}

void run_collective(const Function& f, const SpmdLayout& layout_, const CollectiveGroups& groups_,
                    int thread, size_t index, std::vector<std::vector<Array>>& env,
                    CommWorld& world) {
  const Instr& in = f.body[index];
  int k = layout_.per_thread;
  const IRValue& rv = f.values[in.result];
  if (in.op == Op::AxisIndex) {
    for (int j = 0; j < k; ++j) {
      Array a(DType::Int32, {});
      a.as<int32_t>()[0] =
          static_cast<int32_t>(layout_.mesh.rank_in(in.attrs.axis_names, thread * k + j));
      env[j][in.result] = a;
    }
    return;
  }
  const GroupLayout& g = groups_.at(index);
  CollectiveSite site = collective_site(f, in);
  int64_t G = in.attrs.group_size;
  std::vector<Array> ins(k), outs(k);
  std::vector<LocalBuffers> bufs(k);
  DType dt = rv.aval.dtype;
  // Bring the operand into the layout the runtime collective works on.
  for (int j = 0; j < k; ++j) {
    const Array& x = env[j][in.operands[0]];
    switch (in.op) {
    case Op::PsumScatter:
    case Op::AllToAll:
      ins[j] = moveaxis(x, in.attrs.axis, 0);
      break;
    default:
      ins[j] = x;
    }
    int64_t out_count = in.op == Op::AllGather     ? ins[j].size() * G
                        : in.op == Op::PsumScatter ? ins[j].size() / G
                                                   : ins[j].size();
    outs[j] = Array(dt, {out_count});
    bufs[j] = LocalBuffers{ins[j].data(), outs[j].data()};
  }
  int64_t count = ins[0].size();
  switch (in.op) {
  case Op::Psum:
    world.all_reduce(thread, bufs, g, ReduceKind::Sum, dt, count, site);
    break;
  case Op::Pmax:
    world.all_reduce(thread, bufs, g, ReduceKind::Max, dt, count, site);
    break;
  case Op::Pmin:
    world.all_reduce(thread, bufs, g, ReduceKind::Min, dt, count, site);
    break;
  case Op::AllGather:
    world.all_gather(thread, bufs, g, dt, count, site);
    break;
  case Op::PsumScatter:
    world.reduce_scatter(thread, bufs, g, dt, count, site);
    break;
  case Op::AllToAll:
    world.all_to_all(thread, bufs, g, dt, count, site);
    break;
  case Op::Ppermute: {
    std::vector<std::pair<int, int>> pairs;
    for (auto [s, d] : in.attrs.pairs) pairs.push_back({static_cast<int>(s), static_cast<int>(d)});
    world.ppermute(thread, bufs, g, pairs, dt, count, site);
    break;
  }
  default:
    PXL_ASSERT(false, "not a collective");
  }
  // And back into the result's layout.
  for (int j = 0; j < k; ++j) {
    const Shape& xs = env[j][in.operands[0]].shape();
    Array r;
    switch (in.op) {
    case Op::AllGather: {
      Shape gs = xs;
      gs.insert(gs.begin(), G);
      Array stacked = with_shape(outs[j], gs); // (G, x...)
      if (!in.attrs.tiled) {
        r = moveaxis(stacked, 0, in.attrs.axis);
      } else {
        r = with_shape(moveaxis(stacked, 0, in.attrs.axis), rv.aval.shape);
      }
      break;
    }
    case Op::PsumScatter: {
      Shape moved = ins[j].shape();
      moved[0] /= G; // (n/G, rest...) in the moved layout
      Array m = with_shape(outs[j], moved);
      if (!in.attrs.tiled) {
        r = with_shape(m, rv.aval.shape); // the size-1 leading dim disappears
      } else {
        r = moveaxis(m, 0, in.attrs.axis);
      }
      break;
    }
    case Op::AllToAll: {
      // outs: (G[src], n/G, others...) in the moved layout [split, others in order].
      Shape moved = ins[j].shape();
      Shape split = moved;
      split[0] /= G;
      split.insert(split.begin(), G);
      Array m = with_shape(outs[j], split);
      int64_t sa = in.attrs.axis, ca = in.attrs.concat_axis;
      Array merged;
      if (ca == sa) {
        merged = with_shape(m, moved); // src-major over the split axis
      } else {
        // Position of the concat axis among [n/G, others...] (dims 1.. of m).
        int64_t q = 1 + (ca < sa ? ca + 1 : ca);
        std::vector<int64_t> perm;
        for (int64_t d = 1; d < m.ndim(); ++d) {
          if (d == q) perm.push_back(0);
          perm.push_back(d);
        }
        Array t = transpose(m, perm); // G now just before the concat axis
        Shape ts = t.shape(), mshape;
        for (int64_t d = 0; d < t.ndim(); ++d) {
          if (d + 1 < t.ndim() && perm[d] == 0) {
            mshape.push_back(ts[d] * ts[d + 1]);
            ++d;
          } else {
            mshape.push_back(ts[d]);
          }
        }
        merged = with_shape(t, mshape);
      }
      r = moveaxis(merged, 0, sa);
      break;
    }
    default:
      r = with_shape(outs[j], rv.aval.shape);
    }
    env[j][in.result] = r;
  }
}

std::vector<std::vector<Array>> initial_values(const Function& f,
                                               const std::vector<std::vector<Array>>& inputs,
                                               const std::vector<Array>& consts, int per_thread) {
  std::vector<std::vector<Array>> env(per_thread, std::vector<Array>(f.values.size()));
  for (int j = 0; j < per_thread; ++j) {
    PXL_ASSERT(inputs[j].size() == f.params.size(), "wrong number of inputs");
    for (size_t i = 0; i < f.params.size(); ++i) env[j][f.params[i]] = inputs[j][i];
    for (size_t i = 0; i < f.consts.size(); ++i) env[j][f.consts[i]] = consts[i];
  }
  return env;
}

std::vector<std::vector<Array>> result_values(const Function& f,
                                              const std::vector<std::vector<Array>>& env) {
  std::vector<std::vector<Array>> out(env.size());
  for (size_t j = 0; j < env.size(); ++j)
    for (int r : f.results) out[j].push_back(env[j][r]);
  return out;
}

} // namespace pxl
