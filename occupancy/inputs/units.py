"""Units on the command line and in manifests: sizes (8K, 8KiB, 8192) and block shapes."""

from __future__ import annotations

import re

from occupancy.core.errors import OccupancyError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib)?\s*$", re.IGNORECASE)
_FACTORS = {None: 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20,
            "mib": 1 << 20}


def parse_bytes(text: str) -> int:
    """'8K', '8KiB', '8KB' (all 8192: CUDA counts shared memory in binary units) or '8192'."""
    from fractions import Fraction

    from occupancy.core.limits import INT32_MAX
    from occupancy.inputs.safety import inert

    m = _SIZE.match(str(text)) if len(str(text)) <= 40 else None
    if not m:
        raise OccupancyError(f"'{inert(str(text)[:40])}' is not a size: use bytes (8192) or 8K / "
                             "8KiB / 1M, at most 2 GiB")
    value = Fraction(m.group(1)) * _FACTORS[m.group(2).lower() if m.group(2) else None]
    if value.denominator != 1:
        raise OccupancyError(f"'{text}' is not a whole number of bytes")
    if value > INT32_MAX:
        raise OccupancyError(f"'{text}' is over {INT32_MAX:,} B, more than CUDA's 32-bit sizes hold")
    return int(value)


def parse_block(text: str) -> tuple[int, ...]:
    """'256', '16x16' or '32x8x2' -> the block's dimensions."""
    from occupancy.core.limits import INT32_MAX

    parts = re.split(r"\s*[x×,]\s*", str(text).strip().lower()[:100])
    if not 1 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() and len(p) <= 10
                                           and 0 < int(p) <= INT32_MAX for p in parts):
        raise OccupancyError(f"'{str(text)[:40]}' is not a block shape: use N, XxY or XxYxZ "
                             "with positive integers up to 2^31-1 (e.g. 256 or 16x16)")
    dims = tuple(int(p) for p in parts)
    total = 1
    for d in dims:
        total *= d
    if total > INT32_MAX:
        raise OccupancyError(f"'{text}' is {total:,} threads, more than CUDA's 32-bit sizes hold")
    return dims
