"""`calc`, `best`, `plot` and `banks`: one launch, its best block size, its what-ifs, one warp."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from occupancy.cli.common import (
    INT32_MAX,
    InputError,
    block_value,
    device_option,
    devices_option,
    kernel_options,
    launch_options,
    main,
    size_value,
    translate_errors,
    write_output,
)
from occupancy.output.emit import emit


@main.command()
@devices_option
@click.option("--threads", "-t", callback=block_value, required=True, metavar="N|XxY|XxYxZ",
              help="Threads per block: 256, 16x16 or 32x8x2.")
@kernel_options
@click.option("--partitioned-caching", is_flag=True,
              help="Kernel built with -Xptxas -dlcm=ca on CC 5.2/6.1 (partitioned global caching).")
@click.option("--virtual-resources", type=click.IntRange(0, 1 << 16), default=0, show_default=True,
              help="Virtual resources per block (CC 10-12: 128 per SM).")
@click.option("--cluster", callback=block_value, default=None, metavar="N|XxY|XxYxZ",
              help="Thread-block cluster shape (CC >= 9.0): active clusters per GPU.")
@click.option("--grid", callback=block_value, default=None, metavar="X|XxY|XxYxZ",
              help="The launch's grid, checked against --cluster.")
@click.option("--no-cliffs", is_flag=True, help="Skip the register and smem cliff search.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout (stable field names).")
@translate_errors
def calc(device: tuple[str, ...], threads: tuple[int, ...], regs: int, smem: int, dyn_smem: int,
         carveout: int | None, launch_bound: int | None, barriers: int, no_opt_in: bool,
         partitioned_caching: bool, virtual_resources: int, cluster: tuple[int, ...] | None,
         grid: tuple[int, ...] | None, no_cliffs: bool, as_json: bool) -> None:
    """Blocks, warps and threads per SM for one launch, and what limits it.

    Example: occupancy calc -d v100 -t 256 -r 40 --smem 8K;
    several GPUs: occupancy calc -d v100 -d a100 -d h100 -t 256 -r 40;
    clusters: occupancy calc -d h200 -t 128 -r 32 --cluster 2x2
    """
    from occupancy.core.solver import cliffs, solve
    from occupancy.inputs.profiles import load_device

    devs = [load_device(d) for d in device]
    shape: tuple[int, int, int] | None = None
    if cluster is not None:
        c3 = (*cluster, 1, 1)
        shape = (c3[0], c3[1], c3[2])
    if grid is not None and shape is None:
        raise InputError("--grid is checked against a cluster: give --cluster too")
    from occupancy.output.answers import Calc

    answers = []
    for dev in devs:
        r = solve(dev, math.prod(threads), regs, smem, dyn_smem, carveout, launch_bound, barriers,
                  opt_in=not no_opt_in, partitioned_global_caching=partitioned_caching,
                  virtual_resources=virtual_resources, cluster=shape, grid=grid,
                  block=tuple(threads))
        answers.append(Calc(dev, r, threads,
                            None if no_cliffs or r.active_blocks_per_sm == 0 else cliffs(dev, r)))
    emit(answers, "json" if as_json else "text")


@main.command()
@devices_option
@kernel_options
@click.option("--smem-per-thread", callback=size_value, metavar="BYTES", default="0",
              help="Dynamic smem that grows with the block: bytes per thread, added to --dyn-smem.")
@click.option("--threads", "-t", type=click.IntRange(1, INT32_MAX), default=None, metavar="N",
              help="Block size for the available-smem table (default: the best one).")
@click.option("--blocks", type=click.IntRange(1, 1024), default=None, metavar="N",
              help="Report the dynamic smem available for N resident blocks only.")
@click.option("--cluster", "min_clusters", type=click.IntRange(1, 1 << 20), default=None,
              metavar="N", help="Also the largest cluster size that keeps N clusters active "
                                "(cudaOccupancyMaxPotentialClusterSize for N = 1; CC >= 9.0).")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout (stable field names).")
@translate_errors
def best(device: tuple[str, ...], regs: int, smem: int, dyn_smem: int, carveout: int | None,
         launch_bound: int | None, barriers: int, no_opt_in: bool, smem_per_thread: int,
         threads: int | None, blocks: int | None, min_clusters: int | None, as_json: bool) -> None:
    """The block size with the most resident threads (cudaOccupancyMaxPotentialBlockSize).

    Also: the dynamic shared memory one block may use for N resident blocks, exact on
    CC >= 8 where the driver forgets the reserved 1 KB per block; with --cluster N, the
    largest cluster size that keeps N clusters active.

    Example: occupancy best -d a100 -r 64 --smem-per-thread 16
    """
    from occupancy.core.best import BestInputs, best_for_device
    from occupancy.inputs.profiles import load_device

    inputs = BestInputs(regs, smem, dyn_smem, smem_per_thread, carveout, launch_bound, barriers,
                        not no_opt_in, threads, blocks, min_clusters)
    answers = [best_for_device(load_device(d), inputs) for d in device]
    emit(answers, "json" if as_json else "text")


def sweep_config(threads: tuple[int, ...], regs: int, smem: int, dyn_smem: int,
                  carveout: int | None, no_opt_in: bool) -> Any:
    from occupancy.core.whatif import Config

    return Config(math.prod(threads), regs, smem + dyn_smem, carveout, not no_opt_in)


@main.command()
@device_option
@launch_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the three graphs to FILE.png, .svg or .pdf (PNG/PDF need matplotlib).")
@click.option("--json", "as_json", is_flag=True, help="The curves' data as JSON on stdout.")
@translate_errors
def plot(device: str, threads: tuple[int, ...], regs: int, smem: int, dyn_smem: int,
         carveout: int | None, no_opt_in: bool, output: str | None, as_json: bool) -> None:
    """What if? Occupancy against block size, registers and shared memory.

    The three graphs of NVIDIA's spreadsheet, with the current point marked and the
    limiter of every stretch spelled out; in the terminal, or as PNG / SVG / PDF with -o.
    Example: occupancy plot -d a100 -t 256 -r 40 -o a100.png
    """
    from occupancy.core.solver import solve
    from occupancy.core.whatif import sweeps
    from occupancy.inputs.profiles import load_device
    from occupancy.output.answers import Plot

    dev = load_device(device)
    cfg = sweep_config(threads, regs, smem, dyn_smem, carveout, no_opt_in)
    curves = sweeps(dev, cfg)
    r = solve(dev, cfg.threads_per_block, cfg.registers_per_thread, 0,
              cfg.shared_memory_per_block, cfg.carveout, opt_in=cfg.opt_in)
    if as_json:
        emit(Plot(dev, cfg, curves, r), "json")
    if output:
        title = (f"{dev.name}: {cfg.threads_per_block} threads, {cfg.registers_per_thread} "
                 f"registers, {cfg.shared_memory_per_block:,} B smem")
        suffix = Path(output).suffix.lower()
        if suffix == ".svg":
            from occupancy.output.charts import svg_figure

            write_output(output, svg_figure(curves, title), [dev.path or ""])
        elif suffix in (".png", ".pdf"):
            from occupancy.inputs.safety import check_output
            from occupancy.output.raster import save_figure

            check_output(output, [dev.path or ""])
            save_figure(curves, output, title)
        else:
            raise InputError(f"-o {output}: use a .png, .svg or .pdf file name")
        if not as_json and output != "-":
            click.echo(f"wrote {output}", err=True)
        return
    if not as_json:
        emit(Plot(dev, cfg, curves, r), "text")


@main.command()
@click.option("--words", default=None, metavar="W0,W1,...",
              help="Explicit 4-byte word index per thread (thread 0 first), e.g. 1,33.")
@click.option("--pitch", type=click.IntRange(1, INT32_MAX), default=32, show_default=True,
              help="Row pitch of the 2-D tile in elements (33 for tile[32][33]).")
@click.option("--column", is_flag=True, help="Threads read down a column (thread t, row t).")
@click.option("--stride", type=click.IntRange(0, INT32_MAX), default=1, show_default=True,
              help="Elements between neighbouring threads along a row.")
@click.option("--offset", type=click.IntRange(0, INT32_MAX), default=0, show_default=True,
              help="First element (row read) or column index (column read).")
@click.option("--element-bytes", "-e", type=click.Choice(["1", "2", "4", "8", "16"]), default="4",
              show_default=True, help="Bytes per element (float4 = 16).")
@click.option("--threads", type=click.IntRange(1, 32), default=32, show_default=True)
@click.option("--banks", "nbanks", type=click.Choice(["16", "32"]), default="32", show_default=True,
              help="16 for CC 1.x (half-warp).")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@translate_errors
def banks(words: str | None, pitch: int, column: bool, stride: int, offset: int,
          element_bytes: str, threads: int, nbanks: str, as_json: bool) -> None:
    """Shared-memory bank conflicts of one warp's access.

    Examples: occupancy banks --words 1,33 (2-way); occupancy banks --column
    (a column of float tile[32][32]: 32-way); occupancy banks --column --pitch 33.
    """
    from occupancy.core.banks import bank_conflicts, tile_addresses

    size = int(element_bytes)
    if words is not None:
        try:
            addresses = [int(w) * 4 for w in words.split(",") if w.strip()]
        except ValueError:
            raise InputError(f"--words: '{words}' is not a comma-separated list of word "
                             "indexes, e.g. 1,33") from None
        if not addresses or any(a < 0 for a in addresses) or len(addresses) > 32:
            raise InputError("--words: give 1 to 32 non-negative word indexes")
        if any(a % size for a in addresses):
            raise InputError(f"--words: an {size}-byte access must start at a multiple of "
                             f"{size // 4} words (the hardware needs aligned vector accesses)")
    else:
        addresses = tile_addresses(pitch, column, size, stride, offset, threads)
    from occupancy.output.answers import Banks

    emit(Banks(bank_conflicts(addresses, size, int(nbanks)), addresses, size),
         "json" if as_json else "text")
