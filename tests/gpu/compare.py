#!/usr/bin/env python3
"""Golden programs on the CUDA platform against the CPU mesh (tests/gpu/run.sh).

--mode own:   each program runs on as many CUDA devices as its CPU run has (its
              `# ARGS: --devices N`, else 8): N GPUs when there are that many,
              else N logical devices on GPU 0 (PXL_DEVICES=cuda:N); compared with
              its .out / .err / .code files (its .out or this CPU's NAME.KIND.out).
--mode cuda4: each program runs on PXL_DEVICES=cuda:4 and on 4 CPU devices,
              and the two runs are compared.
Outputs are compared token by token: text exactly (CpuDevice, cpu:N and CPU N read as their
CUDA names), numbers within --rtol/--atol, whitespace ignored (a digit more or
less changes numpy's column widths). Programs run through `pxl --batch` (one pxl
process per job, sharing the CUDA driver's start-up: about 0.2 s a process, which the
driver serializes across processes); a program that fails there is run again alone,
which decides (--no-batch: every program in a process of its own). Python stdlib only.
"""
import argparse
import concurrent.futures
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from run_golden import collect, read_args, stdout_file  # noqa: E402
from pxl_batch import thread_batch  # noqa: E402

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")
TOKEN = re.compile(NUMBER.pattern + r"|[^\s\d+-]+|[+-]|\d+")


def normalize(text):
    """Platform names read the same on both sides: CpuDevice/CudaDevice, cpu:0/cuda:0,
    a platform called cpu, gpu or cuda (default_backend, device_kind=, client=, JAX's
    "on platform CPU"), visualize_array_sharding's "CPU 0"/"GPU 0" cells."""
    text = text.replace("CpuDevice", "CudaDevice").replace("CPU_DEVICE", "CUDA_DEVICE")
    text = re.sub(r"\b(?:cpu|gpu|cuda)\b", "cuda", text)
    return re.sub(r"\b(?:CPU|GPU|CUDA)\b", "CUDA", text)


def tokens(text):
    return TOKEN.findall(normalize(text))


def close(a, b, rtol, atol):
    if a == b:
        return True
    if not (NUMBER.fullmatch(a) and NUMBER.fullmatch(b)):
        return False
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return abs(x - y) <= atol + rtol * abs(y)


def without_transfers(err):
    """--profile on CUDA adds its host<->device copies, which the CPU run has not."""
    out, skipping = [], False
    for line in err.splitlines(keepends=True):
        if re.match(r"profile: \d+ host<->device cop", line):
            skipping = True
            continue
        if skipping and line.startswith("  "):
            continue
        skipping = False
        out.append(line)
    return "".join(out)


def same(got, want, rtol, atol):
    g, w = tokens(got), tokens(want)
    if len(g) != len(w):
        return f"{len(g)} tokens, expected {len(w)}"
    for i, (x, y) in enumerate(zip(g, w)):
        if not close(x, y, rtol, atol):
            ctx = " ".join(w[max(0, i - 6):i + 3])
            return f"token {i}: {x!r}, expected {y!r} (near: {ctx})"
    return None


def devices_in(args):
    """The --devices N of a program's ARGS (default 8) and the other args."""
    rest, n, i = [], 8, 0
    while i < len(args):
        a = args[i]
        if a == "--devices" and i + 1 < len(args):
            n, i = int(args[i + 1]), i + 2
            continue
        if a.startswith("--devices="):
            n = int(a.split("=", 1)[1])
        else:
            rest.append(a)
        i += 1
    return n, rest


def base_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PXL_DEVICES", "PXL_PLATFORM")}
    # float32 matmuls in float32, as on the CPU (DEFAULT precision is TF32 on CUDA)
    env["NVIDIA_TF32_OVERRIDE"] = "0"
    return env


