#!/bin/sh
# jax.jit of a sharded training step (bench/jit_partition/step.py) under pxl
# and under JAX, 8 CPU devices each: ms per step sharded over a (4, 2) mesh and
# on one device. Usage: bench/jit_partition/run.sh [path/to/pxl]
here=$(dirname "$0")
exec "$here/../pxl_vs_jax.sh" "$here/step.py" "$@"
