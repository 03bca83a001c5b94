#!/usr/bin/env bash
# bench/lsu/run_sync.sh: lds_ffma.cu with a barrier every SYNC k steps (0: none), rolled and
# unrolled by 4, at 8 to 20 warps an SM in blocks of 4, 8 and 16 warps: do warps that a
# barrier releases together wait for their shared loads together? Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_sync; mkdir -p $B
for r in 0 1; do for t in "8 8" "8 4"; do for s in 0 4 8 16 32 128; do set -- $t
  f="$([ $r = 1 ] && echo -DROLLED) $([ $s != 0 ] && echo -DSYNC=$s)"
  nvcc -O3 -arch=sm_90 -DTM=$1 -DTN=$2 $f -o $B/l_${r}_$1$2_$s lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for t in 88 84; do for s in 0 4 8 16 32 128; do
  $B/l_${r}_${t}_$s 128:0 256:0 512:0 128:40000 128:70000 256:110000 64:0 >> $OUT/lsu_sync.txt
done; done; done
grep -c "check=ok" $OUT/lsu_sync.txt; grep -vc "check=ok" $OUT/lsu_sync.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s s%-3s %sx%s b%-4s w=%-2s %8s\n", v["rolled"], v["sync"], v["tm"], v["tn"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_sync.txt
