#!/usr/bin/env bash
# Measure every point of corpus (space, size) pairs on GPU 0 (issue 18; bench/CORPUS.md).
#
#   bash bench/gpu_corpus.sh calibration | validation | ID ... | ID:K=V,K=V ...
#
# ID: a space (sgemm-2d: all its committed sizes) or one pair (sgemm-2d-2048-2048-2048);
# ID:K=V,...: a space at a size of your own (sgemm-warptiling:M=4096,N=4096,K=4096). Each pair
# is one `occupancy measure MANIFEST --kernel K --set ...` of the local corpus (its sources
# placed by bench/corpus/place_sources.py), written to $OUT/<id>-<sizes>.json, its output to
# $OUT/logs; $OUT/gpu-log.txt holds the device, each run's exit and time, and a summary
# row per pair (points, verified, failed, unchecked, occupancy matches, fastest, its rank).
# OUT defaults to bench/results/corpus-run (never a committed record's folder: pick a new
# one). BUDGET=B: `measure --budget B` instead of every point (the budgeted search chooses
# and times B points at most; <id>-<sizes>-bB.json). CORPUS_TIMEOUT: seconds a pair may take
# (default 600). COMMIT: the commit to log
# where the tree has no .git (a device copy). Nothing from a manifest reaches this shell:
# the ids and sizes are this table's, or digits and names checked below.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-bench/results/corpus-run}"
TIMEOUT="${CORPUS_TIMEOUT:-600}"
BUDGET="${BUDGET:-}"
C=bench/corpus
# id | manifest | kernel | reps | part | problem keys | committed sizes (one per pair, comma-separated values)
TABLE="sgemm-1d|$C/SGEMM_CUDA/tune.yaml|sgemm1DBlocktiling|20|calibration|M N K|2048,2048,2048 4096,4096,4096
sgemm-vectorize|$C/SGEMM_CUDA/tune.yaml|sgemmVectorize|10|calibration|M N K|2048,2048,2048 4096,4096,4096
kt-convolution|$C/kernel_tuner/tune.yaml|convolution_kernel|10|calibration|FH FW|7,7 11,11
kt-reduction|$C/kernel_tuner/tune.yaml|sum_floats|10|calibration|n|16777216 67108864
llmc-softmax4|$C/llm.c/tune.yaml|softmax_forward_kernel4|20|calibration|N C|8192,50257 16384,4096
sgemm-2d|$C/SGEMM_CUDA/tune.yaml|sgemm2DBlocktiling|10|validation|M N K|2048,2048,2048 1024,1024,1024 4096,4096,4096
sgemm-warptiling|$C/SGEMM_CUDA/tune.yaml|sgemmWarptiling|10|validation|M N K|2048,2048,2048 1024,1024,1024 4096,4096,4096
samples-matrixmul|$C/cuda-samples/tune.yaml|MatrixMulCUDA|20|validation|M N K|2048,2048,2048 4096,4096,4096 3072,3072,3072
samples-reduce6|$C/cuda-samples/tune.yaml|reduce6|10|validation|n|16777216 67108864 33554432
kt-pnpoly|$C/kt-pnpoly/tune.yaml|cn_pnpoly|10|validation|n|2000000 10000000 4000000
jacobi|$C/multi-gpu-programming-models/tune.yaml|jacobi_kernel|20|validation|nx ny|16384,16384 8192,8192 12288,12288
llmc-softmax7|$C/llm.c/tune.yaml|softmax_forward_kernel7|20|validation|N C|8192,50257 16384,4096 8192,32000
llmc-softmax-online8|$C/llm.c/tune.yaml|softmax_forward_online_kernel8|20|validation|N C|8192,50257 16384,4096 8192,32000
flash-attention|$C/flash-attention-minimal/tune.yaml|forward_kernel|20|validation|B nh N d|16,12,64,64 16,12,128,64 16,12,256,64"

