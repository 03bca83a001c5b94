#!/usr/bin/env bash
# One device run after the warp-path floor: llm.c's layernorm kernels 4 and 5 (never
# measured or used before) and kernel 3 at shapes not measured before, each over its
# block size, verified against kernel 1. carry: [".llmc"]. Results land in $OUT; commit
# them under bench/results/h200-layernorm-check.
set -u
. "$(dirname "$0")/gpu_setup.sh"
m() { k=$1; shift; python -m occupancy measure examples/llmc/tune.yaml --kernel "layernorm_forward_kernel$k" "$@" >> "$LOG" 2>&1
      echo "exit $? for $k $*" >> "$LOG"; }
for k in 4 5; do
  m $k --json -o "$OUT/ln$k-8-1024-768.json"
  m $k --set B=4 --set C=1600 --json -o "$OUT/ln$k-4-1024-1600.json"
done
m 3 --set B=16 --set C=1024 --json -o "$OUT/ln3-16-1024-1024.json"
m 3 --set B=2 --set C=4096 --json -o "$OUT/ln3-2-1024-4096.json"
grep -E "exit" "$LOG"
