"""Formatting shared by every renderer: percentages, limiter names, and the rows of the
tile, check and measure tables (text, Markdown and HTML build their tables from these)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from occupancy.core.words import pct

if TYPE_CHECKING:
    from occupancy.gate.check import Verdict
    from occupancy.tune.advisor import TileReport
    from occupancy.tune.records import MeasureResult

TILE_HEAD = ["candidate", "block", "regs", "smem B", "blk", "occ.", "ways", "pred. ms", "bound"]


def tile_rows(t: TileReport) -> list[list[str]]:
    """One row per candidate; '*' marks the pick, '~' an estimated register count."""
    rows = []
    for a in t.analyses:
        c, p = a.candidate, a.prediction
        shape = "x".join(str(b) for b in c.block if b != 1) or "1"
        rows.append([("* " if a is t.recommended else "") + c.label, shape,
                     f"{a.resources.registers_per_thread}" + ("~" if a.resources.estimated else ""),
                     f"{a.resources.static_shared_memory:,}", str(a.occupancy.active_blocks_per_sm),
                     pct(a.occupancy.occupancy), str(a.counts.bank_conflict_ways),
                     f"{p.predicted_ms:.3f}" if p else "-", p.bound if p else "no launch"])
    return rows


CHECK_HEAD = ["kernel", "device", "regs", "smem B", "blocks", "occ.", "verdict"]
VERDICT_WORDS = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}


def check_rows(verdicts: Sequence[Verdict]) -> list[list[str]]:
    """One row per kernel x device (names made inert by the caller's escaping)."""
    out = []
    for v in verdicts:
        r = v.result
        out.append([v.kernel, v.device,
                    "-" if v.registers_per_thread is None else str(v.registers_per_thread),
                    "-" if r is None else f"{r.static_shared_memory + r.dynamic_shared_memory:,}",
                    "-" if r is None else str(v.active_blocks_per_sm),
                    "-" if r is None else pct(v.occupancy), VERDICT_WORDS[v.status]])
    return out


# blocks per SM predicted/driver; the rate in TFLOP/s (matmul) or GB/s (transpose); the rate
# over this run's ceiling (cuBLAS SGEMM, device copy). Short enough for 80 columns.
MEASURE_HEAD = ["candidate", "ok", "blk p/d", "pred ms", "meas ms", "err", "rate", "ceil"]


def measure_rows(results: Sequence[MeasureResult]) -> list[list[str]]:
    """One row per measured candidate of a `measure` record."""
    rows = []
    for r in results:
        rate = (f"{r['tflops']:,.1f} TF/s" if "tflops" in r else f"{r.get('gb_s', 0.0):,.0f} GB/s")
        rows.append([r["label"], "yes" if r["verified"] else "NO",
                     f"{r['predicted_active_blocks_per_sm']}/{r['driver_active_blocks_per_sm']}"
                     + ("" if r["occupancy_match"] else " !"),
                     "-" if r["predicted_ms"] is None else f"{r['predicted_ms']:.3f}",
                     f"{r['measured']['median_ms']:.3f}",
                     "-" if r["error"] is None else f"{r['error'] * 100:+.0f}%", rate,
                     pct(r["percent_of_ceiling"])])
    return rows
