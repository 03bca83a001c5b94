"""docs/model.md item 40, on bench/tilexp/run.sh's records: per point, the time with the tile
loads (`load`) and without (`noload`), what the loads add a tile (clocks an SM, for the
blocks resident together), and the model's error on each (the prediction as `measure`
printed it, or, with --repredict, the model of this tree, re-predicted on the CPU).
Usage: python bench/tilexp/compare.py DIR [--repredict]"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLOCK_MHZ = 1980.0  # the H200's boost clock (device.txt: max SM clock)
SMS = 132


def rows(path: Path) -> dict[str, dict]:
    doc = json.loads(path.read_text())
    return {json.dumps(r["params"], sort_keys=True): r for r in doc["results"]
            if r.get("measured") and r.get("verified") is not False}


def repredict(kernel: str, problem: dict[str, int]) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from occupancy import load_device
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.spaces import points, rank
    spec = load_tuning(ROOT / "bench/tilexp/tune.yaml", kernel, problem)
    pts, removed = points(spec)
    return {json.dumps(r.point.params, sort_keys=True): r.prediction.predicted_ms
            for r in rank(spec, load_device("h200"), pts, removed).ranked if r.prediction}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("Error: give the folder bench/tilexp/run.sh wrote", file=sys.stderr)
        raise SystemExit(2)
    root = Path(args[0])
    load, noload = rows(root / "load.json"), rows(root / "noload.json")
    problem = json.loads((root / "load.json").read_text())["problem"]
    pred = {k: {p: r["predicted_ms"] for p, r in v.items()} for k, v in
            (("load", load), ("noload", noload))}
    if "--repredict" in sys.argv:
        pred = {k: repredict(k, problem) for k in ("load", "noload")}
    n, k_dim = int(problem["N"]), int(problem["K"])
    print(f"{'point':44} {'B':>2} {'load ms':>8} {'noload':>8} {'+%':>6} {'clk/tile':>8}"
          f" {'err load':>8} {'err noload':>10}")
    errs: dict[str, list[float]] = {"load": [], "noload": [], "added": []}
    for key in sorted(load, key=lambda k: json.loads(k)["PAD"]):
        if key not in noload:
            continue
        p, a, b = json.loads(key), load[key], noload[key]
        ta, tb = a["measured"]["median_ms"], b["measured"]["median_ms"]
        blocks = a["driver_active_blocks_per_sm"]
        grid = (n // p["BN"]) * (int(problem["M"]) // p["BM"])
        rounds = max(1.0, grid / SMS / blocks)
        tiles = k_dim // p["BK"]
        per_tile = (ta - tb) * 1e-3 * CLOCK_MHZ * 1e6 / rounds / tiles
        ea, eb = pred["load"].get(key), pred["noload"].get(key)
        ea = ea / ta - 1 if ea else float("nan")
        eb = eb / tb - 1 if eb else float("nan")
        errs["load"].append(abs(ea))
        errs["noload"].append(abs(eb))
        label = " ".join(f"{k}={v}" for k, v in p.items() if k != "PAD") + f" pad={p['PAD'] // 1000}k"
        print(f"{label:44} {blocks:>2} {ta:>8.3f} {tb:>8.3f} {ta / tb - 1:>+6.1%} {per_tile:>8.0f}"
              f" {ea:>+8.1%} {eb:>+10.1%}")
    for k in ("load", "noload"):
        v = [e for e in errs[k] if e == e]
        if v:
            print(f"{k}: {len(v)} points, median |error| {statistics.median(v):.1%}")


if __name__ == "__main__":
    main()
