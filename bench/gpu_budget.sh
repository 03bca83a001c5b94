#!/usr/bin/env bash
# `measure --budget B` live on the GPU, on corpus (space, size) pairs (issue 18): the budgeted
# search (tune/budget.py) chooses and times its points; the records land in
# $OUT/<id-size>-b<B>.json (the table a user sees in $OUT/logs). The full ground truth of each
# pair is in bench/results/h200-corpus-repredicted/ (every point timed), so the record says
# how far the search's best is from the fastest.
#
#   bash bench/gpu_budget.sh sgemm-warptiling-2048-2048-2048:8 kt-pnpoly-2000000:4 ...
#
# Each pair runs through bench/gpu_corpus.sh (its table of the corpus's spaces, sizes and
# manifests; the local corpus's sources placed by bench/corpus/place_sources.py) with
# BUDGET=B. A pair may also be a space at a size of your own: sgemm-2d:M=4096,N=4096,K=4096:8.
set -u
[ $# -gt 0 ] || { echo "Error: name the pairs, ID-SIZE:B ..." >&2; exit 2; }
for pair in "$@"; do  # every pair checked before any runs
  [[ "${pair##*:}" =~ ^[1-9][0-9]{0,3}$ && "${pair%:*}" != "$pair" ]] \
    || { echo "Error: '$pair': ID-SIZE:B, B a number of runs" >&2; exit 2; }
done
rc=0
for pair in "$@"; do
  BUDGET="${pair##*:}" bash "$(dirname "$0")/gpu_corpus.sh" "${pair%:*}" || rc=$?
done
exit $rc
