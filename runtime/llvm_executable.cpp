// The LLVM executable: each device thread calls the program's compiled
// schedule (codegen/schedule.hpp) for its local participants, which runs them
// in lock step. Kernel steps are compiled code; the schedule calls back here
// for the other steps (BLAS dot, structural and index ops, collectives, debug
// prints), which run exactly as in the reference executable, and for kernel
// outputs that need an allocation of their own. A program without kernels has
// no schedule (nothing to compile): its host steps run in order from here.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

#include "codegen/jit.hpp"
#include "codegen/kernel_pool.hpp"
#include "ir/custom_call.hpp"
#include "ir/ref_math.hpp"
#include "lang/diag.hpp"
#include "lang/phase_times.hpp"
#include "runtime/executable.hpp"
#include "runtime/spmd_steps.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pxl {

namespace {

// The thread's floating-point control state (MXCSR on x86): the schedule runs
// with the kernels' flush-to-zero, host steps with the caller's own.
unsigned fp_state() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#else
  return 0;
#endif
}
void set_fp_state([[maybe_unused]] unsigned s) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(s);
#endif
}

// Runs a kernel's range [0, extent) over `pool` (or here, when small or
// without one), then its combining call.
void run_split(const CompiledProgram& prog, size_t index, void* const* args, int64_t extent,
               bool finish, bool parallel) {
  KernelFn fn = prog.kernels[index];
  auto range = [&](int64_t begin, int64_t end) { fn(args, begin, end); };
  if (prog.pool && parallel) {
    prog.pool->parallel_for(extent, range);
  } else {
    ref::xla::ScopedFlushDenormal ftz; // same floating-point environment as the reference
    range(0, extent);
  }
  if (finish) {
    ref::xla::ScopedFlushDenormal ftz;
    range(extent, extent + 1);
  }
}

class LlvmExecutable : public Executable {
public:
  LlvmExecutable(std::shared_ptr<const Function> fn, SpmdLayout layout, std::vector<Array> consts,
                 std::shared_ptr<const CompiledProgram> prog)
      : fn_(std::move(fn)), layout_(std::move(layout)), consts_(std::move(consts)),
        prog_(std::move(prog)), groups_(collective_groups(*fn_, layout_)),
        independent_(participants_independent(*fn_)), kernel_of_(fn_->values.size(), -1),
        input_of_(fn_->values.size(), kNotInput), states_(static_cast<size_t>(layout_.threads)) {
    for (size_t i = 0; i < prog_->plan.kernels.size(); ++i)
      kernel_of_[prog_->plan.kernels[i].root] = static_cast<int>(i);
    for (size_t i = 0; i < fn_->params.size(); ++i) input_of_[fn_->params[i]] = static_cast<int>(i);
    for (size_t i = 0; i < fn_->consts.size(); ++i)
      input_of_[fn_->consts[i]] = -2 - static_cast<int>(i);
    for (size_t i = 0; i < fn_->results.size(); ++i)
      move_result_.push_back(std::find(fn_->results.begin() + static_cast<long>(i) + 1,
                                       fn_->results.end(), fn_->results[i]) == fn_->results.end());
    // What each host step reads for the last time, on the buffer plan's
    // clock (liveness over steps: a kernel reads at its own step).
    std::vector<int> last_read, when(fn_->body.size(), -1);
    for (const BufferPlan::Slot& s : prog_->buffers.values) last_read.push_back(s.last);
    for (size_t si = 0; si < prog_->plan.steps.size(); ++si)
      if (prog_->plan.steps[si].kind == Step::Kind::Instr)
        when[static_cast<size_t>(prog_->plan.steps[si].index)] = static_cast<int>(si);
    reads_ = last_reads(*fn_, last_read, when);
  }

  ~LlvmExecutable() override {
    for (auto& s : states_) delete s.load();
  }

  bool independent() const override { return independent_; }

  std::vector<std::vector<Array>> run(int thread, const std::vector<std::vector<Array>>& inputs,
                                      CommWorld& world, std::vector<DebugRecord>& debug) override {
    return run_with(thread, inputs, nullptr, world, debug);
  }

