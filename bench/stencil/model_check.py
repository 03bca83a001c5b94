"""bench/stencil/model_check.py: the model's time for every point of a stencil record
(bench/results/h200-stencil/stencil.txt, h200-rowrun/rowrun.txt) against the measured median:
bench/stencil/tune.yaml at the point's n, shape, mode and norm, as `tile` would predict it
(MODE 6-8 are its kernels copy2, copy4 and tile4; MODE 4-5 it does not describe). CPU only;
needs nvcc.
Usage: python bench/stencil/model_check.py bench/results/h200-stencil/stencil.txt"""

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
# the modes the manifest has as kernels of their own (MODE 0-3 are `stencil`'s MODE)
KERNELS = {6: "copy2", 7: "copy4", 8: "tile4"}


def main() -> None:
    dev = load_device("h200")
    errors: dict[str, list[float]] = {}
    cache: dict[tuple[int, str], dict] = {}
    print("n mode norm bx by measured_ms model_ms ratio bound")
    for path in sys.argv[1:]:
        for line in Path(path).read_text().splitlines():
            f = dict(kv.split("=", 1) for kv in line.split())
            if f.get("check") != "ok":
                continue
            n, mode = int(f["n"]), int(f["mode"])
            if mode in (4, 5):  # copies the manifest does not describe (run_addr.sh)
                continue
            kernel = KERNELS.get(mode, "stencil")
            if (n, kernel) not in cache:
                spec = load_tuning(MANIFEST, kernel, {"n": n})
                pts, removed = points(spec, 1000, WorkLimits(1000, 1000))
                report = rank(spec, dev, pts, removed)
                cache[(n, kernel)] = {tuple(sorted(r.point.params.items())): r.prediction
                                      for r in report.ranked if r.prediction}
            params = {"BX": int(f["bx"]), "BY": int(f["by"])}
            if kernel == "stencil":
                params |= {"MODE": mode, "NORM": int(f["norm"])}
            pred = cache[(n, kernel)][tuple(sorted(params.items()))]
            measured = float(f["median_ms"])
            ratio = pred.predicted_ms / measured
            errors.setdefault(f"mode={f['mode']} norm={f['norm']}", []).append(ratio - 1)
            print(n, f["mode"], f["norm"], f["bx"], f["by"], f"{measured:.4f}",
                  f"{pred.predicted_ms:.4f}", f"{ratio:.3f}", pred.bound)
    for group, errs in sorted(errors.items()):
        print(f"{group}: {len(errs)} points, median |model / measured - 1| "
              f"{statistics.median(abs(e) for e in errs):.1%}, largest {max(abs(e) for e in errs):.1%}")


if __name__ == "__main__":
    main()
