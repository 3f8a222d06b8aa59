#!/bin/sh
# One training step of the dp_tp_mlp model on 8 CPU devices (bench/train/step.pxl):
# ms per call of the forward pass, of value_and_grad (inside and outside the
# shard_map) and of the whole step; steps/s; backward/forward; and the share of
# the step's device-thread time spent in collectives (--time-passes).
# Usage: bench/train/run.sh [path/to/pxl] [interp|jit]
set -e
here=$(dirname "$0")
pxl=${1:-$here/../../build/bin/pxl}
mode=${2:-jit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for case in forward vg_inside vg_outside train_step; do
  { echo "CASE = '$case'"; cat "$here/step.pxl"; } > "$tmp/$case.pxl"
  "$pxl" --devices 8 --exec "$mode" --time-passes "$tmp/$case.pxl" > "$tmp/$case.out" 2>&1
done
ms() { awk -v c="$1" '$1 == c { print $2 }' "$tmp/$1.out"; }
# Phase totals (ms) from the --time-passes report: "run: pmap/shard_map" is the
# caller's wall time of the SPMD runs, the collectives phase is summed over the
# 8 device threads.
phase() { grep -F "$2" "$tmp/$1.out" | head -1 | awk '{print $(NF-1)}'; }
fwd=$(ms forward); vgi=$(ms vg_inside); vgo=$(ms vg_outside); step=$(ms train_step)
echo "mode: $mode"
echo "forward (loss only)            $fwd ms"
echo "value_and_grad inside shard_map $vgi ms  backward/forward $(echo "$vgi $fwd" | awk '{printf "%.2f", ($1-$2)/$2}')"
echo "value_and_grad of the shard_map $vgo ms  backward/forward $(echo "$vgo $fwd" | awk '{printf "%.2f", ($1-$2)/$2}')"
echo "training step                   $step ms  $(echo "$step" | awk '{printf "%.1f", 1000/$1}') steps/s"
for case in forward train_step; do
  run=$(phase $case "run: pmap/shard_map")
  coll=$(phase $case "run: collectives")
  echo "$case: collectives $(echo "$coll $run" | awk '{printf "%.0f%%", 100*$1/(8*$2)}') of device-thread time ($coll ms over 8 threads / $run ms wall)"
done
