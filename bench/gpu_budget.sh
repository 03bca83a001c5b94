#!/usr/bin/env bash
# `measure --budget B` live on the GPU, on corpus (space, size) pairs (issue 18): the budgeted
# search (tune/budget.py) chooses and times its points; the records land in
# $OUT/budget/<id-size>-b<B>.json (+ .txt, the table a user sees). The full ground truth of
# each pair is in bench/results/h200-corpus*/ (every point timed), so the record says how
# far the search's best is from the fastest.
#
#   bash bench/gpu_budget.sh sgemm-warptiling-2048-2048-2048:8 kt-pnpoly-2000000:4 ...
#
# Phase 1 compiles and ranks the spaces (`tile`, 4 at a time, filling the compile cache);
# phase 2 runs the searches one at a time, nothing else on the GPU.
# Needs what bench/CORPUS.md says stays out of the repository: the local corpus (bench/corpus:
# the public sources and their manifests, corpus.yaml) and bench/corpus_plan.py beside it,
# which turns corpus.yaml into the tile and measure commands; carry both to the GPU machine.
set -u
. "$(dirname "$0")/gpu_setup.sh"
export OCCUPANCY_CACHE_DIR=${OCCUPANCY_CACHE_DIR:-$PWD/build/corpus-cache}
export TILE_TIMEOUT=${CORPUS_TILE_TIMEOUT:-420}
export OUT
mkdir -p "$OUT/budget" "$OUT/corpus"
PLAN=$OUT/budget/plan.tsv
TILES=$OUT/budget/tile-jobs.txt
spaces=$(python -c "import yaml; print(' '.join(s['id'] for s in yaml.safe_load(open('bench/corpus/corpus.yaml'))['spaces']))")
ids=()
for pair in "$@"; do
  for sp in $spaces; do
    [[ "${pair%%:*}" == "$sp"-* ]] && ids+=("$sp")
  done
done
python bench/corpus_plan.py "$PLAN" "$TILES" "${ids[@]}"
t0=$(date +%s)
xargs -P 4 -d '\n' -n 1 bash -c < "$TILES" >> "$LOG" 2>&1
echo "phase 1 (tile): $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
for pair in "$@"; do
  want=${pair%%:*}; budget=${pair##*:}
  while IFS=$'\t' read -r id m k reps sets; do
    [[ "$id" == "$want" ]] || continue
    s=$(date +%s)
    # shellcheck disable=SC2086
    timeout 300 python -m occupancy measure "$m" --kernel "$k" $sets --reps "$reps" --max-compiles 5000 \
      --budget "$budget" -o "$OUT/budget/$id-b$budget.json" < /dev/null \
      > "$OUT/budget/$id-b$budget.txt" 2> "$OUT/budget/$id-b$budget.err"
    echo "budget $id B=$budget: exit $? in $(( $(date +%s) - s )) s" | tee -a "$LOG"
  done < "$PLAN"
done
echo "total: $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
