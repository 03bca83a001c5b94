"""One output path: every result type, its JSON dict and its views, in one table (TABLE);
`emit(result, format, output)` writes one result, or one per device, in the format asked.

A command computes a result, wraps it in one of the answer types (output/answers.py) where the
core's value does not carry everything its output shows (the device, the block shape, the
addresses...), and calls emit. JSON on stdout is the stable interface; a text view is a
rich renderable, printed without markup or colour-only meaning, 100 columns in a file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["TABLE", "Views", "emit", "to_json", "to_view", "views_of"]


# --- the table: per result type, a renderer per format ---------------------------------------


class Views:
    """How one result type is written: `json` gives the JSON value (dict or list); `text` a
    rich renderable; `several` the text view of one per device side by side (else one view
    after another); `formats` more formats, each a finished string (of one result);
    `json_formats` other JSON values (of one result, or a list of several, as `json`)."""

    __slots__ = ("json", "text", "several", "formats", "json_formats")

    def __init__(self, json: Callable[[Any], Any], text: Callable[[Any], Any],
                 several: Callable[[Sequence[Any]], Any] | None = None,
                 formats: dict[str, Callable[[Any], str]] | None = None,
                 json_formats: dict[str, Callable[[Any], Any]] | None = None) -> None:
        self.json, self.text, self.several = json, text, several
        self.formats = formats or {}
        self.json_formats = json_formats or {}  # other JSON values


# --- the rows: each imports only its own renderers (calc's start-up time) ------------------


def _calc() -> Views:
    from occupancy.output import terminal

    def as_json(a: Any) -> Any:
        from occupancy.output import serialize  # not for calc's text, the start-up it times

        return serialize.result_dict(a.device, a.result, a.block, a.cliffs)

    return Views(as_json, lambda a: terminal.calc_view(a.device, a.result, a.block, a.cliffs),
                 several=lambda xs: terminal.compare_view([a.device for a in xs],
                                                          [a.result for a in xs],
                                                          [a.cliffs for a in xs]))


def _best() -> Views:
    from occupancy.output import serialize, terminal

    return Views(serialize.best_dict, terminal.best_view, several=terminal.best_compare_view)


def _check() -> Views:
    from occupancy.output import ci_formats, serialize, terminal

    return Views(lambda a: serialize.check_dict(a.manifest, a.verdicts),
                 lambda a: terminal.check_table(a.manifest, a.verdicts),
                 # the CI formats as they always were (JSON without a final newline)
                 formats={"json": lambda a: ci_formats.check_json(a.manifest, a.verdicts),
                          "junit": lambda a: ci_formats.check_junit(a.manifest, a.verdicts),
                          "github": lambda a: ci_formats.check_github(a.manifest, a.verdicts),
                          "sarif": lambda a: ci_formats.check_sarif(a.manifest, a.verdicts)})


def _listing() -> Views:
    from occupancy.output import serialize, terminal

    return Views(lambda a: [serialize.listed_dict(k) for k in a.kernels],
                 lambda a: terminal.resources_table(a.kernels, a.runtime))


def _tuned() -> Views:
    from occupancy.output import serialize, terminal_tune

    return Views(lambda a: serialize.tune_dict(a.report, stored=a.stored,
                                               store_checked=a.store is not None),
                 terminal_tune.tuned_view,
                 json_formats={"kernel_tuner": lambda a: serialize.tune_dict(a.report,
                                                                             kernel_tuner=True)})


def _tune_report() -> Views:
    from occupancy.output import serialize, terminal_tune

    return Views(serialize.tune_dict, terminal_tune.tune_view)


def _banks() -> Views:
    from occupancy.output import serialize, terminal

    return Views(lambda a: serialize.banks_dict(a.result, a.addresses, a.element_bytes),
                 lambda a: terminal.banks_view(a.result, list(a.addresses), a.element_bytes))


def _plot() -> Views:
    from occupancy.output import serialize, terminal

    return Views(lambda a: serialize.plot_dict(a.device, a.config, a.curves),
                 lambda a: terminal.plot_view(a.device, a.result, tuple(a.curves)))


def _device_list() -> Views:
    from occupancy.output import serialize, terminal

    return Views(lambda a: serialize.device_list_dict(a.devices),
                 lambda a: terminal.devices_table(list(a.devices)))


def _device() -> Views:
    from occupancy.output import serialize, terminal

    return Views(serialize.device_dict, terminal.device_view)


def _measured() -> Views:
    from occupancy.output import terminal_tune

    return Views(lambda a: a.record, lambda a: terminal_tune.measured_view(a.record, a.tuning))


def _triton_tile() -> Views:
    from occupancy.output.triton_view import tile_dicts, tile_view

    return Views(tile_dicts, tile_view)


# The one table: a result's type (module.name, so that looking a row up imports nothing it
# does not need) -> its row.
TABLE: dict[str, Callable[[], Views]] = {
    "occupancy.output.answers.Calc": _calc,
    "occupancy.core.best.BestAnswer": _best,
    "occupancy.output.answers.CheckRun": _check,
    "occupancy.output.answers.Listing": _listing,
    "occupancy.output.answers.Tuned": _tuned,
    "occupancy.tune.ranked.TuneReport": _tune_report,
    "occupancy.output.answers.Banks": _banks,
    "occupancy.output.answers.Plot": _plot,
    "occupancy.output.answers.DeviceList": _device_list,
    "occupancy.core.device.Device": _device,
    "occupancy.output.answers.Measured": _measured,
    "occupancy.tune.triton_space.TritonTile": _triton_tile,
}


def views_of(result: Any) -> Views:
    """The table's row for a result (its type, or the nearest base class listed)."""
    for cls in type(result).__mro__:
        row = TABLE.get(f"{cls.__module__}.{cls.__qualname__}")
        if row is not None:
            return row()
    raise TypeError(f"no output for {type(result).__name__}: add it to output/emit.py's table")


