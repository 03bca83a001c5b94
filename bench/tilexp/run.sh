#!/usr/bin/env bash
# docs/model.md item 40 on the H200: bench/tilexp/tune.yaml's two entries over the same
# 318 points, `load` (every output checked against A @ B) and `noload` (the same loop with
# no global load; nothing to check), M = N = K = 4096; or the entries named (`load1d
# noload1d`: the 1-D loop's pair).
# Usage (device machine, repository root): bash bench/tilexp/run.sh [ENTRY ...]; results in $OUT.
set -u
. "$(dirname "$0")/../gpu_setup.sh"
for k in ${@:-load noload}; do
  python -m occupancy measure bench/tilexp/tune.yaml --kernel $k --max-compiles 1000 --reps 10 \
    --json -o "$OUT/$k.json" > /dev/null 2>> "$LOG"
  echo "exit $? for $k" >> "$LOG"
done
nvidia-smi -q -d CLOCK > "$OUT/device.txt" 2>&1
