// Loop nests of the fused kernels. A loop kernel walks its root's shape in
// row-major order (one flat loop when every fused op is elementwise) and
// computes each element by pulling the fused producers through their index
// maps (broadcast, transpose, slice, rev). A float sum or product follows
// XLA's order (ir/reduce_tree.hpp, reduce_box): windows of 32 along long axes,
// reduced again level by level, each window a chain of additions in order
// (windows of computed elements are evaluated a vector of windows at a time,
// so the fused elementwise work stays vectorized). Other reductions over
// trailing axes, whose value any order gives, accumulate each row in
// registers: in order for short rows, in a fixed number of interleaved lanes
// for long ones (reduce_row). Over other axes, the input is walked in
// row-major order accumulating into the output (vectorizable over the kept
// inner axes), in the reference's order; a tree-ordered reduction reduces
// each output on its own instead. A row kernel (plan.hpp) reduces each row,
// then computes that row's elementwise epilogue.
//
// On NVPTX (codegen/emit_kernel_gpu.cpp) a long row of an order-free
// reduction is reduced by a group of GPU threads (a warp, or a whole block
// for few very long rows): lane l accumulates elements l, l + L, ... in
// order, then lanes l and l + w combine for w = L/2, ..., 1 through shared
// memory (w >= 32, bar.sync between steps) and warp shuffles; never
// depending on the launch. Float sums keep XLA's order: a long row's tree
// nodes are shared out among a warp's (or block's) threads, a short row or
// an output gets one thread. A row kernel over long rows gives each row a
// block that first copies the row into shared memory (the row cache), so its
// reductions and outputs read global memory once; a flat elementwise kernel
// moves 16 bytes a thread when its buffers are aligned.
#include <algorithm>
#include <functional>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/emitter.hpp"
#include "codegen/kernel_emitter.hpp"
#include "ir/reduce_tree.hpp"
#include "ir/ref_math.hpp"
#include "ir/ref_util.hpp"

