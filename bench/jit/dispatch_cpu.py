#!/usr/bin/env python3
"""CPU time per cached call of the dispatch cases of cases.pxl, for one or more
pxl binaries (e.g. before and after a change). Each case runs in a fresh
process with N1 and then N2 calls; the difference of the processes' user+sys
CPU time over N2 - N1 calls cancels start-up and compilation. CPU time, unlike
the wall-clock rows of run.sh, barely moves when other work shares the cores.
With --mallocs, malloc_count.c (built with cc) is LD_PRELOADed to count
allocations, and mallocs per call are printed too.

  usage: bench/jit/dispatch_cpu.py [--mallocs] PXL [PXL...]
"""
import os
import resource
import subprocess
import sys
import tempfile

PROGRAM = """
import jax
import jax.numpy as jnp
small = jnp.ones((jax.device_count(), 16), dtype=jnp.float32)
step = jax.pmap(lambda x: jnp.sin(x) * 2.0 + 1.0)
tiny = jnp.ones((16,), dtype=jnp.float32)
jstep = jax.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)
cx = jnp.ones((16, 16), dtype=jnp.float32)
cw = jnp.full((16, 16), 0.0625, dtype=jnp.float32)
chain = jax.jit(lambda x, w: jnp.sum(
    jnp.tanh(jnp.dot(jax.nn.relu(jnp.dot(jnp.exp(x * 0.5), w) - 1.0), w) + 1.0), axis=-1))
for i in range(CALLS):
    if CASE == 0:
        step(small).block_until_ready()
    elif CASE == 1:
        jstep(tiny).block_until_ready()
    else:
        chain(cx, cw).block_until_ready()
"""
CASES = ["dispatch_small_pmap", "dispatch_small_jit", "dispatch_chain_jit"]
N1, N2 = 2000, 20000


def run(pxl, case, calls, preload):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("CASE = %d\nCALLS = %d\n" % (case, calls) + PROGRAM)
    env = dict(os.environ, PXL_CACHE_DIR="off")
    if preload:
        env["LD_PRELOAD"] = preload
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([pxl, "--devices", "8", f.name], env=env, check=True,
                       capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.unlink(f.name)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    mallocs = [int(l.split()[1]) for l in p.stderr.splitlines() if l.startswith("mallocs ")]
    return cpu, mallocs[0] if mallocs else None


def main():
    args = sys.argv[1:]
    preload = None
    if not args or args == ["--mallocs"]:
        sys.exit(__doc__)
    if args[0] == "--mallocs":
        args = args[1:]
        preload = os.path.join(tempfile.mkdtemp(), "malloc_count.so")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", os.path.join(here, "malloc_count.c"),
                        "-o", preload], check=True)
    for case, name in enumerate(CASES):
        for pxl in args:
            best = None
            for _ in range(3):
                (c1, m1), (c2, m2) = run(pxl, case, N1, preload), run(pxl, case, N2, preload)
                per = (c2 - c1) / (N2 - N1)
                best = per if best is None else min(best, per)
            line = "%-22s %-40s %7.2f us CPU/call" % (name, pxl, best * 1e6)
            if m1 is not None and m2 is not None:
                line += "  %6.1f mallocs/call" % ((m2 - m1) / (N2 - N1))
            print(line, flush=True)


main()
