#!/bin/bash
# bench/stencil/stencil.cu's copies on the lent GPU, every shape (the half-warp-wide ones
# too): floats (MODE 1), float2s (MODE 6) and float4s (MODE 7) through the 2-D indexing, and
# a BX x 4 BY tile of 4 loads a thread (MODE 8), at n = 12288 and 8192. Is the cost of a
# short run of each row the bytes a block reads of it, and does it hold with 4 loads in
# flight a thread? (docs/model.md item 51). Writes under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/stencil" bench/stencil/stencil.cu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
git rev-parse HEAD > "$out/commit.txt" 2>/dev/null || true
for n in 12288 8192; do
  for mode in 1 6 7 8; do
    "$out/stencil" "$n" "$mode" 0
  done
done > "$out/rowrun.txt"
rm -f "$out/stencil"
grep -c "check=ok" "$out/rowrun.txt"; grep -vc "check=ok" "$out/rowrun.txt" || true
