#!/bin/bash
# Times bench/pipemix/pipemix.cu on the lent GPU: every variant at 64 and 32 warps an SM.
# Writes the rows and the device under $OUT (the SASS is read again on the CPU by fit.py).
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/pipemix" bench/pipemix/pipemix.cu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv > "$out/device.txt"
n=$("$out/pipemix" -1 1 1)
for per_sm in 8 4; do
  for ((v = 0; v < n; v++)); do
    "$out/pipemix" "$v" 2048 "$per_sm"
  done
done > "$out/pipemix.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$out/device.txt"
rm -f "$out/pipemix"
wc -l < "$out/pipemix.txt"
