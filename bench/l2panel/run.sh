#!/usr/bin/env bash
# docs/model.md item 38 on the H200: examples/sgemm's kernel at 1, 2, 4 and 8 rounds of
# blocks (bench/l2panel/tune.yaml), one `measure` each (every output checked against A @ B).
# Usage (device machine, repository root): bash bench/l2panel/run.sh; results in $OUT.
set -u
. "$(dirname "$0")/../gpu_setup.sh"
m() { python -m occupancy measure bench/l2panel/tune.yaml "$@" >> "$LOG" 2>&1; echo "exit $? for $*" >> "$LOG"; }
for r in 1 2 4 8; do
  m --kernel one_block --set M=$((1408 * r)) --reps 20 --json -o "$OUT/one_block-$r.json"
  m --kernel three_blocks --set M=$((2112 * r)) --reps 20 --json -o "$OUT/three_blocks-$r.json"
done
python bench/l2panel/compare.py "$OUT" | tee "$OUT/compare.txt"
