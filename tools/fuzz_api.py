#!/usr/bin/env python3
"""API fuzzer for pxl: calls every public function with wrong-typed and absurd arguments.

Reads qualified names (one a line, e.g. `jnp.sum`, `lax.pad`; list them with dir() in pxl),
writes `NAME(ARGS)` lines for a fixed set of argument patterns (empty/0-d/int8/bool/complex
arrays, out-of-range axes, huge and negative sizes, None, strings, keys, callables) and pipes
them in chunks to pxl's REPL stdin mode, where an error is a diagnostic and the session goes
on. A chunk whose session dies (signal, abort, sanitizer report, "internal error", time limit,
or a missing end-of-chunk probe) is halved until the culprit lines are named.

  tools/fuzz_api.py --pxl build/bin/pxl names.txt [--pxl-args '--exec interp'] [-o out]
"""
import argparse
import concurrent.futures
import sys
from pathlib import Path

from fuzz import run_pxl  # one runner and one verdict for both fuzzers

PRELUDE = """import jax
import jax.numpy as jnp
from jax import lax
import jax.scipy.special as sp
import jax.numpy.linalg as la
import jax.numpy.fft as fft
import jax.random as jr
import jax.scipy.linalg as sla
import jax.scipy.signal as sig
import jax.image as image
import jax.scipy.ndimage as nd
A = jnp.arange(6.0).reshape(2, 3)
E = jnp.zeros((0,))
E2 = jnp.zeros((0, 3))
S = jnp.float32(2)
I = jnp.arange(6, dtype=jnp.int8).reshape(2, 3)
B = jnp.array([True, False])
C = jnp.array([1 + 2j, 3j])
K = jr.PRNGKey(0)
N4 = jnp.arange(-3, 3, dtype=jnp.int4).reshape(2, 3)
U2 = jnp.array([0, 3], jnp.uint2)
F8 = jnp.arange(6.0).reshape(2, 3).astype(jnp.float8_e4m3fn)
F4 = jnp.array([-6.0, 0.5], jnp.float4_e2m1fn)
"""
PATTERNS = [
    "", "None", "'a'", "A", "A, A", "A, 9", "A, -9", "E", "E2", "S", "I", "B", "C",
    "A, axis=9", "A, A, A", "A, (9, 9)", "A, dtype='bogus'", "[[1, 2], [3]]", "K, (2**40,)",
    "K, (-1,)", "lambda x: x, A", "A, shape=(-1, -1)", "2**62", "A, 2**62", "A, -2**62",
    "jnp.ones(())", "A, 1.5", "E2, E2", "I, I", "B, B", "C, C", "A, None, None", "E, 0",
    "A, E", "I, -1", "A, 'a'", "A, ()", "A, []", "A, lambda x: x",
    "N4", "U2", "F8", "F4", "N4, N4", "F8, F8", "A, F8", "N4, 1", "F8, axis=1",
]
PROBE = "print('API-ALIVE')"


def run(pxl, extra, lines, timeout):
    text = PRELUDE + "\n".join(lines) + "\n\n" + PROBE + "\n"
    return run_pxl([pxl] + extra, timeout, stdin=text.encode(), alive=b"API-ALIVE",
                   lost="lost session")


def check_chunk(pxl, extra, chunk, timeout):
    """The bad lines of a chunk, found by halving it (most chunks are clean)."""
    verdict, err = run(pxl, extra, chunk, timeout + 0.5 * len(chunk))
    if not verdict:
        return []
    if len(chunk) == 1:
        return [(chunk[0], verdict, err[-1500:])]
    half = len(chunk) // 2
    found = check_chunk(pxl, extra, chunk[:half], timeout) + \
        check_chunk(pxl, extra, chunk[half:], timeout)
    return found or [(" ; ".join(chunk), verdict + " (only together)", "")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names")
    ap.add_argument("--pxl", default="build/bin/pxl")
    ap.add_argument("--pxl-args", default="")
    ap.add_argument("-o", "--out", default="fuzz-api.txt")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=80)
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="seconds for one line (a chunk gets this plus 0.5 s a line)")
    ap.add_argument("--pattern", action="append",
                    help="argument pattern to use instead of the built-in list (repeatable)")
    ap.add_argument("--start", type=int, default=0, help="skip this many names")
    ap.add_argument("--count", type=int, default=10**9, help="names to try")
    a = ap.parse_args()
    names = [n.strip() for n in Path(a.names).read_text().splitlines() if n.strip()]
    names = names[a.start:a.start + a.count]
    lines = [f"{n}({p})" for n in names for p in (a.pattern or PATTERNS)]
    chunks = [lines[i:i + a.chunk] for i in range(0, len(lines), a.chunk)]
    pxl = str(Path(a.pxl).resolve())
    bad = 0
    with open(a.out, "a") as out, concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        for found in ex.map(lambda c: check_chunk(pxl, a.pxl_args.split(), c, a.timeout), chunks):
            for line, verdict, err in found:
                bad += 1
                print(f"{verdict}: {line}", flush=True)
                out.write(f"=== {verdict}: {line}\n{err}\n")
    print(f"{bad} bad lines of {len(lines)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
