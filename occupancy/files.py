"""Reading the project's YAML inputs and finding its data folders, in one place."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from .errors import OccupancyError


def read_yaml(path: str | os.PathLike[str], error: type[Any], missing_hint: str
              ) -> tuple[Any, str]:
    """(data, text) of a YAML file, read with yaml.safe_load only. Problems raise
    `error(message, path, line)`: a missing file with the hint, a syntax error with its line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"no such file: {missing_hint}", str(p)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: a NUL in the path
        raise error(f"cannot read: {exc}", repr(str(p))[1:-1]) from None
    try:
        return yaml.safe_load(text), text
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise error(f"YAML syntax error: {problem}; fix the syntax", str(p),
                    mark.line + 1 if mark else None) from None


def data_dir(name: str) -> Path:
    """`profiles/` or `kernels/`: inside the installed package, or at the top of a checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / name, here.parent / name):
        if candidate.is_dir():
            return candidate
    raise OccupancyError(f"the shipped {name}/ folder is missing: reinstall occupancy")
