// Loop nests of the fused kernels. A loop kernel walks its root's shape in
// row-major order (one flat loop when every fused op is elementwise) and
// computes each element by pulling the fused producers through their index
// maps (broadcast, transpose, slice, rev). A reduction keeps the reference's
// per-output accumulation order, so float results are bit-identical: with the
// reduced axes trailing, an accumulator per output is carried through the inner
// loops; otherwise the input is walked in row-major order accumulating into a
// buffer (vectorizable over the kept inner axes).
#include <algorithm>
#include <functional>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/emitter.hpp"
#include "ir/ref_util.hpp"

namespace pxl::codegen {

using llvm::Value;

namespace {

using Idx = std::vector<Value*>;

class KernelEmitter {
public:
  KernelEmitter(llvm::Module& m, const Function& f, const Kernel& k, Target target)
      : m_(m), f_(f), k_(k), target_(target), b_(m.getContext()), se_(b_, m) {}

  void emit(const std::string& name);

private:
  const AVal& aval(int v) const { return f_.values[v].aval; }
  Value* at(int v, const Idx& idx);
  Value* load(int v, const Idx& idx);
  Value* linear(const Shape& s, const Idx& idx);
  Value* i64(int64_t c) { return b_.getInt64(static_cast<uint64_t>(c)); }
  // for (i = 0; i < n; ++i) body(i), leaving the builder after the loop. A
  // `spread` loop's iterations are independent: on NVPTX it becomes a
  // grid-stride loop over the CUDA grid (see kGridExtentAttr).
  void loop(int64_t n, const std::function<void(Value*)>& body, bool spread = false);
  void loops(const Shape& dims, Idx& idx, const std::function<void()>& body,
             bool spread = false);
  Value* ptx_sreg(llvm::Intrinsic::ID id);
  Value* ptx_thread_index(); // blockIdx.x * blockDim.x + threadIdx.x
  void loop_kernel();
  void reduce_kernel();