def to_json(result: Any, fmt: str = "json") -> Any:
    """A result's JSON value (`fmt`: json or one of its json_formats); a list of results: a
    list (one item: that item alone)."""
    def one(r: Any) -> Any:
        v = views_of(r)
        return v.json(r) if fmt == "json" else v.json_formats[fmt](r)

    if isinstance(result, list):
        items = [one(r) for r in result]
        return items[0] if len(items) == 1 else items
    return one(result)


def to_view(result: Any) -> Any:
    """A result's text view; several: the side-by-side view where the type has one."""
    from rich.console import Group

    if isinstance(result, list):
        if len(result) == 1:
            return to_view(result[0])
        v = views_of(result[0])
        if v.several is not None:
            return v.several(result)
        return Group(*[v.text(r) for r in result])
    return views_of(result).text(result)


def render_text(renderable: Any, width: int | None = None) -> str:
    """A view as plain text, as the terminal would show it without colour."""
    from io import StringIO

    from rich.console import Console

    from occupancy.inputs.safety import InertLines

    buf = StringIO()
    Console(file=InertLines(buf), width=width or 100, markup=False, emoji=False,  # type: ignore[arg-type]
            highlight=False, color_system=None).print(renderable)
    return buf.getvalue()


def console() -> Any:
    """The terminal's console for results: stdout, every line made inert."""
    from rich.console import Console

    from occupancy.inputs.safety import InertLines

    return Console(file=InertLines(sys.stdout), highlight=False, markup=False,  # type: ignore[arg-type]
                   emoji=False)


def emit(result: Any, fmt: str = "text", output: str | None = None,
         inputs: Sequence[str] = ()) -> None:
    """Write a result (or a list of them, one per device) in `fmt` to stdout, or to the file
    `output` (whole or not at all, never over one of `inputs`)."""
    import click

    to_file = output is not None and output != "-"
    one = result[0] if isinstance(result, list) else result
    special = views_of(one).formats.get(fmt)
    if special is not None:
        text = special(one)
    elif fmt == "text":
        view = to_view(result)
        if not to_file:
            console().print(view)
            return
        text = render_text(view)
    elif fmt == "json" or fmt in views_of(one).json_formats:
        import json

        text = json.dumps(to_json(result, fmt), indent=2) + "\n"
    else:
        raise ValueError(f"no {fmt} output for {type(one).__name__}")
    if to_file:
        from occupancy.inputs.safety import write_atomically

        assert output is not None
        write_atomically(output, text, inputs)
    else:
        click.echo(text, nl=False)
