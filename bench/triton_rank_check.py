"""How well tune/triton_rank.py orders a measured Triton space, offline: the fused-MoE
space of bench/gpu_triton.py part B (1,152 configs on the H200, M=256, N=14336, K=4096,
E=8, top_k=2; bench/results/h200-triton/prune), every config that ran rebuilt from the
committed table (shared memory, registers, spills as compiled there: programs per SM are
checked to equal the table's) and ranked by the current model.

The split, fixed once: a config's half is the parity of the first byte of sha256(its key
as the table spells it). Calibration is the even half; validation the odd half. A model
change is judged on the validation half only, by the best measured time among the
predicted top k of that half (k = 16 stands for the hook's top 32 of the whole space)
over the half's best. The whole space is reported too, for the hook's own figure.

Run: python bench/triton_rank_check.py [OUT.json]
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from occupancy.build.triton import TritonConfig, TritonKernel, occupancy  # noqa: E402
from occupancy.inputs.profiles import load_device  # noqa: E402
from occupancy.tune.triton_rank import GemmProblem, predict_gemm_ms  # noqa: E402

DATA = ROOT / "bench" / "results" / "h200-triton" / "prune"
KS = (1, 2, 4, 8, 16, 32)


def half_of(key: str) -> str:
    return "calibration" if hashlib.sha256(key.encode()).digest()[0] % 2 == 0 else "validation"


def main() -> None:
    table = json.loads((DATA / "triton-moe-table.json").read_text())
    run = json.loads((DATA / "triton-moe-prune.json").read_text())
    times = {k: v for k, v in run["full"]["timings_ms"].items() if v != math.inf}
    row = table["devices"]["NVIDIA H200"]
    dev = load_device("h200")
    prob = run["problem"]
    p = GemmProblem(prob["M"], prob["N"], prob["K"], prob["E"], prob["top_k"])
    kernels, mismatched = {}, 0
    for key, c in row["configs"].items():
        if not c["fits"] or key not in times:
            continue
        k = TritonKernel("fused_moe_kernel", "9.0", TritonConfig.from_dict(c["config"]),
                         shared=c["shared"], registers=c["registers"],
                         stack_frame_bytes=c["spills"] * 4,
                         max_threads=c["config"]["num_warps"] * 32)
        mismatched += occupancy(k, dev).active_blocks_per_sm != c["programs_per_sm"]
        kernels[key] = k
    pred = {key: predict_gemm_ms(k, dev, p) for key, k in kernels.items()}
    out: dict = {"data": str(DATA.relative_to(ROOT)), "problem": prob, "configs": len(kernels),
                 "programs_per_sm_mismatches": mismatched}
    for part in ("calibration", "validation", "whole"):
        keys = [k for k in kernels if part == "whole" or half_of(k) == part]
        order = sorted(keys, key=lambda k: (pred[k], list(row["configs"]).index(k)))
        best = min(times[k] for k in keys)
        out[part] = {"configs": len(keys), "best_ms": best,
                     "best_of_predicted_top_k_over_best": {
                         str(n): round(min(times[k] for k in order[:n]) / best, 4) for n in KS},
                     "measured_rank_of_predicted_best": sorted(keys, key=times.__getitem__)
                     .index(order[0]) + 1}
    text = json.dumps(out, indent=1)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
