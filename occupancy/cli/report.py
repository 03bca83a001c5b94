"""`report`: a Markdown or self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from occupancy.cli.common import (
    INT32_MAX,
    InputError,
    launch_options,
    main,
    translate_errors,
    write_output,
)
from occupancy.cli.gate import check_inputs
from occupancy.cli.launch import sweep_config


@main.command()
@click.option("--device", "-d", "devices_", multiple=True, required=True, metavar="NAME|FILE",
              help="A device (repeat for several).")
@launch_options
@click.option("--tile", "tile_kernel", default=None, metavar="FAMILY|MANIFEST",
              help="Add the tile analysis of a shipped family, or of a manifest's tuning "
                   "entry (with --kernel), for every device.")
@click.option("--kernel", default=None, metavar="NAME",
              help="With --tile MANIFEST: the tuning entry to rank.")
@click.option("-n", "size", type=click.IntRange(1, INT32_MAX), default=4096, show_default=True,
              help="Matrix size for --tile.")
@click.option("--check", "manifest", type=click.Path(dir_okay=False), default=None,
              help="Add the verdicts of a launch manifest (occupancy check).")
@click.option("--measured", type=click.Path(dir_okay=False), default=None,
              help="Add predicted against measured from an `occupancy measure -o` record.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="report.html (self-contained) or report.md (charts as SVG files beside it).")
@translate_errors
def report(devices_: tuple[str, ...], threads: tuple[int, ...], regs: int, smem: int,
           dyn_smem: int, carveout: int | None, no_opt_in: bool, tile_kernel: str | None,
           kernel: str | None, size: int, manifest: str | None, measured: str | None,
           output: str) -> None:
    """A Markdown or self-contained HTML report: devices, charts, tiles, checks, measurements.

    Example: occupancy report -d v100 -d h200 --tile matmul -n 4096
    --measured bench/results/h200-2026-11-30/measure.json -o report.html; your own
    kernel's space: --tile tune.yaml --kernel sgemm2d.
    """
    from occupancy.inputs.profiles import load_device
    from occupancy.inputs.safety import check_output, inert, slug
    from occupancy.output.report import build, to_html, to_markdown

    suffix = ".html" if output == "-" else Path(output).suffix.lower()
    if suffix not in (".html", ".htm", ".md", ".markdown"):
        raise InputError(f"-o {inert(output)}: use a .html or .md file name (or - for HTML on stdout)")
    devs = [load_device(d) for d in devices_]
    entry = tile_kernel if kernel is not None else None
    if kernel is not None and not tile_kernel:
        raise InputError("--kernel NAME goes with --tile MANIFEST: give the manifest")
    inputs = [p for p in (manifest, measured, entry, *[d.path for d in devs]) if p]
    if output != "-":
        check_output(output, inputs)
    cfg = sweep_config(threads, regs, smem, dyn_smem, carveout, no_opt_in)
    tiles = []
    if tile_kernel and kernel is not None:
        from occupancy.inputs.manifest.tuning import load_tuning
        from occupancy.tune.spaces import points, rank

        spec = load_tuning(tile_kernel, kernel)
        pts, removed = points(spec)
        tiles = [rank(spec, d, pts, removed) for d in devs]
    elif tile_kernel:
        from occupancy.tune.family import rank_family

        tiles = [rank_family(tile_kernel, d, size) for d in devs]
    verdicts = None
    if manifest:
        from occupancy.build.resolve import CheckResolver
        from occupancy.gate.check import evaluate
        from occupancy.inputs.manifest import load_manifest

        m = load_manifest(manifest)
        resolver = CheckResolver()
        verdicts = evaluate(m, resolver, resolver.prepare)
        inputs += check_inputs(m)
    rep = build(devs, cfg, threads, tiles, manifest, verdicts, measured)
    if suffix in (".html", ".htm"):
        write_output(output, to_html(rep), inputs)
    else:
        out_dir = Path(output).parent
        chart_dir = slug(Path(output).stem) + "-charts"
        text, files = to_markdown(rep, chart_dir)
        target = out_dir / chart_dir
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            raise InputError(f"{inert(str(target))} exists and is not a folder: remove it or "
                             "choose another -o name")
        target.mkdir(exist_ok=True)
        for rel, svg in files.items():
            write_output(str(out_dir / rel), svg, inputs)
        write_output(output, text, inputs)
    if output != "-":
        click.echo(f"wrote {inert(output)}", err=True)
