#!/usr/bin/env python3
"""Mutation fuzzer for pxl: finds crashes, aborts, sanitizer reports, internal errors and hangs.

Every mutant is a .pxl script made from a corpus program (by default the goldens under
tests/programs) by one or more random edits: truncating it, deleting, duplicating or swapping
lines, replacing a number, name or operator token with an absurd value (huge/negative sizes and
axes, None, strings, dtypes, empty tuples ...), or garbling a few bytes. Each is run with a time
limit; a mutant whose run ends in
  - a signal or an abort (exit status < 0, 134, 139 ...),
  - a sanitizer report ("AddressSanitizer", "runtime error:", "LeakSanitizer"),
  - "internal error" (an escaped C++ exception or an internal check: a bug in pxl),
  - or the time limit (a hang)
is saved in the output directory with its stderr, for minimising by hand. Ordinary pxl
diagnostics (exit status 1 with `error[E...]`) are what the mutants are expected to produce.

  tools/fuzz.py --pxl build-asan/bin/pxl -n 500 --seed 1 -o fuzz-out [corpus files or dirs]
  tools/fuzz.py --repl ...   pipes each mutant to the REPL's stdin mode instead of running a file
  tools/fuzz.py --lines cases.txt ...   runs every line of cases.txt as its own script (after
                             the usual imports: jax, jnp, lax, P), unmutated: for hand-written
                             absurd calls

Python stdlib only; deterministic for a given seed and corpus.
"""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Replacement values for tokens: the shapes, axes, sizes and types a careless caller passes.
ABSURD = [
    "0", "-1", "-2", "1", "2**31", "2**31 - 1", "-2**31", "2**62", "-2**63", "10**30", "1e308",
    "-1e308", "float('nan')", "float('inf')", "None", "True", "()", "[]", "{}", "(0,)", "(-1,)",
    "(2**31,)", "(0, 0)", "(1, -1)", "((),)", "[[]]", "''", "'abc'", "'x'", "jnp.float64",
    "jnp.int8", "jnp.uint32", "jnp.bool_", "jnp.complex64", "jnp.bfloat16", "jnp.zeros(())",
    "jnp.zeros((0,))", "jnp.zeros((0, 3))", "jnp.ones((2, 0, 3))", "jnp.arange(5)",
    "jnp.array([1.0, 2.0])", "jnp.array(True)", "lambda x: x", "print", "jax", "jnp", "...",
    "slice(None)", "(1, 2, 3, 4, 5, 6, 7, 8, 9)", "-100", "100", "1j", "b'x'",
]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>", "<", "==", "and"]
TOKEN = re.compile(r"\d+\.\d*|\d+|[A-Za-z_][A-Za-z_0-9]*|\*\*|//|<<|>>|[-+*/%@&|^<]")
PRELUDE = ("import jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
           "from jax.sharding import PartitionSpec as P\n")
BAD_MARKERS = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "internal error",
               "terminate called", "Assertion", "UndefinedBehaviorSanitizer", "stack-overflow")


def mutate_once(lines, rng):
    kind = rng.choice(["truncate", "delete", "dup", "swap", "token", "token", "token", "token",
                       "garble", "indent"])
    if not lines:
        return lines
    i = rng.randrange(len(lines))
    if kind == "truncate":
        text = "\n".join(lines)
        cut = rng.randrange(len(text) + 1)
        return text[:cut].split("\n")
    if kind == "delete":
        return lines[:i] + lines[i + 1:]
    if kind == "dup":
        return lines[:i + 1] + lines[i:]
    if kind == "swap":
        j = rng.randrange(len(lines))
        lines = list(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines
    if kind == "indent":
        lines = list(lines)
        lines[i] = rng.choice(["    ", "", "\t", "  "]) + lines[i].lstrip()
        return lines
    line = lines[i]
    if kind == "garble":
        if not line:
            return lines
        chars = list(line)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(chars))
            chars[k] = rng.choice("()[]{}:,.=\"'\\#*-0123456789xj \x00\xff")
        return lines[:i] + ["".join(chars)] + lines[i + 1:]
    toks = list(TOKEN.finditer(line))
    if line.lstrip().startswith("#") or not toks:
        return lines
    m = rng.choice(toks)
    if m.group(0) in OPERATORS:
        rep = rng.choice(OPERATORS)
    else:
        rep = rng.choice(ABSURD)
    return lines[:i] + [line[:m.start()] + rep + line[m.end():]] + lines[i + 1:]


