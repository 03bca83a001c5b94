"""`occupancy report`: one document from devices, a launch config, a tile analysis, a check
manifest's verdicts and a `measure` record. Markdown (for a pull request) or a
self-contained HTML page (charts inline as SVG; nothing is fetched to open it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from . import __version__
from .advisor import TileReport
from .charts import svg_chart
from .check import Verdict
from .device import Device
from .errors import OccupancyError
from .solver import LIMIT_NAMES, OccupancyResult
from .sweeps import Config, Curve, sweeps

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
    tiles: tuple[TileReport, ...] = ()
    check_manifest: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    measured: dict[str, Any] | None = None
    measured_path: str | None = None
    notes: tuple[str, ...] = field(default=())


def load_measured(path: str) -> dict[str, Any]:
    """A `measure --json` / `-o` record."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OccupancyError(f"--measured {path}: no such file (write one with "
                             "occupancy measure -o FILE)") from None
    except (OSError, ValueError) as exc:
        raise OccupancyError(f"--measured {path}: not a measure record: {exc}") from None
    if not isinstance(data, dict) or "results" not in data or "ceilings" not in data:
        raise OccupancyError(f"--measured {path}: not a measure record (no 'results' and "
                             "'ceilings'); write one with occupancy measure -o FILE")
    return data


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%".replace(".0%", "%")


def _limits_rows(r: OccupancyResult) -> list[list[str]]:
    return [[n.replace("_", " "), "-" if r.block_limits[n] is None else str(r.block_limits[n]),
             "limiter" if n in r.limiters else ""] for n in LIMIT_NAMES]


def _device_rows(rep: Report) -> list[list[str]]:
    rows = []
    for s in rep.devices:
        r = s.result
        rows.append([s.device.name, s.device.compute_capability, str(r.active_blocks_per_sm),
                     f"{r.active_warps_per_sm}/{r.max_warps_per_sm}", _pct(r.occupancy),
                     ", ".join(n.replace("_", " ") for n in LIMIT_NAMES if n in r.limiters) or "-",
                     "; ".join(r.cannot_launch) or "; ".join(r.notes) or ""])
    return rows


_DEVICE_HEAD = ["device", "CC", "blocks/SM", "warps/SM", "occupancy", "limited by", "notes"]
_TILE_HEAD = ["candidate", "block", "regs", "regs from", "smem B", "blocks/SM", "occupancy",
              "bank ways", "predicted ms", "bound"]
_CHECK_HEAD = ["kernel", "device", "ok", "blocks/SM", "occupancy", "problems"]
_MEASURE_HEAD = ["kernel", "candidate", "verified", "blocks pred/driver", "predicted ms",
                 "measured ms", "error", "rate", "of ceiling"]


def _tile_rows(t: TileReport) -> list[list[str]]:
    rows = []
    for a in t.analyses:
        p = a.prediction
        shape = "x".join(str(b) for b in a.candidate.block if b != 1) or "1"
        rows.append([("* " if a is t.recommended else "") + a.candidate.label, shape,
                     str(a.resources.registers_per_thread), a.resources.source,
                     f"{a.resources.static_shared_memory:,}", str(a.occupancy.active_blocks_per_sm),
                     _pct(a.occupancy.occupancy), str(a.counts.bank_conflict_ways),
                     f"{p.predicted_ms:.3f}" if p else "-",
                     p.bound if p else "cannot launch"])
    return rows


def _check_rows(rep: Report) -> list[list[str]]:
    return [[v.kernel, v.device, "ok" if v.ok else "FAIL", str(v.active_blocks_per_sm),
             _pct(v.occupancy), "; ".join(v.problems)] for v in rep.verdicts]


def _measure_rows(m: dict[str, Any]) -> list[list[str]]:
    rows = []
    for r in m["results"]:
        rate = (f"{r['tflops']:.2f} TFLOP/s" if "tflops" in r else f"{r['gb_s']:,.0f} GB/s")
        rows.append([r["kernel"], r["label"], "yes" if r["verified"] else "NO",
                     f"{r['predicted_active_blocks_per_sm']}/{r['driver_active_blocks_per_sm']}",
                     "-" if r["predicted_ms"] is None else f"{r['predicted_ms']:.3f}",
                     f"{r['measured']['median_ms']:.3f}",
                     "-" if r["error"] is None else f"{r['error'] * 100:+.0f}%", rate,
                     _pct(r["percent_of_ceiling"])])
    return rows


