#include "runtime/cuda/executable.hpp"
#include "ir/dot_to_reduce.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>

#include "codegen/jit.hpp"
#include "ir/dot_to_reduce.hpp"
#include "ir/ref_util.hpp"
#include "lang/phase_times.hpp"
#include "runtime/cuda/collectives.hpp"
#include "runtime/cuda/runtime.hpp"
#include "runtime/spmd_call.hpp"
#include "runtime/spmd_steps.hpp"

namespace pxl::cuda {

namespace {

// Where one value of one participant lives: in its Array (`host_valid`: an
// input, a host step's result, or a copy made for one; the Array may itself
// be a device-backed result of an earlier call), on the device (`dev` set,
// the value `offset` bytes into it), or both.
struct Slot {
  std::shared_ptr<DeviceBuffer> dev;
  bool host_valid = false;
  int tag = 0; // the pxl device the host Array is tagged with
  size_t offset = 0;
};

size_t byte_size(const AVal& a) { return static_cast<size_t>(a.size()) * dtype_size(a.dtype); }

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::vector<int64_t> cat(std::initializer_list<const std::vector<int64_t>*> parts) {
  std::vector<int64_t> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// A dot_general cuBLAS runs without moving data: each operand's dims already
// in (batch, free, contract) or (batch, contract, free) order.
struct GemmShape {
  bool ok = false;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

GemmShape gemm_shape(const Function& f, const Instr& in) {
  GemmShape g;
  const AVal& la = f.values[in.operands[0]].aval;
  const AVal& ra = f.values[in.operands[1]].aval;
  const AVal& oa = f.values[in.result].aval;
  if (!is_floating(oa.dtype)) return g; // f32, f64, and f16/bf16 accumulated in f32
  if (la.dtype != oa.dtype || ra.dtype != oa.dtype) return g;
  const DotDims& d = in.attrs.dot;
  std::vector<int64_t> lf = ref::free_dims(la.ndim(), d.lhs_batch, d.lhs_contract);
  std::vector<int64_t> rf = ref::free_dims(ra.ndim(), d.rhs_batch, d.rhs_contract);
  if (is_identity(cat({&d.lhs_batch, &lf, &d.lhs_contract})))
    g.trans_a = false;
  else if (is_identity(cat({&d.lhs_batch, &d.lhs_contract, &lf})))
    g.trans_a = true;
  else
    return g;
  if (is_identity(cat({&d.rhs_batch, &d.rhs_contract, &rf})))
    g.trans_b = false;
  else if (is_identity(cat({&d.rhs_batch, &rf, &d.rhs_contract})))
    g.trans_b = true;
  else
    return g;
  g.batch = ref::prod_dims(la.shape, d.lhs_batch);
  g.m = ref::prod_dims(la.shape, lf);
  g.k = ref::prod_dims(la.shape, d.lhs_contract);
  g.n = ref::prod_dims(ra.shape, rf);
  const int64_t limit = 1 << 30; // cuBLAS's int dimensions
  g.ok =
      g.k > 0 && g.m > 0 && g.n > 0 && g.m < limit && g.n < limit && g.k < limit && g.batch < limit;
  return g;
}

// Whether a float32 product may use TF32: DEFAULT (or None) precision on
// both operands (XLA's HIGH is 3 bf16 passes, closer to float32: pxl gives
// it float32), unless NVIDIA_TF32_OVERRIDE=0.
bool tf32_allowed(const DotDims& d) {
  if (d.precision[0] >= kPrecisionHigh || d.precision[1] >= kPrecisionHigh) return false;
  const char* env = std::getenv("NVIDIA_TF32_OVERRIDE");
  return !(env && std::string(env) == "0");
}

class CudaExecutable : public Executable {
public:
  CudaExecutable(std::shared_ptr<const Function> fn, SpmdLayout layout, std::vector<Array> consts,
                 CudaRuntime& rt, CodeCache& host)
      : fn_(std::move(fn)), layout_(std::move(layout)), consts_(std::move(consts)), rt_(rt),
        host_(host), groups_(collective_groups(*fn_, layout_)),
        path_(collective_path(rt, layout_)) {}

  std::vector<std::vector<Array>> run(int thread, const std::vector<std::vector<Array>>& inputs,
                                      CommWorld& world, std::vector<DebugRecord>& debug) override {
    const Function& f = *fn_;
    int k = layout_.per_thread;
    GpuDevice& dev = rt_.device(thread % rt_.device_count());
    dev.bind();
    auto prog = program_on(dev);
    const KernelPlan& plan = prog->ptx->plan;
    std::vector<std::vector<Array>> env = initial_values(f, inputs, consts_, k);
    std::vector<std::vector<Slot>> slots(static_cast<size_t>(k),
                                         std::vector<Slot>(f.values.size()));
    for (int j = 0; j < k; ++j)
      for (size_t v = 0; v < f.values.size(); ++v)
        if (env[j][v].defined()) slots[j][v] = {nullptr, true, env[j][v].device(), 0};
    Ctx c{f, dev, env, slots};
    for (size_t si = 0; si < plan.steps.size(); ++si) {
      const Step& s = plan.steps[si];
      size_t i = static_cast<size_t>(s.index);
      if (s.kind == Step::Kind::Kernel) {
        for (int j = 0; j < k; ++j) run_kernel(c, *prog, i, j);
        continue;
      }
      const Instr& in = f.body[i];
      if (in.op == Op::DotGeneral && gemm_shape(f, in).ok) {
        for (int j = 0; j < k; ++j) run_gemm(c, in, j);
        continue;
      }
      if (on_device(in)) {
        si = run_collectives(c, plan, si, thread, world) - 1;
        continue;
      }
      for (int j = 0; j < k; ++j)
        for (int o : in.operands) to_host(c, j, o);
      run_host_instr(f, layout_, groups_, thread, i, env, world, debug, phase_times);
      size_t results = static_cast<size_t>(in.nresults);
      for (int j = 0; j < k; ++j)
        for (size_t r = 0; r < results; ++r) {
          int v = in.result + static_cast<int>(r);
          slots[j][v] = {nullptr, true, env[j][v].device(), 0};
        }
    }
    // Results stay where they are: one computed on the device comes back as a
    // device-backed array, copied to the host only if the host reads it.
    for (int j = 0; j < k; ++j)
      for (int r : f.results) {
        Slot& s = slots[j][r];
        if (s.host_valid) continue;
        PXL_ASSERT(s.offset == 0, "a device result inside another buffer");
        env[j][r] = Array::device_backed(f.values[r].aval, s.tag,
                                         std::make_shared<CudaStorage>(s.dev, loc(r)));
        s.host_valid = true;
      }
    return result_values(f, env);
  }

private:
  struct Ctx {
    const Function& f;
    GpuDevice& dev;
    std::vector<std::vector<Array>>& env;
    std::vector<std::vector<Slot>>& slots;
  };

  // The program loaded on `dev`, looked up in the runtime once per device:
  // the runtime's key is the function's printed IR, too slow for every call.
  std::shared_ptr<const LoadedProgram> program_on(GpuDevice& dev) {
    std::lock_guard<std::mutex> lock(programs_mu_);
    auto& p = programs_[&dev];
    if (!p) p = rt_.program(*fn_, dev);
    return p;
  }

  const Span& loc(int v) const {
    const Span& own = fn_->values[v].loc;
    return own.valid() ? own : call_site;
  }

  bool on_device(const Instr& in) const {
    return path_ != CollectivePath::Host && is_collective(in.op) && gpu_collective(*fn_, in);
  }

  // Runs the device collective at plan step `first` and, with NCCL, the
  // device collectives right after it that do not read its results (a
  // pytree's leaves), as one group; returns the step after the last one run.
  size_t run_collectives(Ctx& c, const KernelPlan& plan, size_t first, int thread,
                         CommWorld& world) {
    std::vector<GpuCollective> calls;
    std::vector<int> results;
    size_t si = first;
    for (; si < plan.steps.size(); ++si) {
      const Step& s = plan.steps[si];
      if (s.kind != Step::Kind::Instr) break;
      const Instr& in = c.f.body[static_cast<size_t>(s.index)];
      if (!on_device(in)) break;
      if (std::find(results.begin(), results.end(), in.operands[0]) != results.end()) break;
      if (!calls.empty() && path_ != CollectivePath::Nccl) break;
      GpuCollective call;
      call.instr = &in;
      call.groups = &groups_.at(static_cast<size_t>(s.index));
      call.site = collective_site(c.f, in);
      const AVal& xa = c.f.values[in.operands[0]].aval;
      call.dtype = xa.dtype;
      call.count = xa.size();
      call.out_bytes = byte_size(c.f.values[in.result].aval);
      for (int j = 0; j < layout_.per_thread; ++j)
        call.inputs.push_back(to_device(c, j, in.operands[0]));
      calls.push_back(std::move(call));
      results.push_back(in.result);
    }
    {
      ScopedPhase timing(phase_times, kCollectivesPhase);
      run_gpu_collectives(rt_, c.dev, path_, layout_, thread, calls, world);
    }
    for (const GpuCollective& call : calls)
      for (int j = 0; j < layout_.per_thread; ++j)
        set_device_result(c, j, call.instr->result, call.outputs[static_cast<size_t>(j)],
                          result_tag(c, j, call.instr->operands));
    return si;
  }

  void to_host(Ctx& c, int j, int v) {
    Slot& s = c.slots[j][v];
    if (s.host_valid) return; // a device-backed Array fetches itself when read
    const AVal& a = c.f.values[v].aval;
    Array h = Array::uninitialized(a.dtype, a.shape, a.weak, s.tag);
    c.dev.download(h.data(), s.dev->ptr() + s.offset, byte_size(a), loc(v));
    c.dev.keep_resident(h, s.dev); // a later call taking it finds it on the GPU
    c.env[j][v] = std::move(h);
    s.host_valid = true;
  }

  // The device address of value v, copied up if it is only on the host. An
  // earlier call's result on this device is used where it is (no copy); one
  // on another device comes through the host (both copies counted).
  CUdeviceptr to_device(Ctx& c, int j, int v) {
    Slot& s = c.slots[j][v];
    const Array& h = c.env[j][v];
    if (!s.dev)
      if (auto* st = dynamic_cast<const CudaStorage*>(h.device_storage()))
        if ((s.dev = st->buffer_on(c.dev))) s.offset = h.byte_offset();
    if (!s.dev) s.dev = c.dev.resident(h);
    if (!s.dev) {
      const AVal& a = c.f.values[v].aval;
      s.dev = c.dev.alloc(byte_size(a));
      c.dev.upload(*s.dev, h.data(), byte_size(a), loc(v));
      c.dev.keep_resident(h, s.dev);
    }
    return s.dev->ptr() + s.offset;
  }

  // A result computed on the device: its host copy is made when needed.
  void set_device_result(Ctx& c, int j, int v, std::shared_ptr<DeviceBuffer> buf, int tag) {
    c.env[j][v] = Array();
    c.slots[j][v] = {std::move(buf), false, tag, 0};
  }

  int result_tag(Ctx& c, int j, const std::vector<int>& operands) {
    return operands.empty() ? 0 : c.slots[j][operands[0]].tag;
  }

  void run_kernel(Ctx& c, const LoadedProgram& prog, size_t index, int j) {
    const Kernel& kn = prog.ptx->plan.kernels[index];
    if (!prog.functions[index]) return run_host_kernel(c, index, j);
    const AVal& oa = c.f.values[kn.root].aval;
    std::vector<CUdeviceptr> ptrs;
    auto out = c.dev.alloc(byte_size(oa));
    ptrs.push_back(out->ptr());
    for (int v : kn.inputs) ptrs.push_back(to_device(c, j, v));
    int64_t scratch_bytes = kernel_scratch_bytes(c.f, kn);
    std::shared_ptr<DeviceBuffer> scratch;
    if (scratch_bytes > 0) scratch = c.dev.alloc(static_cast<size_t>(scratch_bytes));
    ptrs.push_back(scratch ? scratch->ptr() : 0);
    launch_kernel(c.dev, prog, index, std::move(ptrs));
    set_device_result(c, j, kn.root, std::move(out), result_tag(c, j, kn.inputs));
  }

  void run_host_kernel(Ctx& c, size_t index, int j) {
    std::shared_ptr<const CompiledProgram> hp;
    {
      std::lock_guard<std::mutex> lock(host_mu_); // the device threads share it
      if (!host_prog_) host_prog_ = host_.compile(c.f);
      hp = host_prog_;
    }
    const Kernel& kn = hp->plan.kernels[index];
    for (int v : kn.inputs) to_host(c, j, v);
    run_compiled_kernel(c.f, *hp, index, c.env[j]);
    c.slots[j][kn.root] = {nullptr, true, c.env[j][kn.root].device(), 0};
  }

  void run_gemm(Ctx& c, const Instr& in, int j) {
    GemmShape g = gemm_shape(c.f, in);
    const AVal& oa = c.f.values[in.result].aval;
    CUdeviceptr a = to_device(c, j, in.operands[0]);
    CUdeviceptr b = to_device(c, j, in.operands[1]);
    auto out = c.dev.alloc(byte_size(oa));
    const CublasApi& api = c.dev.driver().cublas();
    cublasHandle_t h = c.dev.blas();
    // Row-major C(m,n) = A·B is column-major C^T(n,m) = B^T·A^T: B goes first.
    // One strided-batched call for every batch; halves accumulate in f32 and
    // round once, as the CPU's reference does.
    int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    int opa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = g.trans_a ? m : k, ldb = g.trans_b ? k : n;
    bool f64 = oa.dtype == DType::Float64;
    int type = f64                           ? CUDA_R_64F
               : oa.dtype == DType::Float16  ? CUDA_R_16F
               : oa.dtype == DType::BFloat16 ? CUDA_R_16BF
                                             : CUDA_R_32F;
    const float one_f = 1, zero_f = 0;
    const double one_d = 1, zero_d = 0;
    const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
    // float32 at DEFAULT precision runs in TF32, as XLA does on NVIDIA GPUs
    // (tensor cores; 10 mantissa bits per operand); NVIDIA_TF32_OVERRIDE=0
    // turns it off, as for NVIDIA's own libraries.
    int compute = f64 ? CUBLAS_COMPUTE_64F
                  : oa.dtype == DType::Float32 && tf32_allowed(in.attrs.dot)
                      ? CUBLAS_COMPUTE_32F_FAST_TF32
                      : CUBLAS_COMPUTE_32F;
    cublasStatus_t st = api.cublasGemmStridedBatchedEx(
        h, opb, opa, n, m, k, one, reinterpret_cast<const void*>(b), type, ldb, g.k * g.n,
        reinterpret_cast<const void*>(a), type, lda, g.m * g.k, zero,
        reinterpret_cast<void*>(out->ptr()), type, n, g.m * g.n, static_cast<int>(g.batch), compute,
        CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
      throw Error(ErrCode::Device,
                  std::string("cuBLAS gemm failed: ") + api.cublasGetStatusString(st),
                  loc(in.result));
    set_device_result(c, j, in.result, std::move(out), result_tag(c, j, in.operands));
  }

  std::shared_ptr<const Function> fn_;
  SpmdLayout layout_;
  std::vector<Array> consts_;
  CudaRuntime& rt_;
  CodeCache& host_;
  CollectiveGroups groups_;
  CollectivePath path_;
  std::mutex host_mu_;
  std::mutex programs_mu_;
  std::map<const GpuDevice*, std::shared_ptr<const LoadedProgram>> programs_;
  std::shared_ptr<const CompiledProgram> host_prog_; // only for kernels without a device version
};

} // namespace

std::unique_ptr<Executable> make_cuda_executable(std::shared_ptr<const Function> fn,
                                                 SpmdLayout layout, std::vector<Array> consts,
                                                 CudaRuntime& runtime, CodeCache& host) {
  refuse_huge_values(*fn); // as the host's compiled programs do, before any byte count
  // Dots of vectors become multiply + reduce kernels, as XLA's GPU backend makes them.
  return std::make_unique<CudaExecutable>(dots_of_vectors_to_reduce(std::move(fn)),
                                          std::move(layout), std::move(consts), runtime, host);
}

} // namespace pxl::cuda
