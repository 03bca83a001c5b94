#!/usr/bin/env bash
# bench/lsu/run_half.sh: bench/lsu/run_batch.sh's variants (a tile's loads issued together)
# with the whole A tile or half its rows (-DHALF: half the bytes a tile's loads return at
# once), in one run: does the rolled loop's loss follow the bytes that return together?
# Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_half; mkdir -p $B
for r in 0 1; do for b in 0 1; do for h in 0 1; do
  o="$([ $r = 1 ] && echo -DROLLED) $([ $b = 1 ] && echo -DBTILE) $([ $h = 1 ] && echo -DHALF)"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DHOIST -DBATCH=256 -DSYNC=16 $o \
    -o $B/l_${r}_${b}_$h lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for b in 0 1; do for h in 0 1; do
  $B/l_${r}_${b}_$h 256:0:1 256:0:4 256:110000:1 | sed "s/^/dot=1 /" >> $OUT/lsu_half.txt
done; done; done
grep -c "check=ok" $OUT/lsu_half.txt; grep -vc "check=ok" $OUT/lsu_half.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s b%s h%s smem%-6s w=%-2s waves=%s %8s\n", v["rolled"], v["btile"], v["half"], v["smem"], v["warps_per_sm"], v["waves"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_half.txt
