"""Predicted against measured on the H200, for every record: re-predicts each point with
the current model (compiled here, cached) and compares with the recorded medians.

Calibration used only bench/results/h200-tuning's SGEMM at 4096 (ISSUE_LSU_OVERLAP) and
transpose at 8192 (WORK_DRAM_LATENCY_CLOCKS), and Nsight Compute's wavefront counts
(banks.py). Everything else is out of sample: the other h200-tuning sizes, and all of
bench/results/h200-validate (new sizes and shapes, measured after the model was fixed),
including the shipped matmul family at 2048, 3000, 4096 and 8192, and
bench/results/h200-transpose-check (the transpose space again at 4096 and 5000, and at
3072, 7000 and 10000, measured after the L1 term), and bench/results/h200-layernorm
(llm.c's layernorm kernel 3, never used for anything before; the warp-path floor came
after looking at it) and bench/results/h200-layernorm-check (kernels 4 and 5 and new
shapes of 3, measured after that floor was committed).

Prints per record: points, median |predicted / measured - 1|, the fastest measured point's
predicted rank; writes bench/results/model-check.json.
Run: python bench/tuning_model_check.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.family import rank_family  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

RES = ROOT / "bench" / "results"
SGEMM, TRANSPOSE = "examples/sgemm/tune.yaml", "examples/transpose/tune.yaml"
LLMC = "examples/llmc/tune.yaml"


def cube(n: int) -> dict[str, int]:
    return {"M": n, "N": n, "K": n}


# (record, calibration?, manifest, kernel, problem)
CASES = [
    ("h200-tuning/sgemm-4096", True, SGEMM, "sgemm2d", {}),
    ("h200-tuning/transpose-8192", True, TRANSPOSE, "transpose", {}),
    ("h200-tuning/sgemm-2048", False, SGEMM, "sgemm2d", cube(2048)),
    ("h200-tuning/sgemm-8192", False, SGEMM, "sgemm2d", cube(8192)),
    ("h200-tuning/transpose-4096", False, TRANSPOSE, "transpose", {"N": 4096}),
    ("h200-tuning/llmc-matmul-forward", False, LLMC, "matmul_forward_kernel1", {}),
    ("h200-validate/sgemm-3072", False, SGEMM, "sgemm2d", cube(3072)),
    ("h200-validate/sgemm-6144", False, SGEMM, "sgemm2d", cube(6144)),
    ("h200-validate/transpose-5000", False, TRANSPOSE, "transpose", {"N": 5000}),
    ("h200-validate/transpose-6144", False, TRANSPOSE, "transpose", {"N": 6144}),
    ("h200-validate/llmc-4096-1024-1024", False, LLMC, "matmul_forward_kernel1",
     {"BT": 4096, "C": 1024, "OC": 1024}),
    *[(f"h200-transpose-check/transpose-{n}", False, TRANSPOSE, "transpose", {"N": n})
      for n in (3072, 4096, 5000, 7000, 10000)],
    *[(f"h200-layernorm/layernorm-{b}-{t}-{c}", False, LLMC, "layernorm_forward_kernel3",
       {"B": b, "T": t, "C": c}) for b, t, c in ((8, 1024, 768), (4, 1024, 1600), (32, 1024, 768))],
    *[(f"h200-layernorm-check/ln{k}-{b}-{t}-{c}", False, LLMC, f"layernorm_forward_kernel{k}",
       {"B": b, "T": t, "C": c}) for k, b, t, c in (
           (4, 8, 1024, 768), (4, 4, 1024, 1600), (5, 8, 1024, 768), (5, 4, 1024, 1600),
           (3, 16, 1024, 1024), (3, 2, 1024, 4096))],
]
SHIPPED = ["h200-2026-11-30/measure", "h200-validate/matmul-2048", "h200-validate/matmul-3000",
           "h200-validate/matmul-8192"]


def summary(pairs: list[tuple[float, float]]) -> dict[str, object]:
    """pairs: (predicted, measured) in predicted order."""
    errors = [p / m - 1 for p, m in pairs]
    fastest = min(range(len(pairs)), key=lambda i: pairs[i][1])
    best = pairs[fastest][1]
    return {"points": len(pairs), "median_abs_error": statistics.median(map(abs, errors)),
            "fastest_predicted_rank": fastest + 1,
            # how far the best of the model's top 3 measured behind the fastest
            "top3_behind_fastest": min(m for _, m in pairs[:3]) / best - 1,
            "errors": [round(e, 4) for e in errors]}


def tuning_case(dev: object, manifest: str, kernel: str, sets: dict[str, int], rec: dict
                ) -> dict[str, object]:
    measured = {json.dumps(r["params"], sort_keys=True): r["measured"]["median_ms"]
                for r in rec["results"] if r["verified"]}
    spec = load_tuning(ROOT / manifest, kernel, sets)
    pts, removed = points(spec)
    rep = rank(spec, dev, pts, removed)  # type: ignore[arg-type]
    pairs = [(r.prediction.predicted_ms, measured[key]) for r in rep.ranked
             if not r.pruned and r.prediction
             and (key := json.dumps(r.point.params, sort_keys=True)) in measured]
    return summary(pairs)


def shipped_case(dev: object, rec: dict) -> dict[str, object]:
    pairs = []
    ranked: dict[int, list] = {}  # the family's one ranking per size (what `tile` shows)
    for r in rec["results"]:
        if r["kernel"] != "matmul" or not r["verified"]:
            continue
        n = r["n"]
        if n not in ranked:
            ranked[n] = list(rank_family("matmul", dev, n).ranked)  # type: ignore[arg-type]
        p = next((x.prediction for x in ranked[n] if x.candidate and x.candidate.function ==
                  r["function"] and x.candidate.defines == r["defines"]
                  and list(x.candidate.block) == r["block"]), None)
        if p:
            pairs.append((p.predicted_ms, r["measured"]["median_ms"]))
    pairs.sort()
    return summary(pairs)


def main() -> None:
    dev = load_device("h200")
    out: dict[str, object] = {}
    for name, calibration, manifest, kernel, sets in CASES:
        path = RES / f"{name}.json"
        if path.is_file():
            s = tuning_case(dev, manifest, kernel, sets, json.loads(path.read_text()))
            out[name] = {"calibration": calibration, **s}
    for name in SHIPPED:
        path = RES / f"{name}.json"
        if path.is_file():
            out[f"{name} (matmul)"] = {"calibration": False,
                                       **shipped_case(dev, json.loads(path.read_text()))}
    for name, s in out.items():
        assert isinstance(s, dict)
        print(f"{name:42s} {'calib' if s['calibration'] else 'test ':5s} {s['points']:3d} points"
              f"  median |err| {s['median_abs_error']:6.1%}  fastest measured is predicted "
              f"#{s['fastest_predicted_rank']} (top 3: {s['top3_behind_fastest']:.1%} behind)")
    for label, keep in (("user kernels, out of sample", lambda n: "(matmul)" not in n),
                        ("shipped matmul, out of sample", lambda n: "(matmul)" in n)):
        errs = [abs(e) for n, s in out.items() if keep(n) and isinstance(s, dict)
                and not s["calibration"] for e in s["errors"]]  # type: ignore[attr-defined]
        out[label] = {"points": len(errs), "median_abs_error": statistics.median(errs)}
        print(f"{label}: {len(errs)} points, median |err| {statistics.median(errs):.1%}")
    (RES / "model-check.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
