"""Predicted against measured for the tuning spaces measured on the H200 (bench/results/
h200-tuning): re-predicts every point with the current model (compiled here, cached) and
compares with the recorded medians. Prints per file: median |error|, the fastest measured
point's predicted rank; writes bench/results/h200-tuning/model-check.json.
Run: python bench/tuning_model_check.py"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from occupancy import load_device  # noqa: E402
from occupancy.tuning import load_tuning, points, rank  # noqa: E402

REC = ROOT / "bench" / "results" / "h200-tuning"
CASES = [("sgemm-2048", "examples/sgemm/tune.yaml", "sgemm2d", {"M": 2048, "N": 2048, "K": 2048}),
         ("sgemm-4096", "examples/sgemm/tune.yaml", "sgemm2d", {}),
         ("sgemm-8192", "examples/sgemm/tune.yaml", "sgemm2d", {"M": 8192, "N": 8192, "K": 8192}),
         ("transpose-4096", "examples/transpose/tune.yaml", "transpose", {"N": 4096}),
         ("transpose-8192", "examples/transpose/tune.yaml", "transpose", {}),
         ("llmc-matmul-forward", "examples/llmc/tune.yaml", "matmul_forward_kernel1", {})]


def main() -> None:
    dev = load_device("h200")
    out = {}
    for name, manifest, kernel, sets in CASES:
        rec = REC / f"{name}.json"
        if not rec.is_file():
            continue
        data = json.loads(rec.read_text())
        measured = {json.dumps(r["params"], sort_keys=True): r["measured"]["median_ms"]
                    for r in data["results"] if r["verified"]}
        spec = load_tuning(ROOT / manifest, kernel, sets)
        pts, removed = points(spec)
        rep = rank(spec, dev, pts, removed)
        ranked = [r for r in rep.ranked if not r.pruned and r.prediction]
        errors, order = [], []
        for i, r in enumerate(ranked, start=1):
            key = json.dumps(r.point.params, sort_keys=True)
            if key in measured and r.prediction:
                errors.append(r.prediction.predicted_ms / measured[key] - 1)
                order.append((measured[key], i))
        fastest_rank = min(order)[1] if order else None
        out[name] = {"points": len(errors), "median_abs_error": statistics.median(map(abs, errors)),
                     "fastest_predicted_rank": fastest_rank}
        print(f"{name:22s} {len(errors):3d} points  median |err| {out[name]['median_abs_error']:.1%}"
              f"  fastest measured is predicted #{fastest_rank}")
    (REC / "model-check.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
