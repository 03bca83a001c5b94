"""Thin click commands: parse, call the core, pick a renderer. Exit codes live here.

0: done / all checks pass; 1: a check found a problem; 2: bad usage or bad input.
"""

from __future__ import annotations

import errno
import math
import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from occupancy.core.errors import OccupancyError
from occupancy.core.limits import INT32_MAX

if TYPE_CHECKING:
    from occupancy.tune.records import MeasureRecord, TuningRecord

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2
F = TypeVar("F", bound=Callable[..., Any])


class InputError(click.ClickException):
    """Bad input: one line on stderr, 'Error: ...', exit 2."""

    exit_code = EXIT_USAGE


def translate_errors(f: F) -> F:
    """Library errors become one-line `Error: ...` messages, translated once, here."""

    @wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except OccupancyError as exc:
            raise InputError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def _console() -> Any:
    from rich.console import Console

    from occupancy.inputs.safety import InertLines

    return Console(file=InertLines(sys.stdout), highlight=False, markup=False,  # type: ignore[arg-type]
                   emoji=False)


def _emit_json(data: Any) -> None:
    import json

    click.echo(json.dumps(data, indent=2))


def _parsed(parse_name: str) -> Callable[[click.Context, click.Parameter, str | None], Any]:
    """A click callback that parses with occupancy.inputs.units' parser of that name."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        from occupancy.inputs import units

        try:
            return getattr(units, parse_name)(value)
        except OccupancyError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


_size = _parsed("parse_bytes")
_block = _parsed("parse_block")


def write_output(path: str, text: str, inputs: list[str] | tuple[str, ...] = (),
                 force: bool = True) -> None:
    """-o: '-' is stdout; else the whole file or nothing, never over an input of this run,
    never onto a device node, FIFO or folder; without force, never over an existing file."""
    if path == "-":
        click.echo(text, nl=False)
        return
    from occupancy.inputs.safety import inert, write_atomically

    if not force and os.path.lexists(path):
        raise InputError(f"{inert(path)} exists: choose another -o path or add --force to replace it")
    write_atomically(path, text, inputs)


def device_option(f: F) -> F:
    return click.option("--device", "-d", "device", required=True, metavar="NAME|FILE",
                        help="Device name or alias (occupancy devices), or a profile YAML.")(f)


def _apply(f: F, decorators: list[Callable[[F], F]]) -> F:
    for dec in reversed(decorators):
        f = dec(f)
    return f


# Options several commands share, defined once.
_SMEM = click.option("--smem", callback=_size, metavar="BYTES", default="0",
                     help="Static shared memory per block: 8192, 8K or 8KiB.")
_DYN_SMEM = click.option("--dyn-smem", callback=_size, metavar="BYTES", default="0",
                         help="Dynamic shared memory per block (the launch's third argument).")
_CARVEOUT = click.option("--carveout", type=click.IntRange(0, 100), default=None,
                         metavar="PERCENT",
                         help="cudaFuncAttributePreferredSharedMemoryCarveout, 0-100 "
                              "(default: maximum shared memory).")
_NO_OPT_IN = click.option("--no-opt-in", "no_opt_in", is_flag=True,
                          help="The kernel never raises its max dynamic smem above the default.")


def kernel_options(f: F) -> F:
    """Options that describe a kernel's resources and launch, shared by calc and best."""
    return _apply(f, [
        click.option("--regs", "-r", type=click.IntRange(0, 1024), default=0, show_default=True,
                     help="Registers per thread (from ptxas -v or cuobjdump)."),
        _SMEM, _DYN_SMEM, _CARVEOUT,
        click.option("--launch-bound", type=click.IntRange(1, INT32_MAX), default=None, metavar="THREADS",
                     help="The kernel's __launch_bounds__ max threads per block."),
        click.option("--barriers", type=click.IntRange(0, 64), default=1, show_default=True,
                     help="Named barriers per block (limits blocks on CC >= 9.0)."),
        _NO_OPT_IN,
    ])


def launch_options(f: F) -> F:
    """The launch config the what-if curves vary (plot, report)."""
    return _apply(f, [
        click.option("--threads", "-t", callback=_block, default="256", show_default=True,
                     metavar="N|XxY|XxYxZ", help="Threads per block."),
        click.option("--regs", "-r", type=click.IntRange(0, 255), default=32, show_default=True,
                     help="Registers per thread."),
        _SMEM, _DYN_SMEM, _CARVEOUT, _NO_OPT_IN,
    ])


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


