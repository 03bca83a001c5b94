#!/usr/bin/env bash
# bench/imc/run_uldc.sh: uldc_walk.cu over table sizes (1-64 KB), tiles and block sizes,
# plus Nsight Compute's immediate-constant-cache counters on three points; writes under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/uldc; mkdir -p $B
for w in 256 512 1024 2048 4096 8192 16384; do for t in 1 2 4 8; do echo "$w $t"; done; done |
  xargs -P 16 -n 2 sh -c 'nvcc -O3 -arch=sm_90 -DWORDS=$0 -DTILE=$1 -o '$B'/u_$0_$1 uldc_walk.cu'
for w in 256 512 1024 2048 4096 8192 16384; do for t in 1 2 4 8; do
  $B/u_${w}_$t 1048576 64 128 256 512 1024 >> $OUT/uldc.txt
done; done
cuobjdump -sass $B/u_4096_1 | grep -E "LDC|BRA" > $OUT/sass_4096_1.txt
for p in "4096 1 256" "4096 4 256" "1024 1 256" "16384 1 256"; do set -- $p
  echo "== words=$1 tile=$2 block=$3" >> $OUT/ncu.txt
  timeout 100 ncu --section WarpStateStats --metrics idc__requests.sum,idc__requests_lookup_hit.sum,idc__requests_lookup_miss.sum \
    -c 1 $B/u_$1_$2 262144 $3 >> $OUT/ncu.txt 2>&1
done
grep -c "check=ok" $OUT/uldc.txt; grep -c WRONG $OUT/uldc.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} print v["bytes"], v["tile"], v["block"], v["warps_per_sm"], v["median_ms"], v["ns_per_warp_read_per_sm"], v["check"]}' $OUT/uldc.txt | column -t | head -150
grep -E "^==|idc__|Stall Imc|imc_miss|Warp Cycles Per Issued" $OUT/ncu.txt
