#!/usr/bin/env bash
# bench/lsu/run_hoist.sh: bench/lsu/run_wave.sh's variants with the tile matrix's address
# read once (-DHOIST; before, each tile's loads waited for a global load of it, which
# warptiling does not do), then Nsight Compute's per-instruction samples of the variant
# with both tiles at 16 columns (bench/ncu/rolled.sh, WT=0). Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_hoist; mkdir -p $B
for r in 0 1; do for s in 16 32; do for b in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  o="$([ $r = 1 ] && echo -DROLLED) $([ $b = 1 ] && echo -DBTILE)"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DHOIST -DSYNC=$s $o -o $B/l_${r}_${s}_$b lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for s in 16 32; do for b in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  $B/l_${r}_${s}_$b 256:0:1 256:0:4 512:0:1 512:0:4 128:40000:1 256:110000:1 \
    | sed "s/^/dot=1 /" >> $OUT/lsu_hoist.txt
done; done; done
grep -c "check=ok" $OUT/lsu_hoist.txt; grep -vc "check=ok" $OUT/lsu_hoist.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s s%-3s b%s b%-4s w=%-2s waves=%s %8s\n", v["rolled"], v["sync"], v["btile"], v["block"], v["warps_per_sm"], v["waves"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_hoist.txt
cd ../.. && WT=0 LDS_FLAGS=-DHOIST bash bench/ncu/rolled.sh