def _quiet_broken_pipe() -> None:
    """stdout's reader went away (`occupancy ... | head`): exit quietly, as cat does."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_PROBLEM)


_STREAM_ERRNOS = {errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def _stream_failed(why: str) -> None:
    """stdout cannot take the output (a full disk, `> /dev/full`, closed): one line, exit 2,
    and nothing more is tried on it (no second error as Python exits)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the failed stream to the end
    click.echo(f"Error: cannot write the output: {why}", err=True)
    sys.exit(EXIT_USAGE)


class OneLineErrors(click.Group):
    """Usage errors too are one line: `Error: ... (see 'occupancy calc --help')`, exit 2.
    Ctrl-C exits 130 with one line; a closed stdout pipe exits without a traceback."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        from occupancy.build.run import Terminated, install_signal_handlers
        from occupancy.inputs.safety import one_line

        install_signal_handlers()
        if sys.stdout is None:  # started with stdout closed (`occupancy ... >&-`)
            _stream_failed("standard output is closed")
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else "")
            sys.exit(EXIT_OK)
        except click.ClickException as exc:
            message = exc.format_message()
            ctx = getattr(exc, "ctx", None)
            if isinstance(exc, click.UsageError) and ctx is not None:
                message += f" (see '{ctx.command_path} --help')"
            click.echo(f"Error: {one_line(message)}", err=True)
            sys.exit(exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            click.echo("Interrupted.", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except Terminated as exc:  # the tools' groups are ended, the temp folders gone
            click.echo("Terminated.", err=True)
            sys.exit(exc.exit_code)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except OSError as exc:
            if exc.errno not in _STREAM_ERRNOS:
                raise
            _stream_failed(exc.strerror or str(exc))
        except ValueError as exc:
            # The OS refuses a path with a NUL byte wherever it is opened or stat'ed.
            if "null byte" not in str(exc):
                raise
            click.echo("Error: a file name contains a NUL byte: give a plain path", err=True)
            sys.exit(EXIT_USAGE)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_broken_pipe()
        except OSError as exc:
            _stream_failed(exc.strerror or str(exc))
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]},
             invoke_without_command=False, no_args_is_help=True)
@click.version_option(package_name="occupancy")
def main() -> None:
    """Exact CUDA occupancy, block-size advice and device profiles.

    Every result command takes --json. Exit codes: 0 done, 1 a check failed,
    2 bad usage or input.
    """


_cluster = _parsed("parse_block")


def devices_option(f: F) -> F:
    return click.option("--device", "-d", "device", required=True, multiple=True,
                        metavar="NAME|FILE",
                        help="Device name or alias (occupancy devices), or a profile YAML; "
                             "repeat to compare GPUs side by side.")(f)


@main.command()
@devices_option
@click.option("--threads", "-t", callback=_block, required=True, metavar="N|XxY|XxYxZ",
              help="Threads per block: 256, 16x16 or 32x8x2.")
@kernel_options
@click.option("--partitioned-caching", is_flag=True,
              help="Kernel built with -Xptxas -dlcm=ca on CC 5.2/6.1 (partitioned global caching).")
@click.option("--virtual-resources", type=click.IntRange(0, 1 << 16), default=0, show_default=True,
              help="Virtual resources per block (CC 10-12: 128 per SM).")
@click.option("--cluster", callback=_cluster, default=None, metavar="N|XxY|XxYxZ",
              help="Thread-block cluster shape (CC >= 9.0): active clusters per GPU.")
@click.option("--grid", callback=_block, default=None, metavar="X|XxY|XxYxZ",
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
    results, cls = [], []
    for dev in devs:
        r = solve(dev, math.prod(threads), regs, smem, dyn_smem, carveout, launch_bound, barriers,
                  opt_in=not no_opt_in, partitioned_global_caching=partitioned_caching,
                  virtual_resources=virtual_resources, cluster=shape, grid=grid)
        results.append(r)
        cls.append(None if no_cliffs or r.active_blocks_per_sm == 0 else cliffs(dev, r))
    if as_json:
        from occupancy.output.serialize import result_dict

        dicts = [result_dict(d, r, threads, c) for d, r, c in zip(devs, results, cls, strict=True)]
        _emit_json(dicts[0] if len(dicts) == 1 else dicts)
        return
    from occupancy.output.terminal import calc_view, compare_view

    if len(devs) == 1:
        _console().print(calc_view(devs[0], results[0], threads, cls[0]))
    else:
        _console().print(compare_view(devs, results, cls))


@main.command()
@devices_option
@kernel_options
@click.option("--smem-per-thread", callback=_size, metavar="BYTES", default="0",
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
    if as_json:
        from occupancy.output.serialize import best_dict

        dicts = [best_dict(a) for a in answers]
        _emit_json(dicts[0] if len(dicts) == 1 else dicts)
        return
    from occupancy.output.terminal import best_compare_view, best_view

    if len(answers) == 1:
        _console().print(best_view(answers[0]))
    else:
        _console().print(best_compare_view(answers))


@main.command()
@click.argument("manifest", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit", "github", "sarif"]),
              default="text", show_default=True, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the report to a file instead of stdout (replaced if it exists).")
@translate_errors
def check(manifest: str, fmt: str, as_json: bool, output: str | None) -> None:
    """Check a manifest of launch configs against target GPUs (for CI).

    Per kernel x device: can it launch, is occupancy at or above its floor, are the
    register and spill rules kept. Exit 0 when all pass, 1 when any fails, 2 for a bad
    manifest. Example: occupancy check launches.yaml --format github
    """
    from occupancy.build.resolve import CheckResolver
    from occupancy.gate.check import evaluate, exit_code
    from occupancy.inputs.manifest import load_manifest

    if as_json:
        fmt = "json"
    m = load_manifest(manifest)
    resolver = CheckResolver()
    verdicts = evaluate(m, resolver, resolver.prepare)
    if fmt == "text":
        from occupancy.output.terminal import check_table

        if output and output != "-":
            from io import StringIO

            from rich.console import Console

            from occupancy.inputs.safety import InertLines

            buf = StringIO()
            Console(file=InertLines(buf), width=100, markup=False,  # type: ignore[arg-type]
                    emoji=False).print(
                check_table(manifest, verdicts))
            write_output(output, buf.getvalue(), _check_inputs(m))
        else:
            _console().print(check_table(manifest, verdicts))
    else:
        from occupancy.output import ci_formats as formats

        text = {"json": formats.check_json, "junit": formats.check_junit,
                "github": formats.check_github, "sarif": formats.check_sarif}[fmt](manifest, verdicts)
        if output:
            write_output(output, text, _check_inputs(m))
        else:
            click.echo(text, nl=False)
    sys.exit(exit_code(verdicts))


def _check_inputs(m: Any) -> list[str]:
    """Every file a check run reads: -o may replace none of them."""
    files = [m.path]
    for spec in m.kernels:
        files += [f for f in (spec.source, spec.ptxas_log, spec.cubin) if f]
    for t in getattr(m, "triton", ()):
        files += [f for f in (t.module, t.config_file) if f]
    files += [d.path for d in m.devices.values() if d.path]
    return files


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--arch", "archs", multiple=True, metavar="sm_XX",
              help="Architecture to compile .cu files for, or to JIT a binary's PTX for "
                   "(repeat; default sm_80, or those of --device).")
@click.option("--device", "-d", "devices_", multiple=True, metavar="NAME|FILE",
              help="Use these devices' architectures (repeat); --manifest lists them.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Include folder for .cu files.")
@click.option("--flag", "flags", multiple=True, metavar="FLAG",
              help="A compiler flag for .cu files (repeat), e.g. --flag=-std=c++17.")
@click.option("--manifest", "as_manifest", is_flag=True,
              help="Print a starter manifest for `occupancy check` with these kernels.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@translate_errors
def resources(files: tuple[str, ...], archs: tuple[str, ...], devices_: tuple[str, ...],
              include_dirs: tuple[str, ...], flags: tuple[str, ...], as_manifest: bool,
              as_json: bool) -> None:
    """Every kernel in a .cu, ptxas log, cubin, fatbin, executable or library, per arch.

    Registers, static shared memory, stack, spills and launch bounds, with names demangled.
    Example: occupancy resources kernels/matmul.cu --arch sm_61 --arch sm_90
    """
    import re

    from occupancy.build.builds import arch_of
    from occupancy.build.resolve import list_resources

    devs = []
    if devices_:
        from occupancy.inputs.profiles import load_device

        devs = [load_device(d) for d in devices_]
    for a in archs:
        if not re.fullmatch(r"sm_\d{2,3}a?", a):
            raise InputError(f"--arch {a!r}: use sm_XX, e.g. sm_80")
    wanted = list(dict.fromkeys([*archs, *[arch_of(d) for d in devs]])) or ["sm_80"]
    listed = []
    for f in files:
        listed += list_resources(f, wanted, include_dirs=include_dirs, flags=list(flags))
    if as_manifest:
        from occupancy.output.starter import starter_manifest

        click.echo(starter_manifest(listed, [d.key for d in devs], include_dirs, flags), nl=False)
        return
    if as_json:
        from occupancy.output.serialize import listed_dict

        _emit_json([listed_dict(k) for k in listed])
        return
    from occupancy.output.terminal import resources_table

    _console().print(resources_table(listed))


def _sets(values: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for v in values:
        name, sep, num = v.partition("=")
        if not sep or not name.isidentifier() or not num.isdigit() or len(num) > 10:
            raise InputError(f"--set {v!r}: use NAME=INTEGER, e.g. --set M=2048")
        out[name] = int(num)
    return out


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

    `occupancy tile matmul -d gtx1080 -n 4096`: every candidate of kernels/matmul.cu.
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
    if kernel is None and target not in ("matmul", "transpose"):
        if not os.path.exists(target):
            raise InputError(f"'{target}' is neither matmul nor transpose nor a manifest file: "
                             "give a shipped family, or MANIFEST --kernel NAME")
        raise InputError(f"{target}: give --kernel NAME (a tuning entry of the manifest), or "
                         "matmul / transpose for the shipped families")
    spec = None
    if kernel is not None:
        from occupancy.inputs.manifest.tuning import load_tuning

        spec = load_tuning(target, kernel, _sets(sets))
    dicts = []
    for dev in devs:
        out = _tile_one(target, dev, spec, size, (max_points, max_compiles, max_instances),
                        fmt, store)
        if out is not None:
            dicts.append(out)
    if dicts:
        _emit_json(dicts[0] if len(dicts) == 1 else dicts)


def _with_status(what: str, work: Callable[[], Any]) -> Any:
    """work(), with a spinner on stderr while it runs when stderr is a terminal (compiles of
    a space take seconds to minutes); nothing extra otherwise (pipes, CI logs, --json)."""
    if not sys.stderr.isatty():
        return work()
    from rich.console import Console

    with Console(stderr=True).status(what):
        return work()


def _tile_one(target: str, dev: Any, spec: Any, size: int, caps: tuple[int, int, int], fmt: str,
              store: str | None) -> dict[str, Any] | None:
    """One device's `tile`: its JSON (returned, printed by the caller), or its table."""
    if spec is None:
        from occupancy.tune.advisor import analyze

        report = analyze(dev, target, size)
        if fmt != "text":
            from occupancy.output.serialize import tile_dict

            return tile_dict(report)
        from occupancy.output.terminal import tile_view

        _console().print(tile_view(report))
        return None
    from occupancy.tune.bounds import WorkLimits
    from occupancy.tune.spaces import points, rank

    pts, removed = points(spec, caps[0], WorkLimits(caps[1], caps[2]))
    from occupancy.inputs.safety import inert

    rep = _with_status(f"compiling and ranking {len(pts):,} points for {inert(dev.name)}",
                       lambda: rank(spec, dev, pts, removed))
    stored = None
    if store:
        from occupancy.tune.store import lookup

        stored = lookup(store, spec, dev)
    if fmt != "text":
        from occupancy.output.serialize import tune_dict

        return tune_dict(rep, kernel_tuner=fmt == "kernel_tuner", stored=stored,
                         store_checked=bool(store))
    from occupancy.output.terminal import tune_view

    _console().print(tune_view(rep))
    if store:
        if stored:
            click.echo("Measured best on this GPU (" + inert(store) + "): " + inert(" ".join(
                f"{k}={v}" for k, v in stored["params"].items())) +
                f", {stored.get('median_ms', 0):.3f} ms")
        else:
            click.echo(f"Not measured on {inert(dev.name)} ({inert(store)} has no entry): the model's "
                       "pick above stands")
    return None


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
    if fmt == "json":
        from occupancy.output.triton_view import tile_dicts

        _emit_json(tile_dicts(tile))
        return
    from occupancy.output.triton_view import tile_view

    _console().print(tile_view(tile))


