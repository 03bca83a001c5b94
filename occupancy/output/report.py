"""`occupancy report`: one document from devices, a launch config, a tile analysis, a check
manifest's verdicts and a `measure` record. Markdown (for a pull request) or a
self-contained HTML page (charts inline as SVG; nothing is fetched to open it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, cast

from occupancy.core.device import Device
from occupancy.core.errors import FileError, OccupancyError
from occupancy.core.version import __version__
from occupancy.core.words import LIMITER_LABELS, limiters, pct
from occupancy.gate.check import Verdict
from occupancy.inputs.safety import inert, md, slug
from occupancy.output.charts import svg_chart
from occupancy.output.rows import (
    CHECK_HEAD,
    MEASURE_HEAD,
    check_rows,
    measure_rows,
    tally_line,
    tile_head,
    tile_rows,
)
from occupancy.tune.spaces import TuneReport

if TYPE_CHECKING:
    from occupancy.tune.records import MeasureRecord
from occupancy.core.solver import LIMIT_NAMES, OccupancyResult
from occupancy.core.whatif import Config, Curve, sweeps

_TITLES = {"threads_per_block": "Occupancy vs threads per block",
           "registers_per_thread": "Occupancy vs registers per thread",
           "shared_memory_per_block": "Occupancy vs shared memory per block"}


@dataclass(frozen=True)
class DeviceSection:
    device: Device
    result: OccupancyResult
    curves: tuple[Curve, Curve, Curve]


@dataclass(frozen=True)
class Report:
    title: str
    config: Config
    block: tuple[int, ...]
    devices: tuple[DeviceSection, ...]
    tiles: tuple[TuneReport, ...] = ()
    check_manifest: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    measured: MeasureRecord | None = None
    measured_path: str | None = None
    notes: tuple[str, ...] = field(default=())


_NUM = (int, float)
_RECORD_TOP: dict[str, tuple[type, ...]] = {
    "device": (str,), "date": (str,), "driver_version": (str, int), "cupy_version": (str,),
    "ceilings": (dict,), "results": (list,)}
_RECORD_CEILINGS = {"copy_gb_s": _NUM, "sgemm_tflops": _NUM}
_RECORD_RESULT: dict[str, tuple[type, ...]] = {
    "kernel": (str,), "label": (str,), "verified": (bool,), "occupancy_match": (bool,),
    "predicted_active_blocks_per_sm": (int,), "driver_active_blocks_per_sm": (int,),
    "predicted_ms": (*_NUM, type(None)), "measured": (dict,), "error": (*_NUM, type(None)),
    "percent_of_ceiling": _NUM}


def _check_record(data: object, where: str) -> MeasureRecord:
    """A measure record as written by a stranger: every key the report reads, with its type."""
    import math

    def need(obj: object, key: str, types: tuple[type, ...], path: str) -> object:
        if not isinstance(obj, dict) or key not in obj:
            raise OccupancyError(f"{where}: not a measure record: '{path}{key}' is missing; "
                                 "write one with occupancy measure -o FILE")
        v = obj[key]
        ok = isinstance(v, types) and not (isinstance(v, bool) and bool not in types)
        if ok and isinstance(v, float) and not math.isfinite(v):
            ok = False
        if not ok:
            raise OccupancyError(f"{where}: '{path}{key}' has the wrong type "
                                 f"({type(v).__name__}); write the record with occupancy measure -o")
        return v

    for k, t in _RECORD_TOP.items():
        need(data, k, t, "")
    assert isinstance(data, dict)
    for k, t in _RECORD_CEILINGS.items():
        need(data["ceilings"], k, t, "ceilings.")
    if len(data["results"]) > 10_000:
        raise OccupancyError(f"{where}: more than 10,000 results: not a measure record")
    for i, r in enumerate(data["results"]):
        for k, t in _RECORD_RESULT.items():
            need(r, k, t, f"results[{i}].")
        need(r["measured"], "median_ms", _NUM, f"results[{i}].measured.")
        need(r, "tflops" if "tflops" in r else "gb_s", _NUM, f"results[{i}].")
    return cast("MeasureRecord", data)  # every key the report reads is checked above


def load_measured(path: str) -> MeasureRecord:
    """A `measure --json` / `-o` record, validated key by key."""
    from occupancy.inputs.files import LOG_CAP, json_int, read_text

    text = read_text(path, _RecordError, LOG_CAP, "write one with occupancy measure -o FILE",
                     "measure record")
    try:
        data = json.loads(text, parse_constant=lambda c: float("nan"), parse_int=json_int)
    except (ValueError, RecursionError) as exc:
        raise OccupancyError(f"--measured {inert(path)}: not JSON: {exc}") from None
    return _check_record(data, f"--measured {inert(path)}")


class _RecordError(FileError):
    prefix = "--measured "




def _limits_rows(r: OccupancyResult) -> list[list[str]]:
    return [[LIMITER_LABELS[n], "-" if r.block_limits[n] is None else str(r.block_limits[n]),
             "limiter" if n in r.limiters else ""] for n in LIMIT_NAMES
            if n != "virtual_resources" or r.block_limits[n] is not None]


def _device_rows(rep: Report) -> list[list[str]]:
    rows = []
    for s in rep.devices:
        r = s.result
        rows.append([s.device.name, s.device.compute_capability, str(r.active_blocks_per_sm),
                     f"{r.active_warps_per_sm}/{r.max_warps_per_sm}", pct(r.occupancy),
                     limiters(r.limiters) or "-",
                     "; ".join(r.cannot_launch) or "; ".join(r.notes) or ""])
    return rows


_DEVICE_HEAD = ["device", "CC", "blocks/SM", "warps/SM", "occupancy", "limited by", "notes"]
_CHECK_HEAD = [*CHECK_HEAD, "problems"]
_MEASURE_HEAD = ["kernel", *MEASURE_HEAD]


def _check_rows(rep: Report) -> list[list[str]]:
    return [[*row, "; ".join(v.problems)]
            for row, v in zip(check_rows(rep.verdicts), rep.verdicts, strict=True)]


def _measure_rows(m: MeasureRecord) -> list[list[str]]:
    return [[r["kernel"], *row] for r, row in zip(m["results"], measure_rows(m["results"]),
                                                  strict=True)]


def build(devices: list[Device], cfg: Config, block: tuple[int, ...],
          tiles: list[TuneReport] | None = None, check_manifest: str | None = None,
          verdicts: list[Verdict] | None = None, measured_path: str | None = None) -> Report:
    from occupancy.core.solver import solve

    sections = []
    for dev in devices:
        r = solve(dev, cfg.threads_per_block, cfg.registers_per_thread, 0,
                  cfg.shared_memory_per_block, cfg.carveout, opt_in=cfg.opt_in)
        sections.append(DeviceSection(dev, r, sweeps(dev, cfg)))
    measured = load_measured(measured_path) if measured_path else None
    return Report("Occupancy report", cfg, block, tuple(sections), tuple(tiles or ()),
                  check_manifest, tuple(verdicts or ()), measured, measured_path)


def _launch_line(rep: Report) -> str:
    c = rep.config
    shape = "x".join(str(b) for b in rep.block)
    regs = (f"{c.registers_per_thread} registers per thread" if c.registers_per_thread
            else "registers not counted (-r 0)")  # as in calc: 0 never limits
    return (f"block {shape} ({c.threads_per_block} threads), {regs}, "
            f"{c.shared_memory_per_block:,} B shared memory per block"
            + ("" if c.carveout is None else f", carveout {c.carveout}%")
            + ("" if c.opt_in else ", no opt-in"))


# --- Markdown ---------------------------------------------------------------------------


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def cell(x: str) -> str:
        return md(x)

    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def to_markdown(rep: Report, chart_dir: str | None = None) -> tuple[str, dict[str, str]]:
    """The Markdown text and the chart files it links ({relative path: SVG text})."""
    files: dict[str, str] = {}
    out = [f"# {md(rep.title)}", "", f"Launch: {_launch_line(rep)}. occupancy {__version__}.", ""]
    out += ["## Devices", ""] + _md_table(_DEVICE_HEAD, _device_rows(rep))
    for s in rep.devices:
        out += [f"### {md(s.device.name)}", ""]
        out += _md_table(["resource", "blocks per SM", ""], _limits_rows(s.result))
        if chart_dir is not None:
            links = []
            for c in s.curves:
                rel = f"{chart_dir}/{slug(s.device.key)}-{c.name}.svg"
                files[rel] = svg_chart(c, f"{s.device.key}: {_TITLES[c.name]}")
                links.append(f"![{_TITLES[c.name]} on {md(s.device.name)}]({rel})")
            out += [" ".join(links), ""]
    for t in rep.tiles:
        out += [f"## Tile sizes: {md(t.name)}, {_problem(t)}, on {md(t.device.name)}", ""]
        out += _md_table(tile_head(t), tile_rows(t))
        out += [f"Registers from {md(', '.join(_sources(t)))}.", ""]
        if t.recommended:
            out += [f"**Recommended: {md(t.recommended.label)}**", ""]
        out += [f"- {md(r)}" for r in t.why] + [""]
    if rep.check_manifest is not None:
        out += [f"## Launch check: {md(rep.check_manifest)}", "",
               f"{tally_line(rep.verdicts)}.", ""]
        out += _md_table(_CHECK_HEAD, _check_rows(rep))
    if rep.measured is not None:
        m = rep.measured
        ceil = m["ceilings"]
        out += [f"## Predicted against measured: {md(m['device'])}", "",
               f"From {md(str(rep.measured_path))} ({md(m['date'])}, driver "
               f"{md(str(m['driver_version']))}, CuPy {md(m['cupy_version'])}). Ceilings: device "
               f"copy {ceil['copy_gb_s']:,.0f} GB/s, "
               f"cuBLAS SGEMM {ceil['sgemm_tflops']:.1f} TFLOP/s.", ""]
        out += _md_table(_MEASURE_HEAD, _measure_rows(m))
    return "\n".join(out).rstrip() + "\n", files


# --- HTML -------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1320px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.fail td { background: #fdecea; } tr.best td { background: #eaf6ea; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; } .muted { color: #666; }
"""


