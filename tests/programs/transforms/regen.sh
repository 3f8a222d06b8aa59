#!/bin/sh
# Regenerates the .out files of this directory with real JAX. nn/optim are
# not JAX modules: the shims below map them to jax.nn and to optax.
set -e
cd "$(dirname "$0")"
shim=$(mktemp -d)
cat > "$shim/nn.py" <<'PY'
from jax.nn import *  # noqa: F401,F403
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    import jax.numpy as jnp
    y = (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + eps)
    return y * (1 if gamma is None else gamma) + (0 if beta is None else beta)
PY
cat > "$shim/optim.py" <<'PY'
import optax
sgd = optax.sgd
def momentum(lr, beta=0.9):
    return optax.sgd(lr, momentum=beta)
adam = optax.adam
apply_updates = optax.apply_updates
PY
for f in *.pxl; do
  case "$f" in _*) continue ;; esac
  # Error programs (a .code file) keep their pxl-written expectations.
  [ -f "${f%.pxl}.code" ] && continue
  XLA_FLAGS=--xla_force_host_platform_device_count=8 PYTHONPATH="$shim" \
    ${PYTHON:-/tmp/jaxenv/bin/python} "$f" > "${f%.pxl}.out"
done
rm -rf "$shim"