  llvm::Module& m_;
  const Function& f_;
  const Kernel& k_;
  Target target_;
  llvm::IRBuilder<> b_;
  ScalarEmitter se_;
  llvm::Function* fn_ = nullptr;
  std::vector<Value*> args_; // output, inputs..., scratch
  bool flat_ = false;
  std::map<std::pair<int, Idx>, Value*> memo_;
};

Value* KernelEmitter::linear(const Shape& s, const Idx& idx) {
  std::vector<int64_t> st = ref::strides_of(s);
  Value* lin = i64(0);
  for (size_t d = 0; d < idx.size(); ++d)
    if (s[d] != 1) lin = b_.CreateAdd(lin, b_.CreateMul(idx[d], i64(st[d]), "", true, true));
  return lin;
}

Value* KernelEmitter::load(int v, const Idx& idx) {
  size_t pos = std::find(k_.inputs.begin(), k_.inputs.end(), v) - k_.inputs.begin();
  const AVal& a = aval(v);
  // In a flat kernel every operand has the root's size or is 0-d.
  Value* lin = flat_ ? (a.ndim() == 0 ? i64(0) : idx[0]) : linear(a.shape, idx);
  llvm::Type* st = se_.storage_type(a.dtype);
  Value* p = b_.CreateInBoundsGEP(st, args_[1 + pos], lin);
  return se_.load_convert(a.dtype, b_.CreateLoad(st, p));
}

Value* KernelEmitter::at(int v, const Idx& idx) {
  auto key = std::make_pair(v, idx);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  Value* r;
  if (std::find(k_.inputs.begin(), k_.inputs.end(), v) != k_.inputs.end()) {
    r = load(v, idx);
  } else {
    const Instr& in = f_.body[f_.values[v].producer];
    const AVal& oa = aval(v);
    const OpAttrs& a = in.attrs;
    auto operand_shape = [&]() -> const Shape& { return aval(in.operands[0]).shape; };
    switch (in.op) {
    case Op::BroadcastInDim: {
      Idx sub;
      for (size_t d = 0; d < a.axes.size(); ++d)
        sub.push_back(operand_shape()[d] == 1 ? i64(0) : idx[a.axes[d]]);
      r = at(in.operands[0], sub);
      break;
    }
    case Op::Transpose: {
      Idx sub(idx.size());
      for (size_t j = 0; j < a.perm.size(); ++j) sub[a.perm[j]] = idx[j];
      r = at(in.operands[0], sub);
      break;
    }
    case Op::Slice: {
      Idx sub;
      for (size_t d = 0; d < idx.size(); ++d)
        sub.push_back(b_.CreateAdd(i64(a.starts[d]), b_.CreateMul(idx[d], i64(a.strides[d]))));
      r = at(in.operands[0], sub);
      break;
    }
    case Op::Rev: {
      Idx sub = idx;
      for (int64_t ax : a.axes) sub[ax] = b_.CreateSub(i64(operand_shape()[ax] - 1), idx[ax]);
      r = at(in.operands[0], sub);
      break;
    }
    case Op::Iota: {
      // As Array::set(Scalar::of_int(i)): ints wrap, floats convert, bool is i != 0.
      Value* i = idx[a.axis];
      llvm::Type* ct = se_.compute_type(oa.dtype);
      if (oa.dtype == DType::Bool)
        r = b_.CreateICmpNE(i, i64(0));
      else if (is_floating(oa.dtype)) // int64 -> double -> the dtype, as Array::set
        r = se_.round_to(oa.dtype, b_.CreateFPCast(b_.CreateSIToFP(i, b_.getDoubleTy()), ct));
      else
        r = b_.CreateTrunc(i, ct);
      break;
    }
    default: {
      std::vector<Value*> args;
      std::vector<DType> types;
      for (size_t j = 0; j < in.operands.size(); ++j) {
        int o = in.operands[j];
        bool scalar_pred = in.op == Op::Select && j == 0 && aval(o).ndim() == 0;
        args.push_back(at(o, scalar_pred ? Idx{} : idx));
        types.push_back(aval(o).dtype);
      }
      r = se_.elementwise(in, oa.dtype, types, args);
    }
    }
  }
  memo_[key] = r;
  return r;
}

Value* KernelEmitter::ptx_sreg(llvm::Intrinsic::ID id) {
  return b_.CreateZExt(b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, id)), b_.getInt64Ty());
}

Value* KernelEmitter::ptx_thread_index() {
  using namespace llvm::Intrinsic;
  return b_.CreateAdd(b_.CreateMul(ptx_sreg(nvvm_read_ptx_sreg_ctaid_x),
                                   ptx_sreg(nvvm_read_ptx_sreg_ntid_x)),
                      ptx_sreg(nvvm_read_ptx_sreg_tid_x));
}

