// The NVPTX side of KernelEmitter (codegen/kernel_emitter.hpp): elementwise
// loops 16 bytes a thread, the thread groups that reduce a row together
// (warp shuffles, shared memory, barriers; never atomics), and the row
// cache that stages a long row in shared memory for a block.
#include <algorithm>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "codegen/kernel_emitter.hpp"
#include "ir/reduce_tree.hpp"
#include "ir/ref_util.hpp"

namespace pxl::codegen::detail {

// Flat kernels of at least this many vectors load and store 16 bytes a thread.
constexpr int64_t kGpuVectorMin = 32 * 1024;

std::vector<int> KernelEmitter::vector_inputs() {
  std::vector<int> vin;
  const AVal& oa = aval(k_.root);
  for (int v : k_.inputs)
    if (flat_ ? aval(v).ndim() != 0 : aval(v).shape == oa.shape) vin.push_back(v);
  return vin;
}

int64_t KernelEmitter::vector_width() {
  int64_t widest = 0;
  auto fits = [&](int v) {
    llvm::Type* st = se_.storage_type(aval(v).dtype);
    if (!(st->isIntegerTy() || st->isFloatingPointTy())) return false;
    int64_t b = static_cast<int64_t>(st->getPrimitiveSizeInBits() / 8);
    if (b == 0 || 16 % b != 0) return false;
    widest = std::max(widest, b);
    return true;
  };
  if (!fits(k_.root)) return 0;
  for (int v : vector_inputs())
    if (!fits(v)) return 0;
  int64_t width = 16 / widest;
  return aval(k_.root).size() >= width * kGpuVectorMin ? width : 0;
}

void KernelEmitter::vector_loop_kernel(int64_t width) {
  llvm::LLVMContext& ctx = m_.getContext();
  const AVal& oa = aval(k_.root);
  const int64_t n = oa.size(), vectors = n / width;
  std::vector<int> vin = vector_inputs();
  auto arg_of = [&](int v) {
    return args_[1 + static_cast<size_t>(std::find(k_.inputs.begin(), k_.inputs.end(), v) -
                                         k_.inputs.begin())];
  };
  Value* aligned = b_.getTrue();
  auto check = [&](Value* p) { // an input may start at an offset into its buffer
    Value* low = b_.CreateAnd(b_.CreatePtrToInt(p, b_.getInt64Ty()), i64(15));
    aligned = b_.CreateAnd(aligned, b_.CreateICmpEQ(low, i64(0)));
  };
  check(args_[0]);
  for (int v : vin) check(arg_of(v));
  auto* vec_bb = llvm::BasicBlock::Create(ctx, "vector", fn_);
  auto* scalar_bb = llvm::BasicBlock::Create(ctx, "scalar", fn_);
  auto* done_bb = llvm::BasicBlock::Create(ctx, "done", fn_);
  b_.CreateCondBr(aligned, vec_bb, scalar_bb);
  llvm::Type* ot = se_.storage_type(oa.dtype);
  auto store_one = [&](Value* j) {
    b_.CreateStore(se_.store_convert(oa.dtype, at(k_.root, {j})),
                   b_.CreateInBoundsGEP(ot, args_[0], j));
  };
  b_.SetInsertPoint(scalar_bb);
  loop(n, store_one, true);
  b_.CreateBr(done_bb);
  b_.SetInsertPoint(vec_bb);
  loop(
      vectors,
      [&](Value* q) {
        Value* first = b_.CreateMul(q, i64(width), "", true, true);
        std::vector<Value*> js;
        for (int64_t e = 0; e < width; ++e)
          js.push_back(b_.CreateAdd(first, i64(e), "", true, true));
        // Each input's `width` elements in one load, seeded where at() looks.
        for (int in : vin) {
          const AVal& a = aval(in);
          llvm::Type* st = se_.storage_type(a.dtype);
          auto* vt = llvm::FixedVectorType::get(st, static_cast<unsigned>(width));
          Value* p = b_.CreateInBoundsGEP(st, arg_of(in), first);
          auto align = llvm::Align(static_cast<uint64_t>(width) * st->getPrimitiveSizeInBits() / 8);
          Value* v = b_.CreateAlignedLoad(vt, p, align);
          for (int64_t e = 0; e < width; ++e)
            memo_[{in, Idx{js[static_cast<size_t>(e)]}}] =
                se_.load_convert(a.dtype, b_.CreateExtractElement(v, static_cast<uint64_t>(e)));
        }
        auto* vt = llvm::FixedVectorType::get(ot, static_cast<unsigned>(width));
        Value* out = llvm::PoisonValue::get(vt);
        for (int64_t e = 0; e < width; ++e)
          out = b_.CreateInsertElement(
              out, se_.store_convert(oa.dtype, at(k_.root, {js[static_cast<size_t>(e)]})),
              static_cast<uint64_t>(e));
        auto align = llvm::Align(static_cast<uint64_t>(width) * ot->getPrimitiveSizeInBits() / 8);
        b_.CreateAlignedStore(out, b_.CreateInBoundsGEP(ot, args_[0], first), align);
      },
      true);
  if (n % width != 0) // the last elements, one a thread
    loop(
        n % width, [&](Value* t) { store_one(b_.CreateAdd(t, i64(vectors * width))); }, true);
  b_.CreateBr(done_bb);
  b_.SetInsertPoint(done_bb);
  // Threads for the vector loop (each spread loop above set its own).
  fn_->addFnAttr(kGridExtentAttr, std::to_string(vectors));
}

// ---- NVPTX thread groups ----

// Below this many rows a warp per row leaves most of the GPU idle, and rows of
// at least kGpuBlockRow elements get a whole block instead.
constexpr int64_t kGpuWarpRowsMin = 128, kGpuBlockRow = 8192, kGpuMaxBlock = 1024;
// Ordered rows of at least this many elements (32 windows) get a warp each
// (group_ordered_row); shorter ones a thread, in XLA's order.
constexpr int64_t kGpuOrderedRow = 1024;
// A level of a tree has at most this many nodes when the next one has fewer
// than 32 (reduce_tree_split_level with 32): a warp's shared-memory slots.
constexpr int64_t kGpuOrderedNodes = 32 * 32;
constexpr int64_t kGpuOrderedBlock = 128; // 4 warps: 4 x 1024 f64 slots fit in 32 KiB

int64_t KernelEmitter::gpu_lanes(const Instr& in, int64_t rows, int64_t n, llvm::Type* ct) const {
  if (ordered(in)) // XLA's order: a warp computes the nodes of one level of the row's tree
    return in.attrs.axes.size() == 1 && n >= kGpuOrderedRow && !ct->isStructTy() ? 32 : 0;
  int64_t cpu = ct->getPrimitiveSizeInBits() >= 64 ? kLanes64 : kLanes32;
  if (n < 2 * cpu) return 0; // reduce_row sums these in order: so does one thread
  if (rows >= kGpuWarpRowsMin || n < kGpuBlockRow) return cpu; // a warp: the CPU's order
  int64_t lanes = 64;
  while (lanes < kGpuMaxBlock && lanes * 2 * 32 <= n) lanes *= 2;
  return lanes;
}

void KernelEmitter::use_groups(int64_t lanes) {
  row_lanes_ = lanes;
  if (lanes == 0) return;
  group_ = std::max<int64_t>(lanes, 32);
  block_threads_ = group_ > 32 ? group_ : 256;
  if (ordered(f_.body[k_.row_reduce >= 0 ? k_.row_reduce : k_.instr]))
    block_threads_ = kGpuOrderedBlock;
  using namespace llvm::Intrinsic;
  lane_ = b_.CreateURem(ptx_sreg(nvvm_read_ptx_sreg_tid_x), i64(group_), "lane");
  // One group at least, also when no spread loop follows (a single row).
  fn_->addFnAttr(kGridExtentAttr, std::to_string(group_));
}

llvm::GlobalVariable* KernelEmitter::shared_array(llvm::Type* ty, const std::string& suffix) {
  auto* g = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage,
                                     llvm::UndefValue::get(ty), fn_->getName() + suffix, nullptr,
                                     llvm::GlobalValue::NotThreadLocal, 3);
  g->setAlignment(llvm::Align(16));
  return g;
}

