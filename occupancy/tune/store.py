"""The store of measured picks (`measure --store FILE`, read by `tile --store FILE`).

A store is an input like any other: it may be edited by hand or arrive in a pull request,
so every entry is checked (params of numbers and words, finite positive times) and NaN or
Infinity in it is refused, never copied into --json.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from occupancy.core.errors import FileError, OccupancyError
from occupancy.inputs.safety import inert

if TYPE_CHECKING:
    from occupancy.core.device import Device
    from occupancy.inputs.manifest.tuning import TuneSpec
    from occupancy.tune.records import TuningRecord

_TIMES = ("median_ms", "p10_ms", "p90_ms", "min_ms")


def store_key(kernel: str, problem: Mapping[str, int], gpu: str, cc: str) -> str:
    return f"{kernel}|{','.join(f'{k}={v}' for k, v in sorted(problem.items()))}|{gpu}|{cc}"


def store_entry(rec: TuningRecord) -> dict[str, Any]:
    """The record's fastest params, under its store key, with where they were measured."""
    assert rec["fastest"] is not None
    key = store_key(rec["kernel"], rec["problem"], rec["device"], rec["compute_capability"])
    return {key: {**rec["fastest"], "kernel": rec["kernel"], "problem": rec["problem"],
                  "device": rec["device"], "compute_capability": rec["compute_capability"],
                  "driver_version": rec["driver_version"],
                  "runtime_version": rec["runtime_version"], "date": rec["date"]}}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _entry_problem(key: str, v: Any) -> str | None:
    """What is wrong with one entry, or None."""
    if not isinstance(v, dict):
        return "is not a mapping"
    params = v.get("params")
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and (_number(x) or isinstance(x, (str, bool)))
            for k, x in params.items()):
        return "params must map names to numbers or words"
    if not _number(v.get("median_ms")) or v["median_ms"] <= 0:
        return f"median_ms must be a positive number, got {inert(repr(v.get('median_ms'))[:40])}"
    for t in _TIMES[1:]:
        if t in v and not (_number(v[t]) and v[t] >= 0):
            return f"{t} must be a number >= 0"
    return None


def read_store(path: str) -> dict[str, Any]:
    """A `measure --store` file: {"entries": {key: {...}}}; a missing file is empty."""
    import json

    from occupancy.inputs.files import LOG_CAP, json_int, read_text

    if not os.path.exists(path):
        return {"entries": {}}

    class _StoreError(FileError):
        prefix = "--store "

    text = read_text(path, _StoreError, LOG_CAP, "a store written by occupancy measure --store",
                     "store", note=False)  # measure --store writes it back
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_int=json_int)
    except (ValueError, RecursionError) as exc:
        raise OccupancyError(f"--store {inert(path)}: not JSON: {inert(str(exc)[:120])}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise OccupancyError(f"--store {inert(path)}: not a store (entries -> params); write it "
                             "with occupancy measure --store")
    for key, v in data["entries"].items():
        problem = _entry_problem(key, v)
        if problem:
            raise OccupancyError(f"--store {inert(path)}: entry {inert(str(key)[:80])}: {problem}")
    return data


def lookup(store: dict[str, Any], spec: TuneSpec, dev: Device) -> dict[str, Any] | None:
    """The measured best params for this kernel, problem and GPU, if the store (as
    read_store read it) has them."""
    hit = store["entries"].get(store_key(spec.name, spec.problem, dev.name, dev.compute_capability))
    return hit if isinstance(hit, dict) else None