void KernelEmitter::loop(int64_t n, const std::function<void(Value*)>& body, bool spread) {
  llvm::LLVMContext& ctx = m_.getContext();
  Value* start = i64(0);
  Value* step = i64(1);
  if (spread && target_ == Target::Ptx) {
    using namespace llvm::Intrinsic;
    start = ptx_thread_index();
    step = b_.CreateMul(ptx_sreg(nvvm_read_ptx_sreg_nctaid_x), ptx_sreg(nvvm_read_ptx_sreg_ntid_x));
    fn_->addFnAttr(kGridExtentAttr, std::to_string(n));
  }
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx, "loop", fn_);
  auto* bodyb = llvm::BasicBlock::Create(ctx, "body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(start, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, i64(n)), bodyb, exit);
  b_.SetInsertPoint(bodyb);
  body(i);
  Value* next = b_.CreateAdd(i, step, "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

void KernelEmitter::loops(const Shape& dims, Idx& idx, const std::function<void()>& body,
                          bool spread) {
  if (idx.size() == dims.size()) return body();
  const size_t base = idx.size();
  if (spread && target_ == Target::Ptx && dims.size() - base > 1) {
    // One grid-stride loop over all the nest's elements, each split back into
    // its indices: every GPU thread gets work even when the leading dim is small.
    int64_t n = 1;
    for (size_t d = base; d < dims.size(); ++d) n *= dims[d];
    loop(
        n,
        [&](Value* flat) {
          idx.resize(dims.size());
          Value* rem = flat;
          for (size_t d = dims.size(); d-- > base;) {
            idx[d] = b_.CreateURem(rem, i64(dims[d]));
            rem = b_.CreateUDiv(rem, i64(dims[d]));
          }
          body();
          idx.resize(base);
        },
        true);
    return;
  }
  loop(
      dims[idx.size()],
      [&](Value* i) {
        idx.push_back(i);
        loops(dims, idx, body);
        idx.pop_back();
      },
      spread);
}

void KernelEmitter::loop_kernel() {
  const AVal& oa = aval(k_.root);
  flat_ = std::all_of(k_.fused.begin(), k_.fused.end(),
                      [&](int i) { return is_elementwise(f_.body[i].op); });
  Shape dims = flat_ ? Shape{oa.size()} : oa.shape;
  Idx idx;
  loops(
      dims, idx,
      [&] {
        Value* v = se_.store_convert(oa.dtype, at(k_.root, idx));
        Value* lin = flat_ ? idx[0] : linear(oa.shape, idx);
        b_.CreateStore(v, b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0], lin));
      },
      true);
}

void KernelEmitter::reduce_kernel() {
  const Instr& in = f_.body[k_.instr];
  int x = in.operands[0];
  const Shape& xs = aval(x).shape;
  const AVal& oa = aval(k_.root);
  DType d = aval(x).dtype;
  size_t r = xs.size();
  std::vector<bool> reduced(r, false);
  for (int64_t a : in.attrs.axes) reduced[a] = true;
  size_t kept = r - in.attrs.axes.size();
  bool trailing = kernel_scratch_bytes(f_, k_) == 0 && reduce_axes_trailing(f_, k_);
  llvm::Type* ct = se_.compute_type(d);
  Value* init = se_.reduce_init(in.op, d);
  if (trailing) {
    // Accumulator in a stack slot that mem2reg turns into a register.
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    Value* acc = eb.CreateAlloca(ct);
    Shape outer(xs.begin(), xs.begin() + kept), inner(xs.begin() + kept, xs.end());
    // Each output is one thread's sequential accumulation on NVPTX too, so
    // the order (and the float result) is the reference's.
    Idx idx;
    loops(
        outer, idx,
        [&] {
          b_.CreateStore(init, acc);
          Idx full = idx;
          loops(xs, full, [&] {
            b_.CreateStore(se_.reduce_step(in.op, d, b_.CreateLoad(ct, acc), at(x, full)), acc);
          });
          Value* out = se_.store_convert(oa.dtype, b_.CreateLoad(ct, acc));
          b_.CreateStore(out, b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0],
                                                   linear(outer, idx)));
        },
        true);
    return;
  }
  if (target_ == Target::Ptx) {
    // The walk below accumulates into shared outputs in the reference's order:
    // one GPU thread runs it (any launch is correct; the others return).
    llvm::LLVMContext& ctx = m_.getContext();
    auto* work = llvm::BasicBlock::Create(ctx, "first_thread", fn_);
    auto* done = llvm::BasicBlock::Create(ctx, "other_threads", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(ptx_thread_index(), i64(0)), work, done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
    b_.SetInsertPoint(work);
  }
  // Accumulate in memory: the output itself, or an f32 scratch for half types
  // (the reference rounds half sums once, at the end).
  bool half = kernel_scratch_bytes(f_, k_) > 0;
  Value* accp = half ? args_.back() : args_[0];
  llvm::Type* at_ty = half ? ct : se_.storage_type(d);
  auto acc_load = [&](Value* p) {
    Value* s = b_.CreateLoad(at_ty, p);
    return half ? s : se_.load_convert(d, s);
  };
  auto acc_store = [&](Value* v, Value* p) {
    b_.CreateStore(half ? v : se_.store_convert(d, v), p);
  };
  int64_t n = oa.size();
  loop(n, [&](Value* o) { acc_store(init, b_.CreateInBoundsGEP(at_ty, accp, o)); });
  std::vector<int64_t> ost = ref::strides_of(oa.shape), st(r, 0);
  for (size_t dd = 0, j = 0; dd < r; ++dd)
    if (!reduced[dd]) st[dd] = ost[j++];
  Idx idx;
  loops(xs, idx, [&] {
    Value* o = i64(0);
    for (size_t dd = 0; dd < r; ++dd)
      if (st[dd] != 0 && xs[dd] != 1) o = b_.CreateAdd(o, b_.CreateMul(idx[dd], i64(st[dd])));
    Value* p = b_.CreateInBoundsGEP(at_ty, accp, o);
    acc_store(se_.reduce_step(in.op, d, acc_load(p), at(x, idx)), p);
  });
  if (half)
    loop(n, [&](Value* o) {
      Value* v = b_.CreateLoad(ct, b_.CreateInBoundsGEP(ct, accp, o));
      b_.CreateStore(se_.store_convert(oa.dtype, v),
                     b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0], o));
    });
}