def _html_table(head: list[str], rows: list[list[str]], css: list[str] | None = None) -> str:
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head)
           + "</tr></thead>", "<tbody>"]
    for i, row in enumerate(rows):
        cls = f' class="{css[i]}"' if css and css[i] else ""
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if c[:1].isdigit() or c[:1] in "+-" and c[1:2].isdigit()
            else f"<td>{escape(c)}</td>" for c in row)
        out.append(f"<tr{cls}>{cells}</tr>")
    return "\n".join(out + ["</tbody></table>"])


def to_html(rep: Report) -> str:
    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         f"<title>{escape(rep.title)}</title>", f"<style>{_CSS}</style></head><body>",
         f"<h1>{escape(rep.title)}</h1>",
         f'<p class="muted">Launch: {escape(_launch_line(rep))}. occupancy {__version__}.</p>',
         "<h2>Devices</h2>", _html_table(_DEVICE_HEAD, _device_rows(rep))]
    for s in rep.devices:
        h.append(f"<h3>{escape(s.device.name)} (CC {s.device.compute_capability})</h3>")
        h.append(_html_table(["resource", "blocks per SM", ""], _limits_rows(s.result)))
        h.append('<div class="charts">' + "".join(
            svg_chart(c, f"{s.device.key}: {_TITLES[c.name]}") for c in s.curves) + "</div>")
    for t in rep.tiles:
        h.append(f"<h2>Tile sizes: {escape(t.name)}, {escape(_problem(t))}, on "
                 f"{escape(t.device.name)}</h2>")
        css = ["best" if r is t.recommended else "" for r in t.ranked if not r.pruned]
        h.append(_html_table(tile_head(t), tile_rows(t), css))
        h.append("<p class=\"muted\">Registers from " + escape(", ".join(_sources(t))) + ".</p>")
        if t.recommended:
            h.append(f"<p><b>Recommended: {escape(t.recommended.label)}</b></p>")
        h.append("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in t.why) + "</ul>")
    if rep.check_manifest is not None:
        h.append(f"<h2>Launch check: {escape(rep.check_manifest)}</h2>")
        h.append(f"<p>{escape(tally_line(rep.verdicts))}.</p>")
        h.append(_html_table(_CHECK_HEAD, _check_rows(rep),
                             ["" if v.ok else "fail" for v in rep.verdicts]))
    if rep.measured is not None:
        m = rep.measured
        ceil = m["ceilings"]
        h.append(f"<h2>Predicted against measured: {escape(m['device'])}</h2>")
        h.append(f"<p>From <code>{escape(str(rep.measured_path))}</code> ({escape(m['date'])}, "
                 f"driver {escape(str(m['driver_version']))}). Ceilings: device copy "
                 f"{ceil['copy_gb_s']:,.0f} GB/s, cuBLAS SGEMM {ceil['sgemm_tflops']:.1f} "
                 "TFLOP/s.</p>")
        h.append(_html_table(_MEASURE_HEAD, _measure_rows(m),
                             ["" if r["verified"] and r["occupancy_match"] else "fail"
                              for r in m["results"]]))
    h.append("</body></html>")
    return "\n".join(h) + "\n"


def _problem(t: TuneReport) -> str:
    p = t.spec.problem
    return f"n = {p['N']:,}" if t.family and "N" in p else ", ".join(f"{k} = {v:,}" for k, v in p.items())


def _sources(t: TuneReport) -> list[str]:
    return sorted({r.resources.source for r in t.ranked if r.resources is not None})
