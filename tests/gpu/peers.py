#!/usr/bin/env python3
"""GPU peers for tests/gpu/run.sh's benchmarks; prints "tool name ms".
  jax:    the cases of bench.pxl under jax.jit on the GPU (arrays already on it)
  cublas: cublasSgemm 4096 called directly through ctypes (libcublas, libcudart), in float32
          and with TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH), and
          cudaMemcpy of 64M float32 device to device (the copy bandwidth)
"""
import ctypes
import sys
import time


def bench(tool, name, f, *args):
    """As bench.pxl's: 3 warm-up calls, then at least 5 calls and 0.2 s."""
    for _ in range(3):
        f(*args)
    reps, t0 = 0, time.perf_counter()
    while reps < 5 or time.perf_counter() - t0 < 0.2:
        f(*args)
        reps += 1
    print(tool, name, (time.perf_counter() - t0) / reps * 1000, flush=True)


def jax_cases():
    import jax
    import jax.numpy as jnp
    if jax.default_backend() != "gpu":
        print("jax: no GPU backend (default_backend is %s), skipped" % jax.default_backend())
        return
    sync = lambda f: (lambda *a, j=jax.jit(f): j(*a).block_until_ready())
    a = jnp.ones((64 * 1024 * 1024,), jnp.float32)
    bench("jax", "negate_64M", sync(lambda a: -a), a)
    bench("jax", "elementwise_64M", sync(lambda a: (a * 2.0 + a) * a - 1.0), a)
    x = jnp.ones((8192, 8192), jnp.float32)
    bench("jax", "softmax_8192x8192", sync(lambda x: jax.nn.softmax(x, axis=-1)), x)

    def mlp(h, w1, w2):
        mu = jnp.mean(h, axis=-1, keepdims=True)
        var = jnp.mean((h - mu) ** 2, axis=-1, keepdims=True)
        y = (h - mu) / jnp.sqrt(var + 1e-5)
        return jax.nn.gelu(y @ w1) @ w2
    h = jnp.ones((4096, 1024), jnp.float32)
    w1 = jnp.ones((1024, 4096), jnp.float32) * 0.01
    w2 = jnp.ones((4096, 1024), jnp.float32) * 0.01
    bench("jax", "ln_gelu_mlp_4096x1024", sync(mlp), h, w1, w2)
    m = jnp.ones((4096, 4096), jnp.float32)
    bench("jax", "matmul_4096", sync(lambda x: x @ x), m)
    bench("jax", "matmul_4096_f32",
          sync(lambda x: jnp.matmul(x, x, precision=jax.lax.Precision.HIGHEST)), m)
    s = jnp.ones((1,), jnp.float32)
    bench("jax", "call_sync_1elem", sync(lambda s: s + 1.0), s)
    f = jax.jit(lambda s: s + 1.0)
    f(s).block_until_ready()
    reps, t0 = 2000, time.perf_counter()
    for _ in range(reps):
        s = f(s)
    s.block_until_ready()
    print("jax", "dispatch_1elem", (time.perf_counter() - t0) / reps * 1000, flush=True)


def load(names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    raise OSError("none of " + ", ".join(names))


def cublas_case():
    dirs = ["", "/usr/local/cuda/lib64/"]
    rt = load([d + n for d in dirs for n in ("libcudart.so.13", "libcudart.so.12", "libcudart.so")])
    bl = load([d + n for d in dirs for n in ("libcublas.so.13", "libcublas.so.12", "libcublas.so")])
    n = 4096
    ptrs = [ctypes.c_void_p() for _ in range(3)]
    for p in ptrs:
        assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n * n * 4)) == 0
        assert rt.cudaMemset(p, 0, ctypes.c_size_t(n * n * 4)) == 0
    h = ctypes.c_void_p()
    assert bl.cublasCreate_v2(ctypes.byref(h)) == 0
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def gemm():
        bl.cublasSgemm_v2(h, 0, 0, n, n, n, ctypes.byref(one), ptrs[0], n, ptrs[1], n,
                          ctypes.byref(zero), ptrs[2], n)
        rt.cudaDeviceSynchronize()
    bench("cublas", "matmul_4096_f32", gemm)
    # TF32 tensor cores, as JAX and pxl run float32 matmuls at DEFAULT precision
    assert bl.cublasSetMathMode(h, 3) == 0  # CUBLAS_TF32_TENSOR_OP_MATH
    bench("cublas", "matmul_4096", gemm)
    # the device's copy bandwidth: 256 MiB device to device (read + write)
    size = 64 * 1024 * 1024 * 4
    src, dst = ctypes.c_void_p(), ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(src), ctypes.c_size_t(size)) == 0
    assert rt.cudaMalloc(ctypes.byref(dst), ctypes.c_size_t(size)) == 0

    def copy():
        rt.cudaMemcpy(dst, src, ctypes.c_size_t(size), 3)  # cudaMemcpyDeviceToDevice
        rt.cudaDeviceSynchronize()
    bench("cudart", "memcpy_64M", copy)


if __name__ == "__main__":
    if sys.argv[1] == "jax":
        jax_cases()
    else:
        cublas_case()
