"""bench/dram/model_check.py: the model's time for every walk point of a rowwalk record's
Nsight Compute table (bench/results/h200-dram-rowwalk/ncu-table.txt: one launch each, caches
flushed) against Nsight's time: bench/dram/tune.yaml at the point's N, C, U, MODE and block,
as `tile` would predict it. CPU only; needs nvcc for the PTX and SASS.
Usage: python bench/dram/model_check.py bench/results/h200-dram-rowwalk/ncu-table.txt"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.bounds import WorkLimits  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

MANIFEST = Path(__file__).with_name("tune.yaml")
LINE = re.compile(r"walk\s+m(\d) U(\d) b\s*(\d+)\s+(\d+)x(\d+)\s.*?([\d.]+) us")


def main() -> None:
    dev = load_device("h200")
    errors: dict[str, list[float]] = {}
    cache: dict[tuple[int, int], dict] = {}
    print("N C MODE U block measured_us model_us ratio bound")
    for line in Path(sys.argv[1]).read_text().splitlines():
        m = LINE.match(line)
        if not m:
            continue
        mode, u, block, n, c = (int(g) for g in m.groups()[:5])
        measured = float(m.group(6))
        if (n, c) not in cache:
            spec = load_tuning(MANIFEST, "walk", {"N": n, "C": c})
            pts, removed = points(spec, 100, WorkLimits(100, 100))
            report = rank(spec, dev, pts, removed)
            cache[(n, c)] = {tuple(sorted(r.point.params.items())): r.prediction
                             for r in report.ranked if r.prediction}
        pred = cache[(n, c)][tuple(sorted({"U": u, "MODE": mode, "BLOCK": block}.items()))]
        ratio = pred.predicted_ms * 1e3 / measured
        errors.setdefault(f"{n}x{c} MODE {mode}", []).append(ratio - 1)
        print(n, c, mode, u, block, f"{measured:.1f}", f"{pred.predicted_ms * 1e3:.1f}",
              f"{ratio:.2f}", pred.bound)
    for group, errs in sorted(errors.items()):
        print(f"{group}: {len(errs)} points, median |model / measured - 1| "
              f"{statistics.median(abs(e) for e in errs):.1%}, largest {max(abs(e) for e in errs):.1%}")


if __name__ == "__main__":
    main()
