# jnp.cumsum over the leading axis of a 4096x4096 float32 array, jitted (best of 5).
#   bench/pxl_vs_jax.sh bench/jit/cumsum_axis0.py
import time
import jax
import jax.numpy as jnp

f = jax.jit(lambda a: jnp.cumsum(a, axis=0))
x = jnp.ones((4096, 4096))
f(x).block_until_ready()
best = 1e9
for _ in range(5):
    t = time.perf_counter()
    f(x).block_until_ready()
    best = min(best, time.perf_counter() - t)
print("cumsum axis 0, 4096x4096:", round(best * 1e3, 1), "ms")
