"""A manifest against a measured record: `occupancy tile MANIFEST --kernel K -d h200 --set ...
--json > TILE.json` (the record's kernel and problem) ranks the same points, prunes the same,
compiles each to the record's registers and predicts each as the record says (bit for bit
where the record was re-predicted at the same model). How the manifests in this folder were
checked when they were written again (2026-12-03, bench/CORPUS.md).
usage: python bench/corpus/compare.py RECORD.json TILE.json"""
import json
import sys


def key(params: dict) -> tuple:
    return tuple(sorted(params.items()))


rec = json.load(open(sys.argv[1]))
tile = json.load(open(sys.argv[2]))
if isinstance(tile, list):
    tile = tile[0]
want = {key(r["params"]): r for r in rec["results"]}
want_pruned = {key(r["params"]) for r in rec.get("pruned", [])}
got = {key(c["params"]): c for c in tile["candidates"] if not c.get("pruned")}
got_pruned = {key(c["params"]) for c in tile["candidates"] if c.get("pruned")}
print(f"record: {len(want)} results, {len(want_pruned)} pruned; "
      f"tile: {len(got)} ranked, {len(got_pruned)} pruned")
missing = set(want) - set(got)
extra = set(got) - set(want)
print(f"results missing from tile: {len(missing)} {list(missing)[:3]}")
print(f"tile points not in record results: {len(extra)} {list(extra)[:3]}")
print(f"pruned sets equal: {want_pruned == got_pruned} "
      f"(missing {len(want_pruned - got_pruned)}, extra {len(got_pruned - want_pruned)})")
worst, nreg = 0.0, 0
for k in set(want) & set(got):
    a, b = want[k].get("predicted_ms"), got[k].get("predicted_ms")
    if a is None or b is None:
        if a != b:
            worst = float("inf")
        continue
    worst = max(worst, abs(b / a - 1))
    nreg += want[k].get("registers_per_thread") != got[k].get("registers_per_thread")
print(f"max relative predicted_ms difference: {worst:.3g}; register mismatches: {nreg}")
sys.exit(0 if not (missing or extra or worst or nreg) and want_pruned == got_pruned else 1)
