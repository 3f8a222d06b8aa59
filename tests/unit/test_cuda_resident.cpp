// Results of CUDA calls stay on the device: a call returns device-backed
// arrays, the next call uses them where they are, and the host copy is made
// once, when the host first reads the array. Checked on the fake libcuda
// (tests/fake_cuda/) through the transfer log --profile prints.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "fake_cuda.hpp"
#include "lang/diag.hpp"
#include "lang/interp.hpp"
#include "runtime/format.hpp"
#include "runtime/sharded.hpp"

#ifdef PXL_FAKE_CUDA
using namespace pxl;
using namespace pxl::test;

namespace {

struct Copies {
  size_t up = 0, down = 0;
};

// The host<->device copies logged since entry `from`.
Copies copies_since(cuda::CudaRuntime& rt, size_t from) {
  auto log = rt.transfers().transfers();
  Copies c;
  for (size_t i = from; i < log.size(); ++i) (log[i].to_device ? c.up : c.down) += 1;
  return c;
}

OpAttrs matmul() {
  OpAttrs a;
  a.dot.lhs_contract = {1};
  a.dot.rhs_contract = {0};
  return a;
}

} // namespace

TEST_CASE("cuda: chained calls keep the intermediate on the device", "[cuda]") {
  cuda::CudaRuntime rt(1, true, fake_libraries());
  Array x = counting({4, 3}, 1), y = counting({3, 5}, -3), z = counting({5, 2}, 2);
  size_t start = rt.transfers().transfers().size();
  Array mid = run_on_fake(rt, one_op(Op::DotGeneral, matmul(), {4, 3}, {3, 5}), {x, y})[0][0];
  REQUIRE(mid.device_storage() != nullptr);
  CHECK_FALSE(mid.buffer()->on_host());
  CHECK(mid.shape() == Shape{4, 5});
  Copies first = copies_since(rt, start);
  CHECK(first.up == 2); // x, y
  CHECK(first.down == 0);

  size_t chained = rt.transfers().transfers().size();
  Array out = run_on_fake(rt, one_op(Op::DotGeneral, matmul(), {4, 5}, {5, 2}), {mid, z})[0][0];
  Copies second = copies_since(rt, chained);
  CHECK(second.up == 1); // z; the intermediate was used where it was
  CHECK(second.down == 0);
  CHECK_FALSE(mid.buffer()->on_host());
  CHECK_FALSE(out.buffer()->on_host());

  // Printing fetches the result once; printing again (or reading elements)
  // copies nothing more.
  size_t before_print = rt.transfers().transfers().size();
  std::string printed = array_str(out);
  CHECK(out.buffer()->on_host());
  CHECK(array_str(out) == printed);
  CHECK(out.get_f64(0) == out.as<float>()[0]);
  Copies print = copies_since(rt, before_print);
  CHECK(print.down == 1);
  CHECK(print.up == 0);
  auto log = rt.transfers().transfers();
  CHECK(log.back().bytes == 4 * 2 * 4);
  // The intermediate never came to the host.
  CHECK_FALSE(mid.buffer()->on_host());
  CHECK(copies_since(rt, start).down == 1);

  // Same values as on the host.
  std::vector<Array> xy{x, y};
  std::vector<Array> mz{eval_ref(Op::DotGeneral, matmul(), xy), z};
  Array want = eval_ref(Op::DotGeneral, matmul(), mz);
  REQUIRE(want.shape() == out.shape());
  for (int64_t i = 0; i < want.size(); ++i) CHECK(out.as<float>()[i] == want.as<float>()[i]);
  CHECK(printed == array_str(want));
}

