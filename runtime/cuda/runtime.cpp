#include "runtime/cuda/runtime.hpp"

#include <set>

#include "lang/phase_times.hpp"

namespace pxl::cuda {

CudaRuntime::CudaRuntime(int count, bool logical, const LibraryNames& names,
                         std::shared_ptr<Driver> shared)
    : driver_(shared ? std::move(shared) : std::shared_ptr<Driver>(Driver::open(names))),
      logical_(logical) {
  auto opened = std::chrono::steady_clock::now();
  driver_seconds_ = std::chrono::duration<double>(opened - created_).count();
  int gpus = driver_->device_count();
  if (!logical && count > gpus)
    throw Error(ErrCode::Device,
                std::to_string(count) + " CUDA devices requested but the driver sees " +
                    std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s"),
                {},
                "PXL_DEVICES=cuda:" + std::to_string(count) +
                    " runs that many logical devices on one GPU");
  int n = logical ? count : (count > 0 ? count : gpus);
  for (int i = 0; i < n; ++i)
    devices_.push_back(std::make_unique<GpuDevice>(*driver_, logical ? 0 : i, transfers_));
  devices_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count();
}

void CudaRuntime::set_phase_times(PhaseTimes* times) {
  if (times && !times_) {
    times->add("cuda: driver start-up", driver_seconds_);
    times->add("cuda: contexts + streams", devices_seconds_);
  }
  times_ = times;
  for (auto& d : devices_) d->set_phase_times(times);
}

CudaRuntime::~CudaRuntime() {
  for (auto& [ordinals, comms] : nccl_comms_)
    for (ncclComm_t comm : comms) driver_->nccl().ncclCommDestroy(comm);
  for (auto& [key, p] : loaded_)
    if (p->module) {
      for (auto& d : devices_)
        if (key.compare(0, key.find(' '), std::to_string(d->ordinal())) == 0) {
          d->bind();
          break;
        }
      driver_->api().cuModuleUnload(p->module);
    }
  loaded_.clear();
  devices_.clear(); // before the driver they use
}

std::string CudaRuntime::describe() const {
  std::set<int> seen;
  std::string out;
  for (const auto& d : devices_) {
    if (!seen.insert(d->ordinal()).second) continue;
    out += (out.empty() ? "" : ", ") + d->name() + " (GPU " + std::to_string(d->ordinal()) +
           ", sm_" + std::to_string(d->compute_capability()) + ")";
  }
  int v = driver_->version();
  return out + "; driver CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::shared_ptr<const LoadedProgram> CudaRuntime::program(const Function& f, GpuDevice& dev) {
  // sm_90 for Hopper and newer (the PTX JIT-compiles forward), else the GPU's own.
  std::string arch = "sm_" + std::to_string(std::min(dev.compute_capability(), 90));
  std::string text = arch + "\n" + print_function(f, false);
  std::string key = std::to_string(dev.ordinal()) + " " + text;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;
  auto& ptx = ptx_[text];
  if (!ptx) {
    ScopedPhase timing(times_, "codegen: PTX");
    PtxOptions o;
    o.arch = arch;
    ptx = std::make_shared<const PtxProgram>(compile_ptx(f, o));
  }
  auto lp = std::make_shared<LoadedProgram>();
  lp->ptx = ptx;
  lp->functions.assign(ptx->plan.kernels.size(), nullptr);
  lp->finish.assign(ptx->plan.kernels.size(), nullptr);
  bool any = false;
  for (bool b : ptx->on_device) any |= b;
  if (any) {
    dev.bind();
    char log[8192] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* vals[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
    CUresult r;
    {
      ScopedPhase timing(times_, "cuda: module load (PTX JIT)");
      r = driver_->api().cuModuleLoadDataEx(&lp->module, ptx->ptx.c_str(), 2, opts, vals);
    }
    if (r != CUDA_SUCCESS)
      throw Error(ErrCode::Device,
                  "loading the kernels' PTX on GPU " + std::to_string(dev.ordinal()) + " failed: " +
                      driver_->error_text(r) + (log[0] ? std::string("\n") + log : ""));
    for (size_t i = 0; i < lp->functions.size(); ++i) {
      if (!ptx->on_device[i]) continue;
      std::string name = "k" + std::to_string(i);
      dev.check(driver_->api().cuModuleGetFunction(&lp->functions[i], lp->module, name.c_str()),
                "cuModuleGetFunction");
      if (ptx->finish[i])
        dev.check(driver_->api().cuModuleGetFunction(&lp->finish[i], lp->module,
                                                     (name + "_finish").c_str()),
                  "cuModuleGetFunction");
    }
  }
  loaded_.emplace(std::move(key), lp);
  return lp;
}

} // namespace pxl::cuda

namespace pxl::cuda {

ncclComm_t CudaRuntime::nccl_comm(const std::vector<int>& ordinals, int rank) {
  std::lock_guard<std::mutex> lock(nccl_mu_);
  auto it = nccl_comms_.find(ordinals);
  if (it == nccl_comms_.end()) {
    const NcclApi& nccl = driver_->nccl();
    ScopedPhase timing(times_, "cuda: NCCL start-up");
    std::vector<ncclComm_t> comms(ordinals.size());
    ncclResult_t r =
        nccl.ncclCommInitAll(comms.data(), static_cast<int>(ordinals.size()), ordinals.data());
    if (r != ncclSuccess) {
      std::string gpus;
      for (int o : ordinals) gpus += (gpus.empty() ? "" : ", ") + std::to_string(o);
      throw Error(ErrCode::Device,
                  "ncclCommInitAll over GPUs " + gpus + " failed: " + nccl.ncclGetErrorString(r));
    }
    it = nccl_comms_.emplace(ordinals, std::move(comms)).first;
  }
  return it->second.at(static_cast<size_t>(rank));
}

void launch_kernel(GpuDevice& dev, const LoadedProgram& prog, size_t index,
                   std::vector<CUdeviceptr> ptrs) {
  std::vector<void*> params;
  for (CUdeviceptr& p : ptrs) params.push_back(&p);
  PtxLaunch l = ptx_launch(prog.ptx->grid_extent[index], prog.ptx->block_threads[index],
                           dev.multiprocessors());
  const DriverApi& api = dev.driver().api();
  dev.check(api.cuLaunchKernel(prog.functions[index], l.blocks, 1, 1, l.threads, 1, 1, 0,
                               dev.stream(), params.data(), nullptr),
            "cuLaunchKernel");
  if (prog.finish[index]) // after it on the same stream: one warp combines the partials
    dev.check(api.cuLaunchKernel(prog.finish[index], 1, 1, 1, 32, 1, 1, 0, dev.stream(),
                                 params.data(), nullptr),
              "cuLaunchKernel");
}

} // namespace pxl::cuda
