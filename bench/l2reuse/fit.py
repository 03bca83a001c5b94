"""bench/l2reuse/fit.py: the share of re-reads L2 keeps, by footprint, fitted on a record of
l2reuse.py (its ncu-table.txt): MODE 0's points, where the second pass's DRAM reads over the
array's bytes less 1 are the share it lost. The law: kept = 1 up to a x L2, 0 from b x L2,
linear between (tune/reuse.py's L2_KEPT_FROM, L2_KEPT_TO); a and b on a 0.01 grid by least
squares over the lost shares. Prints the fit and each point's lost share, measured and fitted.
MODE 1's points (the output read back) are not used here; bench/l2reuse/model_check.py checks
the model on them.
Usage: python bench/l2reuse/fit.py bench/results/h200-l2reuse/ncu-table.txt [L2 bytes]"""

from __future__ import annotations

import sys
from pathlib import Path

H200_L2 = 62_914_560  # profiles/h200.yaml's l2_cache_bytes


def points(path: str) -> list[tuple[int, float, float]]:
    """(warps an SM, footprint in bytes, lost share) of every MODE 0 point."""
    out = []
    for line in Path(path).read_text().splitlines():
        f = dict(kv.split("=", 1) for kv in line.split())
        if f.get("mode") == "0" and f.get("check") == "ok":
            out.append((int(f["warps"]), float(f["footprint_MB"]) * 1e6, float(f["read"]) - 1))
    return out


def lost(footprint: float, l2: float, a: float, b: float) -> float:
    return min(1.0, max(0.0, (footprint / l2 - a) / (b - a)))


def fit(pts: list[tuple[int, float, float]], l2: float) -> tuple[float, float, float]:
    """(a, b, summed squared error) on a 0.01 grid, a in 0.30-1.20, b above a up to 2.00."""
    best = None
    for i in range(30, 121):
        for j in range(i + 1, 201):
            a, b = i / 100, j / 100
            err = sum((lost(f, l2, a, b) - m) ** 2 for _, f, m in pts)
            if best is None or err < best[2]:
                best = (a, b, err)
    assert best is not None
    return best


def main() -> None:
    path = sys.argv[1]
    l2 = float(sys.argv[2]) if len(sys.argv) > 2 else H200_L2
    pts = points(path)
    a, b, err = fit(pts, l2)
    print(f"{len(pts)} points; L2 {l2 / 1e6:.1f} MB; kept all up to a = {a:.2f} x L2 "
          f"({a * l2 / 1e6:.1f} MB), none from b = {b:.2f} x L2 ({b * l2 / 1e6:.1f} MB); "
          f"summed squared error {err:.3f}")
    worst = max(abs(lost(f, l2, a, b) - m) for _, f, m in pts)
    print(f"largest |fitted - measured| lost share: {worst:.3f}")
    print("warps footprint_MB lost_measured lost_fitted")
    for w, f, m in pts:
        print(f"{w} {f / 1e6:.1f} {m:.3f} {lost(f, l2, a, b):.3f}")


if __name__ == "__main__":
    main()
