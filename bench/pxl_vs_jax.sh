#!/bin/sh
# Runs a benchmark script written in the subset pxl and JAX share under both,
# 8 CPU devices each, and prints what each prints.
#   usage: bench/pxl_vs_jax.sh path/to/script.py [path/to/pxl]
#   PXL_BENCH_VENV  the virtualenv for JAX (bench/jax_venv.sh creates it on first use)
set -e
here=$(dirname "$0")
script=$1
pxl=${2:-$here/../build/bin/pxl}
echo "pxl:"
"$pxl" --devices 8 "$script"
. "$here/jax_venv.sh"
echo "JAX:"
XLA_FLAGS=--xla_force_host_platform_device_count=8 "$venv/bin/python" "$script" 2>/dev/null ||
  echo "(JAX unavailable)"
