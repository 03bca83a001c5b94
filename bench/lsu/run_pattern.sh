#!/usr/bin/env bash
# bench/lsu/run_pattern.sh: lds_ffma.cu 8x8 with each lane's own float4s or SGEMM_CUDA
# warptiling's shared ones (-DPATTERN), rolled and unrolled by 4, with no barrier, a barrier
# every 16 steps, and a tile load and a barrier every 16 steps; 8 to 20 warps an SM.
# Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_pattern; mkdir -p $B
V=("" "-DSYNC=16" "-DSYNC=16 -DREFILL")
for r in 0 1; do for p in 0 1; do for v in 0 1 2; do
  f="$([ $r = 1 ] && echo -DROLLED) $([ $p = 1 ] && echo -DPATTERN) ${V[$v]}"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 $f -o $B/l_${r}_${p}_$v lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for p in 0 1; do for v in 0 1 2; do
  $B/l_${r}_${p}_$v 128:0 256:0 512:0 128:40000 128:70000 256:110000 >> $OUT/lsu_pattern.txt
done; done; done
grep -c "check=ok" $OUT/lsu_pattern.txt; grep -vc "check=ok" $OUT/lsu_pattern.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s p%s s%-3s f%s b%-4s w=%-2s %8s\n", v["rolled"], v["pattern"], v["sync"], v["refill"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_pattern.txt
