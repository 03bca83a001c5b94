"""vLLM / SGLang fused-MoE config files (`E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json`):
{"<batch size M>": {"BLOCK_SIZE_M": 16, ..., "num_warps": 4, "num_stages": 3}, ...}, read
and validated (a malformed file is one ConfigFileError line). Here, below every reader:
the manifest's `configs:` (inputs), the table and the pruning hook (tune).
Standard library only."""

from __future__ import annotations

import json
import os
from typing import Any

from occupancy.core.errors import FileError
from occupancy.inputs.safety import inert, is_name

CONFIG_CAP = 4 * 1024 * 1024
WARPS = (1, 2, 4, 8, 16, 32)


class ConfigFileError(FileError):
    """A vLLM/SGLang config file or a table that cannot be used."""


def _shown(v: Any) -> str:
    """A value from the file in a message: its repr, cut short and inert."""
    return inert(repr(v)[:40])


def _check_entry(size: str, entry: Any, path: str) -> dict[str, int]:
    if not isinstance(entry, dict) or not entry:
        raise ConfigFileError(f"batch size {size!r}: a config is an object of integers, "
                              f"got {type(entry).__name__}", path)
    for k, v in entry.items():
        if not is_name(k):
            raise ConfigFileError(f"batch size {size!r}: {_shown(k)} is not a parameter name",
                                  path)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1 << 20:
            raise ConfigFileError(f"batch size {size!r}: {k} must be an integer 0..1048576, "
                                  f"got {_shown(v)}", path)
    for need in ("num_warps", "num_stages"):
        if need not in entry:
            raise ConfigFileError(f"batch size {size!r}: no {need}", path)
    if entry["num_warps"] not in WARPS:
        raise ConfigFileError(f"batch size {size!r}: num_warps must be one of "
                              f"{', '.join(map(str, WARPS))}, got {entry['num_warps']}", path)
    return dict(entry)


def parse_config_file(text: str, path: str) -> dict[int, dict[str, int]]:
    """{M: config} from a config file's text; ConfigFileError (one line) if malformed."""
    from occupancy.inputs.files import json_int

    try:
        data = json.loads(text, parse_int=json_int)
    except ValueError as e:
        line = getattr(e, "lineno", None)
        msg = getattr(e, "msg", str(e))
        raise ConfigFileError(f"not JSON: {msg}", path, line) from None
    if not isinstance(data, dict) or not data:
        raise ConfigFileError("a config file is a JSON object {\"<batch size>\": {config}}", path)
    out: dict[int, dict[str, int]] = {}
    for size, entry in data.items():
        if not (size.isascii() and size.isdigit()) or int(size) < 1 or len(size) > 9:
            raise ConfigFileError(f"{_shown(size)} is not a batch size (a positive integer)", path)
        out[int(size)] = _check_entry(size, entry, path)
    return dict(sorted(out.items()))


def read_config_file(path: str | os.PathLike[str]) -> dict[int, dict[str, int]]:
    """A vLLM / SGLang fused-MoE config file: {M: {"BLOCK_SIZE_M": .., "num_warps": ..}}."""
    from occupancy.inputs.files import display, read_text

    text = read_text(path, ConfigFileError, CONFIG_CAP, f"{display(path)} (a JSON config file)",
                     "config file")
    return parse_config_file(text, display(path))
