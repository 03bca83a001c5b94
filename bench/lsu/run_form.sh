#!/usr/bin/env bash
# bench/lsu/run_form.sh: is it the tile's loads issued together, or the form ptxas gave the
# rolled k loop, that slows it? (docs/model.md item 45). With a tile's loads issued
# together (-DBATCH) ptxas also rewrote the k loop: its shared loads' addresses computed at
# the top of each step from the k counter, where the four-round-trip build steps pointers
# (addresses ready at the top). -DPTR and -DCHAIN give each tile-load form both loop forms
# (bench/lsu/loop_forms.py reads which form each build got). Rolled and unrolled, 2 x 8
# warps an SM (one wave and four), one block of 8 warps (110000 B reserved), and 1 block
# of 4 warps where the block size is free (spread). Then Nsight Compute's samples of the
# batch builds' two forms (bench/ncu/rolled.sh, WT=0; NCU=0 skips them; device-ncu.txt).
# Writes under $OUT.
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
B=/tmp/lsu_form; mkdir -p $B
BASE="-DTM=8 -DTN=8 -DPATTERN -DDOT -DREFILL -DHOIST -DBTILE -DSYNC=16"
builds() { for t in spread batch; do for f in none PTR CHAIN; do for r in 0 1; do
  echo "$t $f $r"; done; done; done; }
flags() {  # TILES FORM ROLLED
  echo "$BASE $([ $1 = batch ] && echo -DBATCH=256) $([ $2 != none ] && echo -D$2) $([ $3 = 1 ] && echo -DROLLED)"; }
while read t f r; do  # in this shell, so that `wait` waits for the builds
  nvcc -O3 -arch=sm_90 $(flags $t $f $r) -o $B/l_${t}_${f}_$r lds_ffma.cu &
done < <(builds); wait
while read t f r; do
  runs="256:0:1 256:0:4 256:110000:1"; [ $t = spread ] && runs="$runs 128:150000:1"
  $B/l_${t}_${f}_$r $runs | sed "s/^/tiles=$t dot=1 /" >> $OUT/lsu_form.txt
done < <(builds)
grep -c "check=ok" $OUT/lsu_form.txt; grep -vc "check=ok" $OUT/lsu_form.txt
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "%-6s form%s r%s smem%-6s w=%-2s waves=%s %8s\n", v["tiles"], v["form"], v["rolled"], v["smem"], v["warps_per_sm"], v["waves"], v["ns_per_warp_iter_per_sm"]}' $OUT/lsu_form.txt
cd ../..
if [ "${NCU:-1}" = 1 ]; then
  cp $OUT/device.txt $B/device.txt  # rolled.sh writes its own (with Nsight's version)
  for f in PTR CHAIN; do
    WT=0 LDS_FLAGS="-DHOIST -DBATCH=256 -D$f" OUTTAG="-$(echo $f | tr A-Z a-z)" bash bench/ncu/rolled.sh
    mv $OUT/rolled.tar.gz $OUT/rolled-batch-$(echo $f | tr A-Z a-z).tar.gz
    mv $OUT/rolled.log $OUT/rolled-batch-$(echo $f | tr A-Z a-z).log
  done
  mv $OUT/device.txt $OUT/device-ncu.txt && cp $B/device.txt $OUT/device.txt
fi
