"""`best`: the block size with the most resident threads, the dynamic smem left for N
blocks, and the largest cluster that keeps N clusters active, per device (logic the CLI
used to hold, here so the library and every renderer share it)."""

from __future__ import annotations

from dataclasses import dataclass

from occupancy.core.clusters import max_cluster_size
from occupancy.core.device import Device
from occupancy.core.limits import DEFAULT_REGISTERS_PER_THREAD
from occupancy.core.solver import (
    AvailableSmem,
    BestBlockSize,
    OccupancyResult,
    available_dynamic_smem,
    best_block_size,
    solve,
)


@dataclass(frozen=True)
class BestInputs:
    registers_per_thread: int = DEFAULT_REGISTERS_PER_THREAD
    static_shared_memory: int = 0
    dynamic_shared_memory: int = 0
    dynamic_shared_memory_per_thread: int = 0
    carveout: int | None = None
    max_threads_per_block: int | None = None
    block_barriers: int = 1
    opt_in: bool = True
    threads: int | None = None  # the block size for the tables (default: the best)
    blocks: int | None = None  # only this many resident blocks in the smem table
    min_clusters: int | None = None  # --cluster N


@dataclass(frozen=True)
class BestAnswer:
    device: Device
    inputs: BestInputs
    best: BestBlockSize
    at: OccupancyResult | None  # the solve at the table's block size
    available: tuple[AvailableSmem, ...]
    cluster_size: int | None  # largest cluster keeping min_clusters active
    cluster_source: str | None


def best_for_device(dev: Device, i: BestInputs) -> BestAnswer:
    def dyn(block: int) -> int:
        return i.dynamic_shared_memory + i.dynamic_shared_memory_per_thread * block

    b = best_block_size(dev, i.registers_per_thread, i.static_shared_memory,
                        dyn if i.dynamic_shared_memory_per_thread else i.dynamic_shared_memory,
                        i.carveout, i.max_threads_per_block, i.block_barriers, opt_in=i.opt_in)
    size = i.threads or b.block_size
    available: list[AvailableSmem] = []
    at = None
    if size:
        at = b.result if i.threads is None else solve(
            dev, size, i.registers_per_thread, i.static_shared_memory, dyn(size), i.carveout,
            i.max_threads_per_block, i.block_barriers, i.opt_in)
        if i.blocks:
            counts = [i.blocks]
        else:
            top = max(b.result.active_blocks_per_sm, 1) if i.threads is None else 8
            counts = list(range(1, min(top, 8) + 1))
        available = [available_dynamic_smem(dev, n, size, i.registers_per_thread,
                                            i.static_shared_memory, i.carveout, opt_in=i.opt_in,
                                            block_barriers=i.block_barriers) for n in counts]
    cluster_size = cluster_source = None
    if i.min_clusters is not None:
        cluster_size, cluster_source = max_cluster_size(
            dev, at.active_blocks_per_sm if at else 0, i.min_clusters)
    return BestAnswer(dev, i, b, at, tuple(available), cluster_size, cluster_source)
