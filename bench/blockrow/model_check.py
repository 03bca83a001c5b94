"""bench/blockrow/model_check.py: the model's time for every point of a blockrow record
(blockrow.txt or curve/curve.txt) against the measured median: bench/blockrow/tune.yaml at the
point's C, block, U, layout and shared memory, as `tile` would predict it. CPU only; needs
nvcc for the PTX and SASS.
Usage: python bench/blockrow/model_check.py bench/results/h200-blockrow/curve/curve.txt ..."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.bounds import WorkLimits  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

MANIFEST = Path(__file__).with_name("tune.yaml")


def main() -> None:
    dev = load_device("h200")
    errors: dict[str, list[float]] = {}
    cache: dict[tuple[int, int], dict] = {}
    print("C block U strided smem blocks_per_sm measured_ms model_ms ratio bound")
    for path in sys.argv[1:]:
        for line in Path(path).read_text().splitlines():
            f = dict(kv.split("=", 1) for kv in line.split())
            if f.get("check") != "ok":
                continue
            c, smem = int(f["C"]), int(f.get("smem", 0))
            if (c, smem) not in cache:
                spec = load_tuning(MANIFEST, "copyrow", {"N": 8192, "C": c, "SMEM": smem + 1})
                pts, removed = points(spec, 100, WorkLimits(100, 100))
                report = rank(spec, dev, pts, removed)
                cache[(c, smem)] = {tuple(sorted(r.point.params.items())): r.prediction
                                    for r in report.ranked if r.prediction}
            key = tuple(sorted({"U": int(f["u"]), "STRIDED": int(f["strided"]),
                                "BLOCK": int(f["block"])}.items()))
            pred = cache[(c, smem)][key]
            measured = float(f["median_ms"])
            ratio = pred.predicted_ms / measured
            group = f"C={c} strided={f['strided']}"
            errors.setdefault(group, []).append(ratio - 1)
            print(c, f["block"], f["u"], f["strided"], smem, f["blocks_per_sm"],
                  f"{measured:.3f}", f"{pred.predicted_ms:.3f}", f"{ratio:.2f}", pred.bound)
    for group, errs in sorted(errors.items()):
        print(f"{group}: {len(errs)} points, median |model / measured - 1| "
              f"{statistics.median(abs(e) for e in errs):.1%}, largest {max(abs(e) for e in errs):.1%}")


if __name__ == "__main__":
    main()
