# Eager (un-jitted) operations on arrays laid out over a mesh of 8 CPU devices:
# each op runs as a one-op program partitioned over the mesh, as JAX runs every
# eager op (a jit of the primitive). Runs unchanged under pxl and under JAX;
# prints ms per op (median of 7 timed rounds of 10 calls, after a warm-up) and
# a checksum per case so the two can be compared.
import time
import jax
import numpy as np
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ('data', 'model'))
N = 2048
k1, k2 = jax.random.split(jax.random.PRNGKey(0))
rows = NamedSharding(mesh, P('data', None))
grid = NamedSharding(mesh, P('data', 'model'))
cols = NamedSharding(mesh, P(None, 'model'))
x = jax.device_put(jax.random.normal(k1, (N, N)), grid)
y = jax.device_put(jax.random.normal(k2, (N, N)), grid)
a = jax.device_put(jax.random.normal(k1, (N, N)), rows)
w = jax.device_put(jax.random.normal(k2, (N, N)) * 0.01, cols)

cases = [
    ('add_2048x2048', lambda: x + y),
    ('tanh_2048x2048', lambda: jnp.tanh(x)),
    ('sum_rows', lambda: jnp.sum(x, axis=1)),
    ('sum_all', lambda: jnp.sum(x)),
    ('matmul_rows_x_cols', lambda: a @ w),
    ('transpose_reshard', lambda: x.T + y),
    ('device_put_reshard', lambda: jax.device_put(x, cols)),
]

for name, fn in cases:
    out = fn()
    out.block_until_ready()
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(10):
            out = fn()
        out.block_until_ready()
        times.append((time.perf_counter() - t0) * 100)
    times.sort()
    print(f"{name:22} {times[3]:9.3f} ms   checksum {float(jnp.sum(out)):.3f}")
