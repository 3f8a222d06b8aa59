// The few types and functions of the CUDA driver API, cuBLAS and NCCL that pxl
// uses, declared locally so pxl builds without the CUDA toolkit: the libraries
// are opened at run time (runtime/cuda/loader.cpp) and the functions reached
// through the tables below. Types and constants mirror the vendors' headers
// (cuda.h, cublas_api.h, nccl.h); only ABI-relevant facts are copied.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pxl::cuda {

// ---- driver (libcuda.so.1) ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUjit_option = int;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// One entry per driver function: X(name, exported symbol, return, parameters).
// The exported symbols are the ones cuda.h's macros select (the _v2 ABI).
#define PXL_CUDA_DRIVER_FUNCTIONS(X)                                                               \
  X(cuInit, "cuInit", CUresult, (unsigned flags))                                                  \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult, (int* version))                            \
  X(cuGetErrorName, "cuGetErrorName", CUresult, (CUresult error, const char** text))               \
  X(cuGetErrorString, "cuGetErrorString", CUresult, (CUresult error, const char** text))           \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult, (int* count))                                  \
  X(cuDeviceGet, "cuDeviceGet", CUresult, (CUdevice * device, int ordinal))                        \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult, (char* name, int len, CUdevice dev))             \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult,                                        \
    (int* value, int attribute, CUdevice dev))                                                     \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult, (size_t * bytes, CUdevice dev))             \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult,                                \
    (CUcontext * ctx, CUdevice dev))                                                               \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", CUresult, (CUdevice dev))           \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext ctx))                                 \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult, (CUcontext * ctx))                               \
  X(cuStreamCreate, "cuStreamCreate", CUresult, (CUstream * stream, unsigned flags))               \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult, (CUstream stream))                            \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult, (CUstream stream))                       \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult, (CUdeviceptr * ptr, size_t bytes))                      \
  X(cuMemFree, "cuMemFree_v2", CUresult, (CUdeviceptr ptr))                                        \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", CUresult,                                           \
    (CUdeviceptr dst, const void* src, size_t bytes, CUstream stream))                             \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult,                                           \
    (void* dst, CUdeviceptr src, size_t bytes, CUstream stream))                                   \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", CUresult,                                           \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))                             \
  X(cuMemsetD8Async, "cuMemsetD8Async", CUresult,                                                  \
    (CUdeviceptr dst, unsigned char value, size_t count, CUstream stream))                         \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx", CUresult,                                            \
    (CUmodule * module, const void* image, unsigned num_options, CUjit_option* options,            \
     void** values))                                                                               \
  X(cuModuleUnload, "cuModuleUnload", CUresult, (CUmodule module))                                 \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult,                                          \
    (CUfunction * fn, CUmodule module, const char* name))                                          \
  X(cuLaunchKernel, "cuLaunchKernel", CUresult,                                                    \
    (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
     unsigned shared_bytes, CUstream stream, void** params, void** extra))

// ---- cuBLAS (libcublas.so.13 / .12) ----
using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
inline constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
inline constexpr int CUBLAS_OP_N = 0;
inline constexpr int CUBLAS_OP_T = 1;
inline constexpr int CUBLAS_DEFAULT_MATH = 0;
// cudaDataType (library_types.h), cublasComputeType_t and cublasGemmAlgo_t values.
inline constexpr int CUDA_R_32F = 0;
inline constexpr int CUDA_R_64F = 1;
inline constexpr int CUDA_R_16F = 2;
inline constexpr int CUDA_R_16BF = 14;
inline constexpr int CUBLAS_COMPUTE_32F = 68;
inline constexpr int CUBLAS_COMPUTE_64F = 70;
inline constexpr int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
inline constexpr int CUBLAS_GEMM_DEFAULT = -1;

#define PXL_CUBLAS_FUNCTIONS(X)                                                                    \
  X(cublasCreate, "cublasCreate_v2", cublasStatus_t, (cublasHandle_t * handle))                    \
  X(cublasDestroy, "cublasDestroy_v2", cublasStatus_t, (cublasHandle_t handle))                    \
  X(cublasSetStream, "cublasSetStream_v2", cublasStatus_t,                                         \
    (cublasHandle_t handle, CUstream stream))                                                      \
  X(cublasSetMathMode, "cublasSetMathMode", cublasStatus_t, (cublasHandle_t handle, int mode))     \
  X(cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx", cublasStatus_t,                      \
    (cublasHandle_t handle, int transa, int transb, int m, int n, int k, const void* alpha,        \
     const void* a, int atype, int lda, long long stride_a, const void* b, int btype, int ldb,     \
     long long stride_b, const void* beta, void* c, int ctype, int ldc, long long stride_c,        \
     int batch, int compute, int algo))                                                            \
  X(cublasGetStatusString, "cublasGetStatusString", const char*, (cublasStatus_t status))

// ---- NCCL (libnccl.so.2) ----
using ncclResult_t = int;
using ncclComm_t = struct ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
inline constexpr ncclResult_t ncclSuccess = 0;
enum ncclDataType : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9
};
enum ncclRedOp : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 };

#define PXL_NCCL_FUNCTIONS(X)                                                                      \
  X(ncclGetVersion, "ncclGetVersion", ncclResult_t, (int* version))                                \
  X(ncclCommInitAll, "ncclCommInitAll", ncclResult_t,                                              \
    (ncclComm_t * comms, int ndev, const int* devlist))                                            \
  X(ncclCommDestroy, "ncclCommDestroy", ncclResult_t, (ncclComm_t comm))                           \
  X(ncclGroupStart, "ncclGroupStart", ncclResult_t, ())                                            \
  X(ncclGroupEnd, "ncclGroupEnd", ncclResult_t, ())                                                \
  X(ncclAllReduce, "ncclAllReduce", ncclResult_t,                                                  \
    (const void* send, void* recv, size_t count, int dtype, int op, ncclComm_t comm,               \
     CUstream stream))                                                                             \
  X(ncclAllGather, "ncclAllGather", ncclResult_t,                                                  \
    (const void* send, void* recv, size_t count, int dtype, ncclComm_t comm, CUstream stream))     \
  X(ncclReduceScatter, "ncclReduceScatter", ncclResult_t,                                          \
    (const void* send, void* recv, size_t recv_count, int dtype, int op, ncclComm_t comm,          \
     CUstream stream))                                                                             \
  X(ncclSend, "ncclSend", ncclResult_t,                                                            \
    (const void* send, size_t count, int dtype, int peer, ncclComm_t comm, CUstream stream))       \
  X(ncclRecv, "ncclRecv", ncclResult_t,                                                            \
    (void* recv, size_t count, int dtype, int peer, ncclComm_t comm, CUstream stream))             \
  X(ncclGetErrorString, "ncclGetErrorString", const char*, (ncclResult_t result))

#define PXL_CUDA_DECLARE_POINTER(name, symbol, ret, params) ret(*name) params = nullptr;

struct DriverApi {
  PXL_CUDA_DRIVER_FUNCTIONS(PXL_CUDA_DECLARE_POINTER)
};
struct CublasApi {
  PXL_CUBLAS_FUNCTIONS(PXL_CUDA_DECLARE_POINTER)
};
struct NcclApi {
  PXL_NCCL_FUNCTIONS(PXL_CUDA_DECLARE_POINTER)
};

#undef PXL_CUDA_DECLARE_POINTER

} // namespace pxl::cuda
