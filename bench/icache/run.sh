#!/usr/bin/env bash
# bench/icache/run.sh: does the size of an unrolled loop cost time? unroll.cu's k loop (the
# inner step of a register-blocked SGEMM) unrolled 4 to 64 times, so its SASS body grows
# from ~3-7 KB to ~20-73 KB with the same work per step; 8x8, 8x4 and 4x4 outer products, at
# 1 to ~16 warps per scheduler. Writes under $OUT: device.txt, sass.txt (instructions and
# registers of each build's kernel) and icache.txt (one row a run).
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/icache; mkdir -p $B
for u in 4 8 16 32 64; do for t in "8 8" "8 4" "4 4"; do set -- $t
  nvcc -O3 -arch=sm_90 -DTM=$1 -DTN=$2 -DUNROLL=$u -Xptxas -v -o $B/u_${u}_$1$2 unroll.cu \
    > $B/u_${u}_$1$2.log 2>&1 &
done; done; wait
for u in 4 8 16 32 64; do for t in 88 84 44; do
  echo "unroll=$u shape=$t instructions=$(cuobjdump -sass $B/u_${u}_$t | grep -cE '^\s+/\*[0-9a-f]{4,}\*/')" \
    "$(grep -o 'Used [0-9]* registers' $B/u_${u}_$t.log) $(grep -o '[0-9]* bytes spill stores' $B/u_${u}_$t.log)" >> $OUT/sass.txt
  $B/u_${u}_$t 32:0 64:0 128:0 256:0 128:20000 128:40000 128:70000 128:110000 \
    256:40000 256:110000 >> $OUT/icache.txt
done; done
cat $OUT/sass.txt
grep -c "check=ok" $OUT/icache.txt; grep -vc "check=ok" $OUT/icache.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "u%-3s %sx%s b%-4s w=%-2s %8s\n", v["unroll"], v["tm"], v["tn"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"]}' $OUT/icache.txt