def _make_folder(path: str) -> None:
    from occupancy.inputs.safety import inert

    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError(f"-o {inert(path)}: not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise InputError(f"-o {inert(path)}: cannot make the folder: {exc.strerror}") from None


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
    result = bank_conflicts(addresses, size, int(nbanks))
    if as_json:
        from occupancy.output.serialize import banks_dict

        _emit_json(banks_dict(result, addresses, size))
        return
    from occupancy.output.terminal import banks_view

    _console().print(banks_view(result, addresses, size))


@main.command()
@click.argument("target", default="all", metavar="[matmul|transpose|all|MANIFEST]")
@click.option("--kernel", default=None, metavar="NAME",
              help="With a MANIFEST: the tuning entry to measure.")
@click.option("-n", "size", type=click.IntRange(64, 65536), default=None,
              help="Matrix size (default: 4096 for matmul, 8192 for transpose).")
@click.option("--tiles", default=None, metavar="LABEL,...",
              help="Only these candidates (labels as `occupancy tile` prints them).")
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
              help="Timed runs per kernel (median reported).")
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

            kernels = ["matmul", "transpose"] if target == "all" else [target]
            labels = [t.strip() for t in tiles.split(",")] if tiles else None
            shipped = run_measure(kernels, size or 4096, size or 8192, labels, reps, progress)
        else:
            if kernel is None:
                raise InputError(f"{target}: give --kernel NAME (a tuning entry), or matmul / "
                                 "transpose / all for the shipped families")
            from occupancy.core.device import from_cuda_properties
            from occupancy.gpu.measure import device_properties, measure_tuning
            from occupancy.inputs.manifest.tuning import load_tuning
            from occupancy.tune.spaces import points, rank

            spec = load_tuning(target, kernel, _sets(sets))
            inputs.append(target)
            dev = from_cuda_properties(device_properties(0))
            from occupancy.tune.bounds import WorkLimits

            pts, removed = points(spec, limits=WorkLimits(compiles=max_compiles))
            tuned = measure_tuning(spec, rank(spec, dev, pts, removed), top, reps, progress,
                                   budget)
    record = tuned if tuned is not None else shipped
    if output:
        write_output(output, json.dumps(record, indent=2) + "\n", inputs)
    if tuned is not None and store and tuned["fastest"]:
        from occupancy.tune.store import read_store, store_entry

        book = read_store(store)
        book["entries"].update(store_entry(tuned))
        write_output(store, json.dumps(book, indent=2) + "\n", inputs)
    if as_json:
        _emit_json(record)
    elif tuned is not None:
        from occupancy.output.terminal import measure_tuning_view

        _console().print(measure_tuning_view(tuned))
        if "search" in tuned:
            s = tuned["search"]
            click.echo(f"{s['runs']} runs of a budget of {s['budget']}: {s['stopped']}")
    elif shipped is not None:
        from occupancy.output.terminal import measure_view

        _console().print(measure_view(shipped))
    from occupancy.tune.records import measure_failures, tuning_failures

    bad = tuning_failures(tuned) if tuned is not None else \
        measure_failures(shipped) if shipped is not None else []
    if bad:
        click.echo(f"problem: {', '.join(bad)} failed verification or occupancy", err=True)
        sys.exit(EXIT_PROBLEM)


