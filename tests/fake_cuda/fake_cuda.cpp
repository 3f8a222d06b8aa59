// A stand-in for libcuda and libcublas, for test_cuda.cpp: memory is host
// memory, copies are memcpy, gemm is the BLAS column-major definition, and
// kernel launches fail (there is nothing to run PTX on). It lets the CUDA
// executable's bookkeeping (transfers, buffer pool, the cuBLAS layout trick,
// error reporting) run without a GPU.
// Built with PXL_EMULATE_PTX (libpxl_emu_cuda.so), modules are parsed and
// kernels run by the PTX emulator of ptx_emulator.hpp instead.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#ifdef PXL_EMULATE_PTX
#include <string>

#include "ptx_emulator.hpp"
#endif

namespace {

template <class T>
int gemm(int ta, int tb, int m, int n, int k, const T* alpha, const T* a, int lda, const T* b,
         int ldb, const T* beta, T* c, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      T sum = 0;
      for (int l = 0; l < k; ++l)
        sum += (ta ? a[l + i * lda] : a[i + l * lda]) * (tb ? b[j + l * ldb] : b[l + j * ldb]);
      c[i + j * ldc] = *alpha * sum + *beta * c[i + j * ldc];
    }
  return 0;
}

void* ptr(unsigned long long p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

double load(const void* p, int type, long long i) {
  switch (type) {
  case 1:
    return static_cast<const double*>(p)[i];
  case 2:
    return static_cast<float>(static_cast<const _Float16*>(p)[i]);
  case 14: {
    uint32_t bits = uint32_t{static_cast<const uint16_t*>(p)[i]} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  default:
    return static_cast<const float*>(p)[i];
  }
}

void store(void* p, int type, long long i, double v) {
  switch (type) {
  case 1:
    static_cast<double*>(p)[i] = v;
    return;
  case 2:
    static_cast<_Float16*>(p)[i] = static_cast<_Float16>(static_cast<float>(v));
    return;
  case 14: {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even (no NaNs in the tests)
    static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(bits >> 16);
    return;
  }
  default:
    static_cast<float*>(p)[i] = static_cast<float>(v);
  }
}

#ifdef PXL_EMULATE_PTX
// The last failed launch's report, for cuGetErrorString on the same thread.
thread_local std::string last_launch_error;
constexpr int kInvalidPtx = 218, kNotFound = 500, kLaunchFailed = 719;
#endif

} // namespace

extern "C" {
int cuInit(unsigned) { return 0; }
int cuDriverGetVersion(int* v) { return *v = 13000, 0; }
#ifndef PXL_EMULATE_PTX
int cuGetErrorName(int e, const char** s) {
  *s = e == 719 ? "CUDA_ERROR_LAUNCH_FAILED" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuGetErrorString(int, const char** s) { return *s = "the fake driver cannot run kernels", 0; }
#else
int cuGetErrorName(int e, const char** s) {
  *s = e == kLaunchFailed ? "CUDA_ERROR_LAUNCH_FAILED"
       : e == kInvalidPtx ? "CUDA_ERROR_INVALID_PTX"
       : e == kNotFound   ? "CUDA_ERROR_NOT_FOUND"
                          : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuGetErrorString(int e, const char** s) {
  *s = e == kLaunchFailed ? last_launch_error.c_str()
       : e == kInvalidPtx ? "the PTX emulator cannot run this module (see the log)"
                          : "PTX emulator error";
  return 0;
}
#endif
int cuDeviceGetCount(int* n) { // PXL_FAKE_GPUS GPUs (default 2)
  const char* env = std::getenv("PXL_FAKE_GPUS");
  return *n = env ? std::atoi(env) : 2, 0;
}
int cuDeviceGet(int* d, int i) { return *d = i, 0; }
int cuDeviceGetName(char* name, int len, int) { return std::snprintf(name, len, "Fake GPU"), 0; }
int cuDeviceGetAttribute(int* v, int attr, int) {
  *v = attr == 75 ? 9 : attr == 76 ? 0 : 4; // sm_90, 4 multiprocessors
  return 0;
}
int cuDeviceTotalMem_v2(size_t* b, int) { return *b = size_t{1} << 30, 0; }
int cuDevicePrimaryCtxRetain(void** c, int d) { return *c = ptr(d + 1), 0; }
int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
int cuCtxSetCurrent(void*) { return 0; }
int cuCtxGetCurrent(void** c) { return *c = nullptr, 0; }
int cuStreamCreate(void** s, unsigned) { return *s = ptr(1), 0; }
int cuStreamDestroy_v2(void*) { return 0; }
int cuStreamSynchronize(void*) { return 0; }
int cuMemAlloc_v2(unsigned long long* p, size_t n) {
  *p = reinterpret_cast<uintptr_t>(std::calloc(n, 1));
#ifdef PXL_EMULATE_PTX
  if (*p) ptxemu::note_allocation(*p, n);
#endif
  return *p ? 0 : 2;
}
int cuMemFree_v2(unsigned long long p) {
#ifdef PXL_EMULATE_PTX
  ptxemu::note_free(p);
#endif
  return std::free(ptr(p)), 0;
}
int cuMemcpyHtoDAsync_v2(unsigned long long d, const void* s, size_t n, void*) {
  return std::memcpy(ptr(d), s, n), 0;
}
int cuMemcpyDtoHAsync_v2(void* d, unsigned long long s, size_t n, void*) {
  return std::memcpy(d, ptr(s), n), 0;
}
int cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void*) {
  return std::memcpy(ptr(d), ptr(s), n), 0;
}
int cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void*) {
  return std::memset(ptr(d), v, n), 0;
}
#ifndef PXL_EMULATE_PTX
int cuModuleLoadDataEx(void** m, const void*, unsigned, int*, void**) { return *m = ptr(1), 0; }
int cuModuleUnload(void*) { return 0; }
int cuModuleGetFunction(void** f, void*, const char*) { return *f = ptr(1), 0; }
int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                   void*, void**, void**) {
  return 719;
}
#else
// CU_JIT_ERROR_LOG_BUFFER (5) and its size (6) receive the emulator's reason.
int cuModuleLoadDataEx(void** m, const void* image, unsigned n, int* options, void** values) {
  std::string error;
  auto mod = ptxemu::parse_module(static_cast<const char*>(image), error);
  if (mod) return *m = mod.release(), 0;
  char* log = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (options[i] == 5) log = static_cast<char*>(values[i]);
    if (options[i] == 6) size = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (log && size) std::snprintf(log, size, "ptx emulator: %s", error.c_str());
  return kInvalidPtx;
}
int cuModuleUnload(void* m) { return delete static_cast<ptxemu::Module*>(m), 0; }
int cuModuleGetFunction(void** f, void* m, const char* name) {
  auto& ks = static_cast<ptxemu::Module*>(m)->kernels;
  auto it = ks.find(name);
  if (it == ks.end()) return kNotFound;
  return *f = it->second.get(), 0;
}
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void*, void** params, void**) {
  last_launch_error = ptxemu::launch(*static_cast<const ptxemu::Kernel*>(f), {gx, gy, gz},
                                     {bx, by, bz}, shared, params);
  return last_launch_error.empty() ? 0 : kLaunchFailed;
}
#endif

