#!/usr/bin/env python3
"""Golden tests for pxl: run programs, compare stdout, stderr and exit status.

Program mode (default): every tests/programs/**/*.pxl is run as `pxl [ARGS] NAME.pxl`
from its own directory (so diagnostics show the bare file name) and compared with
  NAME.out   expected stdout (required)
  NAME.err   expected stderr (exact; not compared when the file is absent)
  NAME.code  expected exit status (default 0)
  NAME.amd.out / NAME.intel.out  expected stdout on that CPU vendor's machines, in place of
             NAME.out: JAX's own linear algebra (LAPACK through OpenBLAS, whose kernels are
             chosen per CPU) differs in the last bits between them, and pxl follows it.
             Without AVX-512 YNNPACK has only its fma3/avx2 matmul kernels, and the
             products XLA keeps from it (too small, or `a.T @ b`) sum in other orders too:
             the matmul/conv tests' .amd.out files are JAX's output on such a CPU
             (conv_ynn_feature_tail, dot_noncanonical, lax_ragged_dot,
             matmul_ynn_unfused_kernels, scp_kde, schedule_arena, nn_random_extra,
             sum_loss_biased) or pxl's where JAX's
             still differs (conv_xla_order, conv_grad_xla_order,
             conv_transpose_grad_xla_order, conv_vmap_batch_rule, dot_transposed_operands,
             matmul_order_ynn, lin_special_matrices, lin_symmetric_product,
             sum_loss_two_arrays, sum_shared_product: AVX2's convolutions, products past
             40 a side outside YNNPACK, contractions longer than YNNPACK's k block and
             reductions' vector widths are not modelled).
  NAME.amd512.out  the same on AMD CPUs with AVX-512 (Zen 4 and later): OpenBLAS runs its
             Intel AVX-512 kernels there, so NAME.out (not NAME.amd.out) is their fallback,
             while XLA's AMD-specific code (rsqrt's one Newton step) still applies.
  NAME.amdzen3.out  the same on AMD Zen 3 (family 19h) without AVX-512, before NAME.amd.out:
             XLA compiles for the host CPU, and its linspace loops round differently there
             (linspace_xla_rounding's is pxl's: Zen 3's longer vector loops are not modelled).
  NAME.intel512.out  the same on Intel CPUs with AVX-512 (JAX's output there; lng_svd_qdwh's
             is pxl's, whose QDWH SVD differs from JAX's there in one printed last digit).
A first line `# ARGS: --devices 4` passes flags to pxl. Files whose name starts
with `_` are helper modules for the others to import, not tests.

REPL mode (--repl): every NAME.in is piped to `pxl [ARGS]` (stdin script mode:
the REPL without prompts) and compared with NAME.out/.err/.code the same way.

--batch runs the programs through `pxl --batch` (one pxl process per job, a fresh
interpreter per program), which also checks that nothing carries over from one program to
the next.

--update rewrites the expectations from the actual results. Python stdlib only.
"""
import argparse
import concurrent.futures
import difflib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# A sanitized build's report on stderr (tools/fuzz.py's BAD_MARKERS, less pxl's own).
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer",
                     "UndefinedBehaviorSanitizer", "runtime error:")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="*", help="directories or files (default: the mode's tree)")
    p.add_argument("--pxl", default=str(REPO / "build" / "bin" / "pxl"), help="the pxl binary")
    p.add_argument("--repl", action="store_true", help="REPL transcript mode (NAME.in)")
    p.add_argument("--update", action="store_true", help="rewrite expectations")
    p.add_argument("--pxl-args", default="", help="extra flags for every run, e.g. '--exec jit'")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    # (A hang's limit, not a speed check: with an empty kernel cache the largest programs
    # compile for 30 s on one core, and ctest runs the golden suites side by side.)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per program")
    p.add_argument("-v", "--verbose", action="store_true", help="list passing tests too")
    p.add_argument("--batch", action="store_true", help="run the programs through pxl --batch")
    return p.parse_args()


def collect(paths, suffix):
    tests = []
    for path in map(Path, paths):
        # absolute(), not resolve(): a test may be a symlink to a program kept
        # elsewhere (examples/), with its expectations beside the link.
        if path.is_file():
            tests.append(path.absolute())
        elif path.is_dir():
            tests.extend(p.absolute() for p in path.rglob("*" + suffix) if not p.name.startswith("_"))
        else:
            sys.exit(f"run_golden: no such file or directory: {path}")
    return sorted(set(tests))


