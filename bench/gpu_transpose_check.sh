#!/usr/bin/env bash
# One device run for issue 13, after the L1 term: the example transpose space measured
# again at 4096 and 5000 (records made before it: h200-tuning, h200-validate) and at
# sizes never measured (3072, 7000, 10000; 7000 and 10000 have rows misaligned to 128-B
# lines). Results land in $OUT; commit them under bench/results/h200-transpose-check.
set -u
. "$(dirname "$0")/gpu_setup.sh"
for n in 3072 4096 5000 7000 10000; do
  python -m occupancy measure examples/transpose/tune.yaml --kernel transpose --set N=$n \
    --json -o "$OUT/transpose-$n.json" >> "$LOG" 2>&1
  echo "exit $? for N=$n" >> "$LOG"
done
grep -E "exit" "$LOG"
