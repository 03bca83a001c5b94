"""bench/ncu/bytes_check.py: the model's DRAM bytes (read plus written) for llm.c's softmax
kernels at every point Nsight Compute measured (bench/results/h200-softmax-ncu/table.txt),
against Nsight's, as multiples of one pass over the input (N x C x 4 B). The kernels and
their manifests are the corpus's (bench/corpus, local: llm.c is not vendored here; see
bench/CORPUS.md). CPU only; needs nvcc.
`--layernorm TABLE`: llm.c's layernorm kernels 3-5 (examples/llmc/tune.yaml) against
bench/results/h200-layernorm-ncu/table.txt, the bytes read only: their outputs (25-100 MB)
stay in L2 when the launch ends and Nsight, flushing the caches between launches, counts
their write-back in no launch (0-72% of them).
Usage: python bench/ncu/bytes_check.py [table.txt] > bench/results/softmax-bytes-check.txt
       python bench/ncu/bytes_check.py --layernorm TABLE > bench/results/layernorm-bytes-check.txt"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.bounds import WorkLimits  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

TABLE = ROOT / "bench" / "results" / "h200-softmax-ncu" / "table.txt"
SPACES = {"softmax_forward_kernel4": "llmc-softmax4", "softmax_forward_kernel7": "llmc-softmax7",
          "softmax_forward_online_kernel8": "llmc-softmax-online8"}


def summary(errors: dict[str, list[float]]) -> None:
    """Per kernel: its points, and the median and largest |model / measured - 1|."""
    for kernel, errs in errors.items():
        print(f"{kernel}: {len(errs)} points, median |model / measured - 1| "
              f"{statistics.median(abs(e) for e in errs):.1%}, largest {max(abs(e) for e in errs):.1%}")


def layernorm(table: Path) -> None:
    """The layernorm check (module docstring): the model's bytes read, its DRAM bytes less
    the declared writes (the output, the means and the reciprocal deviations)."""
    dev = load_device("h200")
    cache: dict[tuple[str, int, int, int], dict[int, float]] = {}
    errors: dict[str, list[float]] = {}
    print("kernel B T C block measured_read_x model_read_x model/measured")
    for line in table.read_text().splitlines()[1:]:
        kernel, b, t, c, block, _ms, read = line.split()[:7]
        key = (kernel, int(b), int(t), int(c))
        if key not in cache:
            spec = load_tuning(ROOT / "examples" / "llmc" / "tune.yaml", kernel,
                               {"B": int(b), "T": int(t), "C": int(c)})
            pts, removed = points(spec, 100, WorkLimits(100, 100))
            report = rank(spec, dev, pts, removed)
            cache[key] = {r.point.params["BS"]: r.prediction.dram_bytes
                          for r in report.ranked if r.prediction is not None}
        rows, one = int(b) * int(t), 4.0 * int(b) * int(t) * int(c)
        writes = one + 2 * 4.0 * rows
        measured = float(read) * 1e9 / one
        model = (cache[key][int(block)] - writes) / one
        errors.setdefault(kernel, []).append(model / measured - 1)
        print(kernel, b, t, c, block, f"{measured:.3f}", f"{model:.3f}", f"{model / measured:.3f}")
    summary(errors)


def main() -> None:
    if sys.argv[1:2] == ["--layernorm"]:
        layernorm(Path(sys.argv[2]))
        return
    table = Path(sys.argv[1]) if len(sys.argv) > 1 else TABLE
    dev = load_device("h200")
    cache: dict[tuple[str, int, int], dict[int, float]] = {}
    errors: dict[str, list[float]] = {}
    print("kernel N C block measured_x model_x model/measured")
    for line in table.read_text().splitlines()[1:]:
        kernel, n, c, block, _ms, read, write = line.split()[:7]
        key = (kernel, int(n), int(c))
        if key not in cache:
            spec = load_tuning(ROOT / "bench" / "corpus" / SPACES[kernel] / "tune.yaml", kernel,
                               {"N": int(n), "C": int(c)})
            pts, removed = points(spec, 100, WorkLimits(100, 100))
            report = rank(spec, dev, pts, removed)
            cache[key] = {r.point.params["block_size"]: r.prediction.dram_bytes
                          for r in report.ranked if r.prediction is not None}
        one = 4.0 * int(n) * int(c)
        measured = (float(read) + float(write)) * 1e9 / one
        model = cache[key][int(block)] / one
        errors.setdefault(kernel, []).append(model / measured - 1)
        print(kernel, n, c, block, f"{measured:.2f}", f"{model:.2f}", f"{model / measured:.3f}")
    summary(errors)


if __name__ == "__main__":
    main()
