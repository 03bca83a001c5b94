#!/usr/bin/env bash
# bench/imc/run.sh: build and time imc_loop.cu over table sizes and tiles (H200); writes
# $OUT/imc_loop.txt (one line a point) and the SASS of two builds.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
git -C .. rev-parse --short HEAD >> $OUT/device.txt 2>/dev/null
for v in 64 128 256 512 1024 2048 4096; do for t in 1 2 4 8; do
  nvcc -O3 -arch=sm_90 -DVERTS=$v -DTILE=$t -o imc_${v}_$t imc_loop.cu || continue
  ./imc_${v}_$t 10000000 256 >> $OUT/imc_loop.txt
done; done
cuobjdump -sass imc_600_1 > /dev/null 2>&1
nvcc -O3 -arch=sm_90 -DVERTS=600 -DTILE=1 -o imc_600_1 imc_loop.cu && ./imc_600_1 10000000 256 >> $OUT/imc_loop.txt
cuobjdump -sass imc_600_1 | grep -E "LDC|ULDC" > $OUT/sass_600_1.txt
timeout 120 ncu --section WarpStateStats -c 1 ./imc_600_1 2000000 256 > $OUT/ncu_600_1.txt 2>&1
cat $OUT/imc_loop.txt | awk '{print $1, $3, $6, $7}'
grep -E "immediate constant|Warp Cycles Per Issued" $OUT/ncu_600_1.txt
