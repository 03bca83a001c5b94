"""bench/l2reuse/model_check.py: the model's DRAM reads for every point of an l2reuse record
(its ncu-table.txt), against Nsight Compute's: the declared bytes plus the re-reads L2 no
longer holds (tune/reuse.py), as the run of tile would predict them for bench/l2reuse/tune.yaml
at the point's N, C and shared memory. MODE 0's points set the law (bench/l2reuse/fit.py);
MODE 1's (the output read back after a pass that reads and writes) check it. CPU only; needs
nvcc for the PTX.
Usage: python bench/l2reuse/model_check.py bench/results/h200-l2reuse/ncu-table.txt"""

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
PAD = {64: 1, 24: 70_000, 16: 100_000}  # warps an SM -> PAD (l2reuse.py's PADS)


def main() -> None:
    dev = load_device("h200")
    errors: dict[str, list[float]] = {"0": [], "1": []}
    print("mode warps C footprint_MB read_measured read_model")
    for line in Path(sys.argv[1]).read_text().splitlines():
        f = dict(kv.split("=", 1) for kv in line.split())
        if f.get("check") != "ok":
            continue
        n, c, mode = int(f["N"]), int(f["C"]), int(f["mode"])
        spec = load_tuning(MANIFEST, "reread", {"N": n, "C": c, "PAD": PAD[int(f["warps"])]})
        pts, removed = points(spec, 10, WorkLimits(10, 10))
        report = rank(spec, dev, pts, removed)
        pred = next(r.prediction for r in report.ranked if r.point.params["MODE"] == mode)
        assert pred is not None
        array = 4.0 * n * c
        model = 1 + (pred.dram_bytes - array * (1 + mode)) / array
        errors[f["mode"]].append(model / float(f["read"]) - 1)
        print(mode, f["warps"], c, f["footprint_MB"], f["read"], f"{model:.3f}")
    for mode, errs in errors.items():
        print(f"MODE {mode}: {len(errs)} points, median |model / measured - 1| "
              f"{statistics.median(abs(e) for e in errs):.1%}, largest {max(abs(e) for e in errs):.1%}")


if __name__ == "__main__":
    main()
