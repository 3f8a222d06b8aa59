#!/bin/sh
# pxl (--exec interp and --exec jit) vs numpy vs JAX (jax.jit on the CPU) on the
# cases of issue 4 that run today. Usage: bench/jit/run.sh [path/to/pxl]
# numpy: Debian's python3-numpy under /usr/bin/python3; JAX: /tmp/jaxenv (skipped if absent).
set -e
here=$(dirname "$0")
pxl=${1:-$here/../../build/bin/pxl}
for mode in interp jit; do
  "$pxl" --devices 1 --exec $mode "$here/cases.pxl" | sed "s/^/pxl-$mode /"
done
/usr/bin/python3 "$here/peers.py" numpy
if [ -x /tmp/jaxenv/bin/python ] && /tmp/jaxenv/bin/python -c 'import jax' 2>/dev/null; then
  /tmp/jaxenv/bin/python "$here/peers.py" jax
else
  echo "jax: /tmp/jaxenv/bin/python with jax not found, skipped"
fi
