#!/usr/bin/env bash
# bench/ldsbar/stagger.sh: tileload.sh's 2- and 4-block rows again with the blocks of an SM
# started apart (-DSTAGGER=6000: 0, 1,500, 3,000 or 4,500 clocks, about half a tile period
# apart at 2 blocks an SM): do blocks that do not begin in step hide an L2-resident tile's
# loads as item 36's queue says? (docs/model.md item 39.) Writes $OUT/stagger.txt.
set -u
cd "$(dirname "$0")"
B=$(mktemp -d)
builds=()
for s in "8 8 0" "16 4 1"; do set -- $s
  for w in 4 8; do for sy in 1 3; do
    tag=t$1x$2_b$3_w${w}_s${sy}_r0_st
    f="-DTM=$1 -DTN=$2 -DSYNC=$sy -DWARPS=$w -DSTAGGER=6000"
    [ "$3" = 1 ] && f="$f -DBCAST"
    nvcc -O3 -arch=sm_90 $f -o "$B/$tag" lds_bar.cu &
    builds+=("$tag")
  done; done
done
wait
for tag in "${builds[@]}"; do
  case $tag in
    *_w4_*) cfg="128:80000 128:30000" ;;
    *) cfg="256:80000" ;;
  esac
  case $tag in
    *_s3_*) for nt in 512 16384; do "$B/$tag" nt=$nt $cfg | sed "s/^/build=$tag /" >> "$OUT/stagger.txt"; done ;;
    *) "$B/$tag" $cfg | sed "s/^/build=$tag /" >> "$OUT/stagger.txt" ;;
  esac
done
echo "rows: $(grep -c 'check=ok' "$OUT/stagger.txt") ok, $(grep -vc 'check=ok' "$OUT/stagger.txt") not"
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "%-24s nt=%-5s b%-4s w=%-2s %8s %s\n", v["build"], v["nt"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"], v["check"]}' "$OUT/stagger.txt"
