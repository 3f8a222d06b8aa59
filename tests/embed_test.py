#!/usr/bin/env python3
"""Builds examples/embed against pxl's CMake package (find_package(pxl)), runs
it and checks its output. Python stdlib only."""
import argparse
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--source", required=True)
    ap.add_argument("--pxl-dir", required=True, help="a pxl build tree or <prefix>/lib/cmake/pxl")
    ap.add_argument("--work", required=True)
    ap.add_argument("--generator", default="Ninja")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--build-type", default="RelWithDebInfo")
    ap.add_argument("--cxx-flags", default="")
    o = ap.parse_args()
    configure = ["cmake", "-S", o.source, "-B", o.work, "-G", o.generator,
                 f"-Dpxl_DIR={o.pxl_dir}", f"-DCMAKE_CXX_COMPILER={o.cxx}",
                 f"-DCMAKE_BUILD_TYPE={o.build_type}", f"-DCMAKE_CXX_FLAGS={o.cxx_flags}",
                 f"-DCMAKE_EXE_LINKER_FLAGS={o.cxx_flags}"]
    for cmd in (configure, ["cmake", "--build", o.work, "-j", "2"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            print(f"FAIL: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
            return 1
    p = subprocess.run([f"{o.work}/embed_demo"], capture_output=True, text=True, timeout=60)
    print(p.stdout + p.stderr)
    expected = [
        "scale(x, 2) = 3 5 7 9  shape (2, 2)",
        "caught pxl::Error:",
        "oops.pxl:1:16: error[E0100]: name 'undefined_factor' is not defined",
        " 1 | y = scale(2.0, undefined_factor)",
        "   |                ^" + "~" * 15 + "\n",  # the caret spans undefined_factor
        "caught pxl::Error: name 'no_such_function' is not defined",
        "caught pxl::Error: argument 0 of scale() is an empty (default-constructed) pxl::Array",
        "caught pxl::Error: this pxl::Runtime was moved from and has no interpreter",
    ]
    missing = [e for e in expected if e not in p.stdout]
    if p.returncode or missing:
        print(f"FAIL: exit status {p.returncode}; missing from stdout: {missing}")
        return 1
    print("embed example passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
