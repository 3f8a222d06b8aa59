#!/bin/sh
# Eager operations on sharded arrays (bench/eager_sharded/cases.py) under pxl
# and under JAX, 8 CPU devices each. Usage: bench/eager_sharded/run.sh [path/to/pxl]
here=$(dirname "$0")
exec "$here/../pxl_vs_jax.sh" "$here/cases.py" "$@"