def run(pxl, args, test, env_extra, timeout, batch=False):
    if batch:
        code, out, err = thread_batch(pxl, base_env()).run(test.parent, args + [test.name],
                                       env_extra.get("PXL_DEVICES"), timeout)
        return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    env = base_env()
    env.update(env_extra)
    try:
        p = subprocess.run([pxl] + args + [test.name], cwd=test.parent, env=env,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expected(test):
    """The exit status, the stdouts the CPU goldens accept, and the stderr.

    Both NAME.out and this CPU's NAME.KIND.out are accepted: where the CUDA path
    still computes on the host (the emulator's kernels, host steps) it follows
    this CPU as the CPU mesh does; elsewhere it follows neither in particular.
    """
    base = str(test.with_suffix(""))
    paths = dict.fromkeys([stdout_file(base), Path(base + ".out")])
    outs = [p.read_text(errors="replace") for p in paths if p.exists()] or [""]
    err = Path(base + ".err").read_text(errors="replace") if Path(base + ".err").exists() else None
    code = int(Path(base + ".code").read_text().strip()) if Path(base + ".code").exists() else 0
    return code, outs, err


def check(test, opts, gpus):
    start = time.monotonic()
    test, problems = compare_runs(test, opts, gpus, opts.batch)
    if problems and opts.batch:  # decided by a run alone
        test, problems = compare_runs(test, opts, gpus, False)
        if not problems:
            print(f"note: {test.name} failed only in --batch", flush=True)
    return test, problems, time.monotonic() - start


def compare_runs(test, opts, gpus, batch):
    n, rest = devices_in(read_args(test))
    if opts.mode == "own":
        cuda = (rest + ["--platform", "cuda", "--devices", str(n)], {}) if gpus >= n else \
            (rest, {"PXL_DEVICES": f"cuda:{n}"})
        want = expected(test)
    else:
        cuda = (rest, {"PXL_DEVICES": "cuda:4"})
        code, out, err = run(opts.pxl, rest + ["--platform", "cpu", "--devices", "4"], test, {},
                             opts.timeout, batch)
        want = (code, [out], err)
    got = run(opts.pxl, cuda[0], test, cuda[1], opts.timeout, batch)
    problems = []
    if got[0] != want[0]:
        problems.append(f"exit status {got[0]}, expected {want[0]}\n{got[2]}")
    whys = [same(got[1], out, opts.rtol, opts.atol) for out in want[1]]
    if all(whys):
        problems.append("stdout: " + whys[0])
    if want[2] is not None:
        why = same(without_transfers(got[2]), want[2], opts.rtol, opts.atol)
        if why:
            problems.append("stderr: " + why)
    return test, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", default=[str(HERE.parent / "programs")])
    ap.add_argument("--pxl", default=str(HERE.parent.parent / "build" / "bin" / "pxl"))
    ap.add_argument("--mode", choices=["own", "cuda4"], default="own")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("-v", "--verbose", action="store_true", help="print each program's result")
    ap.add_argument("--no-batch", dest="batch", action="store_false",
                    help="each program in a pxl process of its own")
    opts = ap.parse_args()
    probe = subprocess.run([opts.pxl, "--platform", "cuda", "-c", "print(device_count())"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("compare: the CUDA platform is not usable:\n" + probe.stderr)
        return 1
    gpus = int(probe.stdout.strip())
    tests = collect(opts.paths, ".pxl")
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        for test, problems, seconds in pool.map(lambda t: check(t, opts, gpus), tests):
            name = test.relative_to(HERE.parent)
            if problems:
                failed += 1
                print(f"FAIL {name} ({seconds:.1f} s): " + "; ".join(problems), flush=True)
            elif opts.verbose:
                print(f"ok {name} ({seconds:.1f} s)", flush=True)
    print(f"{opts.mode}: {len(tests) - failed}/{len(tests)} programs match the CPU results "
          f"(rtol {opts.rtol:g}, atol {opts.atol:g}; {gpus} GPU{'s' if gpus != 1 else ''})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
