#!/bin/bash
# Times bench/pipes/pipes.cu on the lent GPU: each instruction kind at 64 and 32 warps an SM,
# and the SASS it ran (the loop's instruction counts come from it). Writes under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/pipes" bench/pipes/pipes.cu
cuobjdump -sass "$out/pipes" > "$out/pipes.sass"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv > "$out/device.txt"
for per_sm in 8 4; do
  for kind in 0 1 2 3 4 5 6 7 8; do
    "$out/pipes" "$kind" 4096 "$per_sm"
  done
done | tee "$out/pipes.txt"
rm -f "$out/pipes"
