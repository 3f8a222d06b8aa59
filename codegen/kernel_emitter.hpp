// The emitter of one fused kernel (codegen/emit_kernel.cpp: loop nests and
// reductions; codegen/emit_kernel_gpu.cpp: NVPTX thread groups, the row
// cache, 16-byte elementwise loops). Private to those two files.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "codegen/emitter.hpp"
#include "codegen/plan.hpp"

namespace pxl::codegen::detail {

using llvm::Value;
using Idx = std::vector<Value*>;

class KernelEmitter {
public:
  KernelEmitter(llvm::Module& m, const Function& f, const Kernel& k, Target target,
                bool finish = false)
      : m_(m), f_(f), k_(k), target_(target), b_(m.getContext()),
        se_(b_, m, target == Target::Host), finish_(finish) {}

  void emit(const std::string& name);

private:
  const AVal& aval(int v) const { return f_.values[v].aval; }
  Value* at(int v, const Idx& idx);
  Value* load(int v, const Idx& idx);
  Value* linear(const Shape& s, const Idx& idx);
  Value* i64(int64_t c) { return b_.getInt64(static_cast<uint64_t>(c)); }
  // for (i = 0; i < n; ++i) body(i), leaving the builder after the loop. A
  // `spread` loop's iterations are independent: on NVPTX it becomes a
  // grid-stride loop over the CUDA grid (see kGridExtentAttr). `lanes`: the
  // loop over a reduction's accumulator lanes (vectorized whole).
  void loop(int64_t n, const std::function<void(Value*)>& body, bool spread = false,
            bool lanes = false);
  // for (i = start; i < limit; i += step) body(i); returns the back branch.
  llvm::BranchInst* loop_range(Value* start, Value* step, Value* limit,
                               const std::function<void(Value*)>& body);
  // idx[base..] = the indices of row-major position `flat` of dims[base..].
  void unflatten(Value* flat, const Shape& dims, size_t base, Idx& idx);
  void loops(const Shape& dims, Idx& idx, const std::function<void()>& body, bool spread = false);
  Value* ptx_sreg(llvm::Intrinsic::ID id);
  Value* ptx_thread_index(); // blockIdx.x * blockDim.x + threadIdx.x
  void loop_kernel();
  // NVPTX: elements per thread of a flat loop kernel whose buffers all take
  // 16-byte vector loads (0: not worth it, or types that do not).
  int64_t vector_width();
  // The inputs it loads that way: those read at the loop's own index (flat,
  // or 1-d of the root's shape); the others load as they would.
  std::vector<int> vector_inputs();
  // The flat loop kernel `width` elements at a time with 16-byte loads and
  // stores when every buffer is 16-byte aligned, else one at a time.
  void vector_loop_kernel(int64_t width);
  void reduce_kernel();
  void row_kernel();
  // The trailing reduction `in` of the row at `outer` (the kept indices, or
  // the flat row number when flat_), in the compute type.
  // `len` elements of the row from `offset` (flat_ only; default: all).
  Value* reduce_row(const Instr& in, const Idx& outer, int64_t len = -1, Value* offset = nullptr);
  // Whether reduction `in` must accumulate in XLA's order (ir/reduce_tree.hpp)
  // rather than in lanes: a float or complex sum or product.
  bool ordered(const Instr& in) const;
  // Reduction `in` over the box `red` of reduced extents (in axis order) in
  // XLA's order, leaf(r) giving the element at reduced index r; a tree over
  // axes longer than kReduceWindow, else row-major; over the minor-most axes
  // (`trailing`) the last level may be vectorized across rows as XLA's is
  // (reduce_row_lanes). With `node`: only that node of the tree's level
  // `level` (a split reduction's block).
  Value* reduce_box(const Instr& in, const Shape& red,
                    const std::function<Value*(const Idx&)>& leaf, bool trailing,
                    const Idx* node = nullptr, size_t level = 0);
  // One output element per iteration of a spread loop over the kept axes,
  // each reduced by reduce_box (NVPTX's leading reductions, and ordered ones
  // over non-trailing axes on the host).
  void per_output_reduce_kernel(bool spread);
  void split_reduce_kernel();
  // A split reduction's total: its blocks' partial results (in `partial`) in
  // order of b, then the elements after the blocks (see KernelSplit).
  Value* split_total(const Instr& in, Value* partial);
  // The accumulator's initial value for reduction `in` (see ScalarEmitter::reduce_init).
  Value* reduce_init(const Instr& in);
  // ---- NVPTX thread groups (see the header comment) ----
  // The lanes reducing one row of `n` elements of compute type `ct` when there
  // are `rows` rows; 0: one thread per row, in order (short rows).
  int64_t gpu_lanes(const Instr& in, int64_t rows, int64_t n, llvm::Type* ct) const;
  // Makes every spread loop hand out one iteration per group of
  // max(lanes, 32) threads; lane_ is the thread's index in its group.
  void use_groups(int64_t lanes);
  Value* shfl(Value* v, Value* arg, bool from_lane); // shfl.sync down by arg / from lane arg
  // A shared-memory array of this kernel, 16-byte aligned: LLVM's load/store
  // vectorizer assumes that much of an array whose alignment is left open,
  // while the PTX would declare only the element's.
  llvm::GlobalVariable* shared_array(llvm::Type* ty, const std::string& suffix);
  void barrier();
  // reduce_row by the row_lanes_ lanes of the group; every lane gets the result.
  Value* group_reduce_row(const Instr& in, int64_t n, const std::function<Value*(Value*)>& elem);
  // An ordered (XLA-order) row reduction by a warp: the lanes compute the
  // nodes of one level of the row's tree, then every lane reduces them.
  Value* group_ordered_row(const Instr& in, const Shape& red,
                           const std::function<Value*(const Idx&)>& leaf);
  void store_if_lane0(const std::function<void()>& store);
  // ---- NVPTX row cache (row_kernel): a block per row, whose elements of
  // each input shaped like the row reduction's operand are copied once into
  // shared memory, so the row's reductions and outputs read them from there
  // instead of from global memory once each ----
  // The inputs worth caching for row reduction `rin` over rows of `n`
  // elements; empty when the row cache does not apply.
  std::vector<int> row_cache_inputs(const Instr& rin, int64_t n);
  // Sets the row kernel up for the row cache (a block per row, the shared
  // arrays) when it applies; false when it does not.
  bool use_row_cache(const Instr& rin, int64_t n);
  // Copies row `row` (flat, of row_len_ elements) of every cached input.
  void fill_row_cache(Value* row);
  // Input `v` at `idx` from the row cache; nullptr when not cached there.
  Value* cached_load(int v, const Idx& idx);
  // group_ordered_row for a whole block: its threads compute the nodes.
  Value* block_ordered_row(const Instr& in, const Shape& red,
                           const std::function<Value*(const Idx&)>& leaf);

