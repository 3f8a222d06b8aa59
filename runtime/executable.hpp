// Executables: a traced SPMD Function made runnable. The reference executable
// interprets the IR with the reference kernels (the oracle); the LLVM JIT (a
// later stage) provides another implementation of the same interface.
#pragma once
#include <memory>
#include <vector>

#include "ir/function.hpp"
#include "runtime/array.hpp"
#include "runtime/collectives.hpp"
#include "runtime/exec_mode.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

// Where the participants of an SPMD run live: participant p runs on device
// thread p / per_thread; `mesh` is the participant-level mesh (its positions are
// participant ids) that collectives group over.
struct SpmdLayout {
  Mesh mesh;
  int threads = 1;
  int per_thread = 1;
  int participants() const { return threads * per_thread; }
};

// What one participant's jax.debug.print produced while running.
struct DebugRecord {
  int participant = 0;
  int format = 0;
  std::vector<Array> values;
  std::shared_ptr<const DebugFormat> fmt; // the instruction's (attrs.debug)
};

class PhaseTimes; // lang/phase_times.hpp

class Executable {
public:
  virtual ~Executable() = default;
  // --time-passes: where device threads add the time they spend in collectives
  // (null: not measured).
  PhaseTimes* phase_times = nullptr;
  // Where values without a source location of their own come from, for
  // --profile's host<->device copy lines (an eager op's one-op program: the
  // op's line); set by the caller before run().
  Span call_site;
  // Runs the local participants of device thread `thread`: inputs[j][i] is the
  // i-th parameter of local participant j; returns their results the same way.
  virtual std::vector<std::vector<Array>> run(int thread,
                                              const std::vector<std::vector<Array>>& inputs,
                                              CommWorld& world,
                                              std::vector<DebugRecord>& debug) = 0;
  // run() for a caller that gives `inputs` up: an input the run reads for the
  // last time at an op that updates in place (ir/ref_in_place.hpp) may then
  // become that op's result without a copy (a loop's carried buffer).
  virtual std::vector<std::vector<Array>> run_donated(int thread,
                                                      std::vector<std::vector<Array>>&& inputs,
                                                      CommWorld& world,
                                                      std::vector<DebugRecord>& debug) {
    return run(thread, inputs, world, debug);
  }
  // Whether the participants never talk to each other (no collectives, no
  // nested SPMD calls) and may therefore run one after another on any thread.
  virtual bool independent() const { return false; }
};

std::unique_ptr<Executable> make_reference_executable(std::shared_ptr<const Function> fn,
                                                      SpmdLayout layout, std::vector<Array> consts);

class CodeCache; // codegen/jit.hpp

// The LLVM executable: fused kernels compiled with ORC for the host CPU, the
// rest run as the reference does. Compiled code comes from `cache` (the
// Platform's), or from a private JIT when null.
std::unique_ptr<Executable> make_llvm_executable(std::shared_ptr<const Function> fn,
                                                 SpmdLayout layout, std::vector<Array> consts,
                                                 CodeCache* cache = nullptr);

// The executable `mode` selects (--exec jit|interp).
std::unique_ptr<Executable> make_executable(ExecMode mode, CodeCache* cache,
                                            std::shared_ptr<const Function> fn, SpmdLayout layout,
                                            std::vector<Array> consts);

// Whether `f`'s participants are independent (see Executable::independent).
bool participants_independent(const Function& f);

// Runs `exe` on the device threads; inputs/outputs are per participant.
// Small runs of independent participants run on the calling thread instead:
// waking every device thread would cost more than the work.
// A failure on any device aborts the collectives of the others and is rethrown.
// Debug records come back in participant order.
std::vector<std::vector<Array>> launch(Executable& exe, DeviceThreads& pool,
                                       const SpmdLayout& layout,
                                       const std::vector<std::vector<Array>>& inputs,
                                       std::vector<DebugRecord>* debug = nullptr);

} // namespace pxl
