#!/usr/bin/env bash
# bench/imc/run_uldc2.sh: uldc_walk.cu, second round. (1) Table sizes from 64 B to 16 KB, each
# walked so that every thread reads 4096 entries, at blocks of 64-512. (2) The same kernel
# with a block held to 1-32 resident blocks per SM by dynamic shared memory it reserves and
# never uses. Writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/uldc2; mkdir -p $B
for w in 16 32 64 128 256 512 1024 4096; do for t in 1 4; do echo "$w $t"; done; done |
  xargs -P 16 -n 2 sh -c 'nvcc -O3 -arch=sm_90 -DWORDS=$0 -DPASSES=$((4096 / $0)) -DTILE=$1 -o '$B'/u_$0_$1 uldc_walk.cu'
for w in 16 32 64 128 256 512 1024 4096; do
  $B/u_${w}_1 1048576 64 128 256 512 >> $OUT/sizes.txt
done
# blocks per SM from 32 down to 1 (H200: 228 KB of shared memory an SM, 1 KB reserved a block)
for w in 256 1024 4096; do for t in 1 4; do
  $B/u_${w}_$t 1048576 64 64:8600 64:13000 64:28000 64:57000 64:115000 64:116000 \
    128 128:28000 128:57000 128:115000 128:116000 256 256:57000 256:115000 256:116000 >> $OUT/streams.txt
done; done
cat $OUT/sizes.txt $OUT/streams.txt | grep -c "check=ok"; cat $OUT/sizes.txt $OUT/streams.txt | grep -vc "check=ok"
for f in sizes streams; do echo "== $f"; awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "%6s t%s b%-4s S=%-2s w=%-2s %7s\n", v["bytes"], v["tile"], v["block"], v["blocks_per_sm"], v["warps_per_sm"], v["ns_per_warp_read_per_sm"]}' $OUT/$f.txt; done
