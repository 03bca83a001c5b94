#!/usr/bin/env bash
# One device run for issue 13: the transpose shared-memory experiment
# (bench/transpose_smem/tune.yaml) at N = 4096 (twice, for run-to-run spread), 5000 and
# 8192. Results land in $OUT; commit them under bench/results/h200-transpose-smem.
set -u
. "$(dirname "$0")/gpu_setup.sh"
m() { python -m occupancy measure bench/transpose_smem/tune.yaml --kernel transpose "$@" >> "$LOG" 2>&1
      echo "exit $? for $*" >> "$LOG"; }
m --set N=4096 --json -o "$OUT/smem-4096.json"
m --set N=4096 --json -o "$OUT/smem-4096-again.json"
m --set N=5000 --json -o "$OUT/smem-5000.json"
m --set N=8192 --json -o "$OUT/smem-8192.json"
grep -E "exit" "$LOG"
