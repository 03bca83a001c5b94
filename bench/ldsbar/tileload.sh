#!/usr/bin/env bash
# bench/ldsbar/tileload.sh: what a tile loop's global tile loads cost (issue 18, docs/model.md
# item 39). lds_bar.cu with SYNC=1 (barriers alone) against SYNC=3 (each block reloads its
# tiles from its own place in a buffer, a new place every tile: L2-resident at nt=512,
# from DRAM at nt=16384), at 1 block an SM (nothing hides the loads), 2 and 4. Writes
# $OUT/tileload.txt and $OUT/device-tileload.txt. Warps a block are fixed at build time
# (-DWARPS), so each warp issues all its loads of a tile before its first store.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/device-tileload.txt"
B=$(mktemp -d)
builds=()
for s in "8 8 0" "16 4 1"; do set -- $s
  for w in 4 8 16; do for sy in 1 3; do for r in 0 1; do
    tag=t$1x$2_b$3_w${w}_s${sy}_r${r}
    f="-DTM=$1 -DTN=$2 -DSYNC=$sy -DWARPS=$w"
    [ "$3" = 1 ] && f="$f -DBCAST"; [ "$r" = 1 ] && f="$f -DROLLED"
    nvcc -O3 -arch=sm_90 $f -o "$B/$tag" lds_bar.cu &
    builds+=("$tag")
  done; done; done
done
wait
for tag in "${builds[@]}"; do
  case $tag in
    *_w4_*) cfg="128:120000 128:80000 128:30000" ;;
    *_w8_*) cfg="256:120000 256:80000" ;;
    *) cfg="512:120000" ;;
  esac
  case $tag in
    *_s3_*) for nt in 512 16384; do "$B/$tag" nt=$nt $cfg | sed "s/^/build=$tag /" >> "$OUT/tileload.txt"; done ;;
    *) "$B/$tag" $cfg | sed "s/^/build=$tag /" >> "$OUT/tileload.txt" ;;
  esac
done
echo "rows: $(grep -c 'check=ok' "$OUT/tileload.txt") ok, $(grep -vc 'check=ok' "$OUT/tileload.txt") not"
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "%-20s nt=%-5s b%-4s w=%-2s %8s %s\n", v["build"], v["nt"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"], v["check"]}' "$OUT/tileload.txt"
