"""How resident warps and blocks share an SM over time: the issue side's growth where a
scheduler's warps wait for their own results (docs/model.md items 18-19), and the busy
share of a closed queue of blocks that alternate between computing and waiting for their
loads (item 36)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from occupancy.build.sass_pipes import SCHEDULERS_PER_SM, issue_slots

__all__ = ["busy_share", "warp_wait_factor"]


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


def warp_wait_factor(mix: Mapping[str, int], warps: int) -> float:
    """The factor the issue side grows by where a warp waits for its own results (the
    SASS's `warp_wait`: clocks a lone warp waits per pass for its shared loads and its
    arithmetic, against the `total` it issues). A pass waits a fraction f of its time; a
    scheduler idles only when all of its warps wait at once (f^w, warps drifting
    independently of each other; _tiled_loop_stall takes blocks as a queue): a rolled k
    loop whose FFMAs need the loads just issued runs 1.7x its issue count with one warp a
    scheduler and 1.02x with four (bench/results/h200-lsu-overlap).
    An SM with fewer warps than schedulers issues on that many of them only, each warp at
    its lone pace: 4 / warps x 1 / (1 - f) (a warp alone on an SM: 4x its issue count even
    where it never waits)."""
    wait, issued = max(mix.get("warp_wait", 0), 0), issue_slots(mix)
    if "warp_wait" not in mix or issued <= 0:
        return 1.0  # no SASS read: the model's register guess stands in
    f = wait / (issued + wait)
    if warps < SCHEDULERS_PER_SM:
        return SCHEDULERS_PER_SM / max(warps, 1) / (1 - f)
    return 1 / (1 - f ** (warps / SCHEDULERS_PER_SM))