void set_fp_attrs(llvm::Function* fn) {
  // The kernels run with FTZ/DAZ set (as XLA's runtime and the reference do);
  // telling LLVM keeps its constant folding consistent with the hardware.
  fn->addFnAttr("denormal-fp-math", "preserve-sign,preserve-sign");
  fn->addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
  fn->setDoesNotThrow();
}

void KernelEmitter::emit(const std::string& name) {
  llvm::LLVMContext& ctx = m_.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  size_t nargs = 1 + k_.inputs.size() + 1;
  // The body takes each buffer as a noalias parameter (inputs never alias the
  // fresh output), which is what lets the loop vectorizer skip runtime checks.
  std::vector<llvm::Type*> params(nargs, ptr);
  auto* impl = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                      llvm::Function::InternalLinkage, name + ".body", m_);
  for (size_t i = 0; i < nargs; ++i)
    impl->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
  impl->addFnAttr(llvm::Attribute::AlwaysInline);
  set_fp_attrs(impl);
  fn_ = impl;
  for (auto& a : impl->args()) args_.push_back(&a);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", impl));
  if (k_.reduce)
    reduce_kernel();
  else
    loop_kernel();
  b_.CreateRetVoid();

  if (target_ == Target::Ptx) {
    // A CUDA kernel takes the buffers as parameters (cuLaunchKernel copies them).
    auto* entry = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                         llvm::Function::ExternalLinkage, name, m_);
    set_fp_attrs(entry);
    entry->setCallingConv(llvm::CallingConv::PTX_Kernel);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
    std::vector<Value*> passed;
    for (auto& a : entry->args()) passed.push_back(&a);
    b_.CreateCall(impl, passed);
    b_.CreateRetVoid();
    return;
  }
  auto* entry = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false),
                                       llvm::Function::ExternalLinkage, name, m_);
  set_fp_attrs(entry);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<Value*> loaded;
  for (size_t i = 0; i < nargs; ++i)
    loaded.push_back(b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
  b_.CreateCall(impl, loaded);
  b_.CreateRetVoid();
}

} // namespace

std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const Function& f,
                                          const KernelPlan& plan, const std::string& prefix,
                                          Target target) {
  auto m = std::make_unique<llvm::Module>(prefix + "module", ctx);
  for (size_t i = 0; i < plan.kernels.size(); ++i)
    KernelEmitter(*m, f, plan.kernels[i], target).emit(prefix + "k" + std::to_string(i));
  return m;
}

} // namespace pxl::codegen
