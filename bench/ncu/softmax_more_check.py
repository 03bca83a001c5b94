"""bench/ncu/softmax_more_check.py: the model against bench/results/h200-softmax-more (llm.c's
softmax kernels 2, 3 and online 2, examples/llmc/tune.yaml; not in the corpus): each point's
time as `tile` predicts it now against `measure`'s median (measure.tar.gz), and at 8,192 x
50,257 its DRAM bytes against Nsight Compute's (table.txt). CPU only; needs nvcc and llm.c's
dev/cuda folder at ../shared/realcode (examples/llmc/tune.yaml says so).
Usage: python bench/ncu/softmax_more_check.py bench/results/h200-softmax-more"""

from __future__ import annotations

import json
import statistics
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.bounds import WorkLimits  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

MANIFEST = ROOT / "examples" / "llmc" / "tune.yaml"


def main() -> None:
    record = Path(sys.argv[1])
    dev = load_device("h200")
    ncu = {}
    for line in (record / "table.txt").read_text().splitlines()[1:]:
        k, b, ms, rd, wr = line.split()
        ncu[(k, int(b))] = (float(ms), float(rd) + float(wr))
    times: dict[str, list[float]] = {}
    nbytes: dict[str, list[float]] = {}
    print("kernel N C block measured_ms model_ms ratio | ncu_GB model_GB ratio")
    with tarfile.open(record / "measure.tar.gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.name.endswith(".json")),
                         key=lambda m: m.name)
        for member in members:
            f = tar.extractfile(member)
            assert f is not None
            rec = json.loads(f.read())
            kernel, problem = rec["kernel"], {k: int(v) for k, v in rec["problem"].items()}
            spec = load_tuning(MANIFEST, kernel, problem)
            pts, removed = points(spec, 100, WorkLimits(100, 100))
            pred = {r.point.params["block_size"]: r.prediction
                    for r in rank(spec, dev, pts, removed).ranked if r.prediction}
            for r in sorted(rec["results"], key=lambda r: r["params"]["block_size"]):
                block = r["params"]["block_size"]
                p, measured = pred[block], r["measured"]["median_ms"]
                group = f"{kernel} {problem['N']}x{problem['C']}"
                times.setdefault(group, []).append(p.predicted_ms / measured - 1)
                line = (f"{kernel} {problem['N']} {problem['C']} {block} {measured:.4f} "
                        f"{p.predicted_ms:.4f} {p.predicted_ms / measured:.2f}")
                if problem["C"] == 50257 and (kernel, block) in ncu:
                    gb = ncu[(kernel, block)][1]
                    nbytes.setdefault(kernel, []).append(p.dram_bytes / 1e9 / gb - 1)
                    line += f" | {gb:.2f} {p.dram_bytes / 1e9:.2f} {p.dram_bytes / 1e9 / gb:.2f}"
                print(line)
    for title, errors in (("time", times), ("DRAM bytes at 8192x50257", nbytes)):
        for group, errs in errors.items():
            print(f"{title}: {group}: {len(errs)} points, median |model / measured - 1| "
                  f"{statistics.median(abs(e) for e in errs):.1%}, largest {max(abs(e) for e in errs):.1%}")


if __name__ == "__main__":
    main()
