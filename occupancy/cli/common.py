"""What the commands share: the group, exit codes, one-line errors, options, -o files.

0: done / all checks pass; 1: a check found a problem; 2: bad usage or bad input.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from occupancy.core.errors import OccupancyError
from occupancy.core.limits import DEFAULT_REGISTERS_PER_THREAD
from occupancy.inputs.safety import INT32_MAX  # CUDA's sizes and counts are 32-bit ints

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


def parsed(parse_name: str) -> Callable[[click.Context, click.Parameter, str | None], Any]:
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


size_value = parsed("parse_bytes")
block_value = parsed("parse_block")


# `--store` on a shipped family: a store keeps one tuning entry's measured best
STORE_IS_FOR_ENTRIES = ("--store is for a tuning entry of a manifest (MANIFEST --kernel NAME): "
                        "a store keeps one entry's measured best, not a family's")


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


def apply_options(f: F, decorators: list[Callable[[F], F]]) -> F:
    for dec in reversed(decorators):
        f = dec(f)
    return f


# Options several commands share, defined once.
_SMEM = click.option("--smem", callback=size_value, metavar="BYTES", default="0",
                     help="Static shared memory per block: 8192, 8K or 8KiB.")
_DYN_SMEM = click.option("--dyn-smem", callback=size_value, metavar="BYTES", default="0",
                         help="Dynamic shared memory per block (the launch's third argument).")
_CARVEOUT = click.option("--carveout", type=click.IntRange(0, 100), default=None,
                         metavar="PERCENT",
                         help="cudaFuncAttributePreferredSharedMemoryCarveout, 0-100 "
                              "(default: maximum shared memory).")
_NO_OPT_IN = click.option("--no-opt-in", "no_opt_in", is_flag=True,
                          help="The kernel never raises its max dynamic smem above the default.")


def regs_option(maximum: int) -> Callable[[F], F]:
    """-r, the same default and meaning in every command: the kernel's registers per thread,
    0 (not counted, as cuda_occupancy.h when none are given) unless -r says otherwise.
    maximum: 1024 where a count over the device's limit is an answer (cannot launch, and
    why); 255, the most any GPU allows, where it is a point on the what-if curves."""
    return click.option(
        "--regs", "-r", type=click.IntRange(0, maximum), default=DEFAULT_REGISTERS_PER_THREAD,
        show_default=True,
        help="Registers per thread, from ptxas -v or cuobjdump --dump-resource-usage; "
             "0: not counted (registers never limit).")


def kernel_options(f: F) -> F:
    """Options that describe a kernel's resources and launch, shared by calc and best."""
    return apply_options(f, [
        regs_option(1024), _SMEM, _DYN_SMEM, _CARVEOUT,
        click.option("--launch-bound", type=click.IntRange(1, INT32_MAX), default=None, metavar="THREADS",
                     help="The kernel's __launch_bounds__ max threads per block."),
        click.option("--barriers", type=click.IntRange(0, 64), default=1, show_default=True,
                     help="Named barriers per block (limits blocks on CC >= 9.0)."),
        _NO_OPT_IN,
    ])


def launch_options(f: F) -> F:
    """The launch config the what-if curves vary (plot, report)."""
    return apply_options(f, [
        click.option("--threads", "-t", callback=block_value, default="256", show_default=True,
                     metavar="N|XxY|XxYxZ", help="Threads per block."),
        regs_option(255), _SMEM, _DYN_SMEM, _CARVEOUT, _NO_OPT_IN,
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


# The module of each command: imported when the command runs, or when help or completion
# lists them all, so that calc's start-up loads launch.py and not every command's options.
# tests/test_cli.py holds it to what the modules register.
COMMAND_MODULES = {
    "banks": "launch", "best": "launch", "calc": "launch", "check": "gate", "devices": "devices",
    "measure": "measure", "plot": "launch", "report": "report", "resources": "gate", "tile": "tile",
}


class OneLineErrors(click.Group):
    """Usage errors too are one line: `Error: ... (see 'occupancy calc --help')`, exit 2.
    Ctrl-C exits 130 with one line; a closed stdout pipe exits without a traceback.
    Each command's module is imported when the command is looked up (COMMAND_MODULES)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            import importlib

            importlib.import_module(f"occupancy.cli.{COMMAND_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and args[0] not in COMMAND_MODULES:
            for name in COMMAND_MODULES:  # an unknown name: "did you mean" looks at them all
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        from occupancy.build.run import Terminated, install_signal_handlers
        from occupancy.inputs.safety import forget_inputs, one_line

        install_signal_handlers()
        forget_inputs()  # -o may replace no file this run reads
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




def devices_option(f: F) -> F:
    return click.option("--device", "-d", "device", required=True, multiple=True,
                        metavar="NAME|FILE",
                        help="Device name or alias (occupancy devices), or a profile YAML; "
                             "repeat to compare GPUs side by side.")(f)

def problem_sets(values: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for v in values:
        name, sep, num = v.partition("=")
        if not sep or not name.isidentifier() or not num.isdigit() or len(num) > 10:
            raise InputError(f"--set {v!r}: use NAME=INTEGER, e.g. --set M=2048")
        out[name] = int(num)
    return out