namespace pxl::codegen {

using llvm::Value;

namespace detail {

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
  // The planner made sure every read of the row reduction is at this row.
  for (const auto& [value, result] : row_results_)
    if (v == value) return result;
  auto key = std::make_pair(v, idx);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  Value* r;
  if (std::find(k_.inputs.begin(), k_.inputs.end(), v) != k_.inputs.end()) {
    r = cached_load(v, idx);
    if (!r) r = load(v, idx);
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
    case Op::Reshape: { // size-1 axes only (plan.cpp): the other axes keep their index
      const Shape& os = operand_shape();
      Idx sub;
      size_t j = 0;
      for (int64_t d : os) {
        if (d == 1) {
          sub.push_back(i64(0));
          continue;
        }
        while (oa.shape[j] == 1) ++j;
        sub.push_back(idx[j++]);
      }
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
      // The elements XLA's split vectors compute with the C library's
      // function (ir/libm_tail.hpp); the host's only, as the reference kernel.
      if (a.libm_tail && target_ == Target::Host && oa.dtype == DType::Float32)
        if (int64_t tail = ref::xla::libm_tail_start(static_cast<int64_t>(oa.ndim()), oa.size());
            tail >= 0)
          r = b_.CreateSelect(b_.CreateICmpSGE(idx[0], i64(tail)), se_.libm_call(in.op, args[0]),
                              r);
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
  return b_.CreateAdd(
      b_.CreateMul(ptx_sreg(nvvm_read_ptx_sreg_ctaid_x), ptx_sreg(nvvm_read_ptx_sreg_ntid_x)),
      ptx_sreg(nvvm_read_ptx_sreg_tid_x));
}

void KernelEmitter::loop(int64_t n, const std::function<void(Value*)>& body, bool spread,
                         bool lanes) {
  llvm::LLVMContext& ctx = m_.getContext();
  Value* start = i64(0);
  Value* step = i64(1);
  Value* limit = i64(n);
  if (spread && target_ == Target::Host) {
    start = begin_;
    limit = end_;
  }
  if (spread && target_ == Target::Ptx) {
    using namespace llvm::Intrinsic;
    start = ptx_thread_index();
    step = b_.CreateMul(ptx_sreg(nvvm_read_ptx_sreg_nctaid_x), ptx_sreg(nvvm_read_ptx_sreg_ntid_x));
    if (group_ > 1) { // one iteration per group of threads (a block is whole groups)
      start = b_.CreateUDiv(start, i64(group_));
      step = b_.CreateUDiv(step, i64(group_));
    }
    fn_->addFnAttr(kGridExtentAttr, std::to_string(n * group_));
  }
  llvm::BranchInst* back = loop_range(start, step, limit, body);
  if (lanes) {
    // Left whole for the loop vectorizer (a full unroll first would leave
    // the lanes to SLP, which packs them two by two).
    // All lanes in one vector iteration: the vector accumulator then lives in
    // registers across the enclosing loop. (A width, not vectorize.enable:
    // a forced loop that cannot vectorize, e.g. for a libm call, would warn.)
    auto flag = [&](const char* name, llvm::Constant* v) -> llvm::Metadata* {
      return llvm::MDNode::get(ctx,
                               {llvm::MDString::get(ctx, name), llvm::ConstantAsMetadata::get(v)});
    };
    llvm::Metadata* ops[] = {
        nullptr, llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable")),
        flag("llvm.loop.vectorize.width", b_.getInt32(static_cast<uint32_t>(n))),
        flag("llvm.loop.interleave.count", b_.getInt32(1))};
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, ops);
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
}

llvm::BranchInst* KernelEmitter::loop_range(Value* start, Value* step, Value* limit,
                                            const std::function<void(Value*)>& body) {
  llvm::LLVMContext& ctx = m_.getContext();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx, "loop", fn_);
  auto* bodyb = llvm::BasicBlock::Create(ctx, "body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  i->addIncoming(start, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, limit), bodyb, exit);
  b_.SetInsertPoint(bodyb);
  memo_.clear();
  body(i);
  memo_.clear();
  Value* next = b_.CreateAdd(i, step, "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst* back = b_.CreateBr(head);
  b_.SetInsertPoint(exit);
  return back;
}

void KernelEmitter::unflatten(Value* flat, const Shape& dims, size_t base, Idx& idx) {
  idx.resize(dims.size());
  Value* rem = flat;
  for (size_t d = dims.size(); d-- > base;) {
    idx[d] = b_.CreateURem(rem, i64(dims[d]));
    rem = b_.CreateUDiv(rem, i64(dims[d]));
  }
}

void KernelEmitter::loops(const Shape& dims, Idx& idx, const std::function<void()>& body,
                          bool spread) {
  PXL_ASSERT(idx.size() <= dims.size(), "kernel loop nest: more indices than dimensions");
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
          unflatten(flat, dims, base, idx);
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
  flat_ = kernel_flat(f_, k_);
  if (target_ == Target::Ptx && (flat_ || oa.ndim() == 1))
    if (int64_t width = vector_width(); width > 1) return vector_loop_kernel(width);
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

Value* KernelEmitter::reduce_init(const Instr& in) {
  const Shape& xs = aval(in.operands[0]).shape;
  int64_t n = 1;
  for (int64_t a : in.attrs.axes) n *= xs[static_cast<size_t>(a)];
  return se_.reduce_init(in.op, aval(in.operands[0]).dtype, n == 1);
}

Value* KernelEmitter::reduce_row(const Instr& in, const Idx& outer, int64_t len, Value* offset) {
  int x = in.operands[0];
  const Shape& xs = aval(x).shape;
  DType d = aval(x).dtype;
  size_t kept = xs.size() - in.attrs.axes.size();
  int64_t n = 1;
  for (size_t a = kept; a < xs.size(); ++a) n *= xs[a];
  llvm::Type* ct = se_.compute_type(d);
  Value* init = reduce_init(in);
  auto step = [&](Value* acc, Value* v) { return se_.reduce_step(in.op, d, acc, v); };
  // The element at position j of the row, where the row is one index range.
  bool by_position = flat_ || in.attrs.axes.size() == 1;
  Value* base = flat_ ? b_.CreateMul(outer[0], i64(n), "", true, true) : nullptr;
  if (offset) base = b_.CreateAdd(base, offset, "", true, true);
  if (len >= 0) n = len;
  auto elem = [&](Value* j) {
    if (flat_) return at(x, {b_.CreateAdd(base, j, "", true, true)});
    Idx full = outer;
    full.push_back(j);
    return at(x, full);
  };
  if (ordered(in) && len < 0) {
    Shape red(xs.begin() + static_cast<std::ptrdiff_t>(kept), xs.end());
    auto leaf = [&](const Idx& r) {
      if (flat_) return elem(linear(red, r));
      Idx full = outer;
      full.insert(full.end(), r.begin(), r.end());
      return at(x, full);
    };
    if (target_ == Target::Ptx && row_lanes_ > 32) return block_ordered_row(in, red, leaf);
    if (target_ == Target::Ptx && row_lanes_ > 0) return group_ordered_row(in, red, leaf);
    return reduce_box(in, red, leaf, true);
  }
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  int64_t lanes = ct->getPrimitiveSizeInBits() >= 64 ? kLanes64 : kLanes32;
  if (target_ == Target::Ptx && row_lanes_ > 0 && n >= 2 * lanes)
    return group_reduce_row(in, n, [&](Value* j) {
      if (by_position) return elem(j);
      Idx full = outer;
      unflatten(j, xs, kept, full);
      return at(x, full);
    });
  if (!by_position || n < 2 * lanes) {
    // In order, one accumulator (a stack slot that mem2reg makes a register).
    Value* acc = eb.CreateAlloca(ct);
    b_.CreateStore(init, acc);
    auto add = [&](Value* v) { b_.CreateStore(step(b_.CreateLoad(ct, acc), v), acc); };
    if (by_position) {
      loop(n, [&](Value* j) { add(elem(j)); });
    } else {
      Idx full = outer;
      loops(xs, full, [&] { add(at(x, full)); });
    }
    return b_.CreateLoad(ct, acc);
  }
  // `lanes` accumulators: element j goes to lane j % lanes, in order of j;
  // then lanes l and l + w combine for w = lanes/2, ..., 1. The lane loops
  // have constant trip counts, so LLVM vectorizes them and keeps the lanes in
  // vector registers; the order is fixed by this IR, not by the vectorizer.
  Value* acc = eb.CreateAlloca(llvm::ArrayType::get(ct, static_cast<uint64_t>(lanes)));
  auto lane = [&](Value* l) { return b_.CreateInBoundsGEP(ct, acc, l); };
  auto add = [&](Value* l, Value* v) {
    Value* p = lane(l);
    b_.CreateStore(step(b_.CreateLoad(ct, p), v), p);
  };
  loop(lanes, [&](Value* l) { b_.CreateStore(init, lane(l)); });
  int64_t blocks = n / lanes, rest = n % lanes;
  loop(blocks, [&](Value* jb) {
    loop(
        lanes,
        [&](Value* l) {
          add(l,
              elem(b_.CreateAdd(b_.CreateMul(jb, i64(lanes), "", true, true), l, "", true, true)));
        },
        false, true);
  });
  if (rest > 0) loop(rest, [&](Value* l) { add(l, elem(b_.CreateAdd(i64(blocks * lanes), l))); });
  for (int64_t w = lanes / 2; w >= 1; w /= 2)
    loop(w, [&](Value* l) {
      add(l, b_.CreateLoad(ct, lane(b_.CreateAdd(l, i64(w), "", true, true))));
    });
  return b_.CreateLoad(ct, lane(i64(0)));
}

bool KernelEmitter::ordered(const Instr& in) const { return ordered_reduction(f_, in); }

Value* KernelEmitter::reduce_box(const Instr& in, const Shape& red,
                                 const std::function<Value*(const Idx&)>& leaf, bool trailing,
                                 const Idx* node, size_t level) {
  DType d = aval(in.operands[0]).dtype;
  llvm::Type* ct = se_.compute_type(d);
  std::vector<ReduceTreeLevel> levels =
      ordered(in) ? reduce_tree(red) : std::vector<ReduceTreeLevel>{{red, {}, {}}};
  // Accumulators live in the entry block (mem2reg makes them registers); a
  // fresh builder each time, as the block may have been empty at first.
  auto entry_alloca = [&](llvm::Type* t) {
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return eb.CreateAlloca(t);
  };
  auto new_acc = [&] { return entry_alloca(ct); };
  auto accumulate = [&](Value* acc, Value* v) {
    b_.CreateStore(se_.reduce_step(in.op, d, b_.CreateLoad(ct, acc), v), acc);
  };
  // `lanes` accumulators: lane l takes rows l, l + lanes, ... of a rows x
  // cols box (elem(i, j) gives element (i, j)), each row in order; then
  // halving (reduce_row_lanes).
  // `first`, when given, starts lane 0 (a sum carried in from outer loops).
  auto lanes_of = [&](int64_t lanes, int64_t rows, int64_t cols,
                      const std::function<Value*(Value*, Value*)>& elem, Value* first = nullptr) {
    std::vector<Value*> acc;
    for (int64_t l = 0; l < lanes; ++l) {
      acc.push_back(new_acc());
      b_.CreateStore(l == 0 && first ? first : reduce_init(in), acc.back());
    }
    loop(rows / lanes, [&](Value* it) {
      for (int64_t l = 0; l < lanes; ++l)
        loop(cols, [&](Value* j) {
          Value* i =
              b_.CreateAdd(b_.CreateMul(it, i64(lanes), "", true, true), i64(l), "", true, true);
          accumulate(acc[static_cast<size_t>(l)], elem(i, j));
        });
    });
    std::vector<Value*> v;
    for (Value* a : acc) v.push_back(b_.CreateLoad(ct, a));
    for (size_t h = v.size() / 2; h >= 1; h /= 2)
      for (size_t i = 0; i < h; ++i) v[i] = se_.reduce_step(in.op, d, v[i], v[i + h]);
    int64_t tail = row_lanes_tail(rows, lanes);
    if (tail == 0) return v[0];
    // LLVM's scalar epilogue: the rows left over, in order.
    b_.CreateStore(v[0], acc[0]);
    loop(tail, [&](Value* t) {
      loop(cols, [&](Value* j) {
        accumulate(acc[0], elem(b_.CreateAdd(t, i64(rows - tail), "", true, true), j));
      });
    });
    return static_cast<Value*>(b_.CreateLoad(ct, acc[0]));
  };
  int64_t elem_bytes = ct->isStructTy() ? 0 : ct->getPrimitiveSizeInBits() / 8;
  std::function<Value*(size_t, const Idx&)> tree;
  // Adds the level-1 nodes c (c's last index in [start, limit)) to `acc` in
  // order. Each node is a chain of additions in XLA's order, so nodes are
  // computed `group` at a time, one vector lane each (every lane walks its
  // whole window; the elements a clipped window lacks add the identity),
  // which keeps the fused elementwise work vectorized; the rest one by one.
  // Only worth it when the elements are computed: lanes of plain loads would
  // be gathers, slower than the chains.
  size_t wa = 0, wb = 0;
  bool computed = std::find(k_.inputs.begin(), k_.inputs.end(), in.operands[0]) == k_.inputs.end();
  bool grouped = computed && levels.size() > 1 && elem_bytes &&
                 !(trailing && reduce_window_lanes(levels, 1, elem_bytes, wa, wb) > 0);
  const int64_t group = elem_bytes == 8 ? 8 : 16;
  auto level1_nodes = [&](Value* acc, Idx c, Value* start, Value* limit) {
    const ReduceTreeLevel& lv = levels[1];
    const std::vector<int64_t>& below = levels[0].extent;
    size_t last = c.size() - 1;
    Value* whole = b_.CreateAdd(
        start, b_.CreateMul(b_.CreateSDiv(b_.CreateSub(limit, start), i64(group)), i64(group)));
    llvm::Type* lanes_ty = llvm::ArrayType::get(ct, static_cast<uint64_t>(group));
    Value* lanes = entry_alloca(lanes_ty);
    auto lane = [&](Value* k) { return b_.CreateInBoundsGEP(lanes_ty, lanes, {i64(0), k}); };
    loop_range(start, i64(group), whole, [&](Value* g0) {
      loop(
          group, [&](Value* k) { b_.CreateStore(reduce_init(in), lane(k)); }, false, true);
      Shape box(lv.window.begin(), lv.window.end());
      Idx t;
      loops(box, t, [&] {
        loop(
            group,
            [&](Value* k) {
              Value* valid = b_.getTrue();
              Idx e(c.size());
              for (size_t i = 0; i < c.size(); ++i) {
                Value* node = i == last ? b_.CreateAdd(g0, k, "", true, true) : c[i];
                Value* pos =
                    b_.CreateAdd(b_.CreateSub(b_.CreateMul(node, i64(lv.window[i]), "", true, true),
                                              i64(lv.lo[i]), "", false, true),
                                 t[i], "", false, true);
                Value* in_range = b_.CreateAnd(b_.CreateICmpSGE(pos, i64(0)),
                                               b_.CreateICmpSLT(pos, i64(below[i])));
                valid = b_.CreateAnd(valid, in_range);
                e[i] = b_.CreateSelect(in_range, pos, i64(0));
              }
              Value* v = b_.CreateSelect(valid, tree(0, e), reduce_init(in));
              b_.CreateStore(se_.reduce_step(in.op, d, b_.CreateLoad(ct, lane(k)), v), lane(k));
            },
            false, true);
      });
      for (int64_t k = 0; k < group; ++k) accumulate(acc, b_.CreateLoad(ct, lane(i64(k))));
    });
    loop_range(whole, i64(1), limit, [&](Value* ci) {
      c[last] = ci;
      accumulate(acc, tree(1, c));
    });
  };
  // Node p of level l: its children of level l - 1 inside that level's
  // extent, p * window - lo + t for t < window, in row-major order.
  tree = [&](size_t l, const Idx& p) -> Value* {
    if (l == 0) return leaf(p);
    const ReduceTreeLevel& lv = levels[l];
    const std::vector<int64_t>& below = levels[l - 1].extent;
    size_t ra = 0, ca = 0;
    int64_t wl = trailing && elem_bytes ? reduce_window_lanes(levels, l, elem_bytes, ra, ca) : 0;
    if (wl > 0)
      return lanes_of(wl, lv.window[ra], lv.window[ca], [&](Value* i, Value* j) {
        Idx c(p.size());
        for (size_t k = 0; k < p.size(); ++k)
          c[k] = b_.CreateMul(p[k], i64(lv.window[k]), "", true, true);
        c[ra] = b_.CreateAdd(c[ra], i, "", true, true);
        c[ca] = b_.CreateAdd(c[ca], j, "", true, true);
        return tree(l - 1, c);
      });
    Value* acc = new_acc();
    b_.CreateStore(reduce_init(in), acc);
    Idx c(p.size());
    std::function<void(size_t)> axis = [&](size_t i) {
      if (i == p.size()) return accumulate(acc, tree(l - 1, c));
      Value* first = b_.CreateSub(b_.CreateMul(p[i], i64(lv.window[i]), "", true, true),
                                  i64(lv.lo[i]), "", false, true);
      Value* end = b_.CreateAdd(first, i64(lv.window[i]), "", false, true);
      Value* start = b_.CreateSelect(b_.CreateICmpSLT(first, i64(0)), i64(0), first);
      Value* limit = b_.CreateSelect(b_.CreateICmpSGT(end, i64(below[i])), i64(below[i]), end);
      if (l == 2 && grouped && i + 1 == p.size()) return level1_nodes(acc, c, start, limit);
      if (l == 1 && computed && i + 1 == p.size() && target_ == Target::Host) {
        // The elements of one run of the window: computed first (a loop the
        // vectorizer takes, with any fused elementwise work), then added in
        // order. (A GPU thread computes them as it adds them: an array of
        // them would take as many registers.)
        llvm::Type* run_ty = llvm::ArrayType::get(ct, static_cast<uint64_t>(lv.window[i]));
        Value* run = entry_alloca(run_ty);
        auto slot = [&](Value* ci) {
          return b_.CreateInBoundsGEP(run_ty, run,
                                      {i64(0), b_.CreateSub(ci, start, "", true, true)});
        };
        loop_range(start, i64(1), limit, [&](Value* ci) {
          c[i] = ci;
          b_.CreateStore(tree(0, c), slot(ci));
        });
        loop_range(start, i64(1), limit,
                   [&](Value* ci) { accumulate(acc, b_.CreateLoad(ct, slot(ci))); });
        return;
      }
      loop_range(start, i64(1), limit, [&](Value* ci) {
        c[i] = ci;
        axis(i + 1);
      });
    };
    axis(0);
    return b_.CreateLoad(ct, acc);
  };
  if (node) return tree(level, *node);
  const Shape& last = levels.back().extent;
  std::vector<size_t> box; // the last level's non-unit axes
  for (size_t i = 0; i < last.size(); ++i)
    if (last[i] != 1) box.push_back(i);
  size_t nb = box.size();
  std::vector<int64_t> box_extents;
  for (size_t i : box) box_extents.push_back(last[i]);
  // Boxes of the last two axes; the loops outside them (more reduced axes,
  // none longer than 32) carry the sum into lane 0 of the next box.
  int64_t lanes = ordered(in) && trailing && elem_bytes
                      ? reduce_box_lanes(box_extents, levels.size(), elem_bytes,
                                         in.op == Op::ReduceSum ? loop_body_from(in.attrs.loop_body)
                                                                : LoopBody::Load)
                      : 0;
  if (lanes > 0) {
    Idx p(last.size(), i64(0));
    auto box_of = [&](Value* first) {
      return lanes_of(
          lanes, last[box[nb - 2]], last[box[nb - 1]],
          [&](Value* i, Value* j) {
            Idx q = p;
            q[box[nb - 2]] = i;
            q[box[nb - 1]] = j;
            return tree(levels.size() - 1, q);
          },
          first);
    };
    if (nb == 2) return box_of(nullptr);
    Value* carry = new_acc();
    b_.CreateStore(reduce_init(in), carry);
    std::function<void(size_t)> outer = [&](size_t k) {
      if (k + 2 == nb) {
        b_.CreateStore(box_of(b_.CreateLoad(ct, carry)), carry);
        return;
      }
      loop(last[box[k]], [&](Value* ik) {
        p[box[k]] = ik;
        outer(k + 1);
      });
    };
    outer(0);
    return b_.CreateLoad(ct, carry);
  }
  Value* acc = new_acc();
  b_.CreateStore(reduce_init(in), acc);
  Idx p;
  if (levels.size() == 2 && grouped) {
    // The level-1 nodes along the last axis, grouped (level1_nodes).
    Shape outer(last.begin(), last.end() - 1);
    loops(outer, p, [&] {
      Idx c = p;
      c.push_back(i64(0));
      level1_nodes(acc, c, i64(0), i64(last.back()));
    });
  } else {
    loops(last, p, [&] { accumulate(acc, tree(levels.size() - 1, p)); });
  }
  return b_.CreateLoad(ct, acc);
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
  bool trailing = reduce_axes_trailing(f_, k_);
  llvm::Type* ct = se_.compute_type(d);
  Value* init = reduce_init(in);
  if (trailing) {
    // With an elementwise prologue every row is one contiguous index range.
    flat_ = kernel_flat(f_, k_);
    if (kernel_split(f_, k_).finish) return split_reduce_kernel();
    Shape outer(xs.begin(), xs.begin() + kept);
    if (target_ == Target::Ptx) {
      int64_t row_len = 1;
      for (size_t a = kept; a < r; ++a) row_len *= xs[a];
      use_groups(gpu_lanes(in, oa.size(), row_len, ct));
    }
    auto store = [&](Value* acc, Value* o) {
      store_if_lane0([&] {
        b_.CreateStore(se_.store_convert(oa.dtype, acc),
                       b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0], o));
      });
    };
    if (flat_) {
      loop(
          oa.size(), [&](Value* o) { store(reduce_row(in, {o}), o); }, true);
    } else {
      Idx idx;
      loops(
          outer, idx, [&] { store(reduce_row(in, idx), linear(outer, idx)); }, true);
    }
    return;
  }
  // A tree-ordered reduction reduces each output's box on its own (its walk
  // would visit the elements in plain row-major order).
  Shape red;
  for (int64_t a : in.attrs.axes) red.push_back(xs[static_cast<size_t>(a)]);
  if (target_ == Target::Ptx) return per_output_reduce_kernel(true);
  // (So does one over the minor-most axes once size-1 axes are dropped, whose
  // last level may be vectorized across rows: reduce_row_lanes.)
  if (ordered(in) && (reduce_tree(red).size() > 1 || reduces_minor_axes(xs, in.attrs.axes)))
    return per_output_reduce_kernel(reduce_split_axis(f_, k_) >= 0);
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
  // On the host a call may run a range [begin, end) of the first kept axis
  // (reduce_split_axis): its outputs are disjoint from every other range's,
  // and each is accumulated in the reference's order, so any split of the
  // range over threads gives the same bits.
  int split_axis = target_ == Target::Host ? reduce_split_axis(f_, k_) : -1;
  auto outputs = [&](const std::function<void(Value*)>& body) {
    Idx oi;
    loops(
        oa.shape, oi, [&] { body(linear(oa.shape, oi)); }, split_axis >= 0);
  };
  outputs([&](Value* o) { acc_store(init, b_.CreateInBoundsGEP(at_ty, accp, o)); });
  std::vector<int64_t> ost = ref::strides_of(oa.shape), st(r, 0);
  for (size_t dd = 0, j = 0; dd < r; ++dd)
    if (!reduced[dd]) st[dd] = ost[j++];
  Idx idx;
  std::function<void()> walk = [&] {
    size_t dd = idx.size();
    if (dd == r) {
      Value* o = i64(0);
      for (size_t e = 0; e < r; ++e)
        if (st[e] != 0 && xs[e] != 1) o = b_.CreateAdd(o, b_.CreateMul(idx[e], i64(st[e])));
      Value* p = b_.CreateInBoundsGEP(at_ty, accp, o);
      acc_store(se_.reduce_step(in.op, d, acc_load(p), at(x, idx)), p);
      return;
    }
    loop(
        xs[dd],
        [&](Value* i) {
          idx.push_back(i);
          walk();
          idx.pop_back();
        },
        static_cast<int>(dd) == split_axis);
  };
  walk();
  if (half)
    outputs([&](Value* o) {
      Value* v = b_.CreateLoad(ct, b_.CreateInBoundsGEP(ct, accp, o));
      b_.CreateStore(se_.store_convert(oa.dtype, v),
                     b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0], o));
    });
}

void KernelEmitter::split_reduce_kernel() {
  // See KernelSplit: block b's partial result goes to scratch[b]; the call
  // with begin == extent combines them, then the elements after the blocks.
  // On NVPTX these are two launches: this entry gives each block to a warp
  // (the CPU's lane order, so the partial results are the CPU's), its
  // `_finish` entry (one warp) combines them.
  const Instr& in = f_.body[k_.instr];
  DType d = aval(in.operands[0]).dtype;
  const AVal& oa = aval(k_.root);
  llvm::Type* ct = se_.compute_type(d);
  int64_t blocks = kernel_split(f_, k_).extent;
  Value* partial = args_.back();
  llvm::BasicBlock* combine = nullptr;
  // An ordered reduction's blocks are the nodes of one level of its tree
  // (reduce_tree_split_level); the levels above are the tree of that level.
  const Shape& xs = aval(in.operands[0]).shape;
  std::vector<ReduceTreeLevel> levels = reduce_tree(xs);
  size_t level = reduce_tree_split_level(levels, kReduceSplitNodes);
  Shape nodes = levels[level].extent;
  if (target_ == Target::Ptx) {
    if (!ordered(in)) use_groups(ct->getPrimitiveSizeInBits() >= 64 ? kLanes64 : kLanes32);
  } else {
    llvm::LLVMContext& ctx = m_.getContext();
    combine = llvm::BasicBlock::Create(ctx, "combine", fn_);
    auto* reduce = llvm::BasicBlock::Create(ctx, "blocks", fn_);
    b_.CreateCondBr(b_.CreateICmpSGE(begin_, i64(blocks)), combine, reduce);
    b_.SetInsertPoint(reduce);
  }
  if (!finish_) {
    loop(
        blocks,
        [&](Value* blk) {
          Value* v = nullptr;
          if (ordered(in)) {
            Idx p;
            unflatten(blk, nodes, 0, p);
            v = reduce_box(
                in, xs, [&](const Idx& r) { return at(in.operands[0], {linear(xs, r)}); }, true, &p,
                level);
          } else {
            v = reduce_row(in, {i64(0)}, kSplitBlock,
                           b_.CreateMul(blk, i64(kSplitBlock), "", true, true));
          }
          store_if_lane0([&] { b_.CreateStore(v, b_.CreateInBoundsGEP(ct, partial, blk)); });
        },
        true);
    if (!combine) return;
    b_.CreateRetVoid();
    b_.SetInsertPoint(combine);
  } else {
    fn_->addFnAttr(kGridExtentAttr, std::to_string(group_)); // one warp
  }
  // On the GPU every lane combines the partial results (the same values in
  // the same order), so all of them hold the total; lane 0 stores it.
  Value* total = split_total(in, partial);
  store_if_lane0([&] {
    b_.CreateStore(se_.store_convert(oa.dtype, total),
                   b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0], i64(0)));
  });
}