TEST_CASE("cuda: a device-backed view is used in place; other devices get a copy", "[cuda]") {
  cuda::CudaRuntime rt(2, true, fake_libraries());
  Array x = counting({4, 3}, 1), y = counting({3, 4}, -3);
  Array sq = run_on_fake(rt, one_op(Op::DotGeneral, matmul(), {4, 3}, {3, 4}), {x, y})[0][0];
  // Rows 2..3 of the product: a view into its device buffer.
  Array rows = sq.view(8, {2, 4});
  Array w = counting({4, 3}, 0);
  size_t start = rt.transfers().transfers().size();
  Array out = run_on_fake(rt, one_op(Op::DotGeneral, matmul(), {2, 4}, {4, 3}), {rows, w})[0][0];
  Copies c = copies_since(rt, start);
  CHECK(c.up == 1); // w only
  CHECK(c.down == 0);
  std::vector<Array> args{
      eval_ref(Op::DotGeneral, matmul(), std::vector<Array>{x, y}).view(8, {2, 4}), w};
  Array want = eval_ref(Op::DotGeneral, matmul(), args);
  for (int64_t i = 0; i < want.size(); ++i) CHECK(out.as<float>()[i] == want.as<float>()[i]);

  // Logical device 1 does not share device 0's stream: its input comes
  // through the host (down once, then up), both counted.
  CodeCache host;
  SpmdLayout layout{Mesh{{"i"}, {2}, {0, 1}}, 2, 1};
  auto exe = cuda::make_cuda_executable(one_op(Op::DotGeneral, matmul(), {4, 4}, {4, 4}), layout,
                                        {}, rt, host);
  CommWorld world(2, 1);
  std::vector<DebugRecord> debug;
  size_t other = rt.transfers().transfers().size();
  auto on1 = exe->run(1, {{sq, sq}}, world, debug);
  Copies c1 = copies_since(rt, other);
  CHECK(c1.down == 1);
  CHECK(c1.up == 1); // the host copy is one array: uploaded once for both operands
  CHECK(on1[0][0].device_storage() != nullptr);
}

TEST_CASE("cuda: concurrent first reads fetch once", "[cuda]") {
  cuda::CudaRuntime rt(1, true, fake_libraries());
  Array x = counting({16, 8}, 1), y = counting({8, 16}, 2);
  Array p = run_on_fake(rt, one_op(Op::DotGeneral, matmul(), {16, 8}, {8, 16}), {x, y})[0][0];
  size_t start = rt.transfers().transfers().size();
  std::vector<std::thread> readers;
  std::vector<double> seen(4);
  for (size_t t = 0; t < seen.size(); ++t)
    readers.emplace_back([&, t] { seen[t] = p.get_f64(static_cast<int64_t>(t)); });
  for (auto& r : readers) r.join();
  CHECK(copies_since(rt, start).down == 1);
  for (size_t t = 0; t < seen.size(); ++t) CHECK(seen[t] == p.as<float>()[t]);
  p.block_until_ready(); // waits on the stream; copies nothing
  CHECK(copies_since(rt, start).down == 1);
}

TEST_CASE("cuda: arrays may outlive their CUDA runtime", "[cuda]") {
  Array read, unread, whole;
  {
    cuda::CudaRuntime rt(1, true, fake_libraries());
    Array x = counting({3, 3}, 1);
    auto f = one_op(Op::DotGeneral, matmul(), {3, 3}, {3, 3});
    read = run_on_fake(rt, f, {x, x})[0][0];
    unread = run_on_fake(rt, f, {read, x})[0][0];
    CHECK(read.get_f64(0) == 1 * 1 + 2 * 4 + 3 * 7);
    // A sharded array of device-backed shards assembles by fetching each.
    Mesh mesh{{"i"}, {1}, {0}};
    auto d = std::make_shared<ShardedData>();
    d->mesh = mesh;
    d->global = read.aval();
    d->shards = {read};
    whole = d->assemble();
  }
  // The host copy made while it lived stays; the device memory went with the
  // runtime, so reading what never came over is a clear error, not a crash.
  CHECK(read.get_f64(0) == 1 * 1 + 2 * 4 + 3 * 7);
  CHECK(whole.get_f64(0) == read.get_f64(0));
  unread.block_until_ready(); // nothing to wait for
  try {
    (void)unread.get_f64(0);
    FAIL("read an array whose device is gone");
  } catch (const Error& e) {
    CHECK(e.code() == ErrCode::Device);
    CHECK(e.message().find("after its CUDA runtime was closed") != std::string::npos);
  }
  unread = Array(); // releasing after the runtime is harmless
}

