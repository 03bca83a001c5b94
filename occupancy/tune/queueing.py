"""How resident blocks share an SM over time (docs/model.md item 36): the busy share of a
closed queue of blocks that alternate between computing and waiting for their loads."""

from __future__ import annotations

import math

__all__ = ["busy_share"]


def busy_share(blocks: int, compute: float, wait: float) -> float:
    """The share of the time an SM computes while `blocks` resident blocks each cycle
    between `compute` clocks of its work (the SM shares itself among the blocks that have
    work) and `wait` clocks for their loads (each block its own, side by side): the
    finite-source queue of a closed network with a delay station and a processor-sharing
    one, whose busy share holds for any distribution of the two times (BCMP; for that
    idealised network), 1 - P0 with P0 = 1 / sum over k = 0..B of B! / (B - k)!
    (compute / wait)^k. One block: compute / (compute + wait). Blocks that wait at once
    queue for the SM when their data arrive, which staggers them: SGEMM_CUDA's 1-D
    blocktiling at 2048^3 (calibration part; 4 blocks, 334 clocks of a tile's compute
    behind 800 of exposed latency) computes 0.86 of its time here, 0.75 as f^B with blocks
    that drift independently (the form before, docs/model.md item 36)."""
    if wait <= 0:
        return 1.0
    if compute <= 0:
        return 0.0
    ratio, n = compute / wait, max(blocks, 1)  # n: at most the device's resident limit
    term, rest = 1.0, 0.0  # rest: the sum's terms for k >= 1 (inf where they overflow)
    for k in range(1, n + 1):
        term *= (n - k + 1) * ratio
        rest += term
    return 1.0 if math.isinf(rest) else rest / (1.0 + rest)
