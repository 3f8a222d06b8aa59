// Host steps shared by the SPMD executables: collectives and debug prints,
// run for all local participants of one device thread in lock step.
// env[j][v] is value v of local participant j.
#pragma once
#include <map>
#include <vector>

#include "runtime/executable.hpp"

namespace pxl {

struct CompiledProgram; // codegen/jit.hpp

// The participant groups of each collective instruction (by body index).
using CollectiveGroups = std::map<size_t, GroupLayout>;
CollectiveGroups collective_groups(const Function& f, const SpmdLayout& layout);

// Per local participant, the value table of `f` with the parameters and
// constants filled in; and the results read back from it.
std::vector<std::vector<Array>> initial_values(const Function& f,
                                               const std::vector<std::vector<Array>>& inputs,
                                               const std::vector<Array>& consts, int per_thread);
std::vector<std::vector<Array>> result_values(const Function& f,
                                              const std::vector<std::vector<Array>>& env);

// The --time-passes phase that collectives add their time to: summed over the
// device threads (each thread's wait for the others included), so its share of
// the run is total / (threads x "run: pmap/shard_map").
constexpr const char* kCollectivesPhase = "run: collectives (threads)";

// What an error about collective `in` names: "psum over 'i'" and its .pxl location.
CollectiveSite collective_site(const Function& f, const Instr& in);

// Runs collective instruction f.body[index] (axis_index included).
void run_collective(const Function& f, const SpmdLayout& layout, const CollectiveGroups& groups,
                    int thread, size_t index, std::vector<std::vector<Array>>& env,
                    CommWorld& world);

// Runs f.body[index] with its reference kernel for every local participant,
// blaming errors on the instruction's source location.
void run_reference_instr(const Function& f, size_t index, int per_thread,
                         std::vector<std::vector<Array>>& env);

// Runs the spmd_call f.body[index] for every local participant of a
// single-device Function (runtime/spmd_call.cpp). It launches the callee on the
// device threads, so the Function must run on the calling thread, not on one
// of them (DeviceThreads::run refuses a nested launch). The callee's
// jax.debug.print records join `debug`, in the order they print.
void run_spmd_call_instr(const Function& f, size_t index, int per_thread,
                         std::vector<std::vector<Array>>& env, std::vector<DebugRecord>& debug);

// Calls a host_callback's callee for every local participant (not where its
// gate says the cond branch is not taken: zeros then), in participant order.
void run_host_callback(const Function& f, const Instr& in, int per_thread,
                       std::vector<std::vector<Array>>& env);

// Records a debug_print for every local participant; its result is a 0-d bool.
void run_debug_print(const Instr& in, int thread, int per_thread,
                     std::vector<std::vector<Array>>& env, std::vector<DebugRecord>& debug);

// Runs f.body[index], an instruction outside any kernel, for every local
// participant the way all executables do: a debug print, an spmd_call, a
// while loop (runtime/while_loop.hpp), a
// collective (its time added to `times`' collectives phase), or the reference
// kernel.
void run_host_instr(const Function& f, const SpmdLayout& layout, const CollectiveGroups& groups,
                    int thread, size_t index, std::vector<std::vector<Array>>& env,
                    CommWorld& world, std::vector<DebugRecord>& debug, PhaseTimes* times);

// What each host step of `f` reads for the last time, by body index: the
// distinct operands o of instruction i with last_read[o] == when[i] (one
// clock for both: the executable's order of steps; when[i] < 0 for an
// instruction that is no host step), never a result of `f`; and whether i
// may then update its first operand in place (run_instr_in_place).
struct LastReads {
  std::vector<std::vector<int>> dying;
  std::vector<bool> in_place;
};
LastReads last_reads(const Function& f, const std::vector<int>& last_read,
                     const std::vector<int>& when);

// Runs f.body[index], whose op updates in place (ir/ref_in_place.hpp) and
// whose first operand no later step reads and the function does not return,
// for every local participant: in that operand's own bytes where the
// participant holds them alone (a loop's carried buffer, updated once a
// step), else as the reference kernel.
void run_instr_in_place(const Function& f, size_t index, int per_thread,
                        std::vector<std::vector<Array>>& env);

// Runs host-compiled kernel `index` of `prog` on one participant's values
// (runtime/llvm_executable.cpp).
void run_compiled_kernel(const Function& f, const CompiledProgram& prog, size_t index,
                         std::vector<Array>& env);

} // namespace pxl