def _sweep_config(threads: tuple[int, ...], regs: int, smem: int, dyn_smem: int,
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
    from occupancy.output.serialize import plot_dict

    dev = load_device(device)
    cfg = _sweep_config(threads, regs, smem, dyn_smem, carveout, no_opt_in)
    curves = sweeps(dev, cfg)
    if as_json:
        _emit_json(plot_dict(dev, cfg, curves))
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
        from occupancy.output.terminal import plot_view

        r = solve(dev, cfg.threads_per_block, cfg.registers_per_thread, 0,
                  cfg.shared_memory_per_block, cfg.carveout, opt_in=cfg.opt_in)
        _console().print(plot_view(dev, r, curves))


@main.command()
@click.option("--device", "-d", "devices_", multiple=True, required=True, metavar="NAME|FILE",
              help="A device (repeat for several).")
@launch_options
@click.option("--tile", "tile_kernel", type=click.Choice(["matmul", "transpose"]), default=None,
              help="Add the tile analysis of a kernel family for every device.")
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
           size: int, manifest: str | None, measured: str | None, output: str) -> None:
    """A Markdown or self-contained HTML report: devices, charts, tiles, checks, measurements.

    Example: occupancy report -d v100 -d h200 --tile matmul -n 4096
    --measured bench/results/h200-2026-11-30/measure.json -o report.html
    """
    from occupancy.inputs.profiles import load_device
    from occupancy.inputs.safety import check_output, inert, slug
    from occupancy.output.report import build, to_html, to_markdown

    suffix = ".html" if output == "-" else Path(output).suffix.lower()
    if suffix not in (".html", ".htm", ".md", ".markdown"):
        raise InputError(f"-o {inert(output)}: use a .html or .md file name (or - for HTML on stdout)")
    devs = [load_device(d) for d in devices_]
    inputs = [p for p in (manifest, measured, *[d.path for d in devs]) if p]
    if output != "-":
        check_output(output, inputs)
    cfg = _sweep_config(threads, regs, smem, dyn_smem, carveout, no_opt_in)
    tiles = []
    if tile_kernel:
        from occupancy.tune.advisor import analyze

        tiles = [analyze(d, tile_kernel, size) for d in devs]
    verdicts = None
    if manifest:
        from occupancy.build.resolve import CheckResolver
        from occupancy.gate.check import evaluate
        from occupancy.inputs.manifest import load_manifest

        m = load_manifest(manifest)
        resolver = CheckResolver()
        verdicts = evaluate(m, resolver, resolver.prepare)
        inputs += _check_inputs(m)
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


