"""The model against the H200 on the corpus of public kernels (issue 18): for every
measured (space, size) record under bench/results/h200-corpus, the median |predicted /
measured - 1|, the predicted rank of the fastest measured point, the recommendation's
distance from the fastest, and what the budgeted search (`measure --budget`) and the
model's plain top-B reach when replayed on the measured times.

Predictions are the ones the record holds (the model at the commit its gpu-log.txt names).
Run: python bench/corpus_check.py [RECORDS...]; writes bench/results/corpus-check.json.
"""

from __future__ import annotations

import glob
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from corpus_repredict import space_of as corpus_space  # noqa: E402

from occupancy.tune.budget import Candidate, simulate  # noqa: E402
from occupancy.tune.ranked import read_doubts  # noqa: E402

# the split, made before anything was measured (see the corpus index, bench/CORPUS.md)
VALIDATION = ("sgemm-2d", "sgemm-warptiling", "samples-matrixmul", "samples-reduce6", "kt-pnpoly",
              "jacobi", "llmc-softmax7", "llmc-softmax-online8", "flash-attention")


def space_of(path: str) -> str:
    """The record's space (bench/corpus_repredict.py's ids; its name less the last part for
    a record of no corpus space)."""
    return corpus_space(path) or Path(path).stem.rsplit("-", 1)[0]


def check(path: str) -> dict[str, object] | None:
    rec = json.loads(Path(path).read_text())
    rows = [r for r in rec.get("results", []) if r.get("predicted_ms") and r["verified"] is not False]
    if len(rows) < 2:
        return None
    key = lambda r: json.dumps(r["params"], sort_keys=True)  # noqa: E731
    truth = {key(r): r["measured"]["median_ms"] for r in rows}
    best = min(truth.values())
    by_pred = sorted(rows, key=lambda r: r["predicted_ms"])
    fastest = min(rows, key=lambda r: r["measured"]["median_ms"])
    # measure --budget learns about a point's neighbours from its parameters
    cands = [Candidate(key(r), r["predicted_ms"], r["params"], read_doubts(r.get("doubts"))) for r in rows]
    out: dict[str, object] = {
        "record": Path(path).name, "space": space_of(path),
        "part": "validation" if space_of(path) in VALIDATION else "calibration",
        "points": len(rows),
        "checked": sum(r["verified"] is True for r in rows),
        "median_abs_error": statistics.median(abs(r["predicted_ms"] / r["measured"]["median_ms"] - 1)
                                              for r in rows),
        "fastest_predicted_rank": by_pred.index(fastest) + 1,
        "recommended_over_fastest": by_pred[0]["measured"]["median_ms"] / best - 1,
        "occupancy_match": all(r["occupancy_match"] for r in rows),
    }
    for b in (4, 8):
        s = simulate(cands, truth, b)
        hit = s.best()
        out[f"budget_{b}_over_fastest"] = (hit[1] / best - 1) if hit else None
        out[f"budget_{b}_runs"] = len(s.measured)
        out[f"top_{b}_over_fastest"] = min(truth[key(r)] for r in by_pred[:b]) / best - 1
    return out


def _validation_logs(paths: list[str]) -> list[float]:
    """|log(predicted / measured)| of every verified validation point, sorted."""
    rows = [r for p in paths if space_of(p) in VALIDATION
            for r in json.loads(Path(p).read_text()).get("results", [])]
    return sorted(abs(math.log(r["predicted_ms"] / r["measured"]["median_ms"])) for r in rows
                  if r.get("predicted_ms") and r.get("measured") and r["verified"] is not False)


def main() -> None:
    """python bench/corpus_check.py [--out=FILE] [--note=TEXT] [RECORDS...]: records re-predicted
    by another commit (bench/corpus_repredict.py writes them) say so with --note."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    paths = args or sorted(glob.glob(str(ROOT / "bench/results/h200-corpus/*.json")))
    paths = [p for p in paths if not Path(p).name.startswith("budget-")]
    rows = [r for r in (check(p) for p in paths) if r]
    val = [r for r in rows if r["part"] == "validation"]

    def share(rs: list[dict[str, object]], f: object) -> float:
        return sum(1 for r in rs if f(r)) / len(rs) if rs else 0.0  # type: ignore[operator]

    summary = {
        "pairs": len(rows), "validation_pairs": len(val),
        "validation_fastest_in_top3": share(val, lambda r: r["fastest_predicted_rank"] <= 3),
        "validation_recommended_within_5pct": share(val, lambda r: r["recommended_over_fastest"] <= 0.05),
        "all_budget4_within_3pct": share(rows, lambda r: r["budget_4_over_fastest"] <= 0.03),
        "all_budget8_within_3pct": share(rows, lambda r: r["budget_8_over_fastest"] <= 0.03),
        "all_top4_within_3pct": share(rows, lambda r: r["top_4_over_fastest"] <= 0.03),
        "all_top8_within_3pct": share(rows, lambda r: r["top_8_over_fastest"] <= 0.03),
        # the error band a prediction carries (tune/model.py BAND_RATIO): the 68th percentile
        # of predicted / measured, either way, over every validation point
        "validation_points": len(logs := _validation_logs(paths)),
        "validation_band_68": math.exp(logs[int(0.68 * len(logs))]) if logs else None,
    }
    for r in rows:
        print(f"{r['record']:<40} {r['part'][:5]} {r['points']:>4} pts  err {r['median_abs_error']:6.1%}"
              f"  fastest #{r['fastest_predicted_rank']:<4} pick +{r['recommended_over_fastest']:5.1%}"
              f"  budget4 +{r['budget_4_over_fastest']:5.1%} budget8 +{r['budget_8_over_fastest']:5.1%}"
              f"  top4 +{r['top_4_over_fastest']:5.1%}")
    print(json.dumps(summary, indent=1))
    out = Path(opts.get("out", ROOT / "bench/results/corpus-check.json"))
    doc: dict[str, object] = {"summary": summary, "pairs": rows}
    if "note" in opts:
        doc = {"note": opts["note"], **doc}
    out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
