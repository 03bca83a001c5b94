"""Paths of the solver, clusters and searches the differential test does not reach:
launch bounds, carveouts and barriers inside the cliff search, the available-smem edge
cases, and every branch of the cluster answer, each against an independent computation."""

from __future__ import annotations

import dataclasses

import pytest

from occupancy import load_device, solve
from occupancy.core.clusters import cluster_occupancy, cluster_size_problems, max_cluster_size
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import available_dynamic_smem, best_block_size, cliffs


def _brute_cliffs(dev, r):  # type: ignore[no-untyped-def]
    """The cliffs by trying every value: an oracle for the binary search."""
    a = r.active_blocks_per_sm

    def by_regs(x: int) -> int:
        return solve(dev, r.threads_per_block, x, r.static_shared_memory, r.dynamic_shared_memory,
                     r.carveout, r.max_threads_per_block, r.block_barriers, r.opt_in
                     ).active_blocks_per_sm

    cur = r.registers_per_thread
    top = min(dev.max_registers_per_thread, 255)
    gain = next((x for x in range(cur - 1, -1, -1) if by_regs(x) > a), None)
    lose = next((x for x in range(cur + 1, top + 1) if by_regs(x) < a), None) if a > 0 else None
    return gain, lose


CONFIGS = [
    ("h200", 256, 40, 0, 20000, 25, 256, 3, True),
    ("a100", 128, 72, 4096, 30000, 50, None, 1, True),
    ("v100", 512, 32, 0, 0, 0, 1024, 0, False),
    ("rtx3090", 384, 64, 8192, 16000, None, 384, 2, True),
    ("h100", 1024, 30, 0, 0, None, None, 16, True),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_register_cliffs_equal_a_brute_force(cfg: tuple) -> None:  # type: ignore[type-arg]
    name, threads, regs, static, dyn, carveout, bound, barriers, opt_in = cfg
    dev = load_device(name)
    r = solve(dev, threads, regs, static, dyn, carveout, bound, barriers, opt_in)
    reg_cliff, smem_cliff = cliffs(dev, r)
    gain, lose = _brute_cliffs(dev, r)
    assert (reg_cliff.gain_at, reg_cliff.lose_at) == (gain, lose)
    if gain is not None:
        assert reg_cliff.gain_blocks == solve(dev, threads, gain, static, dyn, carveout, bound,
                                              barriers, opt_in).active_blocks_per_sm
    if smem_cliff.lose_at is not None:
        lost = solve(dev, threads, regs, min(static, smem_cliff.lose_at),
                     smem_cliff.lose_at - min(static, smem_cliff.lose_at), carveout, bound,
                     barriers, opt_in)
        assert lost.active_blocks_per_sm == smem_cliff.lose_blocks < r.active_blocks_per_sm
        before = solve(dev, threads, regs, static, smem_cliff.lose_at - 1 - static, carveout, bound,
                       barriers, opt_in)
        assert before.active_blocks_per_sm == r.active_blocks_per_sm


def test_best_block_size_honours_the_launch_bound_and_defaults() -> None:
    h200 = load_device("h200")
    assert best_block_size(h200, 32, max_threads_per_block=256).block_size == 256
    bounded = best_block_size(h200, 128, max_threads_per_block=200)
    assert bounded.block_size <= 200 and bounded.result.max_threads_per_block == 200
    assert best_block_size(h200) == best_block_size(h200, 0, 0, 0, None, None, 1, True)
    tiny = best_block_size(h200, 255, max_threads_per_block=1)
    assert tiny.block_size == 1 and [b for b, _ in tiny.candidates] == [1]


def test_available_smem_edges() -> None:
    h200 = load_device("h200")
    with pytest.raises(OccupancyError, match="must be >= 1, got 0"):
        available_dynamic_smem(h200, 0, 128)
    never = available_dynamic_smem(h200, 40, 128)  # 32 blocks per SM at most
    assert (never.bytes, never.driver_bytes, never.blocks) == (None, None, 40)
    # Carveout 0: the smallest non-zero size (8 KB) holds the blocks.
    z = available_dynamic_smem(h200, 2, 128, 32, 0, carveout=0)
    assert (z.bytes, z.driver_bytes) == (4096 - 1024, 4096)
    assert available_dynamic_smem(h200, 1, 128) == available_dynamic_smem(h200, 1, 128, 0, 0, None,
                                                                           True, 1)
    one = available_dynamic_smem(h200, 1, 128, opt_in=False)
    assert one.bytes == 49152 and one.driver_bytes == 49152
    barriers = available_dynamic_smem(h200, 40 // 2, 64, block_barriers=4)  # 64 // 4 = 16 fit
    assert barriers.bytes is None


def test_cluster_answers_in_every_branch() -> None:
    h100, b200, h200, a100 = (load_device(n) for n in ("h100", "b200", "h200", "a100"))
    e = cluster_occupancy(h100, 8, (8, 1, 1))
    assert (e.active_clusters, e.lower, e.upper, e.source) == (None, 64, 132, "estimate")
    assert e.size == 8 and e.notes and "no measured cluster table" in e.notes[0]
    assert e.active_blocks_per_sm is None and e.launchable
    b = cluster_occupancy(b200, 2, (2, 2, 1))
    assert (b.lower, b.upper) == (1, 74)  # no GPC count: only the portable guarantee
    big = cluster_occupancy(h100, 1, (16, 1, 1))
    assert (big.lower, big.upper) == (0, 8)
    m = cluster_occupancy(h200, 3, (2, 2, 2))
    assert (m.active_clusters, m.lower, m.upper, m.source) == (45, 45, 45, "measured")
    assert m.active_blocks_per_sm == 45 * 8 and m.notes == ()
    none = cluster_occupancy(h200, 0, (2, 1, 1))
    assert none.problems == ("no block of this launch fits on an SM",)
    assert (none.active_clusters, none.size, none.source) == (0, 2, "measured")
    zeroed = dataclasses.replace(h200, cluster_table=((5, 0),))
    z = cluster_occupancy(zeroed, 1, (2, 1, 1))
    assert z.active_clusters == 0 and z.problems == (
        "no GPC of NVIDIA H200 holds a cluster of 2 blocks at 1 blocks per SM",)
    probs, notes = cluster_size_problems(a100, (2, 1, 1))
    assert probs == ["thread-block clusters need compute capability 9.0 or newer; NVIDIA A100 "
                     "SXM4 40GB is 8.0"] and notes == []
    probs, notes = cluster_size_problems(h200, (4, 4, 1), grid=(8, 6))
    assert probs == ["the grid 8x6x1 is not a multiple of the cluster 4x4x1 in every dimension"]
    assert notes and notes[0].startswith("a cluster of 16 blocks is non-portable (over 8)")
    probs, _ = cluster_size_problems(h200, (4, 4, 2))
    assert probs == ["a cluster of 32 blocks exceeds the 16 NVIDIA H200 allows (portable: 8)"]
    assert cluster_size_problems(h200, (2, 1, 1), grid=(4, 3, 5)) == ([], [])


def test_max_cluster_size_variants() -> None:
    h200, h100, a100 = (load_device(n) for n in ("h200", "h100", "a100"))
    assert max_cluster_size(h200, 1) == (16, "measured")
    assert max_cluster_size(h200, 1, portable_only=True) == (8, "measured")
    assert max_cluster_size(h200, 1, min_active=60) == (2, "measured")  # 66 >= 60 > 39
    assert max_cluster_size(h200, 1, min_active=1000) == (0, "measured")
    assert max_cluster_size(h200, 0) == (0, "measured")
    assert max_cluster_size(a100, 4) == (0, "estimate")
    assert max_cluster_size(h100, 2, min_active=64) == (2, "estimate")  # lower: 8 x (16 // 2)