namespace {

// Runs `code` with --platform cuda --profile on one fake GPU (the driver and
// cuBLAS stand-ins named through PXL_CUDA_DRIVER / PXL_CUBLAS); returns
// {stdout, stderr}, stderr ending with the --profile report.
std::pair<std::string, std::string> run_on_fake_platform(const std::string& code,
                                                         const char* gpus = "1",
                                                         bool time_passes = false) {
  std::ostringstream out, err;
  setenv("PXL_CUDA_DRIVER", PXL_FAKE_CUDA, 1);
  setenv("PXL_CUBLAS", PXL_FAKE_CUDA, 1);
  setenv("PXL_NCCL", "libpxl-no-such-nccl.so", 1);
  setenv("PXL_FAKE_GPUS", gpus, 1);
  {
    InterpOptions o;
    o.platform = PlatformKind::Cuda;
    o.out = &out;
    o.err = &err;
    o.profile = true;
    o.time_passes = time_passes;
    o.cache_dir = "";
    std::unique_ptr<Interpreter> in;
    try {
      in = std::make_unique<Interpreter>(o);
    } catch (...) {
      for (const char* v : {"PXL_CUDA_DRIVER", "PXL_CUBLAS", "PXL_NCCL", "PXL_FAKE_GPUS"})
        unsetenv(v);
      throw;
    }
    for (const char* v : {"PXL_CUDA_DRIVER", "PXL_CUBLAS", "PXL_NCCL", "PXL_FAKE_GPUS"})
      unsetenv(v);
    in->run_string(code, "t.pxl");
  }
  return {out.str(), err.str()};
}

} // namespace

TEST_CASE("cuda: jax.jit runs on the CUDA platform and its results stay there", "[cuda]") {
  auto [out, err] = run_on_fake_platform("import jax\n"
                                         "import jax.numpy as jnp\n"
                                         "x = jnp.ones((4, 3))\n"
                                         "w = jnp.ones((3, 3)) * 2\n"
                                         "f = jax.jit(lambda a, b: a @ b)\n"
                                         "y = f(x, w)\n"
                                         "z = f(y, w)\n"
                                         "print(jax.devices())\n"
                                         "print(z)\n");
  CHECK(out == "[CudaDevice(id=0)]\n"
               "[[36. 36. 36.]\n [36. 36. 36.]\n [36. 36. 36.]\n [36. 36. 36.]]\n");
  // x and w go up once (w is found there by the second call), y never comes
  // down, z comes down once, for print.
  INFO(err);
  CHECK(err.find("profile: 3 host<->device copies: 2 to the GPU (84 bytes), 1 to the host "
                 "(48 bytes)\n") != std::string::npos);
  // The copy down is the print's, of the value the jitted lambda computed.
  CHECK(err.find("  t.pxl:9:1: to host 48 bytes (computed at t.pxl:5:") != std::string::npos);
}
TEST_CASE("cuda: --time-passes shows the CUDA runtime's start-up and compilation", "[cuda]") {
  auto [out, err] = run_on_fake_platform("import jax, jax.numpy as jnp\n"
                                         "print(jax.jit(lambda a: a @ a)(jnp.ones((2, 2))))\n",
                                         "1", true);
  CHECK(out == "[[2. 2.]\n [2. 2.]]\n");
  INFO(err);
  for (const char* phase : {"cuda: driver start-up", "cuda: contexts + streams", "codegen: PTX",
                            "cuda: cuBLAS start-up", "run: jit"})
    CHECK(err.find(std::string("\n  ") + phase + " ") != std::string::npos);
}

