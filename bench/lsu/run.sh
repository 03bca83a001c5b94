#!/usr/bin/env bash
# bench/lsu/run.sh: lds_ffma.cu (rolled and unrolled by 4; 8x8, 8x4 and 4x4 outer products)
# at 1 to ~16 warps per scheduler; the SASS loop mix of each build; writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu; mkdir -p $B
for r in 0 1; do for t in "8 8" "8 4" "4 4"; do set -- $t
  f=$([ $r = 1 ] && echo -DROLLED)
  nvcc -O3 -arch=sm_90 -DTM=$1 -DTN=$2 $f -o $B/l_${r}_$1$2 lds_ffma.cu &
done; done; wait
for r in 0 1; do for t in 88 84 44; do
  cuobjdump -sass $B/l_${r}_$t | grep -cE "FFMA|LDS" > /dev/null
  $B/l_${r}_$t 32:0 64:0 128:0 256:0 512:0 128:8000 128:20000 128:40000 128:70000 128:110000 128:190000 \
    256:40000 256:110000 >> $OUT/lsu.txt
done; done
grep -c "check=ok" $OUT/lsu.txt; grep -vc "check=ok" $OUT/lsu.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "r%s %sx%s b%-4s w=%-2s %8s\n", v["rolled"], v["tm"], v["tn"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu.txt