Value* KernelEmitter::shfl(Value* v, Value* arg, bool from_lane) {
  using namespace llvm::Intrinsic;
  llvm::Type* t = v->getType();
  llvm::Type* i32 = b_.getInt32Ty();
  Value* a32 = b_.CreateTrunc(arg, i32);
  auto one = [&](Value* x) {
    auto* fn = llvm::Intrinsic::getDeclaration(&m_, from_lane ? nvvm_shfl_sync_idx_i32
                                                              : nvvm_shfl_sync_down_i32);
    return b_.CreateCall(fn, {b_.getInt32(0xffffffffu), x, a32, b_.getInt32(0x1f)});
  };
  if (t->isDoubleTy() || t->isIntegerTy(64)) { // two 32-bit halves
    Value* bits = b_.CreateBitCast(v, b_.getInt64Ty());
    Value* lo = one(b_.CreateTrunc(bits, i32));
    Value* hi = one(b_.CreateTrunc(b_.CreateLShr(bits, 32), i32));
    Value* r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()),
                           b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    return b_.CreateBitCast(r, t);
  }
  if (t->isFloatTy()) return b_.CreateBitCast(one(b_.CreateBitCast(v, i32)), t);
  if (t == i32) return one(v);
  return b_.CreateTrunc(one(b_.CreateZExt(v, i32)), t); // bool, 8- and 16-bit integers
}