def read_args(test):
    with open(test, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    first = first.strip()
    if first.startswith("# ARGS:"):
        return shlex.split(first[len("# ARGS:"):])
    return []


def cpu_kinds():
    """This CPU's kinds, most specific first: 'amdzen3' (AMD family 19h without AVX-512) then
    'amd', 'amd512' (AMD with AVX-512), 'intel', 'intel512' (Intel with AVX-512); [] if unknown."""
    vendor, avx512, family = None, False, None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("vendor_id") and vendor is None:
                    vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(line.split(":")[1].strip())
                elif line.startswith("cpu family") and family is None:
                    family = int(line.split(":")[1])
                elif line.startswith("flags"):
                    avx512 = "avx512f" in line.split()
                    break
    except (OSError, ValueError):
        pass
    if not vendor:
        return []
    if avx512:
        return [vendor + "512"]
    return ["amdzen3", "amd"] if vendor == "amd" and family == 0x19 else [vendor]


CPU_KINDS = cpu_kinds()


def stdout_file(base):
    """NAME.out, or this kind of CPU's NAME.KIND.out where the test has one."""
    for kind in CPU_KINDS:
        own = Path(f"{base}.{kind}.out")
        if own.exists():
            return own
    return Path(f"{base}.out")


class Result:
    def __init__(self, test, stdout=b"", stderr=b"", code=None, timed_out=False, error=None):
        self.test, self.stdout, self.stderr, self.code = test, stdout, stderr, code
        self.timed_out, self.error = timed_out, error
        self.problems = []


def run_one(test, opts, env):
    if opts.batch and not opts.repl:
        from pxl_batch import thread_batch
        args = shlex.split(opts.pxl_args) + read_args(test) + [test.name]
        code, out, err = thread_batch(opts.pxl, env).run(test.parent, args, env.get("PXL_DEVICES"), opts.timeout)
        return Result(test, out, err, code, timed_out=code is None)
    cmd = [opts.pxl] + shlex.split(opts.pxl_args) + read_args(test)
    stdin = subprocess.DEVNULL
    if opts.repl:
        stdin_data = test.read_bytes()
    else:
        cmd.append(test.name)
        stdin_data = None
    try:
        proc = subprocess.run(cmd, cwd=test.parent, env=env, input=stdin_data,
                              stdin=None if opts.repl else stdin, capture_output=True,
                              timeout=opts.timeout)
    except subprocess.TimeoutExpired as e:
        return Result(test, e.stdout or b"", e.stderr or b"", timed_out=True)
    except OSError as e:
        return Result(test, error=f"cannot run {cmd[0]}: {e}")
    return Result(test, proc.stdout, proc.stderr, proc.returncode)


def text(data):
    return data.decode("utf-8", errors="replace")


def diff(expected, actual, label):
    lines = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                 f"expected {label}", f"actual {label}")
    return "".join(l if l.endswith("\n") else l + "\n\\ No newline at end of file\n" for l in lines)


def check(r, opts):
    if r.error:
        r.problems.append(r.error)
        return
    if r.timed_out:
        r.problems.append(f"timed out after {opts.timeout:g} s")
    base = r.test.with_suffix("")
    out_file = stdout_file(base)
    err_file, code_file = (Path(str(base) + s) for s in (".err", ".code"))
    if out_file.exists():
        want = out_file.read_text(encoding="utf-8", errors="replace")
        if want != text(r.stdout):
            r.problems.append("stdout differs:\n" + diff(want, text(r.stdout), "stdout"))
    else:
        r.problems.append(f"missing {out_file.name} (create it with --update)")
    if err_file.exists():
        want = err_file.read_text(encoding="utf-8", errors="replace")
        if want != text(r.stderr):
            r.problems.append("stderr differs:\n" + diff(want, text(r.stderr), "stderr"))
    want_code = int(code_file.read_text().strip()) if code_file.exists() else 0
    if not r.timed_out and r.code != want_code:
        msg = f"exit status {r.code}, expected {want_code}"
        if r.code is not None and r.code < 0:
            msg += f" (killed by signal {-r.code})"
        if not err_file.exists() and r.stderr:
            msg += "\nstderr:\n" + text(r.stderr)
        r.problems.append(msg)
    # Fails the test even where stderr is not compared (no NAME.err) and the status is the
    # expected one: UBSan reports and goes on unless UBSAN_OPTIONS has halt_on_error=1, and
    # ASan's and UBSan's exit status is 1, an error golden's too.
    marker = next((m for m in SANITIZER_MARKERS if m in text(r.stderr)), None)
    if marker:
        r.problems.append(f"sanitizer report ({marker}) on stderr:\n" + text(r.stderr))


def update(r):
    base = str(r.test.with_suffix(""))
    stdout_file(base).write_bytes(r.stdout)
    for suffix, keep, data in ((".err", bool(r.stderr), r.stderr),
                               (".code", r.code not in (0, None), f"{r.code}\n".encode())):
        path = Path(base + suffix)
        if keep:
            path.write_bytes(data)
        elif path.exists():
            path.unlink()


def main():
    opts = parse_args()
    suffix = ".in" if opts.repl else ".pxl"
    default = REPO / "tests" / ("repl" if opts.repl else "programs")
    tests = collect(opts.paths or [default], suffix)
    if not Path(opts.pxl).exists():
        sys.exit(f"run_golden: {opts.pxl} does not exist (build first)")
    with tempfile.TemporaryDirectory(prefix="pxl-golden-") as home:
        # A private HOME keeps the user's REPL history out of (and untouched by) tests.
        # OPENBLAS_CORETYPE (set on some machines) would pick other BLAS kernels than the
        # CPU's own, whose last bits the goldens (JAX's output on each CPU kind) hold.
        env = {k: v for k, v in os.environ.items()
               if k != "PXL_DEVICES" and not k.startswith("OPENBLAS_")}
        env.update(HOME=home, LC_ALL="C.UTF-8")
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            results = list(pool.map(lambda t: run_one(t, opts, env), tests))
    failed = 0
    for r in results:
        rel = os.path.relpath(r.test, REPO if REPO in r.test.parents else Path.cwd())
        if opts.update and not r.error and not r.timed_out:
            update(r)
            print(f"updated {rel}")
            continue
        check(r, opts)
        if r.problems:
            failed += 1
            print(f"FAIL {rel}\n" + "\n".join(r.problems), flush=True)
        elif opts.verbose:
            print(f"ok   {rel}")
    if not opts.update:
        print(f"{len(results) - failed} passed, {failed} failed ({len(results)} {suffix} files)")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
