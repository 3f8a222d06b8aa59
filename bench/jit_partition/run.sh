#!/bin/sh
# jax.jit of a sharded training step (bench/jit_partition/step.py) under pxl
# and under JAX, 8 CPU devices each: ms per step sharded over a (4, 2) mesh and
# on one device. Usage: bench/jit_partition/run.sh [path/to/pxl]
#   PXL_BENCH_VENV  the virtualenv for JAX (default: ~/.cache/pxl-bench-venv,
#                   created with pip on first use, as bench/jit/run.sh does)
set -e
here=$(dirname "$0")
pxl=${1:-$here/../../build/bin/pxl}
printf 'pxl: '
"$pxl" --devices 8 "$here/step.py"
. "$here/../jax_venv.sh"
printf 'JAX: '
XLA_FLAGS=--xla_force_host_platform_device_count=8 "$venv/bin/python" "$here/step.py" 2>/dev/null ||
  echo "(JAX unavailable)"
