#!/usr/bin/env bash
# Start-up time of pxl: `pxl -c 'print(1)'` and the REPL reading an empty stdin
# (`echo '' | pxl`). Uses hyperfine when installed, else a loop timed with date.
#   bench/startup.sh [path/to/pxl] [runs]
set -euo pipefail
pxl=${1:-"$(dirname "$0")/../build/bin/pxl"}
runs=${2:-50}
[ -x "$pxl" ] || { echo "startup.sh: $pxl is not built" >&2; exit 1; }

if command -v hyperfine >/dev/null; then
  hyperfine -N --warmup 5 --runs "$runs" "$pxl -c 'print(1)'"
  hyperfine --warmup 5 --runs "$runs" "echo '' | $pxl"
  exit 0
fi

# Mean wall time in ms of running "$@" $runs times (after 3 warm-up runs).
measure() {
  for _ in 1 2 3; do "$@" >/dev/null; done
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < runs; i++)); do "$@" >/dev/null; done
  end=$(date +%s%N)
  awk -v s="$start" -v e="$end" -v n="$runs" 'BEGIN { printf "%.1f", (e - s) / n / 1e6 }'
}
repl() { echo '' | "$pxl"; }
echo "pxl -c 'print(1)':  $(measure "$pxl" -c 'print(1)') ms (mean of $runs)"
echo "echo '' | pxl:      $(measure repl) ms (mean of $runs)"
