#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (a few minutes): every golden program on the
# CUDA platform against the CPU results -- on as many CUDA devices as the CPU run
# uses (logical devices on GPU 0 when there are fewer GPUs), then on cuda:4,
# then the reduction/collective checks of checks/ -- and the GPU benchmarks
# (pxl vs jax.jit on the GPU when JAX is importable, vs cuBLAS called directly).
# Fails at once, saying why, without a usable GPU.
# Usage: tests/gpu/run.sh [path/to/pxl [PART...]]
#   PART: startup, goldens, cuda4, checks, bench (default: all five, in that order)
#   PYTHON=... picks the JAX python; JOBS=N programs at a time (default: every core)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pxl=${1:-$here/../../build/bin/pxl}
shift || true
parts=${*:-startup goldens cuda4 checks bench}
python=${PYTHON:-python3}
jobs=${JOBS:-$(nproc)}
if [ ! -x "$pxl" ]; then
  echo "run.sh: $pxl is not an executable pxl; build first (./tools/build.sh)" >&2
  exit 2
fi
pxl=$(cd "$(dirname "$pxl")" && pwd)/$(basename "$pxl") # parts run it from other folders
if ! probe=$("$pxl" --platform cuda -c 'print(device_count(), jax.devices())' 2>&1); then
  echo "run.sh: no usable GPU, nothing to test:" >&2
  echo "$probe" >&2
  exit 1
fi
echo "CUDA devices: $probe"
compare=(python3 "$here/compare.py" --pxl "$pxl" -j "$jobs")
status=0
startup() {
  # Where a program's time goes on the GPU (each golden program took ~3 s there,
  # a fraction of a second on the CPU): one process alone, 16 at once (the
  # golden runs' load), and --time-passes of two programs (driver start-up,
  # contexts, PTX compilation, the driver's PTX JIT at module load, cuBLAS).
  echo "== start-up: wall seconds of pxl -c pass, alone (5 runs) then 16 at once"
  local t0 t1 i
  for platform in cpu cuda; do
    t0=$(date +%s.%N)
    for i in 1 2 3 4 5; do "$pxl" --platform $platform -c pass || status=1; done
    t1=$(date +%s.%N)
    echo "$platform alone: $(awk "BEGIN { printf \"%.3f\", ($t1 - $t0) / 5 }") s a process"
    t0=$(date +%s.%N)
    for i in $(seq 16); do "$pxl" --platform $platform -c pass & done
    wait
    t1=$(date +%s.%N)
    echo "$platform 16 at once: $(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }") s for all"
    # the same 16 one after another in one `pxl --batch` (compare.py's way)
    t0=$(date +%s.%N)
    for i in $(seq 16); do printf '%s\t\t--platform\t%s\t-c\tpass\n' "$PWD" "$platform"; done |
      "$pxl" --batch >/dev/null || status=1
    t1=$(date +%s.%N)
    echo "$platform 16 in one --batch: $(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }") s for all"
  done
  local prog
  for prog in examples/seed_pmap.pxl spmd/collectives_1d.pxl; do
    echo "-- --time-passes $prog on cuda (its # ARGS, logical devices as goldens uses)"
    local args
    args=$(sed -n 's/^# ARGS://p' "$here/../programs/$prog" | head -1)
    local n
    n=$(echo "$args" | sed -n 's/.*--devices \([0-9]*\).*/\1/p')
    (cd "$here/../programs/$(dirname "$prog")" &&
      PXL_DEVICES=cuda:${n:-8} timeout 60 "$pxl" --platform cuda --time-passes \
        $(echo "$args" | sed 's/--devices [0-9]*//') "$(basename "$prog")" 2>&1 >/dev/null |
      sed -n '/time-passes/,$p') || status=1
  done
}
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
    # JAX as it runs by default (a caller's XLA_PYTHON_CLIENT_PREALLOCATE=false would slow it)
    timeout 60 env -u XLA_PYTHON_CLIENT_PREALLOCATE "$python" "$here/peers.py" jax ||
      echo "jax peer failed"
  else
    echo "jax: not importable with $python, skipped"
  fi
  timeout 30 python3 "$here/peers.py" cublas || echo "cublas peer failed"
  echo "(pxl and jax times: call + block_until_ready, inputs and results on the GPU)"
}
for part in $parts; do
  case $part in
  startup | goldens | cuda4 | checks | bench) "$part" ;;
  *)
    echo "run.sh: unknown part '$part' (startup, goldens, cuda4, checks, bench)" >&2
    exit 2
    ;;
  esac
done
exit $status