  std::vector<std::vector<Array>> run_donated(int thread, std::vector<std::vector<Array>>&& inputs,
                                              CommWorld& world,
                                              std::vector<DebugRecord>& debug) override {
    return run_with(thread, inputs, &inputs, world, debug);
  }

private:
  // `donated`: the inputs themselves, which the caller gave up (or null).
  std::vector<std::vector<Array>> run_with(int thread,
                                           const std::vector<std::vector<Array>>& inputs,
                                           std::vector<std::vector<Array>>* donated,
                                           CommWorld& world, std::vector<DebugRecord>& debug) {
    // Each thread reuses its state (arenas, tables) from run to run; a run
    // that finds it taken (a concurrent or nested run of this executable on
    // the same thread index) works on a fresh one.
    auto& slot = states_.at(static_cast<size_t>(thread));
    std::unique_ptr<State> st(slot.exchange(nullptr));
    if (!st) st = std::make_unique<State>(*this);
    st->begin(thread, inputs, world, debug);
    st->donated = donated;
    int rc;
    {
      ref::xla::ScopedFlushDenormal ftz; // the kernels' environment; restores the caller's
      if (prog_->schedule) {
        rc =
            prog_->schedule(st.get(), st->values.data(), st->arena_ptrs.data(), layout_.per_thread);
      } else { // only host steps: nothing was compiled
        rc = 0;
        for (const Step& s : prog_->plan.steps)
          if ((rc = st->host_step(s.index))) break;
      }
    }
    std::exception_ptr error = std::move(st->error);
    std::vector<std::vector<Array>> out;
    if (!rc) out = st->results();
    st->end();
    delete slot.exchange(st.release());
    if (rc) {
      if (error) std::rethrow_exception(error);
      internal_error(__FILE__, __LINE__, "the compiled schedule failed without an error");
    }
    return out;
  }

  // One device thread's run: its participants' values as arrays (env[j][v],
  // for what the host steps see), the schedule's value table and arenas.
  struct State final : ScheduleHost {
    explicit State(const LlvmExecutable& e) : exe(e) {
      const size_t k = static_cast<size_t>(e.layout_.per_thread), n = e.fn_->values.size();
      env.assign(k, std::vector<Array>(n));
      values.assign(k * n, nullptr);
      devices.assign(k * n, -1);
      int64_t bytes = e.prog_->buffers.arena_bytes;
      for (size_t j = 0; j < k; ++j) {
        arenas.push_back(bytes > 0 ? Array::uninitialized(DType::Bool, {bytes}) : Array());
        arena_ptrs.push_back(bytes > 0 ? arenas.back().data() : nullptr);
      }
    }

    void begin(int t, const std::vector<std::vector<Array>>& inputs, CommWorld& w,
               std::vector<DebugRecord>& d) {
      thread = t;
      world = &w;
      debug = &d;
      outer_fp = fp_state();
      error = nullptr;
      in = &inputs;
      // Only the value table gets the inputs here: a host step that reads
      // one copies it into env then (see input()).
      const Function& f = *exe.fn_;
      const size_t n = f.values.size();
      for (size_t j = 0; j < env.size(); ++j) {
        PXL_ASSERT(inputs[j].size() == f.params.size(), "wrong number of inputs");
        for (size_t i = 0; i < f.params.size(); ++i)
          values[j * n + static_cast<size_t>(f.params[i])] = data(inputs[j][i]);
        for (size_t i = 0; i < f.consts.size(); ++i)
          values[j * n + static_cast<size_t>(f.consts[i])] = data(exe.consts_[i]);
      }
    }

    static void* data(const Array& a) {
      return a.defined() ? const_cast<void*>(a.data()) : nullptr;
    }

    // Parameter or constant v of participant j, or null.
    const Array* input(size_t j, int v) const {
      int i = exe.input_of_[static_cast<size_t>(v)];
      if (i >= 0) return &(*in)[j][static_cast<size_t>(i)];
      if (i <= -2) return &exe.consts_[static_cast<size_t>(-2 - i)];
      return nullptr;
    }

    // Input v of participant j for a host step: moved out of the inputs
    // where the caller gave them up and the step reads a parameter for the
    // last time (`dies`), so that once the step drops it, nothing holds its
    // bytes but what the step made of them (a reshape, an in-place update).
    Array take_input(size_t j, int v, bool dies) {
      int i = exe.input_of_[static_cast<size_t>(v)];
      if (dies && donated && i >= 0) return std::move((*donated)[j][static_cast<size_t>(i)]);
      return *input(j, v);
    }

    void release_donated(size_t j, int v) {
      int i = exe.input_of_[static_cast<size_t>(v)];
      if (donated && i >= 0) (*donated)[j][static_cast<size_t>(i)] = Array();
    }

    // The results, moved out of env (copied where a value is returned twice).
    std::vector<std::vector<Array>> results() {
      const std::vector<int>& rs = exe.fn_->results;
      std::vector<std::vector<Array>> out(env.size());
      for (size_t j = 0; j < env.size(); ++j) {
        out[j].reserve(rs.size());
        for (size_t i = 0; i < rs.size(); ++i) {
          Array& a = env[j][static_cast<size_t>(rs[i])];
          if (const Array* x = a.defined() ? nullptr : input(j, rs[i]))
            out[j].push_back(*x);
          else
            out[j].push_back(exe.move_result_[i] ? std::move(a) : a);
        }
      }
      return out;
    }

