#!/usr/bin/env bash
# bench/imc/run2.sh: imc_loop.cu with the loop kept rolled (-DROLLED), over table sizes and
# tiles, plus the ncu stall breakdown of one point; writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
for v in 64 128 256 512 600 1024 2048 4096; do for t in 1 2 4 8; do
  nvcc -O3 -arch=sm_90 -DROLLED -DVERTS=$v -DTILE=$t -o r_${v}_$t imc_loop.cu || continue
  ./r_${v}_$t 10000000 256 >> $OUT/imc_rolled.txt
done; done
for b in 64 128 512; do ./r_600_1 10000000 $b >> $OUT/imc_rolled.txt; done
cuobjdump -sass r_600_1 | grep -E "LDC|ULDC|BRA" > $OUT/sass_rolled_600_1.txt
timeout 120 ncu --section WarpStateStats -c 1 ./r_600_1 2000000 256 > $OUT/ncu_rolled_600_1.txt 2>&1
awk '{print $1, $2, $4, $5, $7, $8, $9}' $OUT/imc_rolled.txt
grep -E "ULDC|LDC" $OUT/sass_rolled_600_1.txt | grep "0x3" | head -5
grep -E "stall type|Warp Cycles Per Issued" $OUT/ncu_rolled_600_1.txt
