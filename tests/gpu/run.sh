#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (a few minutes): every golden program on the
# CUDA platform against the CPU results -- on as many CUDA devices as the CPU run
# uses (logical devices on GPU 0 when there are fewer GPUs), then on cuda:4,
# then the reduction/collective checks of checks/ -- and the GPU benchmarks
# (pxl vs jax.jit on the GPU when JAX is importable, vs cuBLAS called directly).
# Fails at once, saying why, without a usable GPU.
# Usage: tests/gpu/run.sh [path/to/pxl [PART...]]
#   PART: goldens, cuda4, checks, bench (default: all four, in that order)
#   PYTHON=... picks the JAX python; JOBS=N programs at a time (default: every core)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pxl=${1:-$here/../../build/bin/pxl}
shift || true
parts=${*:-goldens cuda4 checks bench}
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
if [ ! -x "$pxl" ]; then
  echo "run.sh: $pxl is not an executable pxl; build first (./tools/build.sh)" >&2
  exit 2
fi
if ! probe=$("$pxl" --platform cuda -c 'print(device_count(), jax.devices())' 2>&1); then
  echo "run.sh: no usable GPU, nothing to test:" >&2
  echo "$probe" >&2
  exit 1
fi
echo "CUDA devices: $probe"
compare=(python3 "$here/compare.py" --pxl "$pxl" -j "$jobs")
status=0
goldens() {
  echo "== golden programs, each on its own device count"
  timeout 240 "${compare[@]}" --mode own || status=1
}
cuda4() {
  echo "== golden programs on cuda:4 vs 4 CPU devices"
  timeout 200 "${compare[@]}" --mode cuda4 || status=1
}
checks() {
  # Reductions (warps/blocks/split) and device-side collectives among logical
  # devices: bitwise the CPU's where SPEC.md says the order is the CPU's, within
  # a tolerance for long float sums (YNNPACK order on the CPU) and block-per-row
  # reductions; collectives2.pxl goes through NCCL
  # when there are two GPUs or more ("goldens" then runs mesh programs on it too).
  echo "== GPU reductions and logical-device collectives vs 4 CPU devices (bitwise)"
  timeout 60 "${compare[@]}" --mode cuda4 --rtol 0 --atol 0 "$here/checks/reductions_exact.pxl" ||
    status=1
  echo "== long float sums and block-per-row reductions vs 4 CPU devices (rtol 1e-4, atol 0.02)"
  timeout 60 "${compare[@]}" --mode cuda4 --atol 0.02 "$here/checks/reductions_block.pxl" || status=1
  echo "== collectives over 2 devices vs the CPU mesh (NCCL with 2+ GPUs, else logical devices)"
  timeout 60 "${compare[@]}" --mode own "$here/checks/collectives2.pxl" || status=1
}
bench() {
  echo "== benchmarks (ms per call)"
  timeout 60 "$pxl" --platform cuda --devices 1 "$here/bench.pxl" | sed 's/^/pxl-cuda /' ||
    status=1
  if "$python" -c 'import jax' 2>/dev/null; then
    timeout 60 "$python" "$here/peers.py" jax || echo "jax peer failed"
  else
    echo "jax: not importable with $python, skipped"
  fi
  timeout 30 python3 "$here/peers.py" cublas || echo "cublas peer failed"
  echo "(pxl and jax times: call + block_until_ready, inputs and results on the GPU)"
}
for part in $parts; do
  case $part in
  goldens | cuda4 | checks | bench) "$part" ;;
  *)
    echo "run.sh: unknown part '$part' (goldens, cuda4, checks, bench)" >&2
    exit 2
    ;;
  esac
done
exit $status
