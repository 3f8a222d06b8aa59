# Sourced by the bench/*/run.sh scripts: sets $venv to the virtualenv that
# holds JAX (PXL_BENCH_VENV, default ~/.cache/pxl-bench-venv), creating it with
# pip on first use. When that fails the scripts leave their JAX column empty.
venv=${PXL_BENCH_VENV:-$HOME/.cache/pxl-bench-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import jax' 2>/dev/null; then
  echo "creating $venv with jax (pip)..." >&2
  python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q jax numpy >&2 || true
fi