def build(devices: list[Device], cfg: Config, block: tuple[int, ...],
          tiles: list[TileReport] | None = None, check_manifest: str | None = None,
          verdicts: list[Verdict] | None = None, measured_path: str | None = None) -> Report:
    from .solver import solve

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
    return (f"block {shape} ({c.threads_per_block} threads), {c.registers_per_thread} registers "
            f"per thread, {c.shared_memory_per_block:,} B shared memory per block"
            + ("" if c.carveout is None else f", carveout {c.carveout}%")
            + ("" if c.opt_in else ", no opt-in"))


# --- Markdown ---------------------------------------------------------------------------


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def cell(x: str) -> str:
        return x.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def to_markdown(rep: Report, chart_dir: str | None = None) -> tuple[str, dict[str, str]]:
    """The Markdown text and the chart files it links ({relative path: SVG text})."""
    files: dict[str, str] = {}
    md = [f"# {rep.title}", "", f"Launch: {_launch_line(rep)}. occupancy {__version__}.", ""]
    md += ["## Devices", ""] + _md_table(_DEVICE_HEAD, _device_rows(rep))
    for s in rep.devices:
        md += [f"### {s.device.name}", ""]
        md += _md_table(["resource", "blocks per SM", ""], _limits_rows(s.result))
        if chart_dir is not None:
            links = []
            for c in s.curves:
                rel = f"{chart_dir}/{s.device.key}-{c.name}.svg"
                files[rel] = svg_chart(c, f"{s.device.key}: {_TITLES[c.name]}")
                links.append(f"![{_TITLES[c.name]} on {s.device.name}]({rel})")
            md += [" ".join(links), ""]
    for t in rep.tiles:
        md += [f"## Tile sizes: {t.kernel}, n = {t.n:,}, on {t.device.name}", ""]
        md += _md_table(_TILE_HEAD, _tile_rows(t))
        if t.recommended:
            md += [f"**Recommended: {t.recommended.candidate.label}**", ""]
        md += [f"- {r}" for r in t.reasons] + [""]
    if rep.check_manifest is not None:
        passed = sum(v.ok for v in rep.verdicts)
        md += [f"## Launch check: {rep.check_manifest}", "",
               f"{passed} passed, {len(rep.verdicts) - passed} failed.", ""]
        md += _md_table(_CHECK_HEAD, _check_rows(rep))
    if rep.measured is not None:
        m = rep.measured
        ceil = m["ceilings"]
        md += [f"## Predicted against measured: {m['device']}", "",
               f"From `{rep.measured_path}` ({m['date']}, driver {m['driver_version']}, "
               f"CuPy {m['cupy_version']}). Ceilings: device copy {ceil['copy_gb_s']:,.0f} GB/s, "
               f"cuBLAS SGEMM {ceil['sgemm_tflops']:.1f} TFLOP/s.", ""]
        md += _md_table(_MEASURE_HEAD, _measure_rows(m))
    return "\n".join(md).rstrip() + "\n", files


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
        h.append(f"<h2>Tile sizes: {escape(t.kernel)}, n = {t.n:,}, on "
                 f"{escape(t.device.name)}</h2>")
        css = ["best" if a is t.recommended else ("fail" if not a.launchable else "")
               for a in t.analyses]
        h.append(_html_table(_TILE_HEAD, _tile_rows(t), css))
        if t.recommended:
            h.append(f"<p><b>Recommended: {escape(t.recommended.candidate.label)}</b></p>")
        h.append("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in t.reasons) + "</ul>")
    if rep.check_manifest is not None:
        passed = sum(v.ok for v in rep.verdicts)
        h.append(f"<h2>Launch check: {escape(rep.check_manifest)}</h2>")
        h.append(f"<p>{passed} passed, {len(rep.verdicts) - passed} failed.</p>")
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
