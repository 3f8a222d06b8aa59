#!/bin/sh
# Eager operations on sharded arrays (bench/eager_sharded/cases.py) under pxl
# and under JAX, 8 CPU devices each. Usage: bench/eager_sharded/run.sh [path/to/pxl]
#   PXL_BENCH_VENV  the virtualenv for JAX (default: ~/.cache/pxl-bench-venv,
#                   created with pip on first use, as bench/jit/run.sh does)
set -e
here=$(dirname "$0")
pxl=${1:-$here/../../build/bin/pxl}
echo "pxl:"
"$pxl" --devices 8 "$here/cases.py"
. "$here/../jax_venv.sh"
echo "JAX:"
XLA_FLAGS=--xla_force_host_platform_device_count=8 "$venv/bin/python" "$here/cases.py" 2>/dev/null ||
  echo "(JAX unavailable)"
