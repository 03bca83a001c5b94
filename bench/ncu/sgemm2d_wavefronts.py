"""ptxsim's shared wavefronts for the four SGEMM_CUDA 2-D points of
bench/results/h200-sgemm2d-ncu, against Nsight Compute's (CPU; the corpus's manifest,
bench/CORPUS.md, with its sources placed):

    python bench/ncu/sgemm2d_wavefronts.py

A warp's run is one tile (BK of K) of the middle block, the sample of its first and last
warps (tune/traffic.py); the kernel's total is that times K / BK tiles, its warps and its
blocks at 2048^3."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy import load_device  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.spaces import points, rank, traffic_job  # noqa: E402
from occupancy.tune.traffic import warp_traffic  # noqa: E402

N = 2048
NSIGHT_M = {(128, 128, 16, 8, 4): 105.6, (64, 256, 32, 8, 8): 105.9, (128, 64, 32, 8, 4): 107.3,
            (128, 128, 32, 16, 4): 88.1}  # bench/results/h200-sgemm2d-ncu/README.md


def main() -> None:
    spec = load_tuning(ROOT / "bench/corpus/SGEMM_CUDA/tune.yaml", "sgemm2DBlocktiling",
                       {"M": N, "N": N, "K": N})
    key = ("BM", "BN", "BK", "TM", "TN")
    pts = [p for p in points(spec)[0] if tuple(p.params[k] for k in key) in NSIGHT_M]
    dev = load_device("h200")
    for r in rank(spec, dev, pts).ranked:
        job = traffic_job(spec, r.point, r.build, r.resources, dev)
        t = warp_traffic(*job) if job else None
        if t is None:
            print(r.point.params, "no ptxsim run")
            continue
        p = r.point.params
        warps = p["BM"] * p["BN"] // (p["TM"] * p["TN"]) // 32
        total = t.shared_wavefronts * (N // p["BK"]) * warps * (N // p["BM"]) * (N // p["BN"]) / 1e6
        ncu = NSIGHT_M[tuple(p[k] for k in key)]
        share = "-" if job[-1] is None else f"{job[-1]:.3f}"
        print(f"{' '.join(str(p[k]) for k in key):<16} SASS scalar share {share:>5}  "
              f"ptxsim {total:6.1f} M  Nsight {ncu:6.1f} M  ({total / ncu - 1:+.1%})")


if __name__ == "__main__":
    main()
