// Helpers for the unit tests that run the CUDA executable on the fake
// libcuda/libcublas of tests/fake_cuda/ (host memory, no kernels, cuBLAS gemm).
#pragma once
#ifdef PXL_FAKE_CUDA
#include <memory>
#include <vector>

#include "codegen/jit.hpp"
#include "ir/function.hpp"
#include "ir/op.hpp"
#include "runtime/collectives.hpp"
#include "runtime/cuda/executable.hpp"
#include "runtime/cuda/loader.hpp"
#include "runtime/cuda/runtime.hpp"

namespace pxl::test {

inline cuda::LibraryNames fake_libraries() {
  cuda::LibraryNames n;
  n.driver = {PXL_FAKE_CUDA};
  n.cublas = {PXL_FAKE_CUDA};
  n.nccl = {"libpxl-no-such-nccl.so"};
  return n;
}

// f(x, y) = op(x, y) on one device, `op` over `dtype` operands (f32 by default).
inline std::shared_ptr<Function> one_op(Op op, const OpAttrs& a, Shape xs, Shape ys,
                                        DType dtype = DType::Float32) {
  auto f = std::make_shared<Function>();
  std::vector<AVal> avals;
  for (Shape s : {xs, ys}) {
    IRValue v;
    v.aval = AVal{dtype, s, false};
    f->params.push_back(f->add_value(v));
    avals.push_back(v.aval);
  }
  IRValue r;
  r.aval = infer(op, a, avals);
  r.producer = 0;
  int id = f->add_value(r);
  f->body.push_back(Instr{op, a, {f->params[0], f->params[1]}, id});
  f->results.push_back(id);
  return f;
}

inline Array counting(Shape s, float start) {
  Array a(DType::Float32, s);
  for (int64_t i = 0; i < a.size(); ++i) a.as<float>()[i] = start + static_cast<float>(i % 7);
  return a;
}

inline std::vector<std::vector<Array>>
run_on_fake(cuda::CudaRuntime& rt, std::shared_ptr<Function> f, std::vector<Array> args) {
  CodeCache host;
  SpmdLayout layout{Mesh{{"i"}, {1}, {0}}, 1, 1};
  auto exe = cuda::make_cuda_executable(f, layout, {}, rt, host);
  DeviceThreads pool(1);
  return launch(*exe, pool, layout, {std::move(args)});
}

} // namespace pxl::test
#endif
