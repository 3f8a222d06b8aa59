#include "runtime/cuda/collectives.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "ir/op.hpp"
#include "lang/diag.hpp"

namespace pxl::cuda {

namespace {

size_t elem_bytes(DType d) { return dtype_size(d); }

// Participant p's group and its rank in it.
std::pair<const std::vector<int>*, int> group_of(const GroupLayout& g, int p) {
  for (const auto& members : g.groups)
    for (size_t r = 0; r < members.size(); ++r)
      if (members[r] == p) return {&members, static_cast<int>(r)};
  internal_error(__FILE__, __LINE__, "participant not in any group");
}

ReduceKind reduce_kind(Op op) {
  return op == Op::Pmax ? ReduceKind::Max : op == Op::Pmin ? ReduceKind::Min : ReduceKind::Sum;
}

[[noreturn]] void fail(const GpuCollective& c, const std::string& what) {
  throw Error(ErrCode::Device, c.site.what +
                                   (c.site.location.empty() ? "" : " at " + c.site.location) +
                                   ": " + what);
}

// ---- NCCL ----

int nccl_type(DType d) {
  switch (d) {
  case DType::Bool:
    return ncclUint8;
  case DType::Int8:
  case DType::Int2:
  case DType::Int4:
    return ncclInt8; // the narrow integers are bytes (moved, never reduced: below)
  case DType::UInt8:
  case DType::UInt2:
  case DType::UInt4:
  PXL_SMALL_FLOAT_CASES:
    return ncclUint8; // (the small floats are moved, never reduced: below)
  case DType::Int16:
  case DType::UInt16:
    return ncclFloat16; // NCCL has no 16-bit integers; moving 2-byte elements is the same
  case DType::Int32:
    return ncclInt32;
  case DType::UInt32:
    return ncclUint32;
  case DType::Float16:
    return ncclFloat16;
  case DType::BFloat16:
    return ncclBfloat16;
  case DType::Float32:
    return ncclFloat32;
  case DType::Float64:
    return ncclFloat64;
  case DType::Complex64: // the CUDA platform refuses complex64 programs
    break;
  }
  internal_error(__FILE__, __LINE__, "bad dtype");
}

// bool psum is a logical or: the max of 0/1 bytes (and pmin an and: the min).
int nccl_op(ReduceKind k, DType d) {
  if (d == DType::Bool) return k == ReduceKind::Min ? ncclMin : ncclMax;
  return k == ReduceKind::Sum ? ncclSum : k == ReduceKind::Max ? ncclMax : ncclMin;
}

void run_nccl(CudaRuntime& rt, GpuDevice& dev, int thread, std::vector<GpuCollective>& calls) {
  const NcclApi& nccl = rt.driver().nccl();
  auto check = [&](ncclResult_t r, const GpuCollective& c, const char* fn) {
    if (r != ncclSuccess) fail(c, std::string(fn) + " failed: " + nccl.ncclGetErrorString(r));
  };
  // The communicators first: creating one is itself collective (every GPU of
  // the group joins), so it must not happen inside a group of calls.
  std::vector<std::pair<ncclComm_t, int>> comms; // per call: communicator, my rank
  for (GpuCollective& c : calls) {
    Op op = c.instr->op;
    bool reduces = op == Op::Psum || op == Op::Pmax || op == Op::Pmin || op == Op::PsumScatter;
    if (reduces && (c.dtype == DType::Int16 || c.dtype == DType::UInt16 || is_narrow_int(c.dtype) ||
                    is_small_float(c.dtype)))
      throw Error(ErrCode::Unsupported,
                  std::string(op_name(op)) + " of " + dtype_name(c.dtype) +
                      " on CUDA devices: NCCL cannot reduce 16-bit or narrower integers or float8",
                  Span{}, "convert to int32 before the collective and back after it");
    auto [members, rank] = group_of(*c.groups, thread);
    std::vector<int> ordinals;
    for (int p : *members) ordinals.push_back(rt.device(p % rt.device_count()).ordinal());
    comms.push_back({rt.nccl_comm(ordinals, rank), rank});
    c.outputs = {dev.alloc(c.out_bytes)};
  }
  dev.bind();
  check(nccl.ncclGroupStart(), calls.front(), "ncclGroupStart");
  for (size_t i = 0; i < calls.size(); ++i) {
    GpuCollective& c = calls[i];
    auto [comm, rank] = comms[i];
    const Instr& in = *c.instr;
    void* out = reinterpret_cast<void*>(static_cast<uintptr_t>(c.outputs[0]->ptr()));
    const void* src = reinterpret_cast<const void*>(static_cast<uintptr_t>(c.inputs[0]));
    int t = nccl_type(c.dtype);
    size_t n = static_cast<size_t>(c.count);
    size_t group = c.groups->groups.front().size();
    switch (in.op) {
    case Op::Psum:
    case Op::Pmax:
    case Op::Pmin:
      check(nccl.ncclAllReduce(src, out, n, t, nccl_op(reduce_kind(in.op), c.dtype), comm,
                               dev.stream()),
            c, "ncclAllReduce");
      break;
    case Op::AllGather:
      check(nccl.ncclAllGather(src, out, n, t, comm, dev.stream()), c, "ncclAllGather");
      break;
    case Op::PsumScatter:
      check(nccl.ncclReduceScatter(src, out, n / group, t, nccl_op(ReduceKind::Sum, c.dtype), comm,
                                   dev.stream()),
            c, "ncclReduceScatter");
      break;
    case Op::Ppermute: {
      bool received = false;
      for (auto [s, d] : in.attrs.pairs) {
        if (s == rank)
          check(nccl.ncclSend(src, n, t, static_cast<int>(d), comm, dev.stream()), c, "ncclSend");
        if (d == rank) {
          check(nccl.ncclRecv(out, n, t, static_cast<int>(s), comm, dev.stream()), c, "ncclRecv");
          received = true;
        }
      }
      if (!received) // a rank that receives nothing gets zeros
        dev.check(
            dev.driver().api().cuMemsetD8Async(c.outputs[0]->ptr(), 0, c.out_bytes, dev.stream()),
            "cuMemsetD8Async");
      break;
    }
    default:
      internal_error(__FILE__, __LINE__, "no NCCL version of this collective");
    }
  }
  check(nccl.ncclGroupEnd(), calls.back(), "ncclGroupEnd");
}

// ---- participants sharing one GPU ----

void copy(GpuDevice& dev, CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  if (bytes)
    dev.check(dev.driver().api().cuMemcpyDtoDAsync(dst, src, bytes, dev.stream()),
              "device-to-device copy");
}

void run_shared(CudaRuntime& rt, GpuDevice& dev, const SpmdLayout& layout, int thread,
                GpuCollective& c, CommWorld& world) {
  const int k = layout.per_thread;
  const GroupLayout& g = *c.groups;
  const int group = static_cast<int>(g.groups.front().size());
  // Every participant's operand is complete on its stream before the others
  // read it; the address exchange below is the rendezvous that says so.
  dev.synchronize();
  std::vector<uint32_t> mine(static_cast<size_t>(2 * k));
  std::vector<std::vector<uint32_t>> all(static_cast<size_t>(k),
                                         std::vector<uint32_t>(static_cast<size_t>(2 * group)));
  std::vector<LocalBuffers> bufs(static_cast<size_t>(k));
  for (int j = 0; j < k; ++j) {
    std::memcpy(&mine[2 * j], &c.inputs[j], sizeof(CUdeviceptr));
    bufs[j] = LocalBuffers{&mine[2 * j], all[j].data()};
  }
  world.all_gather(thread, bufs, g, DType::UInt32, 2, c.site);
  const int64_t chunk = c.instr->op == Op::PsumScatter ? c.count / group : c.count;
  const size_t chunk_bytes = static_cast<size_t>(chunk) * elem_bytes(c.dtype);
  std::shared_ptr<const LoadedProgram> reduce;
  std::shared_ptr<Function> rf;
  if (c.instr->op == Op::Psum || c.instr->op == Op::Pmax || c.instr->op == Op::Pmin ||
      c.instr->op == Op::PsumScatter) {
    rf = rank_order_reduction(reduce_kind(c.instr->op), c.dtype, group, chunk);
    if (!rf->body.empty()) reduce = rt.program(*rf, dev);
  }
  c.outputs.clear();
  for (int j = 0; j < k; ++j) {
    auto [members, rank] = group_of(g, thread * k + j);
    (void)members;
    std::vector<CUdeviceptr> peers(static_cast<size_t>(group));
    for (int r = 0; r < group; ++r) std::memcpy(&peers[r], &all[j][2 * r], sizeof(CUdeviceptr));
    auto out = dev.alloc(c.out_bytes);
    switch (c.instr->op) {
    case Op::Psum:
    case Op::Pmax:
    case Op::Pmin:
    case Op::PsumScatter: {
      // Rank r of a psum_scatter gets chunk r of the sum.
      size_t offset = c.instr->op == Op::PsumScatter ? static_cast<size_t>(rank) * chunk_bytes : 0;
      if (!reduce) {
        copy(dev, out->ptr(), peers[0] + offset, chunk_bytes);
        break;
      }
      const Kernel& kn = reduce->ptx->plan.kernels.at(0);
      std::vector<CUdeviceptr> ptrs{out->ptr()};
      for (int v : kn.inputs) {
        size_t r = std::find(rf->params.begin(), rf->params.end(), v) - rf->params.begin();
        ptrs.push_back(peers[r] + offset);
      }
      ptrs.push_back(0); // no scratch
      launch_kernel(dev, *reduce, 0, ptrs);
      break;
    }
    case Op::AllGather:
      for (int r = 0; r < group; ++r)
        copy(dev, out->ptr() + static_cast<size_t>(r) * chunk_bytes, peers[r], chunk_bytes);
      break;
    case Op::Ppermute: {
      int source = -1;
      for (auto [s, d] : c.instr->attrs.pairs)
        if (d == rank) source = static_cast<int>(s);
      if (source >= 0)
        copy(dev, out->ptr(), peers[source], chunk_bytes);
      else
        dev.check(dev.driver().api().cuMemsetD8Async(out->ptr(), 0, c.out_bytes, dev.stream()),
                  "cuMemsetD8Async");
      break;
    }
    default:
      internal_error(__FILE__, __LINE__, "no device version of this collective");
    }
    c.outputs.push_back(std::move(out));
  }
  // Nobody reuses an operand's memory before every reader is done with it.
  dev.synchronize();
  world.barrier(thread, c.site);
}

} // namespace

std::shared_ptr<Function> rank_order_reduction(ReduceKind kind, DType d, int group, int64_t n) {
  auto f = std::make_shared<Function>();
  auto add = [&](Op op, const OpAttrs& a, std::vector<int> operands) {
    std::vector<AVal> avals;
    for (int o : operands) avals.push_back(f->values[o].aval);
    IRValue v;
    v.aval = infer(op, a, avals);
    v.producer = static_cast<int>(f->body.size());
    int id = f->add_value(v);
    f->body.push_back(Instr{op, a, std::move(operands), id});
    return id;
  };
  bool half = d == DType::Float16 || d == DType::BFloat16;
  OpAttrs to_f32, back;
  to_f32.dtype = DType::Float32;
  back.dtype = d;
  Op op = d == DType::Bool          ? (kind == ReduceKind::Min ? Op::And : Op::Or)
          : kind == ReduceKind::Sum ? Op::Add
          : kind == ReduceKind::Max ? Op::Max
                                    : Op::Min;
  int acc = -1;
  for (int r = 0; r < group; ++r) {
    IRValue p;
    p.aval = AVal{d, {n}, false};
    int v = f->add_value(p);
    f->params.push_back(v);
    if (half) v = add(Op::ConvertElementType, to_f32, {v});
    acc = acc < 0 ? v : add(op, {}, {acc, v});
  }
  if (half) acc = add(Op::ConvertElementType, back, {acc});
  f->results.push_back(acc);
  return f;
}

CollectivePath collective_path(CudaRuntime& rt, const SpmdLayout& layout) {
  std::set<int> ordinals;
  for (int t = 0; t < layout.threads; ++t)
    ordinals.insert(rt.device(t % rt.device_count()).ordinal());
  if (ordinals.size() == 1) return CollectivePath::SharedGpu;
  if (layout.per_thread == 1 && static_cast<int>(ordinals.size()) == layout.threads)
    return CollectivePath::Nccl;
  return CollectivePath::Host; // several participants per GPU, on several GPUs
}

const char* collective_path_name(CollectivePath p) {
  switch (p) {
  case CollectivePath::Host:
    return "host";
  case CollectivePath::Nccl:
    return "nccl";
  case CollectivePath::SharedGpu:
    return "shared-gpu";
  }
  return "?";
}

bool gpu_collective(const Function& f, const Instr& in) {
  bool op_on_device = false;
  switch (in.op) {
  case Op::Psum:
  case Op::Pmax:
  case Op::Pmin:
  case Op::Ppermute:
    op_on_device = true;
    break;
  case Op::AllGather:
  case Op::PsumScatter:
    op_on_device = in.attrs.axis == 0;
    break;
  default:
    break;
  }
  // Complex values never reach the device (codegen/plan.cpp does not fuse
  // them; cuBLAS and the device reductions have no complex arithmetic).
  return op_on_device && !in.operands.empty() && !is_complex(f.values[in.operands[0]].aval.dtype);
}

void run_gpu_collectives(CudaRuntime& rt, GpuDevice& dev, CollectivePath path,
                         const SpmdLayout& layout, int thread, std::vector<GpuCollective>& calls,
                         CommWorld& world) {
  if (calls.empty()) return;
  if (path == CollectivePath::Nccl) return run_nccl(rt, dev, thread, calls);
  for (GpuCollective& c : calls) run_shared(rt, dev, layout, thread, c, world);
}

} // namespace pxl::cuda
