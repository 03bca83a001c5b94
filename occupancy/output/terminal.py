"""Terminal renderers (rich): readable at 80 columns and honest without colour."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from occupancy.core.device import Device
from occupancy.core.solver import LIMIT_NAMES, Cliff, OccupancyResult
from occupancy.core.words import LIMITER_LABELS, limiters, pct
from occupancy.inputs.safety import inert
from occupancy.output.rows import (
    CHECK_HEAD,
    check_rows,
    tally_line,
)

if TYPE_CHECKING:
    from occupancy.build.resolve import ListedKernel
    from occupancy.core.best import BestAnswer
    from occupancy.gate.check import Verdict

_LABEL = LIMITER_LABELS


def _b(n: int) -> str:
    return f"{n:,} B"




def _kv(rows: Iterable[tuple[str, str]], title: str | None = None) -> Text:
    """Aligned 'key  value' lines under a bold title (plain text: cheap and copy-pasteable)."""
    rows = list(rows)
    width = max((len(k) for k, _ in rows), default=0) + 2
    out = Text()
    if title:
        out.append(title + "\n", style="bold")
    for i, (k, v) in enumerate(rows):
        out.append(k.ljust(width), style="bold")
        out.append(v + ("\n" if i < len(rows) - 1 else ""))
    return out


def _usage(dev: Device, r: OccupancyResult) -> dict[str, tuple[str, str]]:
    """Per resource: (what the SM has, what one block uses)."""
    regs_per_warp = (r.allocated_registers_per_block // r.warps_per_block
                     if r.warps_per_block else 0)
    return {
        "warps": (f"{dev.max_warps_per_sm} warps", f"{r.warps_per_block} warps"),
        "registers": (f"{dev.registers_per_sm:,}",
                      f"{r.allocated_registers_per_block:,}"
                      + (f" ({regs_per_warp:,}/warp)" if dev.register_allocation == "warp" else "")),
        "shared_memory": (_b(r.shared_memory_per_sm_bytes),
                          _b(r.allocated_shared_memory_per_block)),
        "blocks": (f"{dev.max_blocks_per_sm} blocks", "1 block"),
        "barriers": (f"{dev.block_barriers_per_sm}" if dev.block_barriers_per_sm else "-",
                     f"{r.block_barriers}"),
        "virtual_resources": (f"{dev.virtual_resources_per_sm}", f"{r.virtual_resources}"),
    }


def limits_table(dev: Device, r: OccupancyResult) -> Table:
    t = Table(box=box.SIMPLE_HEAD, title="Blocks per SM, by resource", title_justify="left",
              title_style="bold", pad_edge=False)
    t.add_column("resource")
    t.add_column("blocks", justify="right")
    t.add_column("SM has", justify="right")
    t.add_column("block uses", justify="right")
    t.add_column("")
    usage = _usage(dev, r)
    for name in LIMIT_NAMES:
        if name == "virtual_resources" and not dev.virtual_resources_per_sm:
            continue  # exists on CC 10-12 only
        v = r.block_limits[name]
        has, uses = usage[name]
        mark = "<- limiter" if name in r.limiters else ""
        shown = "-" if v is None else str(v)
        if v is None:
            uses = "none" if name != "barriers" or dev.block_barriers_per_sm else "n/a (CC < 9)"
        t.add_row(_LABEL[name], shown, has, uses, mark)
    return t


def cliff_lines(c: Cliff, r: OccupancyResult) -> list[str]:
    unit = " registers/thread" if c.resource == "registers" else " B/block"
    label = "registers" if c.resource == "registers" else "shared memory"
    parts = []
    def blocks(n: int | None) -> str:
        return f"{n} block{'' if n == 1 else 's'}"

    def amount(n: int) -> str:
        if c.resource != "registers":
            return f"{n:,} B"
        return f"{n} register{'' if n == 1 else 's'}"

    if c.gain_at is not None:
        parts.append(f"<= {c.gain_at:,}{unit} fits {blocks(c.gain_blocks)} "
                     f"({amount(c.current - c.gain_at)} fewer)")
    if c.lose_at is not None:
        parts.append(f">= {c.lose_at:,}{unit} drops to {blocks(c.lose_blocks)} "
                     f"({amount(c.lose_at - c.current)} more)")
    if not parts:
        parts.append("no change in blocks within the device's range")
    return [f"{label} (now {c.current:,}): " + "; ".join(parts)]


def calc_view(dev: Device, r: OccupancyResult, block: tuple[int, ...],
              cliff: tuple[Cliff, Cliff] | None) -> RenderableType:
    shape = "x".join(str(d) for d in block)
    head = Text(f"{inert(dev.name)} (CC {dev.compute_capability}, {dev.sm_count} SMs)", style="bold")
    inputs = _kv([
        ("block", f"{shape} = {r.threads_per_block} threads ({r.warps_per_block} warps)"),
        ("registers", f"{r.registers_per_thread} per thread"),
        ("shared memory", f"{_b(r.static_shared_memory)} static + "
                          f"{_b(r.dynamic_shared_memory)} dynamic"
                          + (f" + {_b(dev.reserved_shared_memory_per_block_bytes)} reserved"
                             if dev.reserved_shared_memory_per_block_bytes else "")),
        ("carveout", "default (max shared memory)" if r.carveout is None else f"{r.carveout}%"),
        ("launch bound", "-" if r.max_threads_per_block is None
         else f"{r.max_threads_per_block} threads"),
        ("barriers", f"{r.block_barriers} per block"),
    ], title="Inputs")
    alloc = _kv([
        ("registers", f"{r.allocated_registers_per_block:,} per block"),
        ("shared memory", f"{r.allocated_shared_memory_per_block:,} B per block "
                          f"(unit {dev.shared_memory_allocation_unit_bytes} B)"),
    ], title="Allocated")
    limiter = limiters(r.limiters) or "-"
    active = _kv([
        ("blocks", f"{r.active_blocks_per_sm} per SM"),
        ("warps", f"{r.active_warps_per_sm} of {r.max_warps_per_sm} per SM"),
        ("threads", f"{r.active_threads_per_sm:,} per SM"),
        ("occupancy", pct(r.occupancy)),
        ("limited by", limiter),
    ], title="Active")
    parts: list[RenderableType] = [head, Text(""), inputs, Text(""), alloc, Text(""),
                                   limits_table(dev, r), active]
    if r.cluster is not None:
        parts += [Text(""), cluster_view(r)]
    if r.cannot_launch:
        parts += [Text(""), Text("Cannot launch", style="bold")]
        parts += [Text(f"- {p}") for p in r.cannot_launch]
    if cliff is not None and r.launchable:
        parts += [Text(""), Text("Cliffs", style="bold")]
        for c in cliff:
            parts += [Text(f"- {line}") for line in cliff_lines(c, r)]
    if r.notes:
        parts += [Text(""), Text("Notes", style="bold")]
        parts += [Text(f"- {n}") for n in r.notes]
    return Group(*parts)


def cluster_text(r: OccupancyResult) -> str:
    c = r.cluster
    if c is None:
        return "-"
    if c.problems:
        return "cannot launch"
    if c.active_clusters is not None:
        return f"{c.active_clusters:,} (measured)"
    return f"{c.lower:,}-{c.upper:,} (estimate)"


def cluster_view(r: OccupancyResult) -> RenderableType:
    c = r.cluster
    assert c is not None
    rows = [("cluster", f"{'x'.join(map(str, c.cluster))} = {c.size} blocks"),
            ("active clusters", cluster_text(r) + " per GPU")]
    if c.active_clusters:
        rows.append(("blocks in clusters", f"{c.active_clusters * c.size:,} per GPU"))
    return _kv(rows, title="Clusters")


def compare_view(devs: Sequence[Device], results: Sequence[OccupancyResult],
                 cliffs_: Sequence[tuple[Cliff, Cliff] | None]) -> RenderableType:
    """Several GPUs side by side: a column per device."""
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="Side by side", title_justify="left",
              title_style="bold")
    t.add_column("")
    for d in devs:
        t.add_column(inert(d.key), justify="right")
    rows: list[tuple[str, list[str]]] = [
        ("CC", [d.compute_capability for d in devs]),
        ("blocks/SM", [str(r.active_blocks_per_sm) for r in results]),
        ("warps/SM", [f"{r.active_warps_per_sm}/{r.max_warps_per_sm}" for r in results]),
        ("occupancy", [pct(r.occupancy) for r in results]),
        ("limited by", [limiters(r.limiters) or "-"
                        for r in results]),
        ("regs cliff", [_cliff_short(c[0]) if c else "-" for c in cliffs_]),
        ("smem cliff", [_cliff_short(c[1]) if c else "-" for c in cliffs_]),
    ]
    if any(r.cluster is not None for r in results):
        rows.append(("clusters", [cluster_text(r) for r in results]))
    for label, cells in rows:
        t.add_row(label, *cells)
    parts: list[RenderableType] = [t]
    for d, r in zip(devs, results, strict=True):
        parts += [Text(inert(f"{d.key}: cannot launch: {p}")) for p in r.cannot_launch]
    return Group(*parts)


def _cliff_short(c: Cliff) -> str:
    unit = "" if c.resource == "registers" else " B"
    out = []
    if c.gain_at is not None:
        out.append(f"<={c.gain_at:,}{unit}: {c.gain_blocks}")
    if c.lose_at is not None:
        out.append(f">={c.lose_at:,}{unit}: {c.lose_blocks}")
    return "; ".join(out) or "-"


def _best_inputs(a: BestAnswer) -> str:
    i = a.inputs
    parts = [f"{i.registers_per_thread} registers", f"{_b(i.static_shared_memory)} static smem",
             f"{_b(i.dynamic_shared_memory)} dynamic"
             + (f" + {i.dynamic_shared_memory_per_thread} B per thread"
                if i.dynamic_shared_memory_per_thread else "")]
    if i.carveout is not None:
        parts.append(f"carveout {i.carveout}%")
    if i.max_threads_per_block is not None:
        parts.append(f"launch bound {i.max_threads_per_block}")
    if not i.opt_in:
        parts.append("no opt-in")
    return ", ".join(parts)


def _cluster_line(a: BestAnswer) -> str:
    n = a.inputs.min_clusters
    if not a.cluster_size:
        return f"no cluster size keeps {n} cluster{'s' if n != 1 else ''} active"
    return (f"{a.cluster_size} blocks ({a.cluster_source}) keeps >= {n} cluster"
            f"{'s' if n != 1 else ''} active" + (" (non-portable: set "
            "cudaFuncAttributeNonPortableClusterSizeAllowed)" if a.cluster_size > 8 else ""))


def best_view(a: BestAnswer) -> RenderableType:
    dev, best, available = a.device, a.best, a.available
    r = best.result
    head = Text(f"{inert(dev.name)} (CC {dev.compute_capability})", style="bold")
    given = Text(f"for: {_best_inputs(a)}")
    if best.block_size == 0:
        lines: list[RenderableType] = [head, given, Text("No block size can launch:")]
        lines += [Text(f"- {p}") for p in r.cannot_launch]
        return Group(*lines)
    rows = [
        ("block size", f"{best.block_size} threads"),
        ("min grid size", f"{best.min_grid_size} blocks ({r.active_blocks_per_sm} per SM x "
                          f"{dev.sm_count} SMs)"),
        ("occupancy", f"{pct(r.occupancy)} ({r.active_threads_per_sm:,} threads per SM)"),
        ("limited by", limiters(r.limiters)),
    ]
    if a.inputs.min_clusters is not None:
        rows.append(("largest cluster", _cluster_line(a)))
    summary = _kv(rows, title="Best block size (most resident threads, ties to the larger block)")
    top = Table(box=box.SIMPLE_HEAD, title="Block sizes tried (best first)",
                title_justify="left", title_style="bold", pad_edge=False)
    top.add_column("threads/block", justify="right")
    top.add_column("threads/SM", justify="right")
    top.add_column("occupancy", justify="right")
    ranked = sorted(best.candidates, key=lambda c: (-c[1], -c[0]))[:8]
    for size, threads in ranked:
        top.add_row(str(size), f"{threads:,}", pct(threads / dev.max_threads_per_sm))
    size = a.inputs.threads or best.block_size
    avail = Table(box=box.SIMPLE_HEAD, title=f"Dynamic shared memory per block at "
                  f"{size} threads", title_justify="left", title_style="bold",
                  pad_edge=False)
    avail.add_column("resident blocks", justify="right")
    avail.add_column("available", justify="right")
    avail.add_column("driver says", justify="right")
    for x in available:
        avail.add_row(str(x.blocks), "-" if x.bytes is None else _b(x.bytes),
                      "-" if x.driver_bytes is None else _b(x.driver_bytes))
    parts: list[RenderableType] = [head, given, Text(""), summary, Text(""), top, avail]
    if any(x.bytes != x.driver_bytes for x in available):
        parts.append(Text("cudaOccupancyAvailableDynamicSMemPerBlock forgets the "
                          f"{dev.reserved_shared_memory_per_block_bytes:,} B reserved per "
                          "block: its answer does not fit that many blocks."))
    return Group(*parts)


def best_compare_view(answers: Sequence[BestAnswer]) -> RenderableType:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="Best block size, side by side",
              title_justify="left", title_style="bold")
    cols = ["device", "block", "blocks/SM", "occupancy", "limited by", "min grid"]
    clusters = answers[0].inputs.min_clusters is not None
    if clusters:
        cols.append("max cluster")
    for c in cols:
        t.add_column(c, justify="left" if c in ("device", "limited by") else "right")
    for a in answers:
        r = a.best.result
        row = [inert(a.device.key), str(a.best.block_size), str(r.active_blocks_per_sm),
               pct(r.occupancy), limiters(r.limiters)
               or "-", f"{a.best.min_grid_size:,}"]
        if clusters:
            row.append("-" if not a.cluster_size else f"{a.cluster_size} ({a.cluster_source})")
        t.add_row(*row)
    return Group(Text(f"for: {_best_inputs(answers[0])}"), t)


def devices_table(devices: list[Device]) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col, just in (("device", "left"), ("CC", "right"), ("SMs", "right"),
                      ("thr/SM", "right"), ("smem/SM", "right"),
                      ("smem/block", "right"), ("name", "left")):
        t.add_column(col, justify=just, no_wrap=col != "name")  # type: ignore[arg-type]
    for d in sorted(devices, key=lambda d: (d.cc_major, d.cc_minor, d.name)):
        opt = (f"{d.shared_memory_per_block_bytes // 1024}/"
               f"{d.shared_memory_per_block_optin_bytes // 1024} KB"
               if d.shared_memory_per_block_optin_bytes != d.shared_memory_per_block_bytes
               else f"{d.shared_memory_per_block_bytes // 1024} KB")
        t.add_row(inert(d.key), d.compute_capability, str(d.sm_count), f"{d.max_threads_per_sm:,}",
                  f"{d.shared_memory_per_sm_bytes // 1024} KB", opt,
                  inert(d.name.removeprefix("NVIDIA ")))
    return t


def device_view(dev: Device) -> RenderableType:
    t = Table(box=box.SIMPLE_HEAD, title=inert(dev.name), title_justify="left",
              title_style="bold", pad_edge=False)
    t.add_column("key")
    t.add_column("value")
    for k, v in dev.to_dict().items():
        if k == "sources":
            continue
        if isinstance(v, list):
            v = ", ".join(str(x) for x in v) or "-"
        t.add_row(k, "-" if v is None else str(v))
    src = _kv(list(dev.sources.items()), title="Sources")
    where = Text(f"profile: {dev.path}" if dev.path else "profile: detected from the live GPU")
    return Group(t, src, Text(""), where)


def check_table(manifest: str, verdicts: Sequence[Verdict]) -> RenderableType:

    t = Table(box=box.SIMPLE_HEAD, title=f"occupancy check {inert(manifest)}", title_justify="left",
              title_style="bold", pad_edge=False)
    for col in CHECK_HEAD:
        t.add_column(col, justify="left" if col in ("kernel", "device", "verdict") else "right")
    for row in check_rows(verdicts):
        t.add_row(*[inert(x) for x in row])
    parts: list[RenderableType] = [t]
    parts += [Text(inert(f"{manifest}:{v.line}: {v.kernel} on {v.device}: {p}"))
              for v in verdicts for p in v.problems]
    sources = sorted({v.registers_source for v in verdicts if v.resources is not None
                      and v.registers_source != "manifest"})
    if sources:
        parts.append(Text("resources from: " + inert(", ".join(sources))))
    parts.append(Text(tally_line(verdicts)))
    return Group(*parts)


def banks_view(result: object, addresses: list[int], element_bytes: int) -> RenderableType:
    from occupancy.core.banks import BankResult

    assert isinstance(result, BankResult)
    kind = " (conflict-free)" if result.ways == 1 else " bank conflict"
    lines: list[RenderableType] = [Text(
        f"{result.ways}-way{kind}: {result.wavefronts} pass(es) for {len(addresses)} threads "
        f"of {element_bytes} B", style="bold")]
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("thread", justify="right")
    t.add_column("byte address", justify="right")
    t.add_column("word", justify="right")
    t.add_column("bank(s)")
    for i, a in enumerate(addresses):
        t.add_row(str(i), f"{a:,}", str(a // 4), ",".join(str(b) for b in result.banks[i]))
    lines.append(t)
    if result.ways > 1:
        worst = sorted((b for b, c in result.words_per_bank.items() if c == result.ways))
        lines.append(Text(f"bank(s) {', '.join(map(str, worst[:8]))} serve {result.ways} "
                          "different words each"))
    return Group(*lines)


def plot_view(dev: Device, r: OccupancyResult, curves: tuple) -> RenderableType:  # type: ignore[type-arg]
    from occupancy.output.charts import LEGEND, text_chart

    limiter = limiters(r.limiters) or "-"
    parts: list[RenderableType] = [Text(
        f"{inert(dev.name)} (CC {dev.compute_capability}): {r.threads_per_block} threads, "
        f"{r.registers_per_thread} registers, {r.static_shared_memory + r.dynamic_shared_memory:,} B "
        f"smem -> {pct(r.occupancy)}, limited by {limiter}", style="bold")]
    for c in curves:
        parts += [Text(""), Text("\n".join(text_chart(c)))]
    parts += [Text(""), Text(LEGEND)]
    return Group(*parts)


_RESOURCE_HEAD = ("regs", "smem B", "stack B", "spills B", "bound")


def _resource_cells(k: ListedKernel) -> tuple[str, ...]:
    r = k.resources
    return (str(r.registers_per_thread), f"{r.static_shared_memory:,}", str(r.stack_frame_bytes),
            "?" if r.spills_unknown else str(r.spill_stores_bytes + r.spill_loads_bytes)
            + ("+?" if r.unattributed_spills else ""),
            "-" if r.max_threads_per_block is None else str(r.max_threads_per_block))


def resources_table(listed: Sequence[ListedKernel], runtime: int = 0) -> RenderableType:
    """Per file, each kernel's name on a line of its own, whole (a C++ template name or an
    llm.c kernel's does not fit a table column at 80 columns, and a cut name cannot be
    pasted into a manifest), and under it one line of numbers per arch; `runtime` kernels of
    CUDA's device runtime left out, said in one line."""
    from occupancy.build.names import qualified_name

    files: dict[str, dict[str, list[ListedKernel]]] = {}  # file -> kernel -> per arch, in order
    for k in listed:
        files.setdefault(k.file, {}).setdefault(k.resources.function, []).append(k)
    left = max([len("kernel / arch"), *(len(k.arch) + 2 for k in listed)])
    widths = [max([len(h), *(len(_resource_cells(k)[i]) for k in listed)])
              for i, h in enumerate(_RESOURCE_HEAD)]

    def line(first: str, cells: Sequence[str]) -> str:
        return " " + first.ljust(left) + "".join("   " + c.rjust(w)
                                                 for c, w in zip(cells, widths, strict=True))

    head = line("kernel / arch", _RESOURCE_HEAD)
    out = Text(overflow="fold")
    for file, kernels in files.items():
        out.append(inert(file) + "\n", style="bold")
        out.append(head + "\n", style="bold")
        out.append(" " + "\u2500" * (len(head) - 1) + "\n")
        for per_arch in kernels.values():
            r = per_arch[0].resources
            out.append(" " + inert(qualified_name(r.demangled or r.function)) + "\n")
            for k in per_arch:
                out.append(line("  " + k.arch, _resource_cells(k)) + "\n")
        out.append("\n")
    sources = sorted({k.resources.source for k in listed})
    out.append("from: " + inert(", ".join(sources)))
    if any(k.resources.before_link for k in listed):
        out.append("\n(the log seems a relocatable compile's (-rdc, -dc): functions compiled on "
                   "their own and no kernel's cumulative stack (a -G build whose kernels call "
                   "no function with a frame looks the same); if it is, its registers, stack "
                   "and shared memory are final only after the device link: add -Xnvlink -v to "
                   "the build and give that log, or give the source or the linked binary)")
    if runtime:
        out.append(f"\n(and {runtime} kernels of CUDA's device runtime, libcudadevrt, which "
                   "the -rdc link put in: not listed)")
    loose = list(dict.fromkeys(f for k in listed for f in k.resources.unattributed_spills))
    if loose:
        out.append(f"\n+?: device functions that spill ({inert(', '.join(loose[:3]))}"
                   f"{' and more' if len(loose) > 3 else ''}), compiled on their own (-G, -rdc): "
                   "the log does not say which kernels call them; the source or the cubin does")
    return out
