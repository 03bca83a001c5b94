#!/bin/bash
# bench/blockrow/blockrow.cu off its lines (C = 50,257), softmax 7's strided stores, U = 8:
# block sizes 64-1,024 at their own occupancy, and blocks of 128 held to 2-16 an SM by
# dynamic shared memory they never use; each timed, and counted under Nsight Compute.
# Writes under $OUT (bench/results/h200-blockrow/curve).
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/blockrow" bench/blockrow/blockrow.cu
points="64:0 128:0 256:0 512:0 1024:0 128:110000 128:55000 128:27000 128:13000 256:55000"
for p in $points; do
  "$out/blockrow" 50257 "${p%%:*}" 8 1 "${p##*:}"
  "$out/blockrow" 50257 "${p%%:*}" 8 0 "${p##*:}"
done > "$out/curve.txt"
for p in $points; do
  for strided in 1 0; do
    echo "== block=${p%%:*} smem=${p##*:} strided=$strided"
    ncu --launch-skip 2 --launch-count 1 --csv \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
      "$out/blockrow" 50257 "${p%%:*}" 8 "$strided" "${p##*:}" 2>/dev/null \
      | grep -E 'dram__|gpu__time' || true
  done
done > "$out/curve-ncu.txt"
rm -f "$out/blockrow"
grep -c "check=ok" "$out/curve.txt"; grep -vc "check=ok" "$out/curve.txt" || true
