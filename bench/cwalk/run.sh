#!/bin/bash
# Times bench/cwalk/cwalk.cu on the lent GPU (issue 18, docs/model.md item 16): three forms of
# a walked __constant__ table, tiles 1-8, tables of 150-1200 entries, blocks of 64-512 held
# to 2-32 resident blocks an SM. Writes the rows, the SASS it ran and the device under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/cwalk" bench/cwalk/cwalk.cu
cuobjdump -sass "$out/cwalk" > "$out/cwalk.sass"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv > "$out/device.txt"
"$out/cwalk" 64:2 64:4 64:8 64:12 64:16 64:24 64:32 128:2 128:4 128:8 128:12 128:16 \
  256:2 256:4 256:8 512:2 512:4 > "$out/cwalk.txt"
rm -f "$out/cwalk"
grep -c "check=ok" "$out/cwalk.txt"; grep -vc "check=ok" "$out/cwalk.txt" || true