    // Drops every array of the run (results are the caller's now).
    void end() {
      for (auto& row : env)
        for (Array& a : row) a = Array();
      std::fill(devices.begin(), devices.end(), -1);
      world = nullptr;
      debug = nullptr;
      in = nullptr;
      donated = nullptr;
    }

    // The device a kernel output is on: its first input's, as eval_ref's
    // results are on their operands' device.
    int device_of(size_t j, int v) const {
      const auto& kernels = exe.prog_->plan.kernels;
      for (;;) {
        const Array& a = env[j][static_cast<size_t>(v)];
        if (a.defined()) return a.device();
        if (int d = devices[j * env[j].size() + static_cast<size_t>(v)]; d >= 0) return d;
        if (const Array* x = input(j, v)) return x->device();
        int k = exe.kernel_of_[static_cast<size_t>(v)];
        if (k < 0 || kernels[static_cast<size_t>(k)].inputs.empty()) return 0;
        v = kernels[static_cast<size_t>(k)].inputs[0];
      }
    }

    int host_step(int64_t index) noexcept override {
      try {
        // Host steps run with the caller's floating-point environment.
        struct Restore {
          unsigned saved = fp_state();
          ~Restore() { set_fp_state(saved); }
        } restore;
        set_fp_state(outer_fp);
        const Function& f = *exe.fn_;
        const BufferPlan& bp = exe.prog_->buffers;
        const Instr& in = f.body[static_cast<size_t>(index)];
        const bool in_place = exe.reads_.in_place[static_cast<size_t>(index)];
        const std::vector<int>& dying = exe.reads_.dying[static_cast<size_t>(index)];
        for (size_t j = 0; j < env.size(); ++j)
          for (int o : in.operands) {
            const BufferPlan::Slot& s = bp.values[static_cast<size_t>(o)];
            Array& a = env[j][static_cast<size_t>(o)];
            const bool dies = std::find(dying.begin(), dying.end(), o) != dying.end();
            if (a.defined()) {
              // An earlier host step copied this input into env; the step that
              // reads it last lets the caller's donated reference go, so env's
              // copy is the sole owner (a loop carry scattered into in place).
              if (dies && s.kind == BufferPlan::Kind::Input) release_donated(j, o);
              continue;
            }
            if (s.kind == BufferPlan::Kind::Input)
              a = take_input(j, o, dies);
            else if (s.kind == BufferPlan::Kind::Arena)
              a = arenas[j]
                      .view_bytes(static_cast<size_t>(s.offset), f.values[o].aval)
                      .on_device(device_of(j, o));
            // A zero-size value has no bytes, so no kernel wrote it and it may have no slot;
            // the reference kernels still read its data pointer (x @ jnp.ones((0, 3)) crashed).
            const AVal& av = f.values[o].aval;
            if (!a.defined() && av.size() == 0)
              a = Array(av.dtype, av.shape, av.weak).on_device(device_of(j, o));
          }
        if (in_place)
          run_instr_in_place(f, static_cast<size_t>(index), exe.layout_.per_thread, env);
        else
          run_host_instr(f, exe.layout_, exe.groups_, thread, static_cast<size_t>(index), env,
                         *world, *debug, exe.phase_times);
        // What no later step reads is dropped now, not at the end of the run,
        // so the bytes of a value that lives on as a view have one holder.
        for (size_t j = 0; j < env.size(); ++j)
          for (int o : dying) {
            Array& a = env[j][static_cast<size_t>(o)];
            if (a.defined()) devices[j * f.values.size() + static_cast<size_t>(o)] = a.device();
            a = Array();
          }
        for (size_t j = 0; j < env.size(); ++j)
          for (int r = in.result; r < in.result + in.nresults; ++r) {
            Array& a = env[j][static_cast<size_t>(r)];
            if (!a.defined()) continue;
            // The plan expects only a reshape to return arena bytes; anything
            // else that does is copied out before those bytes are reused.
            if (arenas[j].defined() &&
                bp.values[static_cast<size_t>(r)].kind != BufferPlan::Kind::Alias) {
              const char* p = static_cast<const char*>(a.data());
              const char* base = static_cast<const char*>(arena_ptrs[j]);
              if (p >= base && p < base + bp.arena_bytes) {
                Array copy = Array::uninitialized(a.dtype(), a.shape(), a.weak_type(), a.device());
                std::memcpy(copy.data(), a.data(), a.nbytes());
                a = std::move(copy);
              }
            }
            values[j * f.values.size() + static_cast<size_t>(r)] = a.data();
          }
        return 0;
      } catch (...) {
        error = std::current_exception();
        return 1;
      }
    }

