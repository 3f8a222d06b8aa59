#!/usr/bin/env python3
"""Differential fuzzer of pxl's numerics against JAX: random jnp expression programs.

Each seed makes one program (valid Python and pxl): three random arrays with broadcastable
shapes, then six random expressions over them (unary math, nn functions, binary ops, where,
sorts and scans along the last axis), each printed eagerly, under jit, reduced (sum, max,
var, logsumexp, norm, ...) eagerly and under jit, differentiated (grad of the sum) and vmapped.
The program runs in JAX and in pxl; the outputs are compared value by value (relative and
absolute tolerance 1e-4, NaNs equal) and by their non-numeric skeleton (brackets, dtypes).
A seed whose outputs disagree beyond the tolerance is reported; `--exact` also counts those
that differ only in printed digits (XLA's last-ulp choices, which pxl copies where it can).

    tools/jax_expr_fuzz.py --python VENV/bin/python --pxl build/bin/pxl -o OUTDIR --seeds 1-70

A developer's tool (JAX must be installed in the given Python); the build and the tests never
need it. Each program and both outputs stay in OUTDIR (seedN.py, seedN.jax, seedN.pxl)."""
import argparse
import os
import random
import re
import subprocess
import sys

UNARY = ["jnp.sin", "jnp.cos", "jnp.tanh", "jnp.exp", "jnp.abs", "jnp.negative", "jnp.square",
         "jax.nn.relu", "jax.nn.sigmoid", "jax.nn.gelu", "jax.nn.softplus", "jnp.arctan",
         "jnp.sinh", "log1p_abs", "sqrt_abs", "jnp.floor", "jnp.ceil", "jnp.round", "jnp.sign",
         "jax.nn.silu", "jnp.cumsum", "jnp.flip", "jnp.sort", "cumprod_tanh", "jax.nn.softmax",
         "jax.nn.log_softmax", "jax.scipy.special.erf"]
ALONG_LAST_AXIS = {"jnp.cumsum", "jnp.flip", "jnp.sort", "jax.nn.softmax", "jax.nn.log_softmax"}
BINARY = ["+", "-", "*", "/", "jnp.maximum", "jnp.minimum", "jnp.arctan2", "jnp.hypot", "square_plus",
          "where_gt", "jnp.logaddexp", "%"]
REDUCE = ["sum", "mean", "max", "min", "prod_tanh", "var", "std", "argmax", "argmin", "logsumexp",
          "norm", "any_gt", "all_gt"]


def unary(rng, f, e):
    if f == "log1p_abs":
        return f"jnp.log1p(jnp.abs({e}))"
    if f == "sqrt_abs":
        return f"jnp.sqrt(jnp.abs({e}) + 0.5)"
    if f == "cumprod_tanh":
        return f"jnp.cumprod(jnp.tanh({e}), axis=-1)"
    return f"{f}({e}, axis=-1)" if f in ALONG_LAST_AXIS else f"{f}({e})"


def binary(op, a, b):
    if op == "where_gt":
        return f"jnp.where({a} > {b}, {a}, {b} * 0.5)"
    if op == "square_plus":
        return f"({a} ** 2 + 0 * {b})"
    if op in ("%", "/"):  # (a divisor away from 0)
        return f"({a} {op} (jnp.abs({b}) + 0.5))"
    return f"{op}({a}, {b})" if op.startswith("jnp") else f"({a} {op} {b})"


def expr(rng, depth):
    if depth == 0 or rng.random() < 0.1:
        return rng.choice(["x", "y", "z"])
    k = rng.random()
    if k < 0.45:
        return unary(rng, rng.choice(UNARY), expr(rng, depth - 1))
    if k < 0.75:
        return binary(rng.choice(BINARY), expr(rng, depth - 1), expr(rng, depth - 1))
    if k < 0.85:
        return binary(rng.choice(BINARY), expr(rng, depth - 1), repr(rng.choice([0.5, 2.0, -1.5, 3])))
    return f"jnp.tanh({expr(rng, depth - 1)})"


def reduction(rng, r, e):
    ax = rng.choice(["None", "-1", "0"])
    if r == "prod_tanh":
        return f"jnp.prod(jnp.tanh({e}), axis={ax})"
    if r == "logsumexp":
        return f"jax.nn.logsumexp({e}, axis={ax})"
    if r == "norm":
        return f"jnp.linalg.norm({e})"
    if r == "any_gt":
        return f"jnp.any({e} > 0.3, axis={ax})"
    if r == "all_gt":
        return f"jnp.all({e} > -0.3, axis={ax})"
    return f"jnp.{r}({e}, axis={ax})"


