#!/usr/bin/env bash
# bench/lsu/run_dot.sh: lds_ffma.cu 8x8 with SGEMM_CUDA warptiling's lanes (-DPATTERN) and
# a barrier every 16 or 32 steps, its k counted across the run or from 0 a tile (-DDOT:
# ptxas then keeps it in a uniform register, as in warptiling), with and without the tile
# load; rolled and unrolled by 4; 8 to 20 warps an SM. Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_dot; mkdir -p $B
for r in 0 1; do for d in 0 1; do for s in 16 32; do for f in 0 1; do
  o="$([ $r = 1 ] && echo -DROLLED) $([ $d = 1 ] && echo -DDOT) $([ $f = 1 ] && echo -DREFILL)"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DSYNC=$s $o -o $B/l_${r}_${d}_${s}_$f lds_ffma.cu &
done; done; done; done; wait
for r in 0 1; do for d in 0 1; do for s in 16 32; do for f in 0 1; do
  $B/l_${r}_${d}_${s}_$f 128:0 256:0 512:0 128:40000 128:70000 256:110000 | sed "s/^/dot=$d /" >> $OUT/lsu_dot.txt
done; done; done; done
grep -c "check=ok" $OUT/lsu_dot.txt; grep -vc "check=ok" $OUT/lsu_dot.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s d%s s%-3s f%s b%-4s w=%-2s %8s\n", v["rolled"], v["dot"], v["sync"], v["refill"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_dot.txt
