#!/usr/bin/env bash
# bench/lsu/run_plain.sh: bench/lsu/run_batch.sh's variants (a tile's loads issued together)
# with the A tile stored transposed, SYNC / 4-way bank-conflicted as warptiling stores it, or
# as it came (-DPLAIN: float4s, no conflict), in one run: is the rolled loop's wait the
# conflicted stores'? Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_plain; mkdir -p $B
for r in 0 1; do for s in 16 32; do for b in 0 1; do for p in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  o="$([ $r = 1 ] && echo -DROLLED) $([ $b = 1 ] && echo -DBTILE) $([ $p = 1 ] && echo -DPLAIN)"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DHOIST -DBATCH=256 -DSYNC=$s $o \
    -o $B/l_${r}_${s}_${b}_$p lds_ffma.cu &
done; done; done; done; wait
for r in 0 1; do for s in 16 32; do for b in 0 1; do for p in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  $B/l_${r}_${s}_${b}_$p 256:0:1 256:0:4 256:110000:1 | sed "s/^/dot=1 /" >> $OUT/lsu_plain.txt
done; done; done; done
grep -c "check=ok" $OUT/lsu_plain.txt; grep -vc "check=ok" $OUT/lsu_plain.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s s%-3s b%s p%s smem%-6s w=%-2s waves=%s %8s\n", v["rolled"], v["sync"], v["btile"], v["plain"], v["smem"], v["warps_per_sm"], v["waves"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_plain.txt
