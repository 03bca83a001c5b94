"""Terminal views of rankings and measurements (rich): `tile` (the shipped families and a
user's tuning entry alike), and `measure`'s records. Readable at 80 columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from occupancy.inputs.safety import inert
from occupancy.output.rows import MEASURE_HEAD, measure_rows, tile_head, tile_rows

if TYPE_CHECKING:
    from occupancy.output.answers import Tuned
    from occupancy.tune.records import MeasureRecord, TuningRecord
    from occupancy.tune.spaces import TuneReport

def tune_view(rep: TuneReport) -> RenderableType:
    """`tile`: a shipped family or a manifest entry, ranked: the table (best first, '*' the
    pick), where registers came from, the pruned and why, the pick's reasons, findings."""
    dev, spec = rep.device, rep.spec
    if rep.family:
        what = f"{inert(rep.family)}, n = {spec.problem.get('N', 0):,}, on"
    else:
        prob = ", ".join(f"{k} = {v:,}" for k, v in spec.problem.items())
        what = f"{inert(spec.name)} ({prob}) on"
    head = Text(f"{what} {inert(dev.name)} (CC {dev.compute_capability})", style="bold")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    for col in tile_head(rep):
        t.add_column(col, justify="left" if col in ("candidate", "bound") else "right",
                     no_wrap=col != "candidate")
    for row in tile_rows(rep):
        t.add_row(*[inert(x) for x in row])
    parts: list[RenderableType] = [head, t]
    found = [r.resources for r in rep.ranked if r.resources is not None]
    if found:
        parts.append(Text("registers: " + inert("; ".join(sorted({x.source for x in found})))
                          + ("  (~ = estimate)" if any(x.estimated for x in found) else "")))
    bounds = sorted({r.prediction.bound for r in rep.ranked if r.prediction})
    if bounds:
        from occupancy.tune.model import ROOF_NAMES

        parts.append(Text("bound: " + "; ".join(f"{b} = {ROOF_NAMES.get(b, b)}" for b in bounds)))
    pruned = [r for r in rep.ranked if r.pruned]
    if pruned:
        parts.append(Text(f"Pruned {len(pruned)}:", style="bold"))
        parts += [Text(inert(f"{r.label}: " + "; ".join(r.reasons))) for r in pruned[:20]]
        if len(pruned) > 20:
            parts.append(Text(f"... and {len(pruned) - 20} more (--json lists all)"))
    if rep.restricted_out and not rep.family:
        parts.append(Text(f"restrict removed {rep.restricted_out} points before compiling"))
    if rep.recommended is not None:
        parts += [Text(""), Text(f"Recommended: {inert(rep.recommended.label)}", style="bold")]
    parts += [Text(f"- {x}") for x in rep.why]
    parts += [Text(x) for x in rep.findings]
    parts += [Text(f"note: {x}") for x in rep.notes]
    return Group(*parts)


def tuned_view(a: Tuned) -> RenderableType:
    """A ranking and, where a `measure --store` file was given, what it holds for this GPU."""
    parts: list[RenderableType] = [tune_view(a.report)]
    if a.store is not None:
        if a.stored:
            parts.append(Text("Measured best on this GPU (" + inert(a.store) + "): " + inert(" ".join(
                f"{k}={v}" for k, v in a.stored["params"].items()))
                + f", {a.stored.get('median_ms', 0):.3f} ms"))
        else:
            parts.append(Text(f"Not measured on {inert(a.report.device.name)} ({inert(a.store)} has "
                              "no entry): the model's pick above stands"))
    return Group(*parts)


def measured_view(record: Any, tuning: bool) -> RenderableType:
    """`measure`: the shipped families' record, or a tuning entry's (with its search)."""
    if not tuning:
        return measure_view(record)
    parts: list[RenderableType] = [measure_tuning_view(record)]
    if "search" in record:
        s = record["search"]
        parts.append(Text(f"{s['runs']} runs of a budget of {s['budget']}: {s['stopped']}"))
        for i, p in enumerate(s.get("picks") or [], start=1):
            parts.append(Text(f"  {i}. {inert(str(p.get('point', '')))}: {inert(str(p.get('why', '')))}"))
    return Group(*parts)


