#!/bin/bash
# Does a broadcast shared load (one word a warp, as a GEMM tile row's) cost the issue side
# what a word-a-lane load costs? (issue 18, docs/model.md item 37.) pipemix.cu's variants
# 12 (64 FFMA), 72 (64 FFMA, 8 fed by an LDS) and 73 (32 LDS), built as they are and with
# -DBROADCAST, at 1, 2 and 4 blocks of 8 warps an SM. Writes $OUT/broadcast.txt and
# $OUT/device.txt.
set -euo pipefail
out=${OUT:?set OUT}
b=$(mktemp -d)
nvcc -O3 -arch=sm_90 -o "$b/lane" bench/pipemix/pipemix.cu &
nvcc -O3 -arch=sm_90 -DBROADCAST -o "$b/bcast" bench/pipemix/pipemix.cu &
wait
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv > "$out/device.txt"
for kind in lane bcast; do
  for v in 12 72 73; do
    for per_sm in 1 2 4; do
      echo "kind=$kind $("$b/$kind" "$v" 8192 "$per_sm")"
    done
  done
done > "$out/broadcast.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$out/device.txt"
cat "$out/broadcast.txt"
