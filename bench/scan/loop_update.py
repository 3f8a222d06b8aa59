# Jitted fori_loops that update one element of a large carried array per step:
# x.at[i].set(x[i - 1] + 1) (the index read and the scatter are host steps in
# pxl) and lax.dynamic_update_slice with a traced start. Each step should cost
# O(1), not a copy or a select over the whole array.
#   bench/pxl_vs_jax.sh bench/scan/loop_update.py
import time
import jax
import jax.numpy as jnp
from jax import lax


def chain(x):
    return lax.fori_loop(1, 2000, lambda i, x: x.at[i].set(x[i - 1] + 1.0), x)


def stamp(x):
    return lax.fori_loop(0, 2000, lambda i, x: lax.dynamic_update_slice(x, jnp.full((1,), i * 1.0), (i,)), x)


def best_ms(fn, x):
    f = jax.jit(fn)
    f(x).block_until_ready()
    best = 1e9
    for rep in range(3):
        t = time.perf_counter()
        r = f(x).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return round(best * 1e3, 2), r


for name, fn in (("at[i].set(x[i-1] + 1)", chain), ("dynamic_update_slice", stamp)):
    for n in (4000, 4000000):
        ms, r = best_ms(fn, jnp.zeros(n))
        print(name, "n =", n, "2000 steps:", ms, "ms", r[1999].item())


def row(x):
    return lax.fori_loop(1, 200, lambda i, x: x.at[i, :].set(x[i - 1] + 1.0), x)


def column(x):
    return lax.fori_loop(1, 200, lambda i, x: x.at[:, i].set(x[:, i - 1] + 1.0), x)


for name, fn in (("at[i, :].set(x[i-1] + 1)", row), ("at[:, i].set(x[:, i-1] + 1)", column)):
    ms, r = best_ms(fn, jnp.zeros((2000, 2000)))
    print(name, "2000x2000, 200 steps:", ms, "ms", r[199, 199].item())
