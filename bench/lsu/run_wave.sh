#!/usr/bin/env bash
# bench/lsu/run_wave.sh: lds_ffma.cu 8x8 as close to SGEMM_CUDA warptiling's k loop as it
# goes (its lanes, a uniform k counter, an A tile load and a barrier every 16 or 32 steps,
# with and without its B tile), rolled and unrolled by 4, in one wave of blocks (as
# warptiling at 2048^3 runs: 256 blocks) and in four. Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_wave; mkdir -p $B
# (SYNC = 32 with the B tile needs 64 KB of static shared memory, over the 48 KB allowed: not built)
for r in 0 1; do for s in 16 32; do for b in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  o="$([ $r = 1 ] && echo -DROLLED) $([ $b = 1 ] && echo -DBTILE)"
  nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DSYNC=$s $o -o $B/l_${r}_${s}_$b lds_ffma.cu &
done; done; done; wait
for r in 0 1; do for s in 16 32; do for b in 0 1; do
  [ $s = 32 ] && [ $b = 1 ] && continue
  $B/l_${r}_${s}_$b 256:0:1 256:0:4 512:0:1 512:0:4 128:40000:1 128:40000:4 256:110000:1 256:110000:4 \
    | sed "s/^/dot=1 /" >> $OUT/lsu_wave.txt
done; done; done
grep -c "check=ok" $OUT/lsu_wave.txt; grep -vc "check=ok" $OUT/lsu_wave.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s s%-3s b%s b%-4s w=%-2s waves=%s %8s\n", v["rolled"], v["sync"], v["btile"], v["block"], v["warps_per_sm"], v["waves"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_wave.txt