TEST_CASE("cuda: eager ops on a device-backed operand run on the device", "[cuda]") {
  auto [out, err] = run_on_fake_platform("import jax\n"
                                         "import jax.numpy as jnp\n"
                                         "x = jnp.ones((4, 3))\n"
                                         "w = jnp.ones((3, 3)) * 2\n"
                                         "y = jax.jit(lambda a, b: a @ b)(x, w)\n"
                                         "v = x @ w\n"
                                         "z = y @ w\n"
                                         "print(z[0])\n"
                                         "print(v[0])\n");
  CHECK(out == "[36. 36. 36.]\n[6. 6. 6.]\n");
  // x and w up for the jit call; v = x @ w is small and on the host (no
  // copies); z = y @ w runs where y is (w is there already); z comes down
  // once, for z[0], and that copy names the eager op's line.
  INFO(err);
  CHECK(err.find("profile: 3 host<->device copies: 2 to the GPU (84 bytes), 1 to the host "
                 "(48 bytes)\n") != std::string::npos);
  CHECK(err.find("  t.pxl:8:7: to host 48 bytes (computed at t.pxl:7:5)\n") != std::string::npos);
}
TEST_CASE("cuda: one pmap's output feeds the next on the device", "[cuda]") {
  auto [out, err] = run_on_fake_platform("import jax\n"
                                         "import jax.numpy as jnp\n"
                                         "x = jnp.ones((1, 4, 3))\n"
                                         "w = jnp.ones((1, 3, 3)) * 2\n"
                                         "f = jax.pmap(lambda a, b: a @ b)\n"
                                         "y = f(x, w)\n"
                                         "z = jax.pmap(lambda a, b: a @ b, axis_name='j')(y, w)\n"
                                         "print(z[0, 0])\n");
  CHECK(out == "[36. 36. 36.]\n");
  // y's shard is the second pmap's block: it is neither assembled on the
  // host nor copied down.
  INFO(err);
  CHECK(err.find("profile: 1 host pull of sharded arrays, 48 bytes\n  t.pxl:8:7: 48 bytes\n") !=
        std::string::npos);
  CHECK(err.find("profile: 3 host<->device copies: 2 to the GPU (84 bytes), 1 to the host "
                 "(48 bytes)\n") != std::string::npos);
}
TEST_CASE("cuda: mesh devices, shard devices and x.devices() print as the platform's", "[cuda]") {
  auto [out, err] =
      run_on_fake_platform("import jax\n"
                           "import jax.numpy as jnp\n"
                           "import numpy as np\n"
                           "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n"
                           "grid = np.array(jax.devices())\n"
                           "mesh = Mesh(grid, ('x',))\n"
                           "print(jax.devices())\n"
                           "print(mesh.devices)\n"
                           "print(grid, grid.flat, grid.tolist())\n"
                           "x = jax.device_put(jnp.ones((2, 2)), NamedSharding(mesh, P('x')))\n"
                           "print([s.device for s in x.addressable_shards])\n"
                           "print(x.addressable_shards[1])\n"
                           "print(x.devices(), jnp.ones(2).devices())\n"
                           "from jax.experimental import mesh_utils\n"
                           "print(mesh_utils.create_device_mesh((2,)))\n",
                           "2");
  INFO(out);
  CHECK(out.find("CpuDevice") == std::string::npos);
  size_t n = 0;
  for (size_t at = out.find("CudaDevice(id=1)"); at != std::string::npos;
       at = out.find("CudaDevice(id=1)", at + 1))
    ++n;
  // jax.devices(), mesh.devices, a device grid, its .flat and .tolist(), the
  // shards' devices, the shard, x.devices(), create_device_mesh.
  CHECK(n == 9);
}
#endif
