"""vLLM / SGLang fused-MoE config files, the per-device table this tool writes, and the
`early_config_prune` hook that reads it at run time with no compiler.

A config file (`E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json`) maps a batch size M
to one config: {"1": {"BLOCK_SIZE_M": 16, ..., "num_warps": 4, "num_stages": 3}, ...}.
The table maps, per device, every config to whether it fits (Triton's own load check
and the solver), its resources, programs per SM, and per problem size the fitting
configs in predicted order:

    {"format": "occupancy.triton-table/1", "kernel": ..., "triton_version": ...,
     "key": "M",                                 # the argument the hook sizes by
     "devices": {"h200": {"names": [...], "cc": "9.0",
                          "configs": {KEY: {"config": {...}, "fits": true,
                                            "reason": null, "shared": ..., ...}},
                          "order": {"64": [KEY, ...]}}}}   # best predicted first

The hook: `prune_configs_by={"early_config_prune": make_prune_hook("table.json")}`.
Only the standard library is imported here (the hook runs inside the user's process).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from occupancy.core.errors import OccupancyError
from occupancy.inputs.triton_configs import (  # noqa: F401 - re-exported: the public place
    CONFIG_CAP,
    ConfigFileError,
    parse_config_file,
    read_config_file,
)

TABLE_FORMAT = "occupancy.triton-table/1"


def config_key(config: Mapping[str, Any]) -> str:
    """The table's name of a config: meta-parameters sorted, then the options."""
    opts = ("num_warps", "num_stages", "num_ctas", "maxnreg")
    meta = sorted((k, v) for k, v in config.items() if k not in opts)
    tail = [(k, config[k]) for k in opts if k in config and
            not (k == "num_ctas" and config[k] == 1) and config[k] is not None]
    return ",".join(f"{k}={v}" for k, v in [*meta, *tail])


def write_config_file(path: str | os.PathLike[str], configs: Mapping[int, Mapping[str, Any]]
                      ) -> None:
    """The same format back (vLLM's indent and key order: sizes ascending)."""
    data = {str(m): dict(c) for m, c in sorted(configs.items())}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=4)
        fh.write("\n")


# --- the table ----------------------------------------------------------------------------


def device_row(kernels: Sequence[Any], dev: Any, sizes: Sequence[int],
               predict: Callable[[Any, Any, int], float]) -> dict[str, Any]:
    """One device's part of the table from its compiled configs (TritonKernel)."""
    from occupancy.build.triton import occupancy, out_of_resources

    configs: dict[str, Any] = {}
    fitting = []
    for k in kernels:
        key = config_key(k.config.to_dict())
        row: dict[str, Any] = {"config": k.config.to_dict(), "fits": False, "reason": k.error
                               or None}
        if k.compiled:
            occ = occupancy(k, dev)
            reason = out_of_resources(k, dev) or ("; ".join(occ.cannot_launch) or None)
            row.update(fits=reason is None, reason=reason, shared=k.shared,
                       registers=k.registers, spills=k.n_spills,
                       programs_per_sm=occ.active_blocks_per_sm,
                       occupancy=round(occ.occupancy, 4))
            if reason is None:
                fitting.append(k)
        configs[key] = row
    order: dict[str, list[str]] = {}
    predicted: dict[str, dict[str, float]] = {}
    for m in sizes:
        times = {config_key(k.config.to_dict()): predict(k, dev, m) for k in fitting}
        ranked = sorted((t, key) for key, t in times.items() if t != float("inf"))
        order[str(m)] = [key for _, key in ranked]
        predicted[str(m)] = {key: round(t, 6) for t, key in ranked}
    return {"names": _names(dev), "cc": dev.compute_capability, "configs": configs,
            "order": order, "predicted_ms": predicted}


def _names(dev: Any) -> list[str]:
    """What the hook matches torch.cuda.get_device_name() against (vLLM writes the name
    with '_' for ' ' in its file names)."""
    names = [dev.name, dev.name.replace(" ", "_"), dev.key, *dev.aliases]
    return sorted(set(names))


