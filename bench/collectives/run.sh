#!/usr/bin/env bash
# Collectives benchmark: pxl's psum / all_gather / all_to_all on 2, 4, 8 CPU
# devices beside Open MPI (same sizes and rank counts), JAX's CPU backend (if
# /tmp/jaxenv/bin/python or $JAX_PYTHON has jax) and the memory-bandwidth
# bound from a STREAM triad. Prints one table.
#
#   bench/collectives/run.sh [build-dir]        (default: build)
#   DEVICES="2 4 8" SIZES="1024 67108864" bench/collectives/run.sh
#
# Open MPI is used when mpicc/mpirun exist; as root with apt-get the script
# installs openmpi-bin and libopenmpi-dev first (CI never needs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
DEVICES=${DEVICES:-"2 4 8"}
SIZES=${SIZES:-"1024 67108864"}
JAX_PYTHON=${JAX_PYTHON:-/tmp/jaxenv/bin/python}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

ninja -C "$build" bench_collectives >&2
bench=$build/bin/bench_collectives
csv() { echo "$1" | tr ' ' ','; }

echo "# STREAM triad" >&2
"$bench" --stream | tee -a "$out/results" >&2
echo "# pxl" >&2
"$bench" --devices "$(csv "$DEVICES")" --sizes "$(csv "$SIZES")" | tee -a "$out/results" >&2

if ! command -v mpicc >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "# installing Open MPI for the comparison" >&2
  apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null 2>&1 || true
fi
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 -o "$out/mpi_peer" "$here/mpi_peer.c"
  mpi_flags=(--oversubscribe --bind-to none)
  [ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
  for n in $DEVICES; do
    echo "# Open MPI, $n ranks" >&2
    OMPI_MCA_btl_vader_single_copy_mechanism=none \
      mpirun "${mpi_flags[@]}" -np "$n" "$out/mpi_peer" $SIZES | tee -a "$out/results" >&2 || true
  done
else
  echo "# Open MPI not found: MPI columns empty" >&2
fi

if [ -x "$JAX_PYTHON" ] && "$JAX_PYTHON" -c 'import jax' 2>/dev/null; then
  for n in $DEVICES; do
    echo "# JAX, $n devices" >&2
    XLA_FLAGS=--xla_force_host_platform_device_count=$n JAX_PLATFORMS=cpu \
      "$JAX_PYTHON" "$here/jax_peer.py" $SIZES | tee -a "$out/results" >&2 || true
  done
else
  echo "# JAX not found ($JAX_PYTHON): JAX columns empty" >&2
fi

python3 - "$out/results" <<'PY'
import sys
rows, stream = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if f[:2] == ["stream", "triad"]:
        stream = float(f[4])
    elif len(f) == 6 and f[0] in ("pxl", "mpi", "jax"):
        rows.setdefault((f[1], int(f[2]), int(f[3])), {})[f[0]] = (float(f[4]), float(f[5]))
order = {"psum": 0, "all_gather": 1, "all_to_all": 2}
def size(b): return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
def cell(v, fmt): return fmt.format(v) if v is not None else "–"
print(f"STREAM triad: {stream:.1f} GB/s" if stream else "STREAM triad: not measured")
print("GB/s = bytes per device / time per call. bound = STREAM / traffic per device byte:")
print("psum and all_to_all 2N (N reads + N writes), all_gather N(N+1).\n")
print("| op | N | size | pxl µs | pxl GB/s | MPI µs | MPI GB/s | JAX µs | JAX GB/s | bound GB/s | pxl/MPI | pxl/bound |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for (op, n, b) in sorted(rows, key=lambda k: (order.get(k[0], 9), k[2], k[1])):
    r = rows[(op, n, b)]
    p, m, j = r.get("pxl"), r.get("mpi"), r.get("jax")
    bound = None
    if stream and b >= 1 << 20:
        bound = stream / (n * (n + 1) if op == "all_gather" else 2 * n)
    # Small messages: latency ratio (MPI time / pxl time); large: bandwidth ratio.
    ratio = (m[0] / p[0]) if (p and m) else None
    print(f"| {op} | {n} | {size(b)} | {cell(p and p[0], '{:.1f}')} | {cell(p and p[1], '{:.2f}')} "
          f"| {cell(m and m[0], '{:.1f}')} | {cell(m and m[1], '{:.2f}')} "
          f"| {cell(j and j[0], '{:.1f}')} | {cell(j and j[1], '{:.2f}')} "
          f"| {cell(bound, '{:.2f}')} | {cell(ratio, '{:.1f}×')} "
          f"| {cell(p[1] / bound if (p and bound) else None, '{:.0%}')} |")
PY
