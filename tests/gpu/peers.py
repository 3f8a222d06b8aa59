#!/usr/bin/env python3
"""GPU peers for tests/gpu/run.sh's benchmarks; prints "tool name ms".
  jax:    the cases of bench.pxl under jax.jit on the GPU (arrays already on it)
  cublas: cublasSgemm 4096 called directly through ctypes (libcublas, libcudart)
"""
import ctypes
import sys
import time


def bench(tool, name, f, *args, reps=5):
    f(*args)
    t0 = time.perf_counter()
    for _ in range(reps):
        f(*args)
    print(tool, name, (time.perf_counter() - t0) / reps * 1000, flush=True)


def jax_cases():
    import jax
    import jax.numpy as jnp
    if jax.default_backend() != "gpu":
        print("jax: no GPU backend (default_backend is %s), skipped" % jax.default_backend())
        return
    sync = lambda f: (lambda *a, j=jax.jit(f): j(*a).block_until_ready())
    a = jnp.ones((64 * 1024 * 1024,), jnp.float32)
    bench("jax", "copy_64M", sync(lambda a: a + 0.0), a)
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
    s = jnp.ones((1,), jnp.float32)
    bench("jax", "dispatch_1elem", sync(lambda s: s + 1.0), s, reps=200)


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
    bench("cublas", "matmul_4096", gemm, reps=20)


if __name__ == "__main__":
    if sys.argv[1] == "jax":
        jax_cases()
    else:
        cublas_case()
