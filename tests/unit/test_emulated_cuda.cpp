// The CUDA executable on the PTX-emulating stand-in driver (libpxl_emu_cuda.so):
// kernels pxl generates run on the host and must give the CPU reference's
// bits; hand-written PTX checks the warp shuffle, the bounds checks and the
// report of an unsupported instruction.
#ifdef PXL_EMU_CUDA
#include <catch2/catch.hpp>

#include <cstring>
#include <dlfcn.h>
#include <string>

#include "fake_cuda.hpp"
#include "ir_builder.hpp"

using namespace pxl;
using namespace pxl::test;

namespace {

cuda::LibraryNames emulated() {
  cuda::LibraryNames n;
  n.driver = {PXL_EMU_CUDA};
  n.cublas = {PXL_EMU_CUDA};
  n.nccl = {"libpxl-no-such-nccl.so"};
  return n;
}

Array ramp(Shape s, int period, float scale, float offset = 0) {
  Array a(DType::Float32, s);
  for (int64_t i = 0; i < a.size(); ++i)
    a.as<float>()[i] = scale * static_cast<float>(i % period - period / 2) + offset;
  return a;
}

void same_bits(const Array& got, const Array& want) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  CHECK(std::memcmp(got.data(), want.data(), want.nbytes()) == 0);
}

// The driver entry points the hand-written PTX tests call.
struct Driver {
  void* lib = dlopen(PXL_EMU_CUDA, RTLD_NOW | RTLD_LOCAL);
  template <class F> F sym(const char* name) { return reinterpret_cast<F>(dlsym(lib, name)); }
  int (*load)(void**, const void*, unsigned, int*,
              void**) = sym<decltype(load)>("cuModuleLoadDataEx");
  int (*get)(void**, void*, const char*) = sym<decltype(get)>("cuModuleGetFunction");
  int (*run)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
             void**, void**) = sym<decltype(run)>("cuLaunchKernel");
  int (*alloc)(unsigned long long*, size_t) = sym<decltype(alloc)>("cuMemAlloc_v2");
  int (*release)(unsigned long long) = sym<decltype(release)>("cuMemFree_v2");
  int (*unload)(void*) = sym<decltype(unload)>("cuModuleUnload");
  int (*text)(int, const char**) = sym<decltype(text)>("cuGetErrorString");
  ~Driver() { dlclose(lib); }
};

// Lane 0 of one warp stores the sum of 32 u32 loaded from p0 (a shfl.down tree) to p1.
const char* kWarpSum = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry k0(
	.param .u64 k0_param_0,
	.param .u64 k0_param_1
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<6>;
	ld.param.u64 	%rd1, [k0_param_0];
	ld.param.u64 	%rd2, [k0_param_1];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.u32 	%r2, [%rd4];
	mov.u32 	%r4, 16;
$L__loop:
	shfl.sync.down.b32 	%r3|%p1, %r2, %r4, 31, -1;
	add.s32 	%r2, %r2, %r3;
	shr.u32 	%r4, %r4, 1;
	setp.ne.s32 	%p2, %r4, 0;
	@%p2 bra 	$L__loop;
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__end;
	st.global.u32 	[%rd2], %r2;
$L__end:
	ret;
}
)";

} // namespace

TEST_CASE("emulated cuda: elementwise kernels give the CPU reference's bits", "[cuda][emu]") {
  cuda::CudaRuntime rt(1, true, emulated());
  Shape s{37, 129};
  // y is never 0: rem(x, 0)'s NaN bits are not the same on every platform.
  Array x = ramp(s, 23, 0.37f), y = ramp(s, 11, -1.7f, 0.6f);
  for (Op op : {Op::Add, Op::Mul, Op::Div, Op::Max, Op::Rem, Op::Sub}) {
    INFO(op_name(op));
    std::vector<Array> xy{x, y};
    Array want = eval_ref(op, {}, xy);
    same_bits(run_on_fake(rt, one_op(op, {}, s, s), xy)[0][0], want);
  }
}