Value* KernelEmitter::split_total(const Instr& in, Value* partial) {
  DType d = aval(in.operands[0]).dtype;
  llvm::Type* ct = se_.compute_type(d);
  int64_t blocks = kernel_split(f_, k_).extent;
  if (ordered(in)) {
    // The levels above the blocks' (reduce_tree_split_level): the tree of its extent.
    std::vector<ReduceTreeLevel> levels = reduce_tree(aval(in.operands[0]).shape);
    Shape nodes = levels[reduce_tree_split_level(levels, kReduceSplitNodes)].extent;
    return reduce_box(
        in, nodes,
        [&](const Idx& r) {
          return b_.CreateLoad(ct, b_.CreateInBoundsGEP(ct, partial, linear(nodes, r)));
        },
        true);
  }
  int64_t rest = aval(in.operands[0]).size() - blocks * kSplitBlock;
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  Value* acc = eb.CreateAlloca(ct);
  b_.CreateStore(reduce_init(in), acc);
  auto add = [&](Value* v) {
    b_.CreateStore(se_.reduce_step(in.op, d, b_.CreateLoad(ct, acc), v), acc);
  };
  loop(blocks, [&](Value* blk) { add(b_.CreateLoad(ct, b_.CreateInBoundsGEP(ct, partial, blk))); });
  if (rest > 0) add(reduce_row(in, {i64(0)}, rest, i64(blocks * kSplitBlock)));
  return b_.CreateLoad(ct, acc);
}