def measure_view(data: MeasureRecord) -> RenderableType:
    ceil = data["ceilings"]
    parts: list[RenderableType] = [Text(
        inert(f"{data['device']} (CC {data['compute_capability']}), driver "
              f"{data['driver_version']}, CuPy {data['cupy_version']}"), style="bold"),
        Text(f"ceilings: device copy {ceil['copy_gb_s']:,.0f} GB/s at the transpose's size "
             f"({ceil['copy_1gib']['gb_s']:,.0f} GB/s for 1 GiB); cuBLAS SGEMM "
             f"{ceil['sgemm_tflops']:.1f} TFLOP/s at n = {ceil['sgemm_n']}")]
    for kernel in ("matmul", "transpose"):
        rows = [r for r in data["results"] if r["kernel"] == kernel]
        if not rows:
            continue
        t = Table(box=box.SIMPLE_HEAD, title=f"{kernel}, n = {rows[0]['n']:,}",
                  title_justify="left", title_style="bold", pad_edge=False,
                  padding=(0, 1, 0, 0))
        for col in MEASURE_HEAD:  # a narrow terminal wraps the label, never a number
            t.add_column(col, justify="left" if col == "candidate" else "right",
                         no_wrap=col != "candidate", min_width=None if col == "candidate" else len(col))
        for row in measure_rows(rows):
            t.add_row(*row)
        parts.append(t)
    return Group(*parts)


def measure_tuning_view(data: TuningRecord) -> RenderableType:
    """`measure MANIFEST --kernel NAME`: predicted against measured, per point."""

    head = Text(f"{inert(data['kernel'])} on {inert(data['device'])} (driver "
                f"{inert(str(data['driver_version']))})", style="bold")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    for col in ("pred #", "params", "ok", "blk/SM pred/drv", "pred. ms", "meas. ms", "error"):
        t.add_column(col, justify="left" if col in ("params", "ok") else "right")
    for r in sorted(data["results"], key=lambda x: x["measured"]["median_ms"]):
        t.add_row(str(r["predicted_rank"]),
                  inert(" ".join(f"{k}={v}" for k, v in r["params"].items())),
                  {True: "yes", False: "NO", None: "-"}[r["verified"]],
                  f"{r['predicted_active_blocks_per_sm']}/{r['driver_active_blocks_per_sm']}",
                  "-" if r["predicted_ms"] is None else f"{r['predicted_ms']:.3f}",
                  f"{r['measured']['median_ms']:.3f}",
                  "-" if r["error"] is None else f"{r['error'] * 100:+.0f}%")
    parts: list[RenderableType] = [head, t]
    f = data["fastest"]
    if f:
        parts.append(Text("Fastest: " + inert(" ".join(f"{k}={v}" for k, v in f["params"].items()))
                          + f", {f['median_ms']:.3f} ms (the model ranked it #{f['predicted_rank']})"))
    more = _more_runs(data)
    if more:
        parts.append(Text(more))
    return Group(*parts)


def _more_runs(data: TuningRecord) -> str:
    """Which points were timed more than --reps times for their medians to hold
    (gpu/measure.py median_known), if any: why a run took longer, and a sign of noisy times."""
    from occupancy.gpu.measure import MEDIAN_SPREAD, MORE_RUNS

    reps = data.get("reps")
    if not isinstance(reps, int):
        return ""
    runs = [r["measured"].get("runs", 0) for r in data["results"]]
    more = [n for n in runs if isinstance(n, int) and n > reps]
    if not more:
        return ""
    cap = reps * MORE_RUNS
    capped = sum(n >= cap for n in more)
    return (f"{len(more)} of {len(runs)} points were timed more than --reps {reps} times (up to "
            f"{max(more)}): their times spread, so they were timed until those about the median "
            f"agreed within {MEDIAN_SPREAD:.0%}" + (
                f"; {capped} of them reached the cap of {cap} first, so "
                + ("its median is" if capped == 1 else "their medians are") + " less sure"
                if capped else ""))
