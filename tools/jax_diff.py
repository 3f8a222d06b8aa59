#!/usr/bin/env python3
"""Differential check of pxl against JAX: each case (a small program; cases are
separated by a line `#----` in CASES) runs in JAX (one Python process, each case
in a fresh namespace) and in `pxl --batch`; the stdout of each must agree, and
an error in one must be an error in the other with the same message.

    tools/jax_diff.py --python VENV/bin/python --pxl build/bin/pxl CASES OUTDIR [--devices 8]

A developer's tool (JAX must be installed in the given Python); the build and
the tests never need it. Prints each differing case with a diff and a summary."""
import argparse
import difflib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from pxl_batch import BatchPxl  # noqa: E402

HEADER = "import jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax import lax\n"

RUN_IN_JAX = r'''
import contextlib, io, json, sys, warnings
warnings.filterwarnings("ignore")
results = []
for path in sys.argv[1:]:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
        err = None
    except BaseException as e:
        err = (type(e).__name__ + ": " + str(e)).strip().split("\n")[0]
    results.append((out.getvalue(), err))
print(json.dumps(results))
'''


def pxl_error(status, stderr):
    """The message of pxl's first diagnostic, or None when the program succeeded."""
    if status == 0:
        return None
    for line in stderr.split("\n"):
        if "error[" in line:
            return line.split("]: ", 1)[1]
    return f"CRASH {status} {stderr[-300:]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases")
    ap.add_argument("outdir")
    ap.add_argument("--python", required=True, help="a Python with JAX installed")
    ap.add_argument("--pxl", default="build/bin/pxl")
    ap.add_argument("--devices", default=None, help="PXL_DEVICES for pxl (JAX gets 8 CPU devices)")
    args = ap.parse_args()
    cases = [c for c in open(args.cases).read().split("\n#----\n") if c.strip()]
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for i, case in enumerate(cases):
        paths.append(os.path.join(outdir, f"c{i:04d}.py"))
        with open(paths[-1], "w") as f:
            f.write(HEADER + case + "\n")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    jax_run = subprocess.run([args.python, "-c", RUN_IN_JAX, *paths], capture_output=True, text=True,
                             env=env)
    jax_results = json.loads(jax_run.stdout.strip().split("\n")[-1])
    pxl = BatchPxl(os.path.abspath(args.pxl), dict(os.environ))
    differ = 0
    for path, (jax_out, jax_err) in zip(paths, jax_results):
        status, out, err = pxl.run(outdir, [path], devices=args.devices, timeout=60)
        out, err = out.decode(), pxl_error(status, err.decode())
        messages_differ = jax_err and err and jax_err.split(": ", 1)[-1] != err
        if out == jax_out and (jax_err is None) == (err is None) and not messages_differ:
            continue
        differ += 1
        print("=" * 60, path)
        print(open(path).read()[len(HEADER):].strip())
        if out != jax_out:
            print("".join(difflib.unified_diff(jax_out.splitlines(True), out.splitlines(True),
                                               "jax", "pxl", n=1))[:3000])
        if jax_err or err:
            print("JAX ERR:", jax_err)
            print("PXL ERR:", err)
    pxl.close()
    print(f"{differ} of {len(paths)} differ")


if __name__ == "__main__":
    main()
