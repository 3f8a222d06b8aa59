"""numpy timings of the bench/jit/cases.pxl cases that numpy can express: "name ms"."""
import time

import numpy as np


def case(name, f, args, reps=7):
    f(*args)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(*args)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    print(name, ts[len(ts) // 2] * 1000.0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


n = 16 * 1024 * 1024
a = np.full((n,), 1.5, dtype=np.float32)
b = np.full((n,), 0.5, dtype=np.float32)
c = np.full((n,), 2.0, dtype=np.float32)
case("elementwise_16M", lambda a, b, c: (a * 2.0 + b) * c - 1.0, (a, b, c))
big = np.full((4 * n,), 0.25, dtype=np.float32)
case("sum_64M", np.sum, (big,))
case("max_64M", np.max, (big,))
rng = np.random.default_rng(0)
u = rng.standard_normal(n, dtype=np.float32) * 3.0
v = rng.standard_normal(n, dtype=np.float32) * 3.0
case("sin_cos_16M", lambda a, b: np.sin(a) * np.cos(b), (u, v))
case("pow_16M", lambda a, b: np.abs(a) ** b, (u, v))
case("atan2_16M", np.arctan2, (u, v))
case("rsqrt_16M", lambda a: 1.0 / np.sqrt(np.abs(a) + 1.0), (u,))
x = rng.standard_normal((4096, 4096), dtype=np.float32)
case("softmax_4096x4096", softmax, (x,))
m = rng.standard_normal((2048, 2048), dtype=np.float32)
case("matmul_2048", lambda x, y: x @ y, (m, m))
xs = rng.standard_normal((8, 128, 512), dtype=np.float32)
w1 = rng.standard_normal((512, 1024), dtype=np.float32) * 0.05
w2 = rng.standard_normal((1024, 512), dtype=np.float32) * 0.05
case("mlp_pmap_8dev", lambda x, w1, w2: np.maximum(x @ w1, 0) @ w2, (xs, w1, w2))
