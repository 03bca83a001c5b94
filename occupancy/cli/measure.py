"""`measure`: launch the kernels on the GPU, verify, time, compare with the model."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from occupancy.cli.common import (
    EXIT_PROBLEM,
    STORE_IS_FOR_ENTRIES,
    InputError,
    main,
    problem_sets,
    translate_errors,
    write_output,
)
from occupancy.output.emit import emit

if TYPE_CHECKING:
    from occupancy.tune.records import MeasureRecord, TuningRecord


@main.command()
@click.argument("target", default="all", metavar="[matmul|transpose|all|MANIFEST]")
@click.option("--kernel", default=None, metavar="NAME",
              help="With a MANIFEST: the tuning entry to measure.")
@click.option("-n", "size", type=click.IntRange(64, 65536), default=None,
              help="Matrix size (default: 4096 for matmul, 8192 for transpose).")
@click.option("--tiles", default=None, metavar="LABEL,...",
              help="Only these candidates (labels as `occupancy tile` prints them; a manifest's "
                   "points as `BM=64 BN=64 ...`).")
@click.option("--top", type=click.IntRange(1, 10_000), default=None, metavar="K",
              help="With a MANIFEST: only the K best predicted points (default: all launchable).")
@click.option("--budget", type=click.IntRange(1, 10_000), default=None, metavar="N",
              help="With a MANIFEST: at most N points, chosen one at a time (the predicted "
                   "leaders, then the points that could still beat the best measured), stopping "
                   "once none can.")
@click.option("--set", "sets", multiple=True, metavar="NAME=N",
              help="Override a problem size of the manifest (repeat).")
@click.option("--max-compiles", type=click.IntRange(1, 100_000), default=64, show_default=True,
              help="With a MANIFEST: refuse spaces that need more compiler runs.")
@click.option("--store", default=None, metavar="FILE.json",
              help="With a MANIFEST: keep the fastest params per kernel, problem and GPU here.")
@click.option("--reps", type=click.IntRange(3, 10_000), default=20, show_default=True,
              help="Timed runs per kernel, at least (median reported; while the runs about the "
                   "median spread over 2%, more, up to 10x --reps in all).")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Also write the JSON record to this file.")
@translate_errors
def measure(target: str, kernel: str | None, size: int | None, tiles: str | None,
            top: int | None, budget: int | None, sets: tuple[str, ...], max_compiles: int,
            store: str | None, reps: int, as_json: bool, output: str | None) -> None:
    """Launch kernels on the GPU: verify, time, compare with the model.

    The shipped families (matmul, transpose), or the tuning space of your own kernel:
    `occupancy measure tune.yaml --kernel sgemm2d --top 8 --store best.json`, or the few
    points that find its best: `... --budget 8`. Needs CuPy
    and an NVIDIA GPU (pip install 'occupancy[gpu]') and a compiler. For every candidate:
    predicted and driver occupancy, predicted and measured time.
    """
    import json

    from occupancy.gpu.measure import cupy_module

    if budget is not None and (kernel is None or top is not None):
        raise InputError("--budget chooses the points of a MANIFEST --kernel NAME; give it "
                         "without --top")
    cupy_module("measure")  # fail fast, before anything else, without CuPy or a GPU
    from rich.console import Console
    from rich.progress import Progress

    inputs: list[str] = []
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("measuring", total=1)

        def progress(i: int, total: int, what: str) -> None:
            bar.update(task, completed=i, total=total, description=what)

        shipped: MeasureRecord | None = None
        tuned: TuningRecord | None = None
        if target in ("matmul", "transpose", "all") and kernel is None:
            from occupancy.gpu.measure import measure as run_measure

            if store:
                raise InputError(STORE_IS_FOR_ENTRIES)

            kernels = ["matmul", "transpose"] if target == "all" else [target]
            labels = [t.strip() for t in tiles.split(",")] if tiles else None
            shipped = run_measure(kernels, size or 4096, size or 8192, labels, reps, progress)
        else:
            if kernel is None:
                raise InputError(f"{target}: give --kernel NAME (a tuning entry), or matmul / "
                                 "transpose / all for the shipped families")
            labels = [t.strip() for t in tiles.split(",") if t.strip()] if tiles else []
            tuned = _measure_entry(target, kernel, problem_sets(sets), top, budget,
                                   max_compiles, reps, progress, labels)
            inputs.append(target)
    record = tuned if tuned is not None else shipped
    from occupancy.output.answers import Measured

    answer = Measured(record, tuning=tuned is not None) if record is not None else None
    if output and answer is not None:
        emit(answer, "json", output, inputs)
    if tuned is not None and store and tuned["fastest"]:
        from occupancy.tune.store import read_store, store_entry

        book = read_store(store)
        book["entries"].update(store_entry(tuned))
        write_output(store, json.dumps(book, indent=2) + "\n", inputs)
    if answer is not None:
        emit(answer, "json" if as_json else "text")
    from occupancy.tune.records import measure_failures, tuning_failures

    bad = tuning_failures(tuned) if tuned is not None else \
        measure_failures(shipped) if shipped is not None else []
    if bad:
        click.echo(f"problem: {', '.join(bad)} failed verification or occupancy", err=True)
        sys.exit(EXIT_PROBLEM)


def _measure_entry(target: str, kernel: str, sets: dict[str, int], top: int | None,
                   budget: int | None, max_compiles: int, reps: int, progress: Any,
                   labels: list[str]) -> TuningRecord:
    """A manifest's entry on the GPU: a Triton entry through Triton's launcher, a CUDA one
    ranked for the live device and launched through CuPy (only the points `labels` name,
    where given)."""
    from occupancy.inputs.manifest.triton import find_kind

    if find_kind(target, kernel) == "triton":
        if labels:
            raise InputError("--tiles: a Triton entry's configs are measured all together; "
                             "give --tiles with a CUDA entry, or narrow the entry's configs")
        from occupancy.gpu.triton_measure import measure_triton

        return measure_triton(target, kernel, sets, top, reps, progress, budget)
    from occupancy.core.device import from_cuda_properties
    from occupancy.gpu.measure import device_properties, measure_tuning
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.bounds import WorkLimits
    from occupancy.tune.spaces import points, rank

    spec = load_tuning(target, kernel, sets)
    dev = from_cuda_properties(device_properties(0))
    pts, removed = points(spec, limits=WorkLimits(compiles=max_compiles), only=labels)
    return measure_tuning(spec, rank(spec, dev, pts, removed), top, reps, progress, budget)
