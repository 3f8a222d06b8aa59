# Eager structural ops on a 2048x2048 float32 array (best of 5 calls):
# transposes, a reversal, a strided slice and a broadcast.
#   bench/pxl_vs_jax.sh bench/jit/eager_structural.py
import time
import jax.numpy as jnp


def bench(name, f, *a):
    f(*a).block_until_ready()
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        f(*a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    print(name, round(best * 1e3, 2), "ms")


x = jnp.ones((2048, 2048))
bench("a.T + 0", lambda a: a.T + 0, x)
bench("jnp.transpose(a)", lambda a: jnp.transpose(a), x)
bench("a[::-1]", lambda a: a[::-1], x)
bench("a[1:-1, ::2]", lambda a: a[1:-1, ::2], x)
bench("broadcast_to(a[:, None, :64], (2048, 64, 64))", lambda a: jnp.broadcast_to(a[:, None, :64], (2048, 64, 64)), x)
