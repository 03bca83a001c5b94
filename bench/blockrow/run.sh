#!/bin/bash
# Times bench/blockrow/blockrow.cu on the lent GPU (a block per row, copied; rows on their
# 128-B lines, C = 50,176, and off them, C = 50,257), then counts DRAM bytes of eight of the
# points under Nsight Compute. Writes under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/blockrow" bench/blockrow/blockrow.cu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
for c in 50176 50257; do
  for block in 32 128 512 1024; do
    for u in 1 8; do
      for strided in 0 1; do
        "$out/blockrow" "$c" "$block" "$u" "$strided"
      done
    done
  done
done > "$out/blockrow.txt"
for c in 50176 50257; do
  for block in 128 1024; do
    for strided in 0 1; do
      echo "== C=$c block=$block u=8 strided=$strided"
      ncu --launch-skip 2 --launch-count 1 --csv \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
        "$out/blockrow" "$c" "$block" 8 "$strided" 2>/dev/null | grep -E 'dram__|gpu__time' || true
    done
  done
done > "$out/ncu.txt"
rm -f "$out/blockrow"
grep -c "check=ok" "$out/blockrow.txt"; grep -vc "check=ok" "$out/blockrow.txt" || true