def mutant(text, rng):
    lines = text.split("\n")
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        lines = mutate_once(lines, rng)
    return "\n".join(lines)


REPL_PROBE = "print('REPL-ALIVE')"
# An unclosed bracket or string rightly swallows a REPL probe, as in Python's REPL.
PROBE_SWALLOWED = ("never closed", "unterminated")


def run_pxl(cmd, timeout, stdin=None, cwd=None, alive=None, lost="lost REPL session"):
    """Runs pxl and classifies the outcome: (verdict, stderr), verdict None for a clean run.

    A bad run is a signal or abort (status < 0 or > 2), a sanitizer report or internal error
    on stderr (BAD_MARKERS), the time limit ("hang"), or, where `alive` is given (the bytes a
    REPL probe prints last), a session that died before printing them (verdict `lost`).
    Ordinary diagnostics (status 1 with error[E...]) are clean. fuzz_api.py uses this too.
    """
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1",
               # glibc's checks, for an unsanitized build: freed memory is scribbled on
               MALLOC_CHECK_="3", MALLOC_PERTURB_="165")
    try:
        p = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode > 2:
        return f"status {p.returncode}", err
    for marker in BAD_MARKERS:
        if marker in err:
            return marker, err
    if alive is not None and alive not in p.stdout and \
            not any(s in err for s in PROBE_SWALLOWED):
        return lost, err
    return None, err


def run_one(pxl, extra, repl, text, args, timeout, workdir, name):
    if repl:  # the session must survive whatever came before: blank lines end open blocks
        text += "\n\n\n" + REPL_PROBE + "\n"
    path = workdir / (name + ".pxl")
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    cmd = [str(Path(pxl).resolve())] + extra + args + ([] if repl else [path.name])
    verdict, err = run_pxl(cmd, timeout, cwd=workdir,
                           stdin=text.encode("utf-8", "surrogateescape") if repl else None,
                           alive=b"REPL-ALIVE" if repl else None)
    if not verdict:
        path.unlink()
    return verdict, err


def corpus_files(paths):
    out = []
    for p in map(Path, paths or [REPO / "tests" / "programs"]):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*.pxl") if not q.name.startswith("_")))
        else:
            out.append(p)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="*")
    ap.add_argument("--pxl", default=str(REPO / "build" / "bin" / "pxl"))
    ap.add_argument("-n", type=int, default=200, help="number of mutants")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--out", default="fuzz-out", help="where failing mutants are kept")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--repl", action="store_true", help="feed mutants to the REPL on stdin")
    ap.add_argument("--pxl-args", default="", help="extra flags, e.g. '--exec interp'")
    ap.add_argument("--lines", help="run each line of this file as a script instead")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    if a.lines:
        src = Path(a.lines)
        for k, line in enumerate(src.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                jobs.append((f"l{k + 1}", src, PRELUDE + line + "\n", []))
        a.n = len(jobs)
    files = [] if a.lines else corpus_files(a.corpus)
    for k in range(0 if a.lines else a.n):
        src = rng.choice(files)
        text = src.read_text(encoding="utf-8", errors="replace")
        first = text.split("\n", 1)[0]
        args = first[len("# ARGS:"):].split() if first.startswith("# ARGS:") else []
        jobs.append((f"m{a.seed}_{k}", src, mutant(text, rng), args))
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        futs = {ex.submit(run_one, a.pxl, a.pxl_args.split(), a.repl, t, args, a.timeout, out, name): (name, src)
                for name, src, t, args in jobs}
        for f in concurrent.futures.as_completed(futs):
            name, src = futs[f]
            verdict, err = f.result()
            if verdict:
                bad += 1
                (out / (name + ".err")).write_text(f"# from {src}\n# {verdict}\n{err}")
                print(f"{name}: {verdict} (from {src.name})", flush=True)
    print(f"{bad} of {a.n} mutants failed badly; kept in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
