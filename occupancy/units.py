"""Units on the command line and in manifests: sizes (8K, 8KiB, 8192) and block shapes."""

from __future__ import annotations

import re

from .errors import OccupancyError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib)?\s*$", re.IGNORECASE)
_FACTORS = {None: 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20,
            "mib": 1 << 20}


def parse_bytes(text: str) -> int:
    """'8K', '8KiB', '8KB' (all 8192: CUDA counts shared memory in binary units) or '8192'."""
    m = _SIZE.match(str(text))
    if not m:
        raise OccupancyError(f"'{text}' is not a size: use bytes (8192) or 8K / 8KiB / 1M")
    value = float(m.group(1)) * _FACTORS[m.group(2).lower() if m.group(2) else None]
    if value != int(value):
        raise OccupancyError(f"'{text}' is not a whole number of bytes")
    return int(value)


def parse_block(text: str) -> tuple[int, ...]:
    """'256', '16x16' or '32x8x2' -> the block's dimensions."""
    parts = re.split(r"\s*[x×,]\s*", str(text).strip().lower())
    if not 1 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() and int(p) > 0 for p in parts):
        raise OccupancyError(f"'{text}' is not a block shape: use N, XxY or XxYxZ "
                             "with positive integers (e.g. 256 or 16x16)")
    return tuple(int(p) for p in parts)
