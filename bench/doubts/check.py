"""The doubts' search on this project's own rolled/unrolled space (bench/doubts/kroll.cu):
per size, the model's error, the fastest's rank and the pick, rolled over unrolled (measured
and predicted, the same tile), and `measure --budget 4` / `8` replayed with and without each
point's doubts (docs/model.md item 47) against the live searches.

    python bench/doubts/check.py bench/results/h200-doubts-own > bench/results/h200-doubts-own/summary.txt
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from occupancy.tune.budget import Candidate, simulate  # noqa: E402
from occupancy.tune.ranked import read_doubts  # noqa: E402


def key(p: dict) -> str:
    return json.dumps(p, sort_keys=True)


def main(folder: Path) -> None:
    for n in (4096, 2048):
        full = json.loads((folder / f"kroll-{n}.json").read_text())
        rows = [r for r in full["results"] if r["verified"] is not False and r["predicted_ms"]]
        truth = {key(r["params"]): r["measured"]["median_ms"] for r in rows}
        fast = min(truth.values())
        by_pred = sorted(rows, key=lambda r: r["predicted_ms"])
        fr = min(rows, key=lambda r: r["measured"]["median_ms"])
        rank = [key(r["params"]) for r in by_pred].index(key(fr["params"])) + 1
        err = statistics.median(abs(r["predicted_ms"] / r["measured"]["median_ms"] - 1) for r in rows)
        print(n, "points", len(rows), "verified", sum(r["verified"] is True for r in full["results"]),
              "occ", all(r["occupancy_match"] for r in full["results"]))
        print("  fastest", fr["params"], fr["doubts"], f"{fast:.4f}", "rank", rank,
              f"median err {100 * err:.1f}%",
              f"pick {100 * (truth[key(by_pred[0]['params'])] / fast - 1):+.2f}%")
        tiles: dict[str, dict] = collections.defaultdict(dict)
        for r in rows:
            p = dict(r["params"])
            ku = p.pop("KU")
            tiles[key(p)]["u" if ku == p["BK"] else ku] = r
        for ku in (1, 2):
            both = [d for d in tiles.values() if "u" in d and ku in d]
            meas = [d[ku]["measured"]["median_ms"] / d["u"]["measured"]["median_ms"] - 1 for d in both]
            pred = [d[ku]["predicted_ms"] / d["u"]["predicted_ms"] - 1 for d in both]
            print(f"  KU={ku} over unrolled: measured median {100 * statistics.median(meas):+.1f}% "
                  f"({100 * min(meas):+.1f}..{100 * max(meas):+.1f}), predicted median "
                  f"{100 * statistics.median(pred):+.1f}%")
        for b in (4, 8):
            with_ = simulate([Candidate(key(r["params"]), r["predicted_ms"], r["params"],
                                        read_doubts(r["doubts"])) for r in rows], truth, b)
            without = simulate([Candidate(key(r["params"]), r["predicted_ms"], r["params"])
                                for r in rows], truth, b)
            top = min(truth[key(r["params"])] for r in by_pred[:b])
            live = json.loads((folder / f"kroll-{n}-b{b}.json").read_text())
            lb = min(live["results"], key=lambda r: r["measured"]["median_ms"])
            print(f"  B={b} replay with {100 * (with_.best()[1] / fast - 1):+.2f}%, without "
                  f"{100 * (without.best()[1] / fast - 1):+.2f}%, top-B {100 * (top / fast - 1):+.2f}%; "
                  f"live {100 * (lb['measured']['median_ms'] / fast - 1):+.2f}% (its point in the full run "
                  f"{100 * (truth[key(lb['params'])] / fast - 1):+.2f}%), runs {live['search']['runs']}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
