"""Writes bench/clusters/cases.txt: the H200 cluster table (blocks/SM 1..32 x cluster size
1..16, made with k_light, 32 threads and dynamic smem sized by the solver) and >= 600
random cases (kernels, block sizes, smem, carveouts, 1-D/2-D/3-D cluster shapes)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from occupancy import load_device, solve  # noqa: E402

H200 = load_device("h200")


def dyn_for_blocks(b: int) -> int:
    """The largest dynamic smem at which 32-thread blocks give exactly b blocks per SM."""
    lo, hi = 0, H200.shared_memory_per_block_optin_bytes
    if solve(H200, 32, 16, 0, 0).active_blocks_per_sm == b:
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if solve(H200, 32, 16, 0, mid).active_blocks_per_sm >= b:
            lo = mid
        else:
            hi = mid - 1
    assert solve(H200, 32, 16, 0, lo).active_blocks_per_sm == b, b
    return lo


def shapes(rng: random.Random) -> tuple[int, int, int]:
    kind = rng.random()
    if kind < 0.5:
        return rng.randint(1, 16), 1, 1
    while True:
        x, y, z = rng.choice([1, 2, 4, 8, 3]), rng.choice([1, 2, 4, 3]), rng.choice([1, 1, 2])
        if x * y * z <= 16:
            return x, y, z


def main() -> None:
    rng = random.Random(20261130)
    lines = []
    for b in range(1, 33):
        d = dyn_for_blocks(b)
        for s in range(1, 17):
            lines.append(f"q 0 32 {d} -1 {s} 1 1")
    for _ in range(640):
        kid = rng.randrange(6)
        threads = rng.choice([32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024])
        dyn = rng.choice([0, 0, rng.randrange(0, 20000), rng.randrange(0, 120000)])
        static = {4: 4096 * 4, 5: 11000 * 4}.get(kid, 0)
        dyn = min(dyn, H200.shared_memory_per_block_optin_bytes - static)
        carveout = rng.choice([-1, -1, 0, 25, 50, 75, 100])
        x, y, z = shapes(rng)
        lines.append(f"q {kid} {threads} {dyn} {carveout} {x} {y} {z}")
    Path(__file__).with_name("cases.txt").write_text("\n".join(lines) + "\n")
    print(len(lines), "cases")


if __name__ == "__main__":
    main()