fail() { echo "Error: $*" >&2; exit 2; }
row() { printf '%s\n' "$TABLE" | awk -F'|' -v id="$1" '$1 == id'; }
[[ -z "$BUDGET" || "$BUDGET" =~ ^[1-9][0-9]{0,3}$ ]] || fail "BUDGET=$BUDGET: a number of runs, 1-9999"
[ $# -gt 0 ] || fail "name the pairs: calibration, validation, a space id or ID:K=V,... (see the top of $0)"
mkdir -p "$OUT/logs" || fail "cannot write $OUT"
pairs=()  # "id|manifest|kernel|reps|keys|values"
for a in "$@"; do
  case "$a" in
    calibration|validation)
      while IFS='|' read -r id m k r part keys sizes; do
        [ "$part" = "$a" ] && for s in $sizes; do pairs+=("$id|$m|$k|$r|$keys|$s"); done
      done <<< "$TABLE" ;;
    *:*)
      id="${a%%:*}"; spec="${a#*:}"; IFS='|' read -r _ m k r _ keys _ <<< "$(row "$id")"
      [ -n "${m:-}" ] || fail "no corpus space '$id'"
      [[ "$spec" =~ ^([A-Za-z_]+=[1-9][0-9]{0,9})(,[A-Za-z_]+=[1-9][0-9]{0,9})*$ ]] \
        || fail "'$spec': give K=V,... with V a positive number"
      given=$(printf '%s\n' "$spec" | tr ',' '\n' | cut -d= -f1)
      for g in $given; do [[ " $keys " == *" $g "* ]] || fail "'$a': no problem key $g (it has: $keys)"; done
      [ "$(printf '%s\n' "$given" | sort | uniq -d)" = "" ] || fail "'$a' gives a key twice"
      vals=""; for key in $keys; do
        v=$(printf '%s\n' "$spec" | tr ',' '\n' | awk -F= -v k="$key" '$1 == k {print $2}')
        [ -n "$v" ] || fail "'$a' lacks $key (the problem has: $keys)"; vals="${vals:+$vals,}$v"
      done
      pairs+=("$id|$m|$k|$r|$keys|$vals") ;;
    *)
      r0="$(row "$a")"
      if [ -n "$r0" ]; then
        IFS='|' read -r id m k r _ keys sizes <<< "$r0"; for s in $sizes; do pairs+=("$id|$m|$k|$r|$keys|$s"); done
      else  # one committed pair: ID-V-V-...
        found=0
        while IFS='|' read -r id m k r _ keys sizes; do for s in $sizes; do
          [ "$id-${s//,/-}" = "$a" ] && pairs+=("$id|$m|$k|$r|$keys|$s") && found=1
        done; done <<< "$TABLE"
        [ $found = 1 ] || fail "no corpus space or pair '$a'"
      fi ;;
  esac
done

log="$OUT/gpu-log.txt"
{ date; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -1
  python3 -c "from occupancy.build.compilers import nvdisasm_path as p; print('nvdisasm:', p())" 2>&1
  echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}"
  echo "corpus: ${#pairs[@]} (space, size) pairs"; } >> "$log"
summary="id	exit	seconds	points	verified	failed	unchecked	occ_match	fastest_ms	fastest_rank"
total=0; worst=0
for p in "${pairs[@]}"; do
  IFS='|' read -r id m k r keys vals <<< "$p"
  name="$id-${vals//,/-}${BUDGET:+-b$BUDGET}"; sets=(); i=1
  for key in $keys; do sets+=(--set "$key=$(echo "$vals" | cut -d, -f$i)"); i=$((i + 1)); done
  t0=$(date +%s)
  rm -f "$OUT/$name.json"  # a failed run leaves no record, not an earlier one
  timeout "$TIMEOUT" python3 -m occupancy measure "$m" --kernel "$k" "${sets[@]}" --reps "$r" \
    --max-compiles 5000 ${BUDGET:+--budget "$BUDGET"} -o "$OUT/$name.json" > "$OUT/logs/$name.txt" 2> "$OUT/logs/$name.err"
  rc=$?; dt=$(( $(date +%s) - t0 )); total=$((total + dt)); [ $rc -gt $worst ] && worst=$rc
  echo "measure $name: exit $rc in $dt s" >> "$log"
  row=$(python3 - "$OUT/$name.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("0\t0\t0\t0\t0\t-\t-"); raise SystemExit
rs = d["results"]; f = d.get("fastest") or {}
print("\t".join(str(x) for x in (len(rs), sum(r["verified"] is True for r in rs),
      sum(r["verified"] is False for r in rs), sum(r["verified"] is None for r in rs),
      sum(r["occupancy_match"] for r in rs), f"{f.get('median_ms', float('nan')):.4f}",
      f.get("predicted_rank", "-"))))
PY
)
  summary="$summary
$name	$rc	$dt	$row"
done
{ echo "total: $total s"; echo "$summary"; } >> "$log"
tail -n $(( ${#pairs[@]} + 1 )) "$log"
exit $worst  # the worst measure's exit (124: one timed out)
