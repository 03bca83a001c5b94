"""A loop that walks a `__constant__` table, every lane at the same entry, once many blocks
share an SM: the immediate constant cache's slow regime (docs/model.md items 16 and 29).

Warps of one block start together and walk the table in step, sharing each line the cache
fetches; blocks drift apart, and once enough of them share an SM each warp's uniform read
(ULDC) misses on its own. The SM then serves those reads at about one per ULDC_MISS_CLOCKS,
whatever the loop computes between them: a floor under the loop's time, up to 10x its issue
count. Measured on the H200 with loops written here (bench/results/h200-cwalk: three read
forms, tiles 1-8, tables of 150-1200 entries, 2-32 blocks an SM; bench/results/h200-uldc-walk:
one table through ULDC, 64 B-64 KB). When the regime holds:
- 12 or more resident blocks an SM (8 is bistable: some loops slow, some not; 4 never);
- a table over 256 B (smaller ones stayed fast at 32 blocks);
- the loop reads the table through ULDC and, beside it, through a register index (LDC: a
  second table or the same one's other entry), or through ULDC alone with fewer than
  ULDC_ALONE_CLOCKS of issue between reads (a ULDC-only loop with more stayed fast at 32
  blocks; a mixed one with 11 went slow).
A loop that reads through LDC alone never went slow. Not priced: 8-11 blocks (tune/ranked
names such points), loops whose trips the declared FLOPs do not give, and other chips than
compute capability 7.5-9.x (measured on 9.0 only; sm_100 and sm_120 read through LDCU).
"""

from __future__ import annotations

from collections.abc import Mapping

from occupancy.build.sass_pipes import pipe_factor
from occupancy.core.device import Device

ULDC_MISS_CLOCKS = 32.3  # SM clocks a warp's ULDC takes in the slow regime (median, h200-cwalk)
PRICED_BLOCKS = 12
SMALL_TABLE_BYTES = 256
ULDC_ALONE_CLOCKS = 10.0  # issue clocks an SM between a ULDC-only loop's reads (see above)
SCHEDULERS = 4


def _priced_arch(dev: Device) -> bool:
    try:
        major, minor = (int(x) for x in dev.compute_capability.split(".")[:2])
    except ValueError:
        return False
    return (7, 5) <= (major, minor) < (10, 0)


def uldc_issue_clocks(dev: Device, mix: Mapping[str, int]) -> float:
    """Issue clocks an SM spends on the loop between two of its ULDC reads (inf without)."""
    uldc = mix.get("uldc", 0)
    return mix.get("total", 0) * pipe_factor(dev, mix) / SCHEDULERS / uldc if uldc else \
        float("inf")


def walks_slow(dev: Device, mix: Mapping[str, int], blocks_per_sm: int) -> bool:
    """Whether the loop of this SASS mix is in the slow regime at `blocks_per_sm` resident
    blocks an SM (the conditions above)."""
    if not mix.get("uldc") or blocks_per_sm < PRICED_BLOCKS or not _priced_arch(dev):
        return False
    if mix.get("cbank3", 0) <= SMALL_TABLE_BYTES:
        return False
    return bool(mix.get("ldc3")) or uldc_issue_clocks(dev, mix) < ULDC_ALONE_CLOCKS


def constant_walk_seconds(dev: Device, mix: Mapping[str, int], runs: float,
                          blocks_per_sm: int) -> float:
    """The floor the slow regime puts under `runs` warp-wide executions of the loop spread
    over the SMs (0 where it does not hold)."""
    if not runs or not walks_slow(dev, mix, blocks_per_sm):
        return 0.0
    return runs * mix["uldc"] * ULDC_MISS_CLOCKS / (dev.sm_count * dev.boost_clock_mhz * 1e6)
