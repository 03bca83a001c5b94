"""docs/model.md item 24: re-predict bench/results/h200-lsu-conflicts (bench/lsu/conflicted.cu
on the H200: 1 to 16 warps an SM, 1- to 32-way conflicted shared loads) with the current
model, CPU only, and print per point and per warps-an-SM group the error.
Usage: python bench/lsu/conflicted_check.py"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402


def main() -> None:
    rec = json.loads((ROOT / "bench/results/h200-lsu-conflicts/conflicted.json").read_text())
    spec = load_tuning(ROOT / "bench/lsu/conflicted.yaml", "conflicted")
    pts, _ = points(spec)
    rep = rank(spec, load_device("h200"), pts)
    pred = {json.dumps(r.point.params, sort_keys=True): r.prediction.predicted_ms
            for r in rep.ranked if r.prediction is not None}
    groups: dict[int, list[float]] = {}
    for r in sorted(rec["results"], key=lambda r: (r["params"]["blocks"], r["params"]["threads"],
                                                   r["params"]["stride"])):
        p = r["params"]
        warps = p["blocks"] * -(-p["threads"] // 32)
        got = r["measured"]["median_ms"]
        err = pred[json.dumps(p, sort_keys=True)] / got - 1
        groups.setdefault(min(warps, 4), []).append(abs(err))
        print(f"blocks {p['blocks']} threads {p['threads']:3} stride {p['stride']}  warps/SM "
              f"{warps:2}  measured {got:7.4f} ms  predicted {got * (1 + err):7.4f}  {err:+6.1%}")
    for w, errs in sorted(groups.items()):
        print(f"warps/SM {'>= 4' if w == 4 else w}: {len(errs)} points, median |error| "
              f"{statistics.median(errs):.1%}, max {max(errs):.1%}")


if __name__ == "__main__":
    main()
