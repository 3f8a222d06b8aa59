// The spmd_call instruction's rules that need the runtime: its shape rule (the
// global types the mappings give), its printed attributes, and its kernel.
#include "runtime/spmd_call.hpp"

#include <map>

#include "ir/contract.hpp"
#include "ir/cse.hpp"
#include "ir/custom_call.hpp"
#include "ir/fold_constants.hpp"
#include "ir/libm_tail.hpp"
#include "ir/simplify.hpp"
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"
#include "runtime/debug_print.hpp"
#include "runtime/platform.hpp"
#include "runtime/spmd_steps.hpp"

namespace pxl {

AVal global_aval(const SpmdLayout& layout, const SpmdMapping& m, const AVal& block) {
  AVal g = block;
  if (m.squeeze >= 0) g.shape.insert(g.shape.begin() + m.squeeze, 1);
  for (size_t d = 0; d < m.spec.entries.size() && d < g.shape.size(); ++d)
    for (const auto& axis : m.spec.entries[d]) g.shape[d] *= layout.mesh.axis_size(axis);
  return g;
}

AVal block_aval(const SpmdLayout& layout, const SpmdMapping& m, const AVal& global) {
  AVal b = global;
  b.shape = block_shape(layout.mesh, m.spec, global.shape);
  if (m.squeeze >= 0) b.shape.erase(b.shape.begin() + m.squeeze);
  return b;
}

void consts_to_replicated_params(Function& fn, std::vector<SpmdMapping>& ins) {
  for (int id : fn.consts) {
    fn.params.push_back(id);
    ins.push_back(SpmdMapping{});
  }
  fn.consts.clear();
}

namespace {
// xla_rewrites of `fn` whose last const_params.size() parameters hold those
// values: they are its constants while it is rewritten, and parameters again
// after (the callers pass them), the constants the rewrites add following.
std::shared_ptr<const Function> rewrites_with_known_params(const std::shared_ptr<Function>& fn,
                                                           std::span<const Array> const_params,
                                                           std::vector<Array>& added) {
  const size_t k = const_params.size();
  if (k == 0 || k > fn->params.size() || !fn->consts.empty())
    return xla_rewrites(fn, {}, &added, XlaProgram::Pmap);
  auto known = std::make_shared<Function>(*fn);
  known->consts.assign(known->params.end() - static_cast<long>(k), known->params.end());
  known->params.resize(known->params.size() - k);
  std::shared_ptr<const Function> out = xla_rewrites(known, const_params, &added, XlaProgram::Pmap);
  if (out == known) return fn;
  auto back = std::make_shared<Function>(*out);
  back->params.insert(back->params.end(), back->consts.begin(),
                      back->consts.begin() + static_cast<long>(k));
  back->consts.erase(back->consts.begin(), back->consts.begin() + static_cast<long>(k));
  return back;
}

// Whether `f` (or a loop in it) has a collective over an axis `mesh` lacks: the
// vmap axis a pmap inside vmap(axis_name=...) may name, which only vmap's
// batching of the call gives a meaning (stdlib/spmd.cpp).
bool names_outer_axes(const Function& f, const Mesh& mesh) {
  for (const Instr& i : f.body) {
    for (const std::string& a : i.attrs.axis_names)
      if (mesh.axis_of(a) < 0) return true;
    if (i.attrs.loop && (names_outer_axes(*i.attrs.loop->cond, mesh) ||
                         names_outer_axes(*i.attrs.loop->body, mesh)))
      return true;
    if (i.attrs.custom && names_outer_axes(*i.attrs.custom->fn, mesh)) return true;
  }
  return false;
}
} // namespace

std::shared_ptr<SpmdCallee> make_spmd_callee(std::string kind, std::shared_ptr<Function> fn,
                                             SpmdLayout layout, std::vector<SpmdMapping> ins,
                                             std::vector<SpmdMapping> outs, DeviceThreads* pool,
                                             ExecMode mode, CodeCache* cache, PhaseTimes* times,
                                             Platform* platform, std::vector<Array> const_params) {
  PXL_ASSERT(fn->consts.empty() && ins.size() == fn->params.size() &&
                 outs.size() == fn->results.size(),
             "spmd_call: the callee's operands and results must match its mappings");
  auto c = std::make_shared<SpmdCallee>();
  c->kind = std::move(kind);
  for (size_t i = 0; i < ins.size(); ++i)
    c->in_global.push_back(global_aval(layout, ins[i], fn->values[fn->params[i]].aval));
  for (size_t r = 0; r < outs.size(); ++r)
    c->out_global.push_back(global_aval(layout, outs[r], fn->values[fn->results[r]].aval));
  // Such a callee never runs as it is: only batched (then without those axes).
  if (!names_outer_axes(*fn, layout.mesh)) {
    // pmap compiles its function whole, with XLA's contraction (ir/contract.hpp);
    // an eager shard_map runs op by op in JAX.
    // The constants XLA's rewrites add (a reciprocal's 1) become the program's.
    std::vector<Array> added;
    std::shared_ptr<const Function> run = c->kind == "pmap"
                                              ? rewrites_with_known_params(fn, const_params, added)
                                              : std::shared_ptr<const Function>(fn);
    c->exe = platform ? platform->make_executable(mode, run, layout, added)
                      : make_executable(mode, cache, run, layout, added);
    c->exe->phase_times = times;
  }
  c->fn = std::move(fn);
  c->layout = std::move(layout);
  c->ins = std::move(ins);
  c->outs = std::move(outs);
  c->pool = pool;
  c->mode = mode;
  c->cache = cache;
  c->times = times;
  c->platform = platform;
  return c;
}

std::shared_ptr<const Function> xla_rewrites(std::shared_ptr<const Function> f,
                                             std::span<const Array> consts,
                                             std::vector<Array>* added, XlaProgram kind) {
  std::vector<Array> all(consts.begin(), consts.end());
  size_t before = added ? added->size() : 0;
  auto with_added = [&] {
    if (added) all.insert(all.end(), added->begin() + static_cast<long>(before), added->end());
    before = added ? added->size() : 0;
  };
  // XLA compiles the program with every call inlined, custom derivatives'
  // primals included: its rewrites see across them.
  std::shared_ptr<const Function> out = lower_custom_calls(f);
  // StableHLO's folder runs on a jitted program before XLA's rewrites, XLA's
  // evaluator after them (a pmap's program has no first folding: measured).
  if (kind == XlaProgram::Jit) {
    out = fold_constants(out, all, added, true);
    with_added();
  }
  out = simplify_algebra(out, all, added);
  with_added();
  out = fold_constants(out, all, added, false);
  with_added();
  out = contract_multiply_adds(eliminate_common_subexpressions(out, all), all);
  return kind == XlaProgram::Jit ? mark_libm_tails(out) : out;
}

std::shared_ptr<const Function> contract_program(std::shared_ptr<const Function> f,
                                                 std::span<const Array> consts,
                                                 std::vector<Array>* added) {
  std::shared_ptr<const Function> out = xla_rewrites(f, consts, added);
  std::shared_ptr<Function> copy;
  for (size_t i = 0; i < out->body.size(); ++i) {
    const Instr& in = out->body[i];
    if (in.op != Op::SpmdCall || !in.attrs.callee || in.attrs.callee->kind != "shard_map") continue;
    const SpmdCallee& old = *in.attrs.callee;
    std::shared_ptr<const Function> fn = contract_program(old.fn);
    if (fn == old.fn) continue;
    auto callee =
        make_spmd_callee(old.kind, std::const_pointer_cast<Function>(fn), old.layout, old.ins,
                         old.outs, old.pool, old.mode, old.cache, old.times, old.platform);
    callee->check_vma = old.check_vma;
    callee->explicit_in_types = old.explicit_in_types;
    if (!copy) copy = std::make_shared<Function>(*out);
    copy->body[i].attrs.callee = std::move(callee);
  }
  return copy ? copy : out;
}

std::vector<AVal> infer_call(const OpAttrs& a, std::span<const AVal> inputs) {
  if (a.custom) return custom_call_avals(*a.custom, inputs);
  PXL_ASSERT(a.callee != nullptr, "spmd_call without a callee");
  const SpmdCallee& c = *a.callee;
  if (inputs.size() != c.in_global.size())
    throw Error(ErrCode::Arguments, "spmd_call: " + std::to_string(c.in_global.size()) +
                                        " operands expected, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].shape != c.in_global[i].shape || inputs[i].dtype != c.in_global[i].dtype)
      throw Error(ErrCode::Shape, "spmd_call: operand " + std::to_string(i) + " has type " +
                                      type_str(inputs[i]) + " but the " + c.kind +
                                      " was traced for " + type_str(c.in_global[i]));
  return c.out_global;
}

std::string callee_str(const SpmdCallee& c) {
  auto specs = [&](const std::vector<SpmdMapping>& ms) {
    std::string s = "(";
    for (size_t i = 0; i < ms.size(); ++i) {
      s += (i ? ", " : "") + ms[i].spec.repr();
      if (ms[i].squeeze >= 0) s += "/" + std::to_string(ms[i].squeeze);
    }
    return s + ")";
  };
  std::string name;
  for (char ch : c.fn->name)
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') name += ch;
  return c.kind + " @" + (name.empty() ? "f" : name) + " mesh=" + c.layout.mesh.repr() +
         " in=" + specs(c.ins) + " out=" + specs(c.outs);
}

namespace {

const Array& whole_of(const Tensor& t) {
  if (t->concrete) return *t->concrete;
  if (t->sharded) return t->sharded->assemble();
  throw Error(ErrCode::ConcreteValue,
              "an SPMD call needs concrete operands, but one is traced with type " +
                  type_str(t->aval));
}

// Whether `d`'s shards are, device by device, the blocks `spec` gives each
// position of `mesh` (the specs and axis names may differ: one pmap's output
// feeding another pmap over the same devices).
bool shards_are_blocks(const ShardedData& d, const Mesh& mesh, const PartitionSpec& spec) {
  if (d.mesh.device_ids != mesh.device_ids) return false;
  if (d.mesh == mesh && d.spec == spec) return true;
  for (int64_t p = 0; p < mesh.size(); ++p) {
    ShardBlock have = block_of(d.mesh, d.spec, d.global.shape, p);
    ShardBlock want = block_of(mesh, spec, d.global.shape, p);
    if (have.start != want.start || have.shape != want.shape) return false;
  }
  return true;
}

// Participant p's blocks of every operand.
std::vector<std::vector<Array>> participant_inputs(const SpmdCallee& c,
                                                   std::span<const Tensor> operands) {
  const Mesh& mesh = c.layout.mesh;
  int64_t n = mesh.size();
  std::vector<std::vector<Array>> inputs(n);
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor& t = operands[i];
    const SpmdMapping& m = c.ins[i];
    const AVal block = c.fn->values[c.fn->params[i]].aval;
    // Already laid out as the call wants it: the shards are the blocks (pmap:
    // with the mapped axis, of size 1, dropped), used where they are, on the
    // host or on a GPU, without assembling the whole array.
    if (t->sharded && shards_are_blocks(*t->sharded, mesh, m.spec)) {
      for (int64_t p = 0; p < n; ++p)
        inputs[p].push_back(m.squeeze < 0 ? t->sharded->shards[p]
                                          : t->sharded->shards[p].reshaped(block.shape));
      continue;
    }
    const Array& whole = whole_of(t);
    for (int64_t p = 0; p < n; ++p) {
      if (m.replicated()) {
        inputs[p].push_back(whole.on_device(mesh.device_ids[p]));
        continue;
      }
      ShardBlock b = block_of(mesh, m.spec, whole.shape(), p);
      inputs[p].push_back(
          slice_block(whole, b.start, b.shape).reshaped(block.shape).on_device(mesh.device_ids[p]));
    }
  }
  return inputs;
}

// pmap's result r: the participants' blocks stacked along out axis `oa`, one
// shard of k elements per device thread (or, out_axes=None, replicated).
Tensor pmap_output(const SpmdCallee& c, size_t r, const std::vector<std::vector<Array>>& results,
                   const std::shared_ptr<PullLog>& log) {
  const SpmdMapping& m = c.outs[r];
  const AVal& block = c.fn->values[c.fn->results[r]].aval;
  int threads = c.layout.threads, k = c.layout.per_thread;
  const std::string& name = c.layout.mesh.axis_names[0];
  int oa = m.squeeze;
  auto d = std::make_shared<ShardedData>();
  d->pull_log = log;
  d->mesh = Mesh{{name}, {threads}, {}};
  for (int t = 0; t < threads; ++t) d->mesh.device_ids.push_back(c.layout.mesh.device_ids[t * k]);
  if (oa < 0) { // out_axes=None: replicated as JAX's P(); unchecked, each device keeps its own
                // value (JAX)
    d->global = c.out_global[r];
    for (int t = 0; t < threads; ++t)
      d->shards.push_back(results[t * k][r].on_device(d->mesh.device_ids[t]));
    return make_sharded_tensor(d);
  }
  d->spec.entries.assign(oa + 1, {});
  d->spec.entries[oa] = {name};
  d->global = c.out_global[r];
  Shape shard_shape = block.shape;
  shard_shape.insert(shard_shape.begin() + oa, k);
  for (int t = 0; t < threads; ++t) {
    if (k == 1) { // inserting a size-1 axis keeps the layout: no copy
      d->shards.push_back(results[t][r].reshaped(shard_shape).on_device(d->mesh.device_ids[t]));
      continue;
    }
    Array shard(block.dtype, shard_shape, block.weak, d->mesh.device_ids[t]);
    for (int j = 0; j < k; ++j) {
      std::vector<int64_t> start(shard_shape.size(), 0);
      start[oa] = j;
      Shape one = shard_shape;
      one[oa] = 1;
      write_block(shard, results[t * k + j][r].reshaped(one), start);
    }
    d->shards.push_back(shard);
  }
  return make_sharded_tensor(d);
}

} // namespace

std::vector<Tensor> run_spmd_call(const SpmdCallee& c, std::span<const Tensor> operands,
                                  const std::shared_ptr<PullLog>& log,
                                  std::vector<DebugRecord>* debug) {
  PXL_ASSERT(operands.size() == c.ins.size(), "spmd_call: wrong number of operands");
  if (!c.exe)
    throw Error(ErrCode::Unsupported, "a collective in this " + c.kind +
                                          " names an axis of an enclosing vmap, "
                                          "and this call was not batched by it");
  std::vector<std::vector<Array>> inputs = participant_inputs(c, operands);
  auto results = launch(*c.exe, *c.pool, c.layout, inputs, debug);
  std::vector<Tensor> outs;
  const Mesh& mesh = c.layout.mesh;
  for (size_t r = 0; r < c.outs.size(); ++r) {
    if (c.kind == "pmap") {
      outs.push_back(pmap_output(c, r, results, log));
      continue;
    }
    auto d = std::make_shared<ShardedData>();
    d->pull_log = log;
    d->mesh = mesh;
    d->spec = c.outs[r].spec;
    d->global = c.out_global[r];
    // Participants that hold the same block: the first one's. They agree
    // unless the value varies where out_specs says not: with check_vma off, or
    // where JAX's typing calls a value invariant that is not (pmax within
    // axis_index_groups); JAX keeps the first one's block then too.
    // Over unreduced axes each participant keeps its own partial sum.
    std::map<std::vector<int64_t>, int64_t> first;
    for (int64_t p = 0; p < mesh.size(); ++p) {
      std::vector<int64_t> key = block_of(mesh, d->spec, d->global.shape, p).start;
      std::vector<int64_t> coords = mesh.coords(p);
      for (const std::string& u : d->spec.unreduced)
        if (int a = mesh.axis_of(u); a >= 0) key.push_back(coords[static_cast<size_t>(a)]);
      int64_t src = first.emplace(key, p).first->second;
      d->shards.push_back(results[src][r].on_device(mesh.device_ids[p]));
    }
    outs.push_back(make_sharded_tensor(d));
  }
  return outs;
}

void run_spmd_call_instr(const Function& f, size_t index, int per_thread,
                         std::vector<std::vector<Array>>& env, std::vector<DebugRecord>& debug) {
  const Instr& in = f.body[index];
  for (int j = 0; j < per_thread; ++j) {
    std::vector<Tensor> args;
    for (int o : in.operands) args.push_back(make_tensor(env[j][o]));
    try {
      std::vector<DebugRecord> prints;
      std::vector<Tensor> outs = run_spmd_call(*in.attrs.callee, args, nullptr, &prints);
      sort_debug_records(prints);
      debug.insert(debug.end(), std::make_move_iterator(prints.begin()),
                   std::make_move_iterator(prints.end()));
      for (size_t r = 0; r < outs.size(); ++r)
        env[j][in.result + static_cast<int>(r)] = whole_of(outs[r]);
    } catch (Error& e) {
      e.set_span_if_missing(f.values[in.result].loc);
      throw;
    }
  }
}

} // namespace pxl