def program(seed):
    rng = random.Random(seed)
    sx = (rng.choice([2, 3, 4]), rng.choice([3, 4]))
    shapes = [sx, rng.choice([sx, sx[1:], (1, sx[1]), (sx[0], 1)]), rng.choice([sx, sx[1:], (1,)])]
    out = ["import jax", "import jax.numpy as jnp", "import jax.scipy.special",
           f"k1, k2, k3 = jax.random.split(jax.random.PRNGKey({seed}), 3)",
           f"x = jax.random.normal(k1, {shapes[0]})", f"y = jax.random.normal(k2, {shapes[1]})",
           f"z = jax.random.normal(k3, {shapes[2]})"]
    for i in range(6):
        e = expr(rng, 3)
        r = reduction(rng, rng.choice(REDUCE), f"f{i}(x, y, z)")
        out += [f"def f{i}(x, y, z):", f"    return {e}", f"def g{i}(x, y, z):", f"    return {r}",
                f'print("e{i}", f{i}(x, y, z))', f'print("j{i}", jax.jit(f{i})(x, y, z))',
                f'print("r{i}", g{i}(x, y, z))', f'print("rj{i}", jax.jit(g{i})(x, y, z))']
        if not any(w in r for w in ("arg", "any", "all")):
            out += [f'print("gr{i}", jax.grad(lambda x, y, z: jnp.sum({r}))(x, y, z))',
                    f'print("vm{i}", jax.vmap(f{i}, in_axes=(0, None, None))(x, y, z))']
    return "\n".join(out) + "\n"


NUM = re.compile(r"-?(?:\d+\.?\d*(?:e[+-]?\d+)?|nan|inf)")


def blocks(text):
    """The output cut at each tagged print: [(tag, text)]."""
    out = []
    for line in text.splitlines(keepends=True):
        m = re.match(r"^([a-z]+\d+) (.*)", line, re.S)
        if m:
            out.append([m.group(1), m.group(2)])
        elif out:
            out[-1][1] += line
        else:
            out.append(["?", line])
    return out


def close(x, y):
    return x == y or (x != x and y != y) or abs(x - y) <= 1e-4 + 1e-4 * abs(y)


def compare(jax_out, pxl_out):
    """The first disagreement beyond the tolerance, or None."""
    a, b = blocks(jax_out), blocks(pxl_out)
    for (ta, va), (tb, vb) in zip(a, b):
        na = [float(v) for v in NUM.findall(va)]
        nb = [float(v) for v in NUM.findall(vb)]
        skel = [re.sub(r"\s+", "", NUM.sub("N", v)) for v in (va, vb)]
        if ta != tb or skel[0] != skel[1] or len(na) != len(nb) or not all(map(close, na, nb)):
            return f"{ta}:\n  JAX: {va.strip()[:300]}\n  pxl: {vb.strip()[:300]}"
    if len(a) != len(b):
        return f"{len(a)} outputs from JAX, {len(b)} from pxl (last: {a[-1:]!r} / {b[-1:]!r})"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", required=True, help="a Python with jax installed")
    ap.add_argument("--pxl", required=True)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seeds", default="1-20", help="a range A-B or one seed")
    ap.add_argument("--exact", action="store_true", help="also count programs that differ in digits")
    args = ap.parse_args()
    lo, _, hi = args.seeds.partition("-")
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8")
    bad = inexact = 0
    for seed in range(int(lo), int(hi or lo) + 1):
        path = os.path.join(args.out, f"seed{seed}.py")
        with open(path, "w") as f:
            f.write(program(seed))
        outs = []
        for cmd, ext in (([args.python, path], "jax"), ([args.pxl, path], "pxl")):
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
                text = r.stdout + r.stderr
            except subprocess.TimeoutExpired:
                text = "timed out\n"
            with open(path[:-3] + "." + ext, "w") as f:
                f.write(text)
            outs.append(text)
        why = compare(*outs)
        if why:
            bad += 1
            print(f"seed {seed}: {why}")
        elif outs[0] != outs[1]:
            inexact += 1
            if args.exact:
                print(f"seed {seed}: equal within the tolerance, not digit for digit")
    print(f"{bad} disagreeing, {inexact} equal only within the tolerance")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
