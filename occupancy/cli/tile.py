"""`tile`: which tile size, for a shipped family or an entry of a manifest."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click

from occupancy.cli.common import (
    INT32_MAX,
    STORE_IS_FOR_ENTRIES,
    InputError,
    devices_option,
    main,
    problem_sets,
    translate_errors,
    write_output,
)
from occupancy.output.emit import emit


@main.command()
@click.argument("target", metavar="matmul|transpose|MANIFEST")
@devices_option
@click.option("--kernel", default=None, metavar="NAME",
              help="The entry of MANIFEST to rank (one with a 'space:', or a 'triton:' entry).")
@click.option("-n", "size", type=click.IntRange(1, INT32_MAX), default=4096, show_default=True,
              help="Matrix size (n x n) for the shipped families; any n, edge tiles are guarded.")
@click.option("--set", "sets", multiple=True, metavar="NAME=N",
              help="Override a problem size of the manifest, e.g. --set M=2048 (repeat).")
@click.option("--max-points", type=click.IntRange(1, 1_000_000), default=10_000, show_default=True,
              help="Refuse spaces larger than this before compiling anything.")
@click.option("--max-compiles", type=click.IntRange(1, 100_000), default=64, show_default=True,
              help="Refuse spaces that need more compiler runs (one per set of defines and "
                   "24 template instances).")
@click.option("--max-instances", type=click.IntRange(1, 1_000_000), default=256,
              show_default=True, help="Refuse more template instances in one compile.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "kernel_tuner", "vllm"]),
              default=None, help="kernel_tuner: the pruned space as restrictions, as JSON. "
                                 "vllm (triton entries): a config file per device into -o DIR.")
@click.option("--store", default=None, metavar="FILE.json",
              help="A `measure --store` file: show the measured best for this GPU, if any.")
@click.option("-o", "--output", default=None, metavar="DIR",
              help="With --format vllm: the folder for the config files (made if missing).")
@click.option("--table", "table_path", default=None, metavar="FILE.json",
              help="Triton entries: write the table make_prune_hook reads.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout (stable field names).")
@translate_errors
def tile(target: str, device: tuple[str, ...], kernel: str | None, size: int,
         sets: tuple[str, ...], max_points: int, max_compiles: int, max_instances: int,
         fmt: str | None, store: str | None, output: str | None, table_path: str | None,
         as_json: bool) -> None:
    """Which tile size? The shipped families, or the tuning space of your own kernel.

    `occupancy tile matmul -d gtx1080 -n 4096`: every candidate of kernels/matmul.cu, the
    points of kernels/matmul.yaml's entries ranked together (a shipped family is the two).
    `occupancy tile tune.yaml --kernel sgemm2d -d h200`: every point of the manifest
    entry's space, compiled for the device (registers from the real compiler), solved,
    pruned (cannot launch, spills) and ranked by the model, with the pick and why.
    Repeat -d for several GPUs: one table each, in order (--json: a list in that order).
    `occupancy tile m.yaml --kernel fused_moe -d l4 -d rtx5090`: a triton entry's configs
    compiled offline per device, with Triton's own fit check and the rank per size.
    """
    from occupancy.inputs.profiles import load_device

    devs = [load_device(d) for d in device]
    fmt = "json" if as_json else (fmt or "text")
    if kernel is not None and os.path.isfile(target):
        from occupancy.inputs.manifest.triton import find_kind

        if find_kind(target, kernel) == "triton":
            _tile_triton(target, kernel, devs, fmt, output, table_path)
            return
    if fmt == "vllm" or output or table_path:
        raise InputError("--format vllm, -o and --table are for a triton entry "
                         "(MANIFEST --kernel NAME naming a 'triton:' entry)")
    from occupancy.tune.family import families, family_specs

    if kernel is None:
        if target not in families():
            if not os.path.exists(target):
                raise InputError(f"'{target}' is neither {' nor '.join(families())} nor a "
                                 "manifest file: give a shipped family, or MANIFEST --kernel NAME")
            raise InputError(f"{target}: give --kernel NAME (a tuning entry of the manifest), "
                             f"or {' / '.join(families())} for the shipped families")
        if fmt == "kernel_tuner":
            raise InputError("--format kernel_tuner is for a tuning entry of a manifest "
                             "(MANIFEST --kernel NAME)")
        if store:
            raise InputError(STORE_IS_FOR_ENTRIES)
        specs = family_specs(target, size, problem_sets(sets))
    else:
        from occupancy.inputs.manifest.tuning import load_tuning

        specs = [load_tuning(target, kernel, problem_sets(sets))]
    stored = None
    if store and kernel is not None:  # read first: a bad store is an error before any compile
        from occupancy.tune.store import read_store

        stored = (store, read_store(store))
    caps = (max_points, max_compiles, max_instances)
    emit([_tile_one(specs, dev, caps, stored, target if kernel is None else None) for dev in devs],
         fmt)


def _with_status(what: str, work: Callable[[], Any]) -> Any:
    """work(), with a spinner on stderr while it runs when stderr is a terminal (compiles of
    a space take seconds to minutes); nothing extra otherwise (pipes, CI logs, --json)."""
    if not sys.stderr.isatty():
        return work()
    from rich.console import Console

    with Console(stderr=True).status(what):
        return work()


def _tile_one(specs: list[Any], dev: Any, caps: tuple[int, int, int],
              stored: tuple[str, dict[str, Any]] | None, family: str | None) -> Any:
    """One device's ranking of the entries (a family ranks all of its manifest's together),
    with what a `measure --store` file says for this GPU."""
    from occupancy.inputs.safety import inert
    from occupancy.output.answers import Tuned
    from occupancy.tune.bounds import WorkLimits
    from occupancy.tune.spaces import points, rank_entries

    entries = [(spec, *points(spec, caps[0], WorkLimits(caps[1], caps[2]))) for spec in specs]
    count = sum(len(pts) for _, pts, _ in entries)
    rep = _with_status(f"compiling and ranking {count:,} points for {inert(dev.name)}",
                       lambda: rank_entries(dev, entries, family))
    if stored is None:  # a store keeps one entry's measured best (not a family's)
        return Tuned(rep)
    from occupancy.tune.store import lookup

    return Tuned(rep, stored[0], lookup(stored[1], rep.spec, dev))


def _tile_triton(manifest: str, kernel: str, devs: list[Any], fmt: str, output: str | None,
                 table_path: str | None) -> None:
    """tile for a `triton:` entry: compile, rank per device, then the chosen outputs."""
    import json

    from occupancy.inputs.manifest.triton import load_triton
    from occupancy.tune.triton_space import rank_entry, vllm_file_name

    if fmt == "kernel_tuner":
        raise InputError("--format kernel_tuner is for tuning entries; a triton entry has "
                         "text, json and vllm")
    if fmt == "vllm" and not output:
        raise InputError("--format vllm writes one file per device: give -o DIR")
    spec = load_triton(manifest, kernel)
    inputs = [f for f in (spec.manifest, spec.module, spec.config_file) if f]
    tile = rank_entry(spec, devs)
    if table_path:
        write_output(table_path, json.dumps(tile.table(), indent=1) + "\n", inputs)
    if fmt == "vllm":
        from occupancy.inputs.safety import inert

        assert output is not None
        _make_folder(output)
        for d in tile.devices:
            configs, notes = tile.vllm_file(d)
            path = os.path.join(output, vllm_file_name(spec, d.device))
            text = json.dumps({str(m): c for m, c in sorted(configs.items())}, indent=4) + "\n"
            write_output(path, text, inputs)
            click.echo(f"{inert(path)}: {len(configs)} sizes" + "".join(
                f"\n  {inert(n)}" for n in notes))
        return
    emit(tile, fmt)


def _make_folder(path: str) -> None:
    from occupancy.inputs.safety import inert

    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError(f"-o {inert(path)}: not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise InputError(f"-o {inert(path)}: cannot make the folder: {exc.strerror}") from None
