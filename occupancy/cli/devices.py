"""`devices`, `devices show`, `devices detect`: the device profiles."""

from __future__ import annotations

import click

from occupancy.cli.common import (
    main,
    translate_errors,
    write_output,
)
from occupancy.output.emit import emit


@main.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@click.pass_context
@translate_errors
def devices(ctx: click.Context, as_json: bool) -> None:
    """List the device profiles (shipped, $OCCUPANCY_PROFILES and ~/.config/occupancy/profiles)."""
    if ctx.invoked_subcommand is not None:
        return
    from occupancy.inputs.profiles import all_devices
    from occupancy.output.answers import DeviceList

    emit(DeviceList(all_devices()), "json" if as_json else "text")


@devices.command("show")
@click.argument("name", metavar="NAME|FILE")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
@translate_errors
def devices_show(name: str, as_json: bool) -> None:
    """Every key of one profile, with its sources."""
    from occupancy.inputs.profiles import load_device

    emit(load_device(name), "json" if as_json else "text")


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