void KernelEmitter::barrier() {
  b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_barrier0));
}

Value* KernelEmitter::group_reduce_row(const Instr& in, int64_t n,
                                       const std::function<Value*(Value*)>& elem) {
  DType d = aval(in.operands[0]).dtype;
  llvm::Type* ct = se_.compute_type(d);
  const int64_t lanes = row_lanes_;
  auto step = [&](Value* acc, Value* v) { return se_.reduce_step(in.op, d, acc, v); };
  llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  Value* acc = eb.CreateAlloca(ct);
  b_.CreateStore(reduce_init(in), acc);
  // Lane l takes elements l, l + lanes, ...; a warp's threads past `lanes`
  // (f64 rows use 16) take none and keep the initial value.
  Value* limit = lanes < group_
                     ? b_.CreateSelect(b_.CreateICmpULT(lane_, i64(lanes)), i64(n), i64(0))
                     : i64(n);
  loop_range(lane_, i64(lanes), limit,
             [&](Value* j) { b_.CreateStore(step(b_.CreateLoad(ct, acc), elem(j)), acc); });
  Value* v = b_.CreateLoad(ct, acc);
  if (lanes > 32) {
    // The block's lanes meet in shared memory: lane l += lane l + w while
    // w >= 32; then every warp reads lanes 0..31 and finishes the same tree.
    llvm::LLVMContext& ctx = m_.getContext();
    auto* ty = llvm::ArrayType::get(ct, static_cast<uint64_t>(lanes));
    if (!smem_) smem_ = shared_array(ty, ".smem");
    auto slot = [&](Value* l) { return b_.CreateInBoundsGEP(ty, smem_, {i64(0), l}); };
    b_.CreateStore(v, slot(lane_));
    barrier();
    for (int64_t w = lanes / 2; w >= 32; w /= 2) {
      auto* add = llvm::BasicBlock::Create(ctx, "tree", fn_);
      auto* next = llvm::BasicBlock::Create(ctx, "tree_next", fn_);
      b_.CreateCondBr(b_.CreateICmpULT(lane_, i64(w)), add, next);
      b_.SetInsertPoint(add);
      Value* other = b_.CreateLoad(ct, slot(b_.CreateAdd(lane_, i64(w))));
      b_.CreateStore(step(b_.CreateLoad(ct, slot(lane_)), other), slot(lane_));
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
      barrier();
    }
    v = b_.CreateLoad(ct, slot(b_.CreateURem(lane_, i64(32))));
    barrier(); // the next row may overwrite the slots only after every warp read them
  }
  for (int64_t w = std::min<int64_t>(lanes, 32) / 2; w >= 1; w /= 2)
    v = step(v, shfl(v, i64(w), false));
  return shfl(v, i64(0), true); // lane 0's result, to every lane of the warp
}

