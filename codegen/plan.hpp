// Kernel-level lowering of an array IR Function (no LLVM here): which
// instructions are fused into which loop kernels, and the host-level schedule
// that runs those kernels between the ops left to the runtime (BLAS through the
// reference dot kernel, structural/index ops, collectives, effects).
#pragma once
#include <string>
#include <vector>

#include "ir/function.hpp"

namespace pxl {

// One fused kernel: a loop nest over the shape of `root`, whose body computes
// the root's element from the kernel's input buffers by inlining the producers
// of the root that need no buffer of their own (elementwise ops, broadcasts,
// transposes, slices, reversals, iotas). A reduction root loops over its
// operand's shape instead and accumulates.
//
// A row kernel (row_reduce >= 0) is a loop kernel that also computes a
// reduction over trailing axes whose result it alone reads, broadcast along
// its own trailing axes (softmax's sum and the division by it): for each
// index of the leading axes it first reduces the row, then computes the
// row's outputs, so the reduction's value never goes through memory. Row
// reductions that it alone reads, at the current row, over the same row
// (softmax's max, which its sum reads; layer norm's mean) come before it in
// `row_before`, each row's values computed in that order, so a row is read
// from memory in quick succession instead of by one kernel after another.
struct Kernel {
  int root = -1;           // value id of the one output
  int instr = -1;          // index in Function::body of the root's instruction
  std::vector<int> inputs; // value ids of the materialized buffers it reads, in order
  std::vector<int> fused;  // body indices of the inlined instructions (root last)
  bool is_reduce() const { return reduce; }
  bool reduce = false;
  int row_reduce = -1;         // body index of the fused row reduction, if any
  std::vector<int> row_before; // body indices of row reductions computed first (in order)
};

// A host step: run kernel `index`, or run body instruction `index` the way the
// reference executable does (reference kernel, collective or effect).
struct Step {
  enum class Kind { Kernel, Instr } kind = Kind::Instr;
  int index = 0;
};

struct KernelPlan {
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
};

// Where a plan's kernels run. On the host a float sum XLA would hand to
// YNNPACK (ir/ref_reduce_ynn.hpp) is a host step that sums in YNNPACK's
// order, its operand computed by a kernel; CUDA kernels sum in their own.
enum class PlanTarget { Host, Cuda };

// Groups the instructions of `f` into kernels. Every value that is a function
// result, feeds a non-fusible op, is a reduction, or is used by too many
// fused consumers to be worth recomputing gets its own buffer.
KernelPlan plan_kernels(const Function& f, PlanTarget target = PlanTarget::Host);

// Whether reduction instruction `instr` reduces only its operand's trailing
// axes (then it accumulates in registers).
bool reduce_axes_trailing(const Function& f, int instr);
// Whether reduction `in` must accumulate in XLA's order (ir/reduce_tree.hpp):
// a float or complex sum or product.
bool ordered_reduction(const Function& f, const Instr& in);
bool reduce_axes_trailing(const Function& f, const Kernel& k);
// Bytes of scratch a kernel needs: half-type reductions over non-trailing
// axes accumulate in f32 before rounding once, like the reference; split
// reductions keep a partial result per block (8 bytes each).
int64_t kernel_scratch_bytes(const Function& f, const Kernel& k);

// Whether every fused op of `k` other than a reduction root is elementwise:
// then the kernel indexes all its buffers by one flat index.
bool kernel_flat(const Function& f, const Kernel& k);

// How the host runs kernel `k` over threads (codegen/kernel_pool.hpp). The
// compiled kernel takes a range [begin, end) of its outermost loop, of
// `extent` iterations, whose iterations write disjoint outputs. A long
// reduction to one value is split (`finish`): iteration b reduces elements
// [b·kSplitBlock, (b+1)·kSplitBlock) into the scratch buffer, and a last call
// with the range [extent, extent + 1) combines those partial results in
// order of b with the remaining elements, so the result never depends on
// how many threads ran. (A float sum or product's blocks are instead the
// nodes of one level of XLA's tree, ir/reduce_tree.hpp, which the last call
// reduces as the levels above.) `work` is the number of elements the kernel reads.
// A reduction over non-trailing axes: the input axis (its first kept one)
// whose range [begin, end) a host call runs, or -1 where one call runs it all.
int reduce_split_axis(const Function& f, const Kernel& k);
struct KernelSplit {
  int64_t extent = 1;
  bool finish = false;
  int64_t work = 0;
};
inline constexpr int64_t kSplitBlock = int64_t{1} << 16;
// Kernels that read at least this many elements run over the kernel pool
// (split as above); smaller ones run on the calling thread.
inline constexpr int64_t kParallelWork = int64_t{1} << 20;
KernelSplit kernel_split(const Function& f, const Kernel& k);

// "3 kernels: %4 = [mul add exp]; ..." for --dump and the fusion tests.
std::string describe_plan(const Function& f, const KernelPlan& p);

// Whether `op` with these operand/result types can be computed inside a kernel.
bool fusible_instr(const Function& f, const Instr& in, PlanTarget target = PlanTarget::Host);

} // namespace pxl