    void* alloc(int64_t j, int64_t v) noexcept override {
      try {
        const AVal& a = exe.fn_->values[static_cast<size_t>(v)].aval;
        size_t jj = static_cast<size_t>(j);
        Array out = Array::uninitialized(a.dtype, a.shape, a.weak, device_of(jj, int(v)));
        void* p = out.data();
        env[jj][static_cast<size_t>(v)] = std::move(out);
        return p;
      } catch (...) {
        error = std::current_exception();
        return nullptr;
      }
    }

    int big_kernel(int64_t kernel, void* const* args, int64_t extent,
                   int64_t finish) noexcept override {
      try {
        run_split(*exe.prog_, static_cast<size_t>(kernel), args, extent, finish != 0, true);
        return 0;
      } catch (...) {
        error = std::current_exception();
        return 1;
      }
    }

    const LlvmExecutable& exe;
    int thread = 0;
    CommWorld* world = nullptr;
    std::vector<DebugRecord>* debug = nullptr;
    const std::vector<std::vector<Array>>* in = nullptr; // the run's inputs
    std::vector<std::vector<Array>>* donated = nullptr;  // the same, when given up
    unsigned outer_fp = 0;
    std::vector<std::vector<Array>> env;
    std::vector<void*> values; // the schedule's value table
    std::vector<int> devices;  // by j * values + v: the device of a value dropped early
    std::vector<Array> arenas; // by local participant
    std::vector<void*> arena_ptrs;
    std::exception_ptr error;
  };

  std::shared_ptr<const Function> fn_;
  SpmdLayout layout_;
  std::vector<Array> consts_;
  std::shared_ptr<const CompiledProgram> prog_;
  CollectiveGroups groups_;
  bool independent_ = false;
  std::vector<int> kernel_of_; // by value id: the kernel whose output it is, or -1
  // By value id: parameter i (i >= 0), constant c (-2 - c), or neither.
  static constexpr int kNotInput = -1;
  std::vector<int> input_of_;
  std::vector<bool> move_result_;           // by result: not returned again later
  LastReads reads_;                         // what each host step reads last
  std::vector<std::atomic<State*>> states_; // by device thread, while no run holds them
};

} // namespace

void run_compiled_kernel(const Function& f, const CompiledProgram& prog, size_t index,
                         std::vector<Array>& env) {
  const Kernel& kn = prog.plan.kernels[index];
  const AVal& oa = f.values[kn.root].aval;
  // Results stay on their operands' device, as eval_ref's do.
  int device = kn.inputs.empty() ? 0 : env[kn.inputs[0]].device();
  // Every kernel writes each element of its output (reductions over
  // non-trailing axes initialise it first), so it is not zero-filled.
  Array out = Array::uninitialized(oa.dtype, oa.shape, oa.weak, device);
  std::vector<void*> args;
  args.push_back(out.data());
  for (int v : kn.inputs) args.push_back(const_cast<void*>(env[v].data()));
  int64_t scratch_bytes = kernel_scratch_bytes(f, kn);
  std::vector<float> scratch(static_cast<size_t>(scratch_bytes / 4));
  args.push_back(scratch.empty() ? nullptr : scratch.data());
  // Big kernels run on the CodeCache's threads (each piece with the
  // reference's floating-point environment); small ones on this thread.
  KernelSplit split = kernel_split(f, kn);
  run_split(prog, index, args.data(), split.extent, split.finish, split.work >= kParallelWork);
  env[kn.root] = std::move(out);
}

std::unique_ptr<Executable> make_llvm_executable(std::shared_ptr<const Function> fn,
                                                 SpmdLayout layout, std::vector<Array> consts,
                                                 CodeCache* cache) {
  std::shared_ptr<const CompiledProgram> prog;
  if (cache) {
    prog = cache->compile(*fn);
  } else {
    CodeCache own; // the program keeps the JIT alive after `own` is gone
    prog = own.compile(*fn);
  }
  return std::make_unique<LlvmExecutable>(std::move(fn), std::move(layout), std::move(consts),
                                          std::move(prog));
}

std::unique_ptr<Executable> make_executable(ExecMode mode, CodeCache* cache,
                                            std::shared_ptr<const Function> fn, SpmdLayout layout,
                                            std::vector<Array> consts) {
  fn = lower_custom_calls(std::move(fn));
  switch (mode) {
  case ExecMode::Jit:
    return make_llvm_executable(std::move(fn), std::move(layout), std::move(consts), cache);
  case ExecMode::Interp:
    break;
  }
  return make_reference_executable(std::move(fn), std::move(layout), std::move(consts));
}

} // namespace pxl
