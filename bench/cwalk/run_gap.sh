#!/bin/bash
# bench/cwalk/cwalk.cu at 9-11 resident blocks an SM (blocks of 64 and 128), the gap between
# round 3's 8 and 12 (bench/results/h200-cwalk-gap). Writes the rows and the device under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/cwalk" bench/cwalk/cwalk.cu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
"$out/cwalk" 64:9 64:10 64:11 128:9 128:10 128:11 > "$out/cwalk.txt"
rm -f "$out/cwalk"
grep -c "check=ok" "$out/cwalk.txt"; grep -vc "check=ok" "$out/cwalk.txt" || true
