"""`check` (a manifest of launch configs, for CI) and `resources` (every kernel of files)."""

from __future__ import annotations

import sys
from typing import Any

import click

from occupancy.cli.common import (
    EXIT_USAGE,
    InputError,
    main,
    translate_errors,
)
from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import excerpt, safe_path
from occupancy.output.emit import emit


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
    from occupancy.output.answers import CheckRun

    emit(CheckRun(manifest, verdicts), fmt, output, check_inputs(m))
    sys.exit(exit_code(verdicts))


def check_inputs(m: Any) -> list[str]:
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
@click.option("--link", "links", multiple=True, metavar="FILE.cu",
              help="Another source to device-link with each .cu, as a manifest's `link:` "
                   "(repeat; needs --flag=-rdc=true).")
@click.option("--manifest", "as_manifest", is_flag=True,
              help="Print a starter manifest for `occupancy check` with these kernels.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@translate_errors
def resources(files: tuple[str, ...], archs: tuple[str, ...], devices_: tuple[str, ...],
              include_dirs: tuple[str, ...], flags: tuple[str, ...], links: tuple[str, ...],
              as_manifest: bool, as_json: bool) -> None:
    """Every kernel in a .cu, ptxas log, cubin, fatbin, executable or library, per arch.

    Registers, static shared memory, stack, spills and launch bounds, with names demangled.
    Example: occupancy resources kernels/matmul.cu --arch sm_61 --arch sm_90
    """
    import os
    import re

    from occupancy.build.builds import arch_of
    from occupancy.build.compilers import device_runtime
    from occupancy.build.resolve import SOURCE_SUFFIXES

    devs = []
    if devices_:
        from occupancy.inputs.profiles import load_device

        devs = [load_device(d) for d in devices_]
    for a in archs:
        if not re.fullmatch(r"sm_\d{2,3}a?", a):
            raise InputError(f"--arch {a!r}: use sm_XX, e.g. sm_80")
    check_options(include_dirs, flags, links)
    wanted = list(dict.fromkeys([*archs, *[arch_of(d) for d in devs]])) or ["sm_80"]
    listed: list[Any] = []
    # a starter manifest is all or nothing; a listing shows what compiled and then each
    # file and arch that did not, as errors (exit 2)
    failed: list[str] | None = None if as_manifest else []
    if links and (binary := next((f for f in files if not f.endswith(SOURCE_SUFFIXES)), None)):
        raise InputError(f"--link: {excerpt(binary)} is no CUDA source; --link device-links the "
                         "sources compiled here (a binary or log is read as it was linked)")
    # a file given twice (b.cu, ./b.cu) is listed once; make_build links each --link once
    # and never a file with itself
    once: dict[str, str] = {}
    for f in files:
        once.setdefault(os.path.realpath(f), f)
    for f in once.values():
        listed += _listed(f, wanted, include_dirs, flags, links, failed, len(files) > 1,
                          bool(archs or devs))
    # an executable with dynamic parallelism holds the device runtime's kernels too: the
    # user's alone are listed (all of them where there are no others: libcudadevrt itself)
    runtime = {k.resources.function for k in listed if device_runtime(k.resources.function)}
    ours = [k for k in listed if k.resources.function not in runtime] or listed
    if as_manifest:
        from occupancy.output.starter import starter_manifest

        click.echo(starter_manifest(ours, [d.key for d in devs], include_dirs, flags, links),
                   nl=False)
        return
    if failed and not listed:
        raise InputError(failed[0])
    from occupancy.output.answers import Listing

    emit(Listing(ours, len(runtime) if ours is not listed else 0), "json" if as_json else "text")
    if failed:
        for msg in failed:
            click.echo(f"Error: {msg}", err=True)
        sys.exit(EXIT_USAGE)


def _listed(path: str, archs: list[str], include_dirs: tuple[str, ...], flags: tuple[str, ...],
            links: tuple[str, ...], failed: list[str] | None, among_others: bool, asked: bool
            ) -> list[Any]:
    """One file's kernels; with `failed`, an arch it does not compile for adds its error
    there, and so does a file that gives none where other files follow."""
    from occupancy.build.resolve import list_resources

    try:
        return list_resources(path, archs, include_dirs=include_dirs, flags=list(flags),
                              link=links, failed=failed, asked=asked)
    except OccupancyError as exc:
        if failed is None or not among_others:
            raise
        failed.append(str(exc))
        return []


def check_options(include_dirs: tuple[str, ...], flags: tuple[str, ...],
                  links: tuple[str, ...] = ()) -> None:
    """resources' -I, --flag and --link, checked as the options they are (a missing folder
    or file, a flag refused), before any file is read."""
    import os

    from occupancy.build.resolve import SOURCE_SUFFIXES
    from occupancy.inputs.flags import check_flags, is_rdc
    from occupancy.inputs.manifest.launch import MAX_FILES

    for d in include_dirs:
        safe_path(d, f"-I {excerpt(d)}")
        if not os.path.isdir(d):
            raise InputError(f"-I {excerpt(d)}: no such folder")
    if len(links) > MAX_FILES:  # as a manifest's link:
        raise InputError(f"--link: {len(links)} files; at most {MAX_FILES} are linked with a source")
    for f in links:
        safe_path(f, f"--link {excerpt(f)}")
        if not f.endswith(SOURCE_SUFFIXES):
            raise InputError(f"--link {excerpt(f)}: not a CUDA source ({', '.join(SOURCE_SUFFIXES)}):"
                             " --link compiles sources and links them; link objects by hand "
                             "(nvlink) and give the linked cubin")
        if not os.path.exists(f):
            raise InputError(f"--link {excerpt(f)}: no such file")
        if not os.path.isfile(f):
            raise InputError(f"--link {excerpt(f)}: not a regular file")
    flag_list, _ = check_flags(list(flags), "--flag", includes="-I")
    if links and not is_rdc(flag_list):
        raise InputError("--link device-links other sources, which needs relocatable device "
                         "code: add --flag=-rdc=true")