TEST_CASE("emulated cuda: int2/int4/uint2/uint4 kernels wrap at their width", "[cuda][emu]") {
  cuda::CudaRuntime rt(1, true, emulated());
  Shape s{5, 16};
  for (DType d : {DType::Int2, DType::Int4, DType::UInt2, DType::UInt4}) {
    Array x(d, s), y(d, s); // every pair of values, wrapped into range by set()
    for (int64_t i = 0; i < x.size(); ++i) {
      x.set(i, Scalar::of_int(i % 16));
      y.set(i, Scalar::of_int(i / 16 * 3 + 1));
    }
    for (Op op : {Op::Add, Op::Mul, Op::Div, Op::Rem, Op::Sub, Op::Max, Op::ShiftLeft,
                  Op::ShiftRightLogical, Op::ShiftRightArithmetic}) {
      INFO(dtype_name(d) << " " << op_name(op));
      std::vector<Array> xy{x, y};
      same_bits(run_on_fake(rt, one_op(op, {}, s, s, d), xy)[0][0], eval_ref(op, {}, xy));
    }
  }
}

TEST_CASE("emulated cuda: row reductions give the CPU reference's bits", "[cuda][emu]") {
  cuda::CudaRuntime rt(1, true, emulated());
  // Small integers: every summation order gives the same sum.
  for (Shape s : {Shape{3, 4000}, Shape{257, 33}, Shape{64, 1024}})
    for (Op op : {Op::ReduceSum, Op::ReduceMax}) {
      INFO(op_name(op) << " over rows of " << shape_str(s));
      auto f = std::make_shared<Function>();
      Builder b;
      int x = b.param(DType::Float32, s);
      OpAttrs red;
      red.axes = {1};
      b.f.results.push_back(b.op(op, red, {x}));
      *f = b.f;
      Array in = ramp(s, 13, 1.0f);
      std::vector<Array> args{in};
      same_bits(run_on_fake(rt, f, args)[0][0], eval_ref(op, red, args));
    }
}

TEST_CASE("emulated cuda: hand-written PTX: shuffles, bounds checks, unsupported opcodes",
          "[cuda][emu]") {
  Driver d;
  REQUIRE(d.lib);
  void* module = nullptr;
  REQUIRE(d.load(&module, kWarpSum, 0, nullptr, nullptr) == 0);
  void* k = nullptr;
  REQUIRE(d.get(&k, module, "k0") == 0);
  unsigned long long in = 0, out = 0;
  REQUIRE(d.alloc(&in, 32 * 4) == 0);
  REQUIRE(d.alloc(&out, 4) == 0);
  auto* values = reinterpret_cast<uint32_t*>(static_cast<uintptr_t>(in));
  for (uint32_t i = 0; i < 32; ++i) values[i] = i * i;
  void* params[] = {&in, &out};
  REQUIRE(d.run(k, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) == 0);
  CHECK(*reinterpret_cast<uint32_t*>(static_cast<uintptr_t>(out)) == 10416); // sum of squares

  SECTION("a store past its allocation fails the launch naming kernel, PTX line and address") {
    unsigned long long past = out + 4096;
    void* bad[] = {&in, &past};
    REQUIRE(d.run(k, 1, 1, 1, 32, 1, 1, 0, nullptr, bad, nullptr) == 719);
    const char* why = nullptr;
    d.text(719, &why);
    std::string m = why;
    CHECK(m.find("kernel k0: invalid global write of 4 bytes") != std::string::npos);
    CHECK(m.find("line 29: st.global.u32") != std::string::npos);
  }
  SECTION("an unsupported instruction fails the module load with its line in the JIT log") {
    std::string ptx = kWarpSum;
    ptx.replace(ptx.find("add.s32"), 7, "frob.s32");
    char log[512] = {0};
    int opts[] = {5, 6};
    void* vals[] = {log, reinterpret_cast<void*>(uintptr_t{sizeof log})};
    void* m2 = nullptr;
    CHECK(d.load(&m2, ptx.c_str(), 2, opts, vals) == 218);
    CHECK(std::string(log).find("PTX line 23: unsupported instruction: 'frob.s32") !=
          std::string::npos);
  }
  d.release(in);
  d.release(out);
  d.unload(module);
}
#endif
