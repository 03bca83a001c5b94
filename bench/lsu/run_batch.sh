#!/usr/bin/env bash
# bench/lsu/run_batch.sh: bench/lsu/run_hoist.sh's variants with each tile's global loads
# issued together before its stores (-DBATCH=256: blocks of 256 threads only), as
# warptiling's are (before, a loop of load and stores: up to four round trips a tile),
# then Nsight Compute's per-instruction samples of the variant with both tiles at 16
# columns (bench/ncu/rolled.sh, WT=0). Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_batch; mkdir -p $B
for r in 0 1; do for s in 16 32; do for b in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  o="$([ $r = 1 ] && echo -DROLLED) $([ $b = 1 ] && echo -DBTILE)"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DHOIST -DBATCH=256 -DSYNC=$s $o \
    -o $B/l_${r}_${s}_$b lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for s in 16 32; do for b in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  $B/l_${r}_${s}_$b 256:0:1 256:0:4 256:110000:1 | sed "s/^/dot=1 /" >> $OUT/lsu_batch.txt
done; done; done
grep -c "check=ok" $OUT/lsu_batch.txt; grep -vc "check=ok" $OUT/lsu_batch.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s s%-3s b%s b%-4s w=%-2s waves=%s %8s\n", v["rolled"], v["sync"], v["btile"], v["block"], v["warps_per_sm"], v["waves"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_batch.txt
cd ../.. && WT=0 LDS_FLAGS="-DHOIST -DBATCH=256" bash bench/ncu/rolled.sh
