#!/bin/bash
# Times bench/stencil/stencil.cu on the lent GPU at n = 12288 and 8192 (every shape, the four
# access modes, with and without the block's atomic norm), then counts the L1's global-load
# requests, sectors and misses, L2's reads and DRAM's bytes of six shapes under Nsight
# Compute. Writes under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/stencil" bench/stencil/stencil.cu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
for n in 12288 8192; do
  for mode in 0 1 2 3; do
    for norm in 0 1; do
      "$out/stencil" "$n" "$mode" "$norm"
    done
  done
done > "$out/stencil.txt"
m=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
m=$m,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_read.sum
m=$m,dram__bytes_read.sum,l1tex__data_pipe_lsu_wavefronts.sum,sm__cycles_elapsed.avg,gpu__time_duration.sum
m=$m,l1tex__m_xbar2l1tex_read_sectors.sum,smsp__inst_executed.sum
m=$m,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
m=$m,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
for mode in 0 1; do
  for s in "32 16" "64 8" "128 4" "256 2" "32 32" "256 4"; do
    echo "== n=12288 mode=$mode norm=0 shape=$s"
    # shellcheck disable=SC2086
    ncu --launch-skip 3 --launch-count 1 --csv --metrics "$m" "$out/stencil" 12288 "$mode" 0 $s \
      2>/dev/null | grep -E '"(l1tex|lts|dram|sm|gpu|smsp)__' | awk -F'","' '{print $(NF-2), $NF}' || true
  done
done > "$out/ncu.txt"
rm -f "$out/stencil"
grep -c "check=ok" "$out/stencil.txt"; grep -vc "check=ok" "$out/stencil.txt" || true
