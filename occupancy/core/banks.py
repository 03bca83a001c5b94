"""Shared-memory bank conflicts and global-memory coalescing of one warp's access.

Pure functions over the byte addresses the 32 threads of a warp touch. Shared memory
has `banks` banks of `width` bytes (32 x 4 B from CC 2.0; 16 on CC 1.x, serviced per
half-warp); threads reading the same word share it (a broadcast). Accesses wider than 4
bytes are served in phases: 8-byte accesses per half-warp, 16-byte per quarter-warp, since
the unit returns 128 bytes (one register of the warp) per pass. When neighbouring threads
read the same address (thread t and t^1 everywhere, or t and t^2), it packs the return
and a phase covers twice the threads: a uniform LDS.128 takes 2 passes, not 4. Measured
on the H200 with Nsight Compute for 31 patterns (bench/results/h200-validate/
lds-wavefronts.json), all equal to what this function says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class BankResult:
    """Ways of the worst bank, and which banks each thread hits (phase by phase)."""

    ways: int  # 1 = conflict-free; n = the access is replayed n times
    wavefronts: int  # passes the access takes, all phases together
    banks: tuple[tuple[int, ...], ...]  # per thread: the banks its element covers
    words_per_bank: dict[int, int]  # worst phase: distinct words each bank serves


def bank_conflicts(addresses: Sequence[int], element_bytes: int = 4, banks: int = 32,
                   width: int = 4, warp_size: int = 32) -> BankResult:
    """Conflict ways of one warp-wide shared-memory access at these byte addresses."""
    if element_bytes not in (1, 2, 4, 8, 16):
        raise ValueError(f"element size must be 1, 2, 4, 8 or 16 bytes, got {element_bytes}")
    phase = warp_size
    if banks == 16:
        phase = warp_size // 2  # CC 1.x: a half-warp at a time
    packed = 2 if banks != 16 and _pairs_share(addresses) else 1
    if element_bytes == 8:
        phase = min(phase, warp_size // 2 * packed)
    elif element_bytes == 16:
        phase = min(phase, warp_size // 4 * packed)
    per_thread = []
    worst = 0
    wavefronts = 0
    worst_map: dict[int, int] = {}
    for start in range(0, len(addresses), phase):
        words: dict[int, set[int]] = {}
        for a in addresses[start:start + phase]:
            first, last = a // width, (a + element_bytes - 1) // width
            for w in range(first, last + 1):
                words.setdefault(w % banks, set()).add(w)
        counts = {b: len(ws) for b, ws in words.items()}
        ways = max(counts.values(), default=1)
        wavefronts += ways
        if ways > worst:
            worst, worst_map = ways, counts
    for a in addresses:
        first, last = a // width, (a + element_bytes - 1) // width
        per_thread.append(tuple(sorted({w % banks for w in range(first, last + 1)})))
    return BankResult(max(worst, 1), max(wavefronts, 1), tuple(per_thread), worst_map)


def _pairs_share(addresses: Sequence[int]) -> bool:
    """Thread t reads what t^1 reads, for every t; or what t^2 reads."""
    n = len(addresses)
    return n > 1 and any(all(addresses[t] == addresses[t ^ k] for t in range(n) if t ^ k < n)
                         for k in (1, 2))


def sectors(addresses: Sequence[int], element_bytes: int = 4, sector_bytes: int = 32) -> int:
    """32-byte sectors one warp-wide global access touches (ideal: 4 for 32 x 4 B)."""
    touched = set()
    for a in addresses:
        for s in range(a // sector_bytes, (a + element_bytes - 1) // sector_bytes + 1):
            touched.add(s)
    return len(touched)


def ideal_sectors(threads: int, element_bytes: int, sector_bytes: int = 32) -> int:
    return max(1, -(-threads * element_bytes // sector_bytes))


def tile_addresses(row_pitch_words: int, column: bool, element_bytes: int = 4,
                   stride: int = 1, offset: int = 0, threads: int = 32) -> list[int]:
    """Byte addresses of a warp reading a 2-D tile: along a row (thread t takes element
    offset + t*stride of one row) or down a column (thread t takes row t)."""
    if column:
        return [(t * row_pitch_words + offset) * element_bytes for t in range(threads)]
    return [(offset + t * stride) * element_bytes for t in range(threads)]
