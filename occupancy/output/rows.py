"""Formatting shared by every renderer: percentages, limiter names, and the rows of the
tile, check and measure tables (text, Markdown and HTML build their tables from these)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from occupancy.core.words import pct

if TYPE_CHECKING:
    from occupancy.gate.check import Verdict
    from occupancy.tune.records import MeasureResult
    from occupancy.tune.spaces import TuneReport

TILE_HEAD = ["candidate", "block", "regs", "smem B", "blk", "occ.", "ways", "pred. ms", "bound"]


def tile_head(t: TuneReport) -> list[str]:
    """The table's columns: bank-conflict ways where hand counts give them."""
    return TILE_HEAD if any(r.counts for r in t.ranked) else [h for h in TILE_HEAD if h != "ways"]


def tile_rows(t: TuneReport) -> list[list[str]]:
    """One row per point that launches, best first; '*' marks the pick, '~' an estimated
    register count (the pruned are listed apart, with their reasons)."""
    ways = "ways" in tile_head(t)
    rows = []
    for r in t.ranked:
        res, occ, p = r.resources, r.occupancy, r.prediction
        if r.pruned or res is None or occ is None:
            continue
        shape = "x".join(str(b) for b in r.point.block if b != 1) or "1"
        row = [("* " if r is t.recommended else "") + r.label, shape,
               f"{res.registers_per_thread}" + ("~" if res.estimated else ""),
               f"{res.static_shared_memory + r.point.dynamic_shared_memory:,}",
               str(occ.active_blocks_per_sm), pct(occ.occupancy)]
        if ways:
            row.append(str(r.counts.bank_conflict_ways) if r.counts else "-")
        rows.append(row + [ms(p.predicted_ms) if p else "-", p.bound if p else "-"])
    return rows


CHECK_HEAD = ["kernel", "device", "regs", "smem B", "blocks", "occ.", "verdict"]
VERDICT_WORDS = {"pass": "ok", "fail": "FAIL", "error": "ERROR"}


def tally_line(verdicts: Sequence[Verdict]) -> str:
    """The one pass/fail tally every check renderer prints: `2 passed, 1 failed, 1 errors`."""
    from occupancy.gate.check import tally

    passed, failed, errors = tally(verdicts)
    return f"{passed} passed, {failed} failed" + (f", {errors} errors" if errors else "")


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
                     "-" if r["predicted_ms"] is None else ms(r["predicted_ms"]),
                     ms(r["measured"]["median_ms"]),
                     "-" if r["error"] is None else f"{r['error'] * 100:+.0f}%", rate,
                     pct(r["percent_of_ceiling"])])
    return rows


def ms(value: float) -> str:
    """A time in milliseconds to 4 significant digits: 24.47, 0.1005, 0.007123 (a fixed 3
    decimals showed a 7 us kernel as 0.007 and hid the differences between leaders)."""
    return f"{value:.4g}" if value >= 1e-4 else f"{value:.2e}"