  llvm::Module& m_;
  const Function& f_;
  const Kernel& k_;
  Target target_;
  llvm::IRBuilder<> b_;
  ScalarEmitter se_;
  llvm::Function* fn_ = nullptr;
  std::vector<Value*> args_; // output, inputs..., scratch
  bool flat_ = false;
  // Values already emitted, by (value, index). Cleared at every loop
  // boundary: a value emitted inside one loop does not dominate the next.
  std::map<std::pair<int, Idx>, Value*> memo_;
  // In a row kernel: the row reductions' value ids and their values for the
  // current row (Kernel::row_before, then row_reduce).
  std::vector<std::pair<int, Value*>> row_results_;
  // Host: the range of the outermost (spread) loop this call runs.
  Value* begin_ = nullptr;
  Value* end_ = nullptr;
  // NVPTX: threads per spread-loop iteration, the thread's lane in that group,
  // the lanes reducing each row (0: one thread per row), the threads per block.
  int64_t group_ = 1;
  Value* lane_ = nullptr;
  int64_t row_lanes_ = 0;
  int64_t block_threads_ = 256;
  llvm::GlobalVariable* smem_ = nullptr;           // block-wide lanes' partial results
  llvm::GlobalVariable* node_smem_ = nullptr;      // each warp's tree nodes (group_ordered_row)
  llvm::GlobalVariable* stage_smem_ = nullptr;     // each warp's tile of 32 windows (same)
  bool finish_ = false;                            // emitting the finish entry of a split reduction
  std::vector<int> cached_;                        // row cache: input value ids
  std::vector<llvm::GlobalVariable*> cache_smem_;  // their rows, padded (cache_pos)
  Idx row_idx_;                                    // the current row's kept indices
  int64_t row_len_ = 0;                            // elements in a row
  std::vector<llvm::GlobalVariable*> block_nodes_; // block_ordered_row's two levels
};

// Accumulator lanes of a vectorized row reduction, by compute-type width.
constexpr int64_t kLanes32 = 32, kLanes64 = 16;

} // namespace pxl::codegen::detail