def build_table(kernel: str, triton_version: str, key: str,
                rows: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {"format": TABLE_FORMAT, "kernel": kernel, "triton_version": triton_version,
            "key": key, "devices": dict(rows)}


def load_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        try:
            table = json.load(fh)
        except ValueError as e:
            raise ConfigFileError(f"not JSON: {e}", str(path)) from None
    if not isinstance(table, dict) or table.get("format") != TABLE_FORMAT:
        raise ConfigFileError(f"not a table written by this tool (format {TABLE_FORMAT})",
                              str(path))
    return table


def _device_entry(table: Mapping[str, Any], device: str | None) -> dict[str, Any]:
    devices = table["devices"]
    if device is None:
        device = _current_device_name()
    for key, row in devices.items():
        if device == key or device in row.get("names", ()):
            return dict(row)
    raise OccupancyError(f"the table has no device {device!r} (it has: "
                         f"{', '.join(sorted(devices))})")


def _current_device_name() -> str:
    import importlib

    torch: Any = sys.modules.get("torch") or importlib.import_module("torch")
    return str(torch.cuda.get_device_name())


def nearest_size(order: Mapping[str, Any], size: int) -> str:
    """vLLM's rule: the table's batch size closest to the actual one."""
    return min(order, key=lambda s: (abs(int(s) - size), int(s)))


def make_prune_hook(table: str | os.PathLike[str] | Mapping[str, Any],
                    device: str | None = None, top_k: int | None = 8,
                    size: Callable[[Mapping[str, Any]], int] | None = None
                    ) -> Callable[..., list[Any]]:
    """An `early_config_prune(configs, named_args, **kwargs)` for triton.autotune: drops the
    configs the table says cannot run on this device, keeps the `top_k` predicted fastest
    (None: all that fit) for the problem size nearest named_args[table['key']] (or
    size(named_args)). Configs the table does not know are kept. Never returns nothing:
    if no config fits, the configs come back unchanged (Triton then reports why)."""
    data = load_table(table) if not isinstance(table, Mapping) else table
    row: dict[str, Any] | None = None
    arg = str(data.get("key") or "M")

    def hook(configs: list[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        nonlocal row
        if row is None:
            row = _device_entry(data, device)
        keyed = [(config_key(_as_dict(c)), c) for c in configs]
        known = row["configs"]
        unknown = [c for k, c in keyed if k not in known]
        order = row["order"]
        ranked: list[Any] = []
        if order:
            n = size(named_args) if size else int({**named_args, **kwargs}.get(arg, 0))
            rank = {k: i for i, k in enumerate(order[nearest_size(order, n)])}
            ranked = sorted((c for k, c in keyed if k in rank), key=lambda c: rank[
                config_key(_as_dict(c))])
            if top_k is not None:
                ranked = ranked[:top_k]
        kept = ranked + unknown
        return kept or list(configs)

    return hook


def _as_dict(c: Any) -> dict[str, Any]:
    """A triton.Config (or a dict) as the table's config dict."""
    if isinstance(c, Mapping):
        return dict(c)
    out = dict(c.kwargs)
    out.update(num_warps=c.num_warps, num_stages=c.num_stages)
    if getattr(c, "num_ctas", 1) != 1:
        out["num_ctas"] = c.num_ctas
    if getattr(c, "maxnreg", None) is not None:
        out["maxnreg"] = c.maxnreg
    return out


def prune_config_file(shipped: Mapping[int, Mapping[str, Any]], table: Mapping[str, Any],
                      device: str) -> tuple[dict[int, dict[str, Any]], list[str]]:
    """A shipped config file made safe for a device: each batch size keeps its config if
    it fits there, else takes the table's predicted best for the nearest size. Returns
    the new file and one line per replaced entry."""
    row = _device_entry(table, device)
    out: dict[int, dict[str, Any]] = {}
    notes = []
    for m, cfg in shipped.items():
        entry = row["configs"].get(config_key(cfg))
        if entry is not None and entry["fits"]:
            out[m] = dict(cfg)
            continue
        order = row["order"]
        best = order[nearest_size(order, m)][:1] if order else []
        if not best:
            raise OccupancyError(f"no config of the table fits {device}")
        out[m] = dict(row["configs"][best[0]]["config"])
        why = entry["reason"] if entry else "not in the table"
        notes.append(f"M={m}: {config_key(cfg)} replaced ({why}) by {best[0]}")
    return out, notes


def rank_of(table: Mapping[str, Any], device: str, size: int,
            config: Mapping[str, Any]) -> int | None:
    """1-based place of a config in the table's predicted order (None: it does not fit)."""
    order = _device_entry(table, device)["order"]
    keys = order[nearest_size(order, size)]
    key = config_key(config)
    return keys.index(key) + 1 if key in keys else None
