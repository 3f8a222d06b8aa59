"""numpy and (if importable) JAX timings of the cases in cases.pxl; prints "tool name ms"."""
import sys
import time

import numpy as np


def bench(tool, name, f, *args):
    f(*args)
    reps = 5
    t0 = time.perf_counter()
    for _ in range(reps):
        f(*args)
    print(tool, name, (time.perf_counter() - t0) / reps * 1000)


def cases(xp, tool, sync):
    n = 16 * 1024 * 1024
    a = xp.ones((n,), dtype=xp.float32)
    x = xp.ones((1024, 1024), dtype=xp.float32)
    def softmax(x):
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    fns = {
        "elementwise_16M": (lambda a: (a * 2.0 + a) * a - 1.0, a),
        "sum_16M": (lambda a: a.sum(), a),
        "max_16M": (lambda a: a.max(), a),
        "softmax_1024x1024": (softmax, x),
        "matmul_1024": (lambda x: x @ x, x),
    }
    for name, (f, arg) in fns.items():
        g = sync(f)
        bench(tool, name, g, arg)


if sys.argv[1] == "numpy":
    cases(np, "numpy", lambda f: f)
else:
    import jax
    import jax.numpy as jnp
    cases(jnp, "jax", lambda f: (lambda *a, j=jax.jit(f): j(*a).block_until_ready()))
