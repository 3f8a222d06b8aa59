#!/bin/sh
# The JIT benchmark of issue 4, in one run: every case of cases.pxl with pxl
# (--exec jit), with JAX (jax.jit / jax.pmap on the CPU backend, installed with
# pip into a virtualenv this script creates) and, where numpy can express it,
# with numpy; plus a C STREAM triad for the memory-bandwidth ceiling. Prints
# one table with the ratios.
#   usage: bench/jit/run.sh [path/to/pxl]
#   PXL_BENCH_VENV  the virtualenv for JAX (default: ~/.cache/pxl-bench-venv);
#                   if it cannot be created, the JAX column is left empty.
set -e
here=$(cd "$(dirname "$0")" && pwd)
pxl=${1:-$here/../../build/bin/pxl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

with_mode() { { echo "MODE = '$1'"; cat "$here/cases.pxl"; } > "$tmp/$1.py"; }
with_mode main
with_mode mesh

# pxl: no disk cache, so first calls really compile.
PXL_CACHE_DIR=off "$pxl" --devices 8 "$tmp/main.py" | sed 's/^/pxl /' > "$tmp/results"
PXL_CACHE_DIR=off "$pxl" --devices 64 "$tmp/mesh.py" | sed 's/^/pxl /' >> "$tmp/results"

. "$here/../jax_venv.sh"
if "$venv/bin/python" -c 'import jax' 2>/dev/null; then
  XLA_FLAGS=--xla_force_host_platform_device_count=8 "$venv/bin/python" "$tmp/main.py" \
    | sed 's/^/jax /' >> "$tmp/results"
  XLA_FLAGS=--xla_force_host_platform_device_count=64 "$venv/bin/python" "$tmp/mesh.py" \
    | sed 's/^/jax /' >> "$tmp/results"
  py=$venv/bin/python
else
  echo "jax: not available, its column stays empty" >&2
  py=python3
fi
"$py" "$here/numpy_cases.py" | sed 's/^/numpy /' >> "$tmp/results" || true

if cc -O3 -march=native -fopenmp "$here/stream.c" -o "$tmp/stream" 2>/dev/null; then
  "$tmp/stream" | sed 's/^/c /' >> "$tmp/results"
fi
python3 "$here/table.py" < "$tmp/results"