int cublasCreate_v2(void** h) { return *h = ptr(1), 0; }
int cublasDestroy_v2(void*) { return 0; }
int cublasSetStream_v2(void*, void*) { return 0; }
int cublasSetMathMode(void*, int) { return 0; }
int cublasSgemm_v2(void*, int ta, int tb, int m, int n, int k, const float* alpha, const float* a,
                   int lda, const float* b, int ldb, const float* beta, float* c, int ldc) {
  return gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
int cublasDgemm_v2(void*, int ta, int tb, int m, int n, int k, const double* alpha, const double* a,
                   int lda, const double* b, int ldb, const double* beta, double* c, int ldc) {
  return gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
// Strided batched gemm over f32/f64/f16/bf16 (cudaDataType 0/1/2/14), each
// sum accumulated in the compute type (f32, or f64 for compute 70) and
// rounded once to the output type, to nearest even.
int cublasGemmStridedBatchedEx(void*, int ta, int tb, int m, int n, int k, const void* alpha,
                               const void* a, int atype, int lda, long long sa, const void* b,
                               int btype, int ldb, long long sb, const void* beta, void* c,
                               int ctype, int ldc, long long sc, int batch, int compute, int) {
  if (atype != btype || atype != ctype) return 7; // CUBLAS_STATUS_INVALID_VALUE
  bool f64 = compute == 70;
  // CUBLAS_COMPUTE_32F_FAST_TF32: the operands rounded to TF32's 10-bit
  // mantissa (to nearest even) before the products.
  auto tf32 = [&](double v) {
    if (compute != 77) return v;
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits = (bits + 0xfff + ((bits >> 13) & 1)) & ~uint32_t{0x1fff};
    std::memcpy(&f, &bits, 4);
    return static_cast<double>(f);
  };
  double al = f64 ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  double be = f64 ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  for (int q = 0; q < batch; ++q)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double sum = 0;
        float fsum = 0;
        for (int l = 0; l < k; ++l) {
          double x = tf32(load(a, atype, q * sa + (ta ? l + i * lda : i + l * lda)));
          double y = tf32(load(b, btype, q * sb + (tb ? j + l * ldb : l + j * ldb)));
          if (f64)
            sum += x * y;
          else
            fsum += static_cast<float>(x) * static_cast<float>(y);
        }
        long long at = q * sc + i + static_cast<long long>(j) * ldc;
        double acc = f64 ? sum : fsum;
        store(c, ctype, at, al * acc + (be != 0 ? be * load(c, ctype, at) : 0.0));
      }
  return 0;
}

const char* cublasGetStatusString(int) { return "fake cuBLAS error"; }
}