@main.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@click.pass_context
@translate_errors
def devices(ctx: click.Context, as_json: bool) -> None:
    """List the device profiles (shipped, $OCCUPANCY_PROFILES and ~/.config/occupancy/profiles)."""
    if ctx.invoked_subcommand is not None:
        return
    from occupancy.inputs.profiles import all_devices

    devs = all_devices()
    if as_json:
        from occupancy.output.serialize import device_list_dict

        _emit_json(device_list_dict(devs))
        return
    from occupancy.output.terminal import devices_table

    _console().print(devices_table(devs))


@devices.command("show")
@click.argument("name", metavar="NAME|FILE")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@translate_errors
def devices_show(name: str, as_json: bool) -> None:
    """Every key of one profile, with its sources."""
    from occupancy.inputs.profiles import load_device

    dev = load_device(name)
    if as_json:
        from occupancy.output.serialize import device_dict

        _emit_json(device_dict(dev))
        return
    from occupancy.output.terminal import device_view

    _console().print(device_view(dev))


@devices.command("detect")
@click.option("--index", type=click.IntRange(0, 1024), default=0, show_default=True,
              help="Which GPU (CUDA device ordinal).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the profile here (default: print it).")
@click.option("--force", is_flag=True, help="Replace the -o file if it exists.")
@translate_errors
def devices_detect(index: int, output: str | None, force: bool) -> None:
    """Write a profile for the live GPU (needs CuPy and a GPU)."""
    import dataclasses

    from occupancy.core.device import from_cuda_properties
    from occupancy.gpu.measure import cupy_module, device_properties, measure_cluster_table
    from occupancy.inputs.profiles import to_yaml

    dev = from_cuda_properties(device_properties(index))
    if dev.max_cluster_size is not None:
        cp = cupy_module("devices detect")
        with cp.cuda.Device(index):
            table = measure_cluster_table(cp, dev)
        dev = dataclasses.replace(dev, cluster_table=table, sources={
            **dev.sources, "cluster_table": "measured: cuOccupancyMaxActiveClusters (devices detect)"})
    text = to_yaml(dev)
    if output is None:
        click.echo(text, nl=False)
        return
    write_output(output, text, force=force)
    click.echo(f"wrote {output}: use it with -d {output}", err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
