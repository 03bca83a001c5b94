"""Data for output: results as JSON-ready dicts (the stable interface) and units parsing."""

from __future__ import annotations

import re
from typing import Any

from .device import Device
from .errors import OccupancyError
from .solver import LIMIT_NAMES, AvailableSmem, BestBlockSize, Cliff, OccupancyResult

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
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise OccupancyError(f"'{text}' is not a block shape: use N, XxY or XxYxZ "
                             "with positive integers (e.g. 256 or 16x16)")
    return tuple(int(p) for p in parts)


def result_dict(dev: Device, r: OccupancyResult, block: tuple[int, ...] | None = None,
                cliff: tuple[Cliff, Cliff] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "device": dev.key,
        "device_name": dev.name,
        "compute_capability": dev.compute_capability,
        "block": list(block) if block else [r.threads_per_block],
        "threads_per_block": r.threads_per_block,
        "registers_per_thread": r.registers_per_thread,
        "static_shared_memory": r.static_shared_memory,
        "dynamic_shared_memory": r.dynamic_shared_memory,
        "carveout": r.carveout,
        "max_threads_per_block": r.max_threads_per_block,
        "block_barriers": r.block_barriers,
        "opt_in": r.opt_in,
        "warps_per_block": r.warps_per_block,
        "active_blocks_per_sm": r.active_blocks_per_sm,
        "active_warps_per_sm": r.active_warps_per_sm,
        "active_threads_per_sm": r.active_threads_per_sm,
        "max_warps_per_sm": r.max_warps_per_sm,
        "occupancy": r.occupancy,
        "limiters": [n for n in LIMIT_NAMES if n in r.limiters],
        "block_limits": dict(r.block_limits),
        "allocated_registers_per_block": r.allocated_registers_per_block,
        "allocated_shared_memory_per_block": r.allocated_shared_memory_per_block,
        "shared_memory_per_sm_bytes": r.shared_memory_per_sm_bytes,
        "requires_opt_in": r.requires_opt_in,
        "partitioned_global_caching": r.partitioned_global_caching,
        "launchable": r.launchable,
        "cannot_launch": list(r.cannot_launch),
        "notes": list(r.notes),
    }
    if cliff is not None:
        out["cliffs"] = {c.resource: cliff_dict(c) for c in cliff}
    return out


def cliff_dict(c: Cliff) -> dict[str, Any]:
    return {"current": c.current, "gain_at": c.gain_at, "gain_blocks": c.gain_blocks,
            "lose_at": c.lose_at, "lose_blocks": c.lose_blocks}


def best_dict(dev: Device, best: BestBlockSize, available: list[AvailableSmem]) -> dict[str, Any]:
    return {
        "device": dev.key,
        "device_name": dev.name,
        "block_size": best.block_size,
        "min_grid_size": best.min_grid_size,
        "active_blocks_per_sm": best.result.active_blocks_per_sm,
        "active_threads_per_sm": best.result.active_threads_per_sm,
        "occupancy": best.result.occupancy,
        "limiters": [n for n in LIMIT_NAMES if n in best.result.limiters],
        "candidates": [{"block_size": b, "active_threads_per_sm": t} for b, t in best.candidates],
        "available_dynamic_shared_memory": [
            {"blocks": a.blocks, "bytes": a.bytes, "driver_bytes": a.driver_bytes}
            for a in available
        ],
    }
