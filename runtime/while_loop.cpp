#include "runtime/while_loop.hpp"

#include "runtime/debug_print.hpp"

#include <iterator>
#include <mutex>

#include "ir/contract.hpp"
#include "lang/diag.hpp"
#include "runtime/spmd_call.hpp"

namespace pxl {

// The compiled cond and body of one loop, per layout they ran under (a
// Function may run under several: pmap and shard_map meshes of its callers).
struct WhileExecutables {
  struct Entry {
    SpmdLayout layout;
    std::shared_ptr<Executable> cond, body;
    GroupLayout everyone; // all participants, for agreeing on the predicate
  };
  std::mutex mu;
  std::vector<std::shared_ptr<Entry>> entries;

  std::shared_ptr<Entry> get(const WhileLoop& w, const SpmdLayout& layout) {
    std::lock_guard lock(mu);
    for (const auto& e : entries)
      if (e->layout.mesh == layout.mesh && e->layout.threads == layout.threads &&
          e->layout.per_thread == layout.per_thread)
        return e;
    auto e = std::make_shared<Entry>();
    e->layout = layout;
    // Host executables: on a GPU platform the enclosing program copies a host
    // step's operands to the host first, and the loop's steps stay there.
    // XLA compiles a loop whole, with its multiply-adds contracted (ir/contract.hpp).
    // The constants the rewrites add (a reciprocal's 1) are the executables' own.
    std::vector<Array> cond_added, body_added;
    auto cond = xla_rewrites(w.cond, {}, &cond_added, XlaProgram::LoopBody);
    auto body = xla_rewrites(w.body, {}, &body_added, XlaProgram::LoopBody);
    e->cond = make_executable(w.mode, w.cache, cond, layout, std::move(cond_added));
    e->body = make_executable(w.mode, w.cache, body, layout, std::move(body_added));
    e->everyone.num_participants = layout.participants();
    e->everyone.groups.emplace_back();
    for (int p = 0; p < layout.participants(); ++p) e->everyone.groups[0].push_back(p);
    entries.push_back(e);
    return e;
  }
};

std::shared_ptr<WhileLoop> make_while_loop(std::shared_ptr<const Function> cond,
                                           std::shared_ptr<const Function> body, int cond_nconsts,
                                           int body_nconsts, ExecMode mode, CodeCache* cache) {
  auto w = std::make_shared<WhileLoop>();
  w->cond = std::move(cond);
  w->body = std::move(body);
  w->cond_nconsts = cond_nconsts;
  w->body_nconsts = body_nconsts;
  w->mode = mode;
  w->cache = cache;
  w->exes = std::make_shared<WhileExecutables>();
  return w;
}

namespace {

std::string where_str(const Span& s) {
  if (!s.valid()) return "";
  return s.file->path() + ":" + std::to_string(s.file->line_of(s.begin)) + ":" +
         std::to_string(s.file->column_of(s.begin));
}

// The loop over k local participants; operands[j] are participant j's.
std::vector<std::vector<Array>> run_loop(const WhileLoop& w, const SpmdLayout& layout, int thread,
                                         const std::vector<std::vector<Array>>& operands,
                                         CommWorld& world, std::vector<DebugRecord>& debug,
                                         const Span& where) {
  auto exes = w.exes->get(w, layout);
  const size_t k = operands.size(), ncc = static_cast<size_t>(w.cond_nconsts),
               nbc = static_cast<size_t>(w.body_nconsts), nc = w.ncarry();
  const bool agree = has_collectives(*w.cond) || has_collectives(*w.body);
  std::vector<std::vector<Array>> carry(k);
  for (size_t j = 0; j < k; ++j)
    carry[j].assign(operands[j].begin() + static_cast<long>(ncc + nbc), operands[j].end());
  std::vector<std::vector<Array>> cond_in(k), body_in(k);
  for (;;) {
    for (size_t j = 0; j < k; ++j) {
      cond_in[j].assign(operands[j].begin(), operands[j].begin() + static_cast<long>(ncc));
      cond_in[j].insert(cond_in[j].end(), carry[j].begin(), carry[j].end());
    }
    size_t first = debug.size();
    std::vector<std::vector<Array>> p = exes->cond->run(thread, cond_in, world, debug);
    for (size_t d = first; d < debug.size(); ++d) debug[d].format += w.cond_format_base;
    for (auto& c : cond_in) c.clear(); // the carry's only holder is `carry` again
    std::vector<bool> go(k);
    int32_t local_true = 0;
    for (size_t j = 0; j < k; ++j) local_true += (go[j] = p[j][0].get_f64(0) != 0);
    if (agree) {
      // One all-reduce of the count of participants that go on: all or none.
      std::vector<Array> ins(k), outs(k);
      std::vector<LocalBuffers> bufs(k);
      for (size_t j = 0; j < k; ++j) {
        ins[j] = Array::scalar(Scalar::of_int(go[j] ? 1 : 0), DType::Int32);
        outs[j] = Array(DType::Int32, {1});
        bufs[j] = LocalBuffers{ins[j].data(), outs[j].data()};
      }
      world.all_reduce(thread, bufs, exes->everyone, ReduceKind::Sum, DType::Int32, 1,
                       CollectiveSite{"while_loop predicate", where_str(where)});
      int64_t n = static_cast<int64_t>(outs[0].get_f64(0));
      // Device thread 0 reports the disagreement; the others leave the loop
      // (and fail at their next collective, which thread 0 never enters), so
      // the error that surfaces is this one, whatever the threads' timing.
      if (n != 0 && n != layout.participants() && thread != 0) break;
      if (n != 0 && n != layout.participants())
        throw Error(ErrCode::Value,
                    "while_loop: the predicate is true on " + std::to_string(n) + " of " +
                        std::to_string(layout.participants()) +
                        " devices; the loop runs collectives, so every device must run the "
                        "same number of iterations",
                    where,
                    "make the predicate the same on every device, e.g. compute it from a "
                    "psum/pmax of the carry or from values that do not vary over the mesh");
    }
    if (local_true == 0) break;
    for (size_t j = 0; j < k; ++j) {
      body_in[j].assign(operands[j].begin() + static_cast<long>(ncc),
                        operands[j].begin() + static_cast<long>(ncc + nbc));
      // The body gets the carry of a participant that goes on (it may update
      // a carried buffer in place); one that has finished keeps its own.
      if (go[j])
        std::move(carry[j].begin(), carry[j].end(), std::back_inserter(body_in[j]));
      else
        body_in[j].insert(body_in[j].end(), carry[j].begin(), carry[j].end());
    }
    first = debug.size();
    std::vector<std::vector<Array>> next =
        exes->body->run_donated(thread, std::move(body_in), world, debug);
    body_in.assign(k, {});
    for (size_t d = first; d < debug.size(); ++d) debug[d].format += w.body_format_base;
    for (size_t j = 0; j < k; ++j)
      if (go[j]) carry[j] = std::move(next[j]); // a finished participant keeps its carry
    PXL_ASSERT(k == 0 || carry[0].size() == nc, "while: body returned the wrong carry");
  }
  return carry;
}

} // namespace

void run_while_instr(const Function& f, const SpmdLayout& layout, int thread, size_t index,
                     std::vector<std::vector<Array>>& env, CommWorld& world,
                     std::vector<DebugRecord>& debug) {
  const Instr& in = f.body[index];
  const Span& where = f.values[in.result].loc;
  std::vector<std::vector<Array>> operands(env.size());
  for (size_t j = 0; j < env.size(); ++j)
    for (int o : in.operands) operands[j].push_back(env[j][o]);
  try {
    std::vector<std::vector<Array>> out =
        run_loop(*in.attrs.loop, layout, thread, operands, world, debug, where);
    for (size_t j = 0; j < env.size(); ++j)
      for (int r = 0; r < in.nresults; ++r) env[j][in.result + r] = out[j][static_cast<size_t>(r)];
  } catch (Error& e) {
    e.set_span_if_missing(where);
    throw;
  }
}

std::vector<Array> run_while(const WhileLoop& w, std::span<const Array> operands,
                             const Span& where) {
  SpmdLayout layout;
  layout.mesh.device_ids = {operands.empty() ? 0 : operands[0].device()};
  CommWorld world(1, 1);
  std::vector<DebugRecord> debug;
  std::vector<std::vector<Array>> ins{std::vector<Array>(operands.begin(), operands.end())};
  try {
    std::vector<Array> out = run_loop(w, layout, 0, ins, world, debug, where)[0];
    print_debug_records(debug); // jax.debug.print in the loop, in the order it ran
    return out;
  } catch (Error& e) {
    e.set_span_if_missing(where);
    throw;
  }
}

} // namespace pxl
