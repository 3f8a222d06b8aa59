// The reference executable: each device thread interprets the IR for its local
// participants in lock step, instruction by instruction, so that a collective
// is entered once per thread with all of its participants' buffers.
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"
#include "lang/phase_times.hpp"
#include "runtime/executable.hpp"
#include "runtime/spmd_steps.hpp"

namespace pxl {

namespace {

class ReferenceExecutable : public Executable {
public:
  ReferenceExecutable(std::shared_ptr<const Function> fn, SpmdLayout layout,
                      std::vector<Array> consts)
      : fn_(std::move(fn)), layout_(std::move(layout)), consts_(std::move(consts)) {
    groups_ = collective_groups(*fn_, layout_);
    independent_ = participants_independent(*fn_);
    // What each instruction reads for the last time, in body order.
    const Function& f = *fn_;
    std::vector<int> last_read(f.values.size(), -1), when(f.body.size());
    for (size_t i = 0; i < f.body.size(); ++i) {
      when[i] = static_cast<int>(i);
      for (int o : f.body[i].operands) last_read[static_cast<size_t>(o)] = static_cast<int>(i);
    }
    reads_ = last_reads(f, last_read, when);
  }

  bool independent() const override { return independent_; }

  std::vector<std::vector<Array>> run(int thread, const std::vector<std::vector<Array>>& inputs,
                                      CommWorld& world, std::vector<DebugRecord>& debug) override {
    return run_env(thread, initial_values(*fn_, inputs, consts_, layout_.per_thread), world, debug);
  }

  std::vector<std::vector<Array>> run_donated(int thread, std::vector<std::vector<Array>>&& inputs,
                                              CommWorld& world,
                                              std::vector<DebugRecord>& debug) override {
    auto env = initial_values(*fn_, inputs, consts_, layout_.per_thread);
    inputs.clear(); // env holds the only references the caller gave up
    return run_env(thread, std::move(env), world, debug);
  }

private:
  std::vector<std::vector<Array>> run_env(int thread, std::vector<std::vector<Array>> env,
                                          CommWorld& world, std::vector<DebugRecord>& debug) {
    const Function& f = *fn_;
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (reads_.in_place[i])
        run_instr_in_place(f, i, layout_.per_thread, env);
      else
        run_host_instr(f, layout_, groups_, thread, i, env, world, debug, phase_times);
      // Dropped now, so the bytes of a value that lives on as a view (a
      // reshape) have one holder when an in-place update comes to them.
      for (auto& e : env)
        for (int o : reads_.dying[i]) e[static_cast<size_t>(o)] = Array();
    }
    return result_values(f, env);
  }

  std::shared_ptr<const Function> fn_;
  SpmdLayout layout_;
  std::vector<Array> consts_;
  CollectiveGroups groups_;
  bool independent_ = false;
  LastReads reads_; // what each instruction reads last
};

} // namespace

std::unique_ptr<Executable> make_reference_executable(std::shared_ptr<const Function> fn,
                                                      SpmdLayout layout,
                                                      std::vector<Array> consts) {
  return std::make_unique<ReferenceExecutable>(std::move(fn), std::move(layout), std::move(consts));
}

bool participants_independent(const Function& f) {
  for (const Instr& in : f.body) {
    if (is_collective(in.op) || in.op == Op::SpmdCall) return false;
    if (in.op == Op::While && !(participants_independent(*in.attrs.loop->cond) &&
                                participants_independent(*in.attrs.loop->body)))
      return false;
  }
  return true;
}

namespace {
// Below this much input, an independent launch on several device threads runs on
// the calling thread.
constexpr size_t kInlineLaunchBytes = size_t{256} << 10;
} // namespace

std::vector<std::vector<Array>> launch(Executable& exe, DeviceThreads& pool,
                                       const SpmdLayout& layout,
                                       const std::vector<std::vector<Array>>& inputs,
                                       std::vector<DebugRecord>* debug) {
  int k = layout.per_thread;
  CommWorld world(layout.threads, k);
  // One device thread has nobody to run beside: waking it (and being woken
  // by it) would only add two thread hand-offs to every call.
  bool inline_run = layout.threads == 1;
  if (layout.threads > 1 && exe.independent()) {
    size_t bytes = 0;
    for (const auto& p : inputs)
      for (const Array& a : p) bytes += a.nbytes();
    inline_run = bytes <= kInlineLaunchBytes;
  }
  if (inline_run) {
    std::vector<std::vector<Array>> outputs;
    outputs.reserve(static_cast<size_t>(layout.participants()));
    for (int t = 0; t < layout.threads; ++t) {
      std::vector<std::vector<Array>> local(inputs.begin() + t * k, inputs.begin() + (t + 1) * k);
      std::vector<DebugRecord> log;
      for (auto& out : exe.run(t, local, world, log)) outputs.push_back(std::move(out));
      if (debug)
        for (auto& rec : log) debug->push_back(std::move(rec));
    }
    return outputs;
  }
  std::vector<std::vector<Array>> outputs(layout.participants());
  std::vector<std::vector<DebugRecord>> logs(layout.threads);
  pool.run(layout.threads, [&](int t) {
    try {
      std::vector<std::vector<Array>> local(inputs.begin() + t * k, inputs.begin() + (t + 1) * k);
      auto out = exe.run(t, local, world, logs[t]);
      for (int j = 0; j < k; ++j) outputs[t * k + j] = std::move(out[j]);
    } catch (const std::exception& e) {
      world.abort(std::string("device ") + std::to_string(t) + " failed: " + e.what());
      throw;
    }
  });
  if (debug)
    for (auto& log : logs) // threads hold consecutive participants: this is participant order
      for (auto& rec : log) debug->push_back(std::move(rec));
  return outputs;
}

} // namespace pxl
