#!/bin/bash
# bench/stencil/stencil.cu's copies on the lent GPU, every shape: through the 2-D indexing
# (MODE 1), through addresses no shape changes (MODE 4: block b copies elements b x threads
# on), and through a 32-wide tile whatever the shape (MODE 5). Does the shape itself cost, or
# the addresses it gives the block? Writes under $OUT.
set -euo pipefail
out=${OUT:?set OUT}
nvcc -O3 -arch=sm_90 -o "$out/stencil" bench/stencil/stencil.cu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
for n in 12288 8192; do
  for mode in 1 4 5; do
    "$out/stencil" "$n" "$mode" 0
  done
done > "$out/stencil-addr.txt"
rm -f "$out/stencil"
grep -c "check=ok" "$out/stencil-addr.txt"; grep -vc "check=ok" "$out/stencil-addr.txt" || true