Value* KernelEmitter::group_ordered_row(const Instr& in, const Shape& red,
                                        const std::function<Value*(const Idx&)>& leaf) {
  // The nodes of the last level with 32 nodes or more (fewer than
  // kGpuOrderedNodes: the next level has fewer than 32), lane l computing
  // nodes l, l + 32, ... each in XLA's order, as a split reduction's blocks
  // are; every lane then reduces them with the levels above (the tree of
  // that level's extent). The same additions in the same order as one thread
  // walking the whole tree, so the same bits.
  DType d = aval(in.operands[0]).dtype;
  llvm::Type* ct = se_.compute_type(d);
  std::vector<ReduceTreeLevel> levels = reduce_tree(red);
  size_t level = reduce_tree_split_level(levels, 32);
  Shape nodes = levels[level].extent;
  int64_t count = 1;
  for (int64_t e : nodes) count *= e;
  PXL_ASSERT(count <= kGpuOrderedNodes, "group_ordered_row: too many nodes for shared memory");
  int64_t warps = block_threads_ / 32;
  auto* row_ty = llvm::ArrayType::get(ct, static_cast<uint64_t>(kGpuOrderedNodes));
  auto* ty = llvm::ArrayType::get(row_ty, static_cast<uint64_t>(warps));
  if (!node_smem_) node_smem_ = shared_array(ty, ".nodes");
  Value* warp = b_.CreateUDiv(ptx_sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), i64(32));
  auto slot = [&](Value* p) { return b_.CreateInBoundsGEP(ty, node_smem_, {i64(0), warp, p}); };
  auto warp_sync = [&] {
    b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::nvvm_bar_warp_sync),
                  {b_.getInt32(0xffffffffu)});
  };
  warp_sync(); // the previous row's lanes are done reading the slots
  size_t wr = 0, wc = 0;
  int64_t bytes = ct->getPrimitiveSizeInBits() / 8;
  if (red.size() == 1 && level == 1 && levels[1].window[0] == 32 && levels[1].lo[0] == 0 &&
      red[0] % (32 * 32) == 0 && bytes == 4 && reduce_window_lanes(levels, 1, bytes, wr, wc) == 0) {
    // Windows of 32 consecutive elements, each a chain (what reduce_box does
    // for one node here). Lane l's windows l, l + 32, ... lie 128 bytes apart,
    // so reading them directly would touch 32 cache lines per load; instead
    // the warp computes a tile of 32 windows a row of 32 at a time (lane l
    // element l of each window: consecutive addresses), staging them in
    // shared memory, padded to 33 so that lane l reading window l is free of
    // bank conflicts, and then each lane chains its window in order.
    auto* stage_ty = llvm::ArrayType::get(llvm::ArrayType::get(ct, static_cast<uint64_t>(32 * 33)),
                                          static_cast<uint64_t>(warps));
    if (!stage_smem_) stage_smem_ = shared_array(stage_ty, ".stage");
    auto staged = [&](Value* window, Value* element) {
      Value* at =
          b_.CreateAdd(b_.CreateMul(window, i64(33), "", true, true), element, "", true, true);
      return b_.CreateInBoundsGEP(stage_ty, stage_smem_, {i64(0), warp, at});
    };
    loop(count / 32, [&](Value* tile) {
      Value* first = b_.CreateMul(tile, i64(32 * 32), "", true, true);
      loop(32, [&](Value* w) {
        Value* pos = b_.CreateAdd(
            first, b_.CreateAdd(b_.CreateMul(w, i64(32), "", true, true), lane_, "", true, true),
            "", true, true);
        b_.CreateStore(leaf({pos}), staged(w, lane_));
      });
      warp_sync();
      llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
      Value* acc = eb.CreateAlloca(ct);
      b_.CreateStore(reduce_init(in), acc);
      loop(32, [&](Value* e) {
        b_.CreateStore(
            se_.reduce_step(in.op, d, b_.CreateLoad(ct, acc), b_.CreateLoad(ct, staged(lane_, e))),
            acc);
      });
      b_.CreateStore(
          b_.CreateLoad(ct, acc),
          slot(b_.CreateAdd(b_.CreateMul(tile, i64(32), "", true, true), lane_, "", true, true)));
      warp_sync(); // the tile's windows are read before the next tile overwrites them
    });
  } else {
    loop_range(lane_, i64(32), i64(count), [&](Value* p) {
      Idx pi;
      unflatten(p, nodes, 0, pi);
      b_.CreateStore(reduce_box(in, red, leaf, true, &pi, level), slot(p));
    });
  }
  warp_sync();
  return reduce_box(
      in, nodes, [&](const Idx& r) { return b_.CreateLoad(ct, slot(linear(nodes, r))); }, true);
}