void KernelEmitter::per_output_reduce_kernel(bool spread) {
  // Each output element accumulates in a register: row-major over the
  // reduced axes (the reference's walk visits each output's elements in that
  // order) or XLA's tree, and half types round once.
  const Instr& in = f_.body[k_.instr];
  int x = in.operands[0];
  const Shape& xs = aval(x).shape;
  const AVal& oa = aval(k_.root);
  std::vector<bool> reduced(xs.size(), false);
  for (int64_t a : in.attrs.axes) reduced[a] = true;
  Shape kept, red;
  for (size_t a = 0; a < xs.size(); ++a) (reduced[a] ? red : kept).push_back(xs[a]);
  Idx oidx;
  loops(
      kept, oidx,
      [&] {
        Value* v = reduce_box(
            in, red,
            [&](const Idx& ridx) {
              Idx full;
              for (size_t a = 0, o = 0, r = 0; a < xs.size(); ++a)
                full.push_back(reduced[a] ? ridx[r++] : oidx[o++]);
              return at(x, full);
            },
            reduces_minor_axes(xs, in.attrs.axes));
        b_.CreateStore(
            se_.store_convert(oa.dtype, v),
            b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0], linear(kept, oidx)));
      },
      spread);
}

void KernelEmitter::row_kernel() {
  const Instr& rin = f_.body[k_.row_reduce];
  const AVal& ra = aval(rin.result);
  const AVal& oa = aval(k_.root);
  const Shape& row = ra.shape;
  if (target_ == Target::Ptx) {
    const AVal& xa = aval(rin.operands[0]);
    int64_t n = xa.size() / std::max<int64_t>(1, ra.size());
    if (!use_row_cache(rin, n))
      use_groups(gpu_lanes(rin, ra.size(), n, se_.compute_type(xa.dtype)));
  }
  Idx idx;
  loops(
      row, idx,
      [&] {
        if (!cached_.empty()) {
          row_idx_ = idx;
          fill_row_cache(linear(row, idx));
        }
        // Each reduction's value as the reference stores it (half types round).
        for (int i : k_.row_before) {
          const Instr& before = f_.body[i];
          Value* r = se_.round_to(aval(before.result).dtype, reduce_row(before, idx));
          row_results_.emplace_back(before.result, r);
        }
        row_results_.emplace_back(rin.result, se_.round_to(ra.dtype, reduce_row(rin, idx)));
        Idx full = idx;
        auto store = [&] {
          Value* v = se_.store_convert(oa.dtype, at(k_.root, full));
          b_.CreateStore(v, b_.CreateInBoundsGEP(se_.storage_type(oa.dtype), args_[0],
                                                 linear(oa.shape, full)));
        };
        if (group_ > 1) { // the row's outputs are shared out among the group's threads
          int64_t m = 1;
          for (size_t d = row.size(); d < oa.shape.size(); ++d) m *= oa.shape[d];
          loop_range(lane_, i64(group_), i64(m), [&](Value* t) {
            unflatten(t, oa.shape, row.size(), full);
            store();
          });
        } else {
          loops(oa.shape, full, store); // the row's trailing axes
        }
        row_results_.clear();
      },
      true);
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
  std::vector<llvm::Type*> body_params = params;
  if (target_ == Target::Host) { // the outermost loop's range (see KernelSplit)
    body_params.push_back(b_.getInt64Ty());
    body_params.push_back(b_.getInt64Ty());
  }
  auto* impl = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), body_params, false),
                                      llvm::Function::InternalLinkage, name + ".body", m_);
  for (size_t i = 0; i < nargs; ++i)
    impl->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
  impl->addFnAttr(llvm::Attribute::AlwaysInline);
  set_fp_attrs(impl);
  fn_ = impl;
  for (size_t i = 0; i < nargs; ++i) args_.push_back(impl->getArg(static_cast<unsigned>(i)));
  if (target_ == Target::Host) {
    begin_ = impl->getArg(static_cast<unsigned>(nargs));
    end_ = impl->getArg(static_cast<unsigned>(nargs + 1));
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", impl));
  if (k_.reduce)
    reduce_kernel();
  else if (k_.row_reduce >= 0)
    row_kernel();
  else
    loop_kernel();
  b_.CreateRetVoid();

  if (target_ == Target::Ptx) {
    // A CUDA kernel takes the buffers as parameters (cuLaunchKernel copies them).
    auto* entry = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                                         llvm::Function::ExternalLinkage, name, m_);
    set_fp_attrs(entry);
    entry->setCallingConv(llvm::CallingConv::PTX_Kernel);
    impl->addFnAttr(kBlockThreadsAttr, std::to_string(block_threads_));
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
    std::vector<Value*> passed;
    for (auto& a : entry->args()) passed.push_back(&a);
    b_.CreateCall(impl, passed);
    b_.CreateRetVoid();
    return;
  }
  auto* i64t = b_.getInt64Ty();
  auto* entry =
      llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64t, i64t}, false),
                             llvm::Function::ExternalLinkage, name, m_);
  set_fp_attrs(entry);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  std::vector<Value*> loaded;
  for (size_t i = 0; i < nargs; ++i)
    loaded.push_back(b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
  loaded.push_back(entry->getArg(1));
  loaded.push_back(entry->getArg(2));
  b_.CreateCall(impl, loaded);
  b_.CreateRetVoid();
}

} // namespace detail

using detail::KernelEmitter;

bool ptx_has_finish(const Function& f, const Kernel& k) {
  return k.reduce && kernel_split(f, k).finish;
}

std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const Function& f,
                                          const KernelPlan& plan, const std::string& prefix,
                                          Target target) {
  auto m = std::make_unique<llvm::Module>(prefix + "module", ctx);
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    std::string name = prefix + "k" + std::to_string(i);
    KernelEmitter(*m, f, plan.kernels[i], target).emit(name);
    if (target == Target::Ptx && ptx_has_finish(f, plan.kernels[i]))
      KernelEmitter(*m, f, plan.kernels[i], target, true).emit(name + "_finish");
  }
  return m;
}

} // namespace pxl::codegen
