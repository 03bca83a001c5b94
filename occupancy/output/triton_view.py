"""What `occupancy tile` shows for a `triton:` entry: one rich table per device, the JSON
(a list with one object per device, in the order given), and the words around them.
Every name from the manifest or the config file is passed through `inert`."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from occupancy.inputs.safety import inert
from occupancy.tune.triton_space import ConfigResult, DeviceTile, TritonTile

HEAD = ("#", "config", "smem B", "regs", "spill", "p/SM", "occ.", "fits")


def _short(config: dict[str, int]) -> str:
    """BLOCK_SIZE_M=64 -> M64; num_warps=4 -> w4; num_stages=3 -> s3 (the table's width)."""
    parts = []
    for k, v in config.items():
        if k.startswith("BLOCK_SIZE_"):
            parts.append(f"{k[len('BLOCK_SIZE_'):]}{v}")
        elif k == "GROUP_SIZE_M":
            parts.append(f"G{v}")
        elif k == "num_warps":
            parts.append(f"w{v}")
        elif k == "num_stages":
            parts.append(f"s{v}")
        else:
            parts.append(f"{k}={v}")
    return " ".join(parts)


def _loads(c: ConfigResult) -> str:
    if not c.compiled:
        return "no: " + (c.error.split(":")[0] or "compile error")
    return "yes" if c.fits else "NO"


def _cell(c: ConfigResult, m: int, model: str) -> str:
    s = c.by_size[m]
    if s.rank is None:
        return "-"
    if s.predicted_ms is not None and model == "gemm":
        return f"{s.predicted_ms:.3f} #{s.rank}"
    return f"#{s.rank}"


def device_view(tile: TritonTile, d: DeviceTile) -> RenderableType:
    dev = d.device
    head = Text(f"{inert(tile.spec.name)} on {inert(dev.name)} (sm_"
                f"{dev.compute_capability.replace('.', '')}): {len(d.configs)} configs, "
                f"Triton {inert(tile.triton_version)}", style="bold")
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    spills = any(c.compiled and c.first.spills for c in d.configs)
    head_cols = [h for h in HEAD if spills or h != "spill"]
    sizes = [f"{inert(tile.key)}={m}" for m in d.sizes]
    for col in (*head_cols, *sizes):
        t.add_column(col, justify="left" if col in ("config", "fits") else "right",
                     no_wrap=col != "config", min_width=12 if col == "config" else None)
    for c in d.configs:
        s = c.first
        res = ([f"{s.shared:,}", str(s.registers), *([str(s.spills)] if spills else []),
                str(s.programs_per_sm), f"{s.occupancy * 100:.1f}%"] if c.compiled
               else ["-"] * (len(head_cols) - 3))
        t.add_row(str(c.index), inert(_short(c.config)), *res, _loads(c),
                  *[_cell(c, m, d.model) for m in d.sizes])
    parts: list[RenderableType] = [head, t]
    parts += [Text(f"config {c.index}: {inert(c.reason)}") for c in d.configs if c.reason]
    for m in d.sizes:
        best = d.best(m)
        pick = (f"config {best.index} ({inert(_short(best.config))})" if best
                else "none fits")
        parts.append(Text(f"best at {inert(tile.key)}={m}: {pick}"))
    if not spills:
        parts.append(Text("no config spills registers here"))
    what = (f"{inert(tile.key)}=N: predicted ms #rank" if d.model == "gemm"
            else f"{inert(tile.key)}=N: #rank")
    parts.append(Text(f"{what}; {inert(d.note)}", style="dim"))
    return Group(*parts)


def tile_view(tile: TritonTile) -> RenderableType:
    st = tile.stats
    parts: list[RenderableType] = [device_view(tile, d) for d in tile.devices]
    parts.append(Text(f"compiled {st.compiled}, cached {st.cached}, failed {st.failed} in "
                      f"{st.wall_seconds:.1f} s"))
    return Group(*parts)


def _size_dict(c: ConfigResult, m: int) -> dict[str, Any]:
    s = c.by_size[m]
    return {"fits": s.fits, "reason": s.reason, "shared": s.shared, "registers": s.registers,
            "spills": s.spills, "programs_per_sm": s.programs_per_sm, "occupancy": s.occupancy,
            "predicted_ms": s.predicted_ms, "rank": s.rank, "grid": s.grid}


def tile_dicts(tile: TritonTile) -> list[dict[str, Any]]:
    """--json: one object per device, in the order of -d."""
    st = tile.stats
    return [
        {
            "kernel": tile.spec.name, "function": tile.spec.function,
            "device": d.device.key, "device_name": d.device.name,
            "cc": d.device.compute_capability, "triton_version": tile.triton_version,
            "key": tile.key, "sizes": list(d.sizes), "model": d.model, "model_note": d.note,
            "best": {str(m): (b.index if (b := d.best(m)) else None) for m in d.sizes},
            "configs": [{"index": c.index, "config": dict(c.config), "key": c.key,
                         "compiled": c.compiled, "error": c.error or None, "fits": c.fits,
                         "reason": c.reason,
                         "sizes": {str(m): _size_dict(c, m) for m in d.sizes}}
                        for c in d.configs],
            "compile": {"compiled": st.compiled, "cached": st.cached, "failed": st.failed,
                        "wall_seconds": round(st.wall_seconds, 3)},
        }
        for d in tile.devices]