void KernelEmitter::store_if_lane0(const std::function<void()>& store) {
  if (group_ == 1) return store();
  llvm::LLVMContext& ctx = m_.getContext();
  auto* then = llvm::BasicBlock::Create(ctx, "lane0", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx, "stored", fn_);
  b_.CreateCondBr(b_.CreateICmpEQ(lane_, i64(0)), then, cont);
  b_.SetInsertPoint(then);
  store();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

// Rows of at least this many elements get the row cache, up to this many
// bytes of cached rows a block (static shared memory stops at 48 KiB; the
// rest is left for the reductions' slots): a block of kRowCacheBlock threads
// each. A row read three times (softmax's max, sum and outputs) then comes
// from global memory once, in 16-byte loads where aligned.
constexpr int64_t kRowCacheMin = 2048, kRowCacheBytes = 40 * 1024, kRowCacheBlock = 256;
// 16-byte loads a thread has in flight while filling (registers: 4 each).
constexpr int64_t kRowCacheLoads = 4;

namespace {
// A row's element j sits at j + j / 32 in shared memory: the threads of a warp
// reading one window of 32 each (block_ordered_row) then hit 32 banks.
Value* cache_pos(llvm::IRBuilder<>& b, Value* j) {
  return b.CreateAdd(j, b.CreateLShr(j, 5), "", true, true);
}
} // namespace

std::vector<int> KernelEmitter::row_cache_inputs(const Instr& rin, int64_t n) {
  const AVal& xa = aval(rin.operands[0]);
  if (n < kRowCacheMin || !reduces_minor_axes(xa.shape, rin.attrs.axes)) return {};
  std::vector<int> reductions = k_.row_before;
  reductions.push_back(k_.row_reduce);
  for (int i : reductions) {
    const Instr& in = f_.body[i];
    if (aval(in.operands[0]).shape != xa.shape || in.attrs.axes != rin.attrs.axes) return {};
    if (ordered(in) &&
        (in.attrs.axes.size() != 1 || se_.compute_type(aval(in.operands[0]).dtype)->isStructTy()))
      return {};
  }
  std::vector<int> cached;
  int64_t bytes = 0, padded = n + n / 32 + 1;
  for (int v : k_.inputs) {
    const AVal& a = aval(v);
    llvm::Type* st = se_.storage_type(a.dtype);
    if (a.shape != xa.shape || !(st->isIntegerTy() || st->isFloatingPointTy())) continue;
    int64_t b = static_cast<int64_t>(st->getPrimitiveSizeInBits() / 8);
    if (b == 0 || bytes + b * padded > kRowCacheBytes) continue;
    bytes += b * padded;
    cached.push_back(v);
  }
  return cached;
}

bool KernelEmitter::use_row_cache(const Instr& rin, int64_t n) {
  cached_ = row_cache_inputs(rin, n);
  if (cached_.empty()) return false;
  use_groups(kRowCacheBlock);
  block_threads_ = kRowCacheBlock;
  row_len_ = n;
  for (int v : cached_) {
    auto* ty = llvm::ArrayType::get(se_.storage_type(aval(v).dtype),
                                    static_cast<uint64_t>(n + n / 32 + 1));
    cache_smem_.push_back(shared_array(ty, ".row" + std::to_string(v)));
  }
  return true;
}

void KernelEmitter::fill_row_cache(Value* row) {
  llvm::LLVMContext& ctx = m_.getContext();
  const int64_t n = row_len_;
  barrier(); // the previous row's readers are done
  for (size_t c = 0; c < cached_.size(); ++c) {
    size_t pos = std::find(k_.inputs.begin(), k_.inputs.end(), cached_[c]) - k_.inputs.begin();
    llvm::Type* st = se_.storage_type(aval(cached_[c]).dtype);
    llvm::GlobalVariable* smem = cache_smem_[c];
    Value* src =
        b_.CreateInBoundsGEP(st, args_[1 + pos], b_.CreateMul(row, i64(n), "", true, true));
    auto put = [&](Value* j, Value* v) {
      b_.CreateStore(v,
                     b_.CreateInBoundsGEP(smem->getValueType(), smem, {i64(0), cache_pos(b_, j)}));
    };
    const int64_t bytes = static_cast<int64_t>(st->getPrimitiveSizeInBits() / 8);
    const int64_t width = 16 / bytes; // elements in a 16-byte load
    auto scalar_fill = [&] {
      loop_range(lane_, i64(group_), i64(n),
                 [&](Value* j) { put(j, b_.CreateLoad(st, b_.CreateInBoundsGEP(st, src, j))); });
    };
    if (width < 2 || n % width != 0) {
      scalar_fill();
      continue;
    }
    // 16-byte loads when the row starts 16-byte aligned (a buffer can start
    // at an offset), all of a thread's loads issued before its stores.
    auto* aligned_bb = llvm::BasicBlock::Create(ctx, "row_cache_v", fn_);
    auto* scalar_bb = llvm::BasicBlock::Create(ctx, "row_cache_s", fn_);
    auto* done_bb = llvm::BasicBlock::Create(ctx, "row_cache_done", fn_);
    Value* addr = b_.CreatePtrToInt(src, b_.getInt64Ty());
    b_.CreateCondBr(b_.CreateICmpEQ(b_.CreateAnd(addr, i64(15)), i64(0)), aligned_bb, scalar_bb);
    b_.SetInsertPoint(aligned_bb);
    auto* vt = llvm::FixedVectorType::get(st, static_cast<unsigned>(width));
    const int64_t chunks = n / width, rounds = (chunks + group_ - 1) / group_;
    for (int64_t r0 = 0; r0 < rounds; r0 += kRowCacheLoads) {
      std::vector<std::pair<Value*, Value*>> loaded; // (chunk, its elements)
      for (int64_t r = r0; r < std::min(rounds, r0 + kRowCacheLoads); ++r) {
        Value* q = b_.CreateAdd(lane_, i64(r * group_), "", true, true);
        Value* in_row = b_.CreateICmpULT(q, i64(chunks));
        Value* at_q = b_.CreateSelect(in_row, q, i64(0)); // a valid address either way
        Value* p = b_.CreateInBoundsGEP(st, src, b_.CreateMul(at_q, i64(width), "", true, true));
        loaded.emplace_back(q, b_.CreateAlignedLoad(vt, p, llvm::Align(16)));
      }
      for (auto& [q, v] : loaded) {
        auto* store_bb = llvm::BasicBlock::Create(ctx, "row_cache_put", fn_);
        auto* next_bb = llvm::BasicBlock::Create(ctx, "row_cache_next", fn_);
        b_.CreateCondBr(b_.CreateICmpULT(q, i64(chunks)), store_bb, next_bb);
        b_.SetInsertPoint(store_bb);
        for (int64_t e = 0; e < width; ++e)
          put(b_.CreateAdd(b_.CreateMul(q, i64(width), "", true, true), i64(e), "", true, true),
              b_.CreateExtractElement(v, static_cast<uint64_t>(e)));
        b_.CreateBr(next_bb);
        b_.SetInsertPoint(next_bb);
      }
    }
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(scalar_bb);
    scalar_fill();
    b_.CreateBr(done_bb);
    b_.SetInsertPoint(done_bb);
  }
  barrier(); // the row is in shared memory
}

Value* KernelEmitter::cached_load(int v, const Idx& idx) {
  auto it = std::find(cached_.begin(), cached_.end(), v);
  if (it == cached_.end()) return nullptr;
  const AVal& a = aval(v);
  size_t kept = row_idx_.size();
  if (idx.size() != a.shape.size()) return nullptr;
  for (size_t d = 0; d < kept; ++d) // only reads of the current row
    if (idx[d] != row_idx_[d]) return nullptr;
  Value* j = i64(0);
  int64_t stride = 1;
  for (size_t d = a.shape.size(); d-- > kept;) {
    j = b_.CreateAdd(j, b_.CreateMul(idx[d], i64(stride), "", true, true), "", true, true);
    stride *= a.shape[d];
  }
  llvm::GlobalVariable* smem = cache_smem_[static_cast<size_t>(it - cached_.begin())];
  Value* p = b_.CreateInBoundsGEP(smem->getValueType(), smem, {i64(0), cache_pos(b_, j)});
  return se_.load_convert(a.dtype, b_.CreateLoad(se_.storage_type(a.dtype), p));
}

Value* KernelEmitter::block_ordered_row(const Instr& in, const Shape& red,
                                        const std::function<Value*(const Idx&)>& leaf) {
  // As group_ordered_row, with the block's threads computing the nodes of the
  // split level (thread t: nodes t, t + group_, ...), then the nodes of the
  // first level of those nodes' own tree the same way, and every thread the
  // rest: the levels above, in the same order as one thread walking the tree.
  DType d = aval(in.operands[0]).dtype;
  llvm::Type* ct = se_.compute_type(d);
  std::vector<ReduceTreeLevel> levels = reduce_tree(red);
  Shape nodes = levels[reduce_tree_split_level(levels, 32)].extent;
  auto slots = [&](size_t k, int64_t count) {
    auto* ty = llvm::ArrayType::get(ct, static_cast<uint64_t>(count));
    if (block_nodes_.size() <= k)
      block_nodes_.push_back(shared_array(ty, ".nodes" + std::to_string(k)));
    PXL_ASSERT(block_nodes_[k]->getValueType() == ty, "block_ordered_row: one row shape a kernel");
    return block_nodes_[k];
  };
  // Every node of `level` of the tree over `extent`, into shared array k.
  auto level_nodes = [&](size_t k, const Shape& extent, size_t level,
                         const std::function<Value*(const Idx&)>& elem) {
    Shape out = reduce_tree(extent)[level].extent;
    int64_t count = 1;
    for (int64_t e : out) count *= e;
    llvm::GlobalVariable* g = slots(k, count);
    barrier(); // the last reduction's readers are done with the slots
    loop_range(lane_, i64(group_), i64(count), [&](Value* p) {
      Idx pi;
      unflatten(p, out, 0, pi);
      b_.CreateStore(reduce_box(in, extent, elem, true, &pi, level),
                     b_.CreateInBoundsGEP(g->getValueType(), g, {i64(0), p}));
    });
    barrier();
    return std::make_pair(out, g);
  };
  auto from = [&](const Shape& extent, llvm::GlobalVariable* g) {
    return [&, extent, g](const Idx& r) {
      return b_.CreateLoad(ct,
                           b_.CreateInBoundsGEP(g->getValueType(), g, {i64(0), linear(extent, r)}));
    };
  };
  auto [first, g1] = level_nodes(0, red, reduce_tree_split_level(levels, 32), leaf);
  PXL_ASSERT(first == nodes, "block_ordered_row: split level");
  if (reduce_tree(first).size() < 2) return reduce_box(in, first, from(first, g1), true);
  auto [second, g2] = level_nodes(1, first, 1, from(first, g1));
  return reduce_box(in, second, from(second, g2), true);
}

} // namespace pxl::codegen::detail
