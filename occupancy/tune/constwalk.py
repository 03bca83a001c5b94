"""A loop that walks a `__constant__` table, every lane at the same entry, once many blocks
share an SM: the immediate constant cache's slow regime (docs/model.md items 16, 29 and 30).

Warps of one block start together and walk the table in step, sharing each line the cache
fetches; blocks drift apart, and once enough of them share an SM each warp's uniform read
(ULDC) misses on its own. The SM then serves those reads at about one per ULDC_MISS_CLOCKS,
whatever the loop computes between them: a floor under the loop's time, up to 12x its issue
count. Measured on the H200 with loops written here (bench/results/h200-cwalk: three read
forms, tiles 1-8, tables of 150-1200 entries, 2-32 blocks an SM; bench/results/h200-uldc-walk:
one table through ULDC, 64 B-64 KB; bench/results/h200-cwalk-gap: the same three forms at
9-11 blocks an SM). The rule, set on those rows (bench/cwalk/fit.py), holds where all of
this does:
- a loop (straight-line code was not measured) that reads the table through ULDC;
- 9 or more resident blocks an SM holding 32 or more warps between them (blocks of 128 ran
  at 0.73-1.22x the floor from 9 blocks; blocks of 64 only in part at 9-12, 0.23-0.93x, and
  at 0.57-1.05x at 16; at 8 the same loops ran at 0.38-1.04x with blocks of 128, 0.13-0.67x
  with 64 and 0.14-0.94x with 256: bistable; one loop, the 150-entry table at tile 2, stayed
  at ~0.2x at every count);
- a table over 256 B (smaller ones stayed fast at 32 blocks);
- beside the ULDC, reads through a register index (LDC: a second table or the same one's
  other entry), or ULDC alone with fewer than ULDC_ALONE_CLOCKS issue clocks an SM between
  reads (a ULDC-only loop with 12 stayed fast at 32 blocks, one with 6 went slow; a mixed
  one with 10 went slow).
A loop that reads through LDC alone never went slow. Not priced, and named by `tile` where
the loop has the form that went slow (unpriced_walk): 8 or more blocks an SM the rule
leaves out (8 blocks; 9+ holding fewer than 32 warps); tables of 8 KB or more at
fewer blocks (10 of 63 such rows at 2-6 blocks of 256-1024 threads ran 1.9-9.3x, the others
1.04-1.5x); loops whose trips the declared FLOPs do not give (no FFMA in the loop). Not
named either: a few rows at 4-6 blocks with smaller tables that ran 2.0-2.1x. Chips other
than compute capability 7.5-9.x are neither (measured on 9.0 only; sm_100 and sm_120 read
through LDCU, which the SASS reader does not count).
"""

from __future__ import annotations

from collections.abc import Mapping

from occupancy.build.sass_pipes import SCHEDULERS_PER_SM, pipe_factor
from occupancy.core.device import Device

ULDC_MISS_CLOCKS = 32.3  # SM clocks a warp's ULDC takes in the slow regime (median, h200-cwalk)
PRICED_BLOCKS = 9
PRICED_WARPS = 32  # resident warps an SM, beside PRICED_BLOCKS (see above)
SMALL_TABLE_BYTES = 256
ULDC_ALONE_CLOCKS = 10.0  # issue clocks an SM between a ULDC-only loop's reads (see above)
ULDC_BLOCKS = 8  # resident blocks an SM from which such loops ran slow in part
LARGE_TABLE_BYTES = 8192  # tables that ran slow at 2-6 blocks an SM too


def _priced_arch(dev: Device) -> bool:
    try:
        major, minor = (int(x) for x in dev.compute_capability.split(".")[:2])
    except ValueError:
        return False
    return (7, 5) <= (major, minor) < (10, 0)


def uldc_issue_clocks(dev: Device, mix: Mapping[str, int]) -> float:
    """Issue clocks an SM spends on the loop between two of its ULDC reads (inf without)."""
    uldc = mix.get("uldc", 0)
    return mix.get("total", 0) * pipe_factor(dev, mix) / SCHEDULERS_PER_SM / uldc if uldc else \
        float("inf")


def _slow_form(dev: Device, mix: Mapping[str, int]) -> bool:
    """A loop of the form that went slow: it reads a table over 256 B through ULDC, beside
    register-indexed reads or with little issue between its ULDCs, on a chip it applies to."""
    if not mix.get("uldc") or not mix.get("loop") or not _priced_arch(dev):
        return False
    if mix.get("cbank3", 0) <= SMALL_TABLE_BYTES:
        return False
    return bool(mix.get("ldc3")) or uldc_issue_clocks(dev, mix) < ULDC_ALONE_CLOCKS


def walks_slow(dev: Device, mix: Mapping[str, int], blocks_per_sm: int,
               warps_per_sm: int) -> bool:
    """Whether the loop of this SASS mix is in the slow regime at `blocks_per_sm` resident
    blocks an SM holding `warps_per_sm` warps (the conditions above)."""
    return blocks_per_sm >= PRICED_BLOCKS and warps_per_sm >= PRICED_WARPS and \
        _slow_form(dev, mix)


def constant_walk_seconds(dev: Device, mix: Mapping[str, int], runs: float,
                          blocks_per_sm: int, warps_per_sm: int, slow: bool = False) -> float:
    """The floor the slow regime puts under `runs` warp-wide executions of the loop spread
    over the SMs (0 where it does not hold). `slow`: wherever the loop has the slow form,
    whatever the blocks an SM: the time a walk the model names and does not price may take
    (at 8 blocks an SM the microbenchmarks ran at 0.13-1.04x this floor)."""
    held = _slow_form(dev, mix) if slow else walks_slow(dev, mix, blocks_per_sm, warps_per_sm)
    if not runs or not held:
        return 0.0
    return runs * mix["uldc"] * ULDC_MISS_CLOCKS / (dev.sm_count * dev.boost_clock_mhz * 1e6)


def unpriced_walk(dev: Device, mix: Mapping[str, int], blocks_per_sm: int, priced: bool) -> bool:
    """Whether a point walks a table where such loops ran slow and the model has not priced
    it (`priced`: its prediction holds the floor): `tile` names those points."""
    if priced or not _slow_form(dev, mix):
        return False
    return blocks_per_sm >= ULDC_BLOCKS or mix.get("cbank3", 0) >= LARGE_TABLE_BYTES
