// The LLVM IR emitter of fused kernels (internal to codegen/; includes LLVM).
// emit_kernel.cpp builds the loop nests, loads and stores; emit_ops.cpp the
// scalar semantics of each elementwise op, mirroring the reference kernels.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/plan.hpp"

namespace pxl::codegen {

// What the kernels are compiled for: the host CPU (a loop nest per kernel), or
// NVPTX (the same loop nest, its outermost loop spread over the CUDA grid).
enum class Target { Host, Ptx };

// NVPTX: the number of threads a kernel's grid-stride loop wants (its
// iterations times the threads that share one), a string attribute of its
// body (absent: any launch works, one thread does the work), and the threads
// per block it was written for (a multiple of those sharing an iteration).
inline constexpr const char* kGridExtentAttr = "pxl-grid-extent";
inline constexpr const char* kBlockThreadsAttr = "pxl-block-threads";

// NVPTX: whether kernel `k` has a second entry `k<i>_finish`, launched after
// it with one warp (a split reduction combining its blocks' partial results).
bool ptx_has_finish(const Function& f, const Kernel& k);

// Emits every kernel of `plan` into one module; kernel i is named
// `<prefix>k<i>` and takes one argument, a `void**` of buffer pointers:
// the output, then Kernel::inputs in order, then (see kernel_scratch_bytes)
// a scratch buffer; on the host also the range [begin, end) of its outermost
// loop to run (see KernelSplit in plan.hpp). For NVPTX the kernel takes those pointers as its
// parameters, and its body `<prefix>k<i>.body` carries kGridExtentAttr.
std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const Function& f,
                                          const KernelPlan& plan, const std::string& prefix,
                                          Target target);

// Scalar emission state shared by the two emitter files.
class ScalarEmitter {
public:
  // `host`: the kernels run on this machine's CPU (its vector instructions
  // may stand in for the runtime's scalar ones, see rsqrt_call).
  ScalarEmitter(llvm::IRBuilder<>& b, llvm::Module& m, bool host = false)
      : b_(b), m_(m), host_(host) {}
  llvm::Type* compute_type(DType d);
  llvm::Type* storage_type(DType d);
  llvm::Value* load_convert(DType d, llvm::Value* stored); // storage -> compute
  llvm::Value* store_convert(DType d, llvm::Value* value); // compute -> storage
  llvm::Value* round_to(DType d, llvm::Value* value);      // half types: round the f32
  // The result of elementwise `in` on compute-type operands `args` of dtypes `arg_types`.
  llvm::Value* elementwise(const Instr& in, DType result, const std::vector<DType>& arg_types,
                           const std::vector<llvm::Value*>& args);
  // Reduction step and initial value in the compute type.
  // `single`: the reduction covers one element per output, which XLA turns into a reshape.
  llvm::Value* reduce_init(Op op, DType d, bool single = false);
  llvm::Value* reduce_step(Op op, DType d, llvm::Value* acc, llvm::Value* v);
  // float32 exp or log of `x` by the C library's expf/logf (OpAttrs::libm_tail).
  llvm::Value* libm_call(Op op, llvm::Value* x);

private:
  llvm::Value* call_rt(const std::string& name, llvm::Type* ret,
                       const std::vector<llvm::Value*>& args);
  llvm::Value* rt_by_width(const char* base, DType d, const std::vector<llvm::Value*>& args);
  llvm::Value* nan_minmax(bool is_max, DType d, llvm::Value* a, llvm::Value* b);
  llvm::Value* convert(DType from, DType to, llvm::Value* v);
  llvm::Value* unary(Op op, DType d, llvm::Value* x);
  llvm::Value* integer_pow(DType d, llvm::Value* x, int64_t n);
  // Transcendental `op` as inline IR (emit_math.cpp), or null where the
  // kernel calls the runtime instead.
  llvm::Value* inline_math(Op op, DType d, llvm::Value* x);
  llvm::Value* inline_math2(Op op, DType d, llvm::Value* x, llvm::Value* y);
  llvm::Value* binary(Op op, DType d, llvm::Value* x, llvm::Value* y);
  // One word (0 or 1) of the Threefry-2x32 hash of uint32 (k0, k1, x0, x1).
  llvm::Value* threefry2x32(const std::vector<llvm::Value*>& args, int word);
  // float32 rsqrt: the runtime's rsqrtss-based function, which the loop
  // vectorizer may replace by in-module rsqrtps versions (emit_math.cpp).
  llvm::Value* rsqrt_call(llvm::Value* x);

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  bool host_ = false;
};

} // namespace pxl::codegen
