"""The JAX peer of bench_collectives: the same shard_map collectives on JAX's
CPU backend. Run with XLA_FLAGS=--xla_force_host_platform_device_count=N
(run.sh does). Prints: jax <op> <devices> <bytes per device> <latency us> <GB/s>
"""
import sys
import time

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from jax import shard_map


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [1024, 64 << 20]
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("i",))
    bodies = {
        "psum": (lambda x: jax.lax.psum(x, "i"), P()),
        "all_gather": (lambda x: jax.lax.all_gather(x, "i", tiled=True), P()),
        "all_to_all": (lambda x: jax.lax.all_to_all(x, "i", 0, 0, tiled=True), P("i")),
    }
    for op, (body, out_spec) in bodies.items():
        for nbytes in sizes:
            count = nbytes // 4
            f = jax.jit(shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=out_spec,
                                  check_vma=False))
            x = jax.device_put(jnp.arange(n * count, dtype=jnp.float32) % 13,
                               jax.NamedSharding(mesh, P("i")))
            iters = 2000 if nbytes <= (1 << 20) else 5
            f(x).block_until_ready()
            t0 = time.perf_counter()
            # One call at a time: with many calls in flight XLA's CPU
            # collectives deadlock on this 2-core machine (its rendezvous
            # aborts the process after 40 s).
            for _ in range(iters):
                y = f(x)
                y.block_until_ready()
            lat = (time.perf_counter() - t0) / iters
            print(f"jax {op} {n} {nbytes} {lat * 1e6:.2f} {nbytes / lat / 1e9:.3f}", flush=True)
            del x, y


if __name__ == "__main__":
    main()
