#!/usr/bin/env bash
# bench/lsu/run_refill.sh: lds_ffma.cu with a tile load and a barrier every SYNC k steps
# (-DREFILL; SGEMM_CUDA warptiling's A-tile load: float4s from global, transposed scalar
# stores), rolled and unrolled by 4, 8x8 and 8x4, at 8 to 20 warps an SM. Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_refill; mkdir -p $B
for r in 0 1; do for t in "8 8" "8 4"; do for s in 8 16 32; do set -- $t
  f="$([ $r = 1 ] && echo -DROLLED) -DSYNC=$s -DREFILL"
  nvcc -O3 -arch=sm_90 -DTM=$1 -DTN=$2 $f -o $B/l_${r}_$1$2_$s lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for t in 88 84; do for s in 8 16 32; do
  $B/l_${r}_${t}_$s 128:0 256:0 512:0 128:40000 128:70000 256:110000 64:0 >> $OUT/lsu_refill.txt
done; done; done
grep -c "check=ok" $OUT/lsu_refill.txt; grep -vc "check=ok" $OUT/lsu_refill.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s s%-3s %sx%s b%-4s w=%-2s %8s\n", v["rolled"], v["sync"], v["tm"], v["tn"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_refill.txt
