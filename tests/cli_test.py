#!/usr/bin/env python3
"""The pxl command line: options, exit statuses, and that no input crashes it.
Python stdlib only."""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
failures = []


def run(pxl, args, stdin=None, env_extra=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if k not in ("PXL_DEVICES", "PXL_PLATFORM")}
    env.update(env_extra or {})
    try:
        p = subprocess.run([pxl] + args, input=(stdin or "").encode(), capture_output=True,
                           env=env, cwd=cwd, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after 120 s"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expect(name, got, code=None, out=None, err=None, out_has=None, err_has=None):
    rc, o, e = got
    problems = []
    if code is not None and rc != code:
        problems.append(f"exit status {rc}, expected {code}")
    if out is not None and o != out:
        problems.append(f"stdout {o!r}, expected {out!r}")
    if err is not None and e != err:
        problems.append(f"stderr {e!r}, expected {err!r}")
    for s in out_has or []:
        if s not in o:
            problems.append(f"stdout lacks {s!r}: {o!r}")
    for s in err_has or []:
        if s not in e:
            problems.append(f"stderr lacks {s!r}: {e!r}")
    if problems:
        failures.append(name)
        print(f"FAIL {name}: " + "; ".join(problems))
    else:
        print(f"ok   {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pxl", default=str(REPO / "build" / "bin" / "pxl"))
    pxl = ap.parse_args().pxl

    # Options: no interpreter needed.
    expect("--help", run(pxl, ["--help"]), code=0, out_has=["usage: pxl", "--devices"])
    expect("--version", run(pxl, ["--version"]), code=0, out_has=["pxl ", "LLVM 19."])
    expect("--devices 0", run(pxl, ["--devices", "0", "-c", "print(1)"]), code=2,
           out="", err_has=["pxl: error: --devices: invalid device count '0'"])
    expect("--devices missing", run(pxl, ["--devices"]), code=2, err_has=["needs a value"])
    expect("PXL_DEVICES=abc", run(pxl, ["-c", "print(1)"], env_extra={"PXL_DEVICES": "abc"}),
           code=2, out="", err_has=["PXL_DEVICES: invalid device count 'abc'"])
    expect("unknown option", run(pxl, ["--bogus"]), code=2, err_has=["unknown option '--bogus'"])
    # `pxl -`: the script is stdin, read to its end (a def spanning lines, as a file).
    expect("- (stdin script)", run(pxl, ["-", "arg"], stdin="def f(x):\n    return x * 2**70\nprint(f(3))\n"),
           code=0, out="3541774862152233910272\n")
    expect("- (stdin error)", run(pxl, ["-"], stdin="print(1)\nprint(nope)\n"), code=1,
           out="1\n", err_has=["<stdin>:2:7: error[E0100]: name 'nope' is not defined"])

    # Platforms. Without a usable GPU, cuda is a clear E0400 naming what is
    # missing and auto is the CPU mesh; with one, both run on it.
    auto = run(pxl, ["--platform", "auto", "-c", "print(jax.devices())"])
    expect("--platform auto", auto, code=0, err="")
    gpu = "CudaDevice" in auto[1]
    expect("--platform bogus", run(pxl, ["--platform", "bogus", "-c", "print(1)"]), code=2,
           out="", err_has=["--platform: unknown platform 'bogus' (known: cpu, cuda, auto)"])
    expect("PXL_PLATFORM bogus", run(pxl, ["-c", "print(1)"], env_extra={"PXL_PLATFORM": "tpu"}),
           code=2, out="", err_has=["PXL_PLATFORM: unknown platform 'tpu'"])
    expect("cuda:K on cpu", run(pxl, ["--platform", "cpu", "-c", "print(1)"],
                                env_extra={"PXL_DEVICES": "cuda:2"}),
           code=2, out="", err_has=["'cuda:2' are CUDA devices, but the platform is cpu"])
    expect("--devices cuda:0", run(pxl, ["--devices", "cuda:0", "-c", "print(1)"]), code=2,
           out="", err_has=["cuda:K needs K logical devices from 1 to 64"])
    expect("--platform cpu", run(pxl, ["--platform=cpu", "--devices", "2", "-c",
                                       "print(jax.devices())"]),
           code=0, out="[CpuDevice(id=0), CpuDevice(id=1)]\n")
    cuda_runs = [("--platform cuda", ["--platform", "cuda"], {}),
                 ("PXL_PLATFORM=cuda", [], {"PXL_PLATFORM": "cuda"}),
                 ("PXL_DEVICES=cuda:2", [], {"PXL_DEVICES": "cuda:2"})]
    for name, flags, env in cuda_runs:
        got = run(pxl, flags + ["-c", "print(1 + 1)"], env_extra=env)
        if gpu:
            expect(name + " (GPU)", got, code=0, out="2\n")
        else:
            expect(name + " (no GPU)", got, code=1, out="",
                   err_has=["error[E0400]: the CUDA platform is not available: "])
    if not gpu:  # the reason auto chose the CPU is in :mesh (quiet otherwise)
        expect(":mesh after auto", run(pxl, ["--platform", "auto", "--devices", "2"],
                                       stdin=":mesh\n"),
               code=0, err="", out_has=["2 CPU devices: CpuDevice(id=0) CpuDevice(id=1)\n",
                                        "(--platform auto chose the CPU: "])
        expect(":mesh on cpu", run(pxl, ["--devices", "2"], stdin=":mesh\n"), code=0,
               out="2 CPU devices: CpuDevice(id=0) CpuDevice(id=1)\n")
    if gpu:
        expect("cuda:2 devices", run(pxl, ["-c", "print(len(jax.devices()))"],
                                     env_extra={"PXL_DEVICES": "cuda:2"}), code=0, out="2\n")

    # Scripts.
    expect("-c", run(pxl, ["-c", "print(1 + 1)"]), code=0, out="2\n", err="")
    expect("-c error", run(pxl, ["-c", "print(1)\nfoo"]), code=1, out="1\n",
           err_has=["<string>:2:1: error[E0100]"])
    expect("--devices wins", run(pxl, ["--devices", "3", "-c", "print(device_count())"],
                                 env_extra={"PXL_DEVICES": "5"}), code=0, out="3\n")
    expect("PXL_DEVICES", run(pxl, ["-c", "print(len(jax.devices()))"],
                              env_extra={"PXL_DEVICES": "5"}), code=0, out="5\n")
    expect("missing file", run(pxl, ["no/such/file.pxl"]), code=1, out="",
           err_has=["no/such/file.pxl"])
    expect("deep recursion", run(pxl, ["-c", "def f(n):\n    return f(n + 1)\nf(0)"]), code=1,
           err_has=["error[E0108]"])
    expect("binary junk", run(pxl, ["-c", "\x01\x02\xff garbage ((("]), code=1,
           err_has=["error["])
    with tempfile.TemporaryDirectory() as d:
        nested = Path(d, "nested.pxl")
        nested.write_text("x = " + "(" * 200000 + "1" + ")" * 200000 + "\n")
        expect("deeply nested source", run(pxl, [str(nested)]), code=1, err_has=["error["])
        nested.write_text("x = " + "[" * 200000 + "\n")
        expect("unclosed brackets", run(pxl, [str(nested)]), code=1, err_has=["error["])
        Path(d, "bad.pxl").write_bytes(b"print('\xff\xfe')\n")
        expect("invalid UTF-8", run(pxl, ["bad.pxl"], cwd=d), code=1, err_has=["bad.pxl:1:"])
        # A directory opens as a stream but reads as nothing: it once ran as an empty script.
        expect("directory as script", run(pxl, [d]), code=1, out="",
               err_has=["it is a directory, not a .pxl file"])
        expect(":load directory", run(pxl, [], stdin=":load .\nprint('alive')\n", cwd=d),
               code=1, out="alive\n", err_has=["it is a directory"])

    # stdin script mode: REPL logic, no prompts, errors do not stop the session.
    expect("stdin mode", run(pxl, [], stdin="1 + 1\nfoo\nx = 3\nx * 2\n"), code=1,
           out="2\n6\n", err_has=["error[E0100]"])
    expect("stdin mode ok", run(pxl, [], stdin="def f(x):\n    return x + 1\n\nf(1)\n"), code=0,
           out="2\n", err="")
    expect("stdin :quit", run(pxl, [], stdin=":quit\nprint('after')\n"), code=0, out="")
    expect("stdin unknown command", run(pxl, [], stdin=":frob\n"), code=1,
           err_has=["unknown command ':frob'", ":help", ":type"])
    with tempfile.TemporaryDirectory() as d:
        Path(d, "lib.pxl").write_text("def sq(x):\n    return x * x\n")
        expect(":load", run(pxl, [], stdin=":load lib.pxl\nsq(4)\n", cwd=d), code=0, out="16\n")

    # The JIT: on-disk kernel cache, --explain-cache, --time-passes.
    prog = ("import jax\nimport jax.numpy as jnp\n"
            "f = jax.jit(lambda a, b: jnp.sum(jnp.exp(a) * b))\n"
            "x = jnp.arange(4.0)\nprint(f(x, x))\nprint(f(x, 2.0))\nprint(f(x, x))\n")
    want = "77.753006\n62.38575\n77.753006\n"
    with tempfile.TemporaryDirectory() as d:
        env = {"PXL_CACHE_DIR": d}
        expect("disk cache: first run compiles", run(pxl, ["--explain-cache", "-c", prog], env_extra=env),
               code=0, out=want, err_has=["trace cache miss: jit(<lambda>) at <string>:5:7",
                                          "first call", "array argument 1 was f32[4], now ~f32[]",
                                          "1 kernel(s) compiled (not in the disk cache"])
        objects = sorted(Path(d).glob("*.o"))
        expect("disk cache: two objects written", (0, str(len(objects)), ""), out="2")
        expect("disk cache: second run loads", run(pxl, ["--explain-cache", "-c", prog], env_extra=env),
               code=0, out=want, err_has=["1 kernel(s) loaded from the disk cache"])
        for o in objects:
            o.write_bytes(b"not an object file")
        expect("disk cache: damaged entry is recompiled",
               run(pxl, ["--explain-cache", "-c", prog], env_extra=env), code=0, out=want,
               err_has=["is unusable; recompiled"])
        expect("disk cache: the damaged entry was replaced",
               run(pxl, ["--explain-cache", "-c", prog], env_extra=env), code=0, out=want,
               err_has=["1 kernel(s) loaded from the disk cache"])
    expect("PXL_CACHE_DIR=off", run(pxl, ["--explain-cache", "-c", prog], env_extra={"PXL_CACHE_DIR": "off"}),
           code=0, out=want, err_has=["compiled (no disk cache)"])
    expect("--time-passes", run(pxl, ["--time-passes", "-c", prog], env_extra={"PXL_CACHE_DIR": "off"}),
           code=0, out=want, err_has=["--time-passes", "parse", "trace + check", "codegen: fusion plan",
                                      "codegen: LLVM O3", "LLVM pass: InstCombinePass",
                                      "LLVM pass: LoopVectorizePass", "codegen: machine code",
                                      "run: jit"])
    pm = ("import jax\nimport jax.numpy as jnp\nf = jax.pmap(lambda x: x * 2)\n"
          "f(jnp.ones((8, 3)))\nf(jnp.ones((8, 3)))\nf(jnp.ones((8, 4)))\n")
    expect("--explain-cache pmap", run(pxl, ["--explain-cache", "-c", pm], env_extra={"PXL_CACHE_DIR": "off"}),
           code=0, err_has=["trace cache miss: pmap(<lambda>) at <string>:4:1: first call",
                            "at <string>:6:1: array argument 0 was f32[8,3] mapped over axis 0, "
                            "now f32[8,4] mapped over axis 0"])
    repl = "import jax.numpy as jnp\ndef f(x):\n    return jnp.exp(x) * 2.0\n\nx = jnp.ones((4,))\n"
    expect(":llvm", run(pxl, [], stdin=repl + ":llvm f(x)\n"), code=0,
           out_has=["define void @k0(", "target triple"])
    expect(":ptx", run(pxl, [], stdin=repl + ":ptx f(x)\n"), code=0,
           out_has=[".target sm_90", ".entry k0"])
    expect(":llvm without a call", run(pxl, [], stdin=repl + ":llvm x\n"), code=1,
           err_has=["expected a call such as f(x)"])
    expect("--exec interp gives the same", run(pxl, ["--exec", "interp", "-c", prog]), code=0, out=want)

    # --batch: each request's status, stdout and stderr, as a run of its own gives them;
    # nothing carries over (a name defined by one program is unknown to the next).
    with tempfile.TemporaryDirectory() as d:
        Path(d, "two.pxl").write_text("import jax\nprint(len(jax.devices()))\nx = 5\n")
        T = "\t"
        reqs = [f"{d}{T}{T}two.pxl", f"{d}{T}3{T}two.pxl", f"{d}{T}{T}-c{T}print(x)",
                f"{d}{T}{T}--devices{T}2{T}-c{T}print(1); print(1 / 0)",
                f"{d}{T}{T}-c{T}print(2)", f"{d}/missing{T}{T}two.pxl", f"{d}{T}{T}--bogus",
                f"{d}", f"{d}{T}{T}--version", f"{d}{T}bad{T}two.pxl"]
        alone = [run(pxl, ["two.pxl"], cwd=d), run(pxl, ["two.pxl"], cwd=d, env_extra={"PXL_DEVICES": "3"}),
                 run(pxl, ["-c", "print(x)"], cwd=d)]
        rc, o, e = run(pxl, ["--batch"], stdin="\n".join(reqs) + "\n")
        results, rest = [], o.encode()
        while rest:
            header, _, rest = rest.partition(b"\n")
            tag, status, n_out, n_err = header.decode().split()
            out, rest = rest[:int(n_out)], rest[int(n_out):]
            err, rest = rest[:int(n_err)], rest[int(n_err):]
            results.append((int(status), out.decode(), err.decode()))
        expect("--batch: one result per request", (rc, str(len(results)), e), code=0, out=str(len(reqs)),
               err="")
        if len(results) == len(reqs):
            for i in range(3):
                expect(f"--batch: request {i} as alone", results[i], code=alone[i][0], out=alone[i][1],
                       err=alone[i][2])
            expect("--batch: stdout and stderr of a failing program", results[3], code=1, out="1\n",
                   err_has=["<string>:1:17: error[E0106]: division by zero"])
            expect("--batch: the next program", results[4], code=0, out="2\n", err="")
            expect("--batch: missing directory", results[5], code=2, err_has=["cannot enter"])
            expect("--batch: bad option", results[6], code=2, err_has=["unknown option '--bogus'"])
            expect("--batch: short request", results[7], code=2, err_has=["DIR<TAB>PXL_DEVICES"])
            expect("--batch: not a program", results[8], code=2, err_has=["script file or -c code"])
            expect("--batch: bad PXL_DEVICES", results[9], code=2, err_has=["PXL_DEVICES"])
    expect("--batch takes no other arguments", run(pxl, ["--batch", "x.pxl"]), code=2,
           err_has=["--batch takes no other arguments"])

    print(f"{'FAILED: ' + ', '.join(failures) if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
