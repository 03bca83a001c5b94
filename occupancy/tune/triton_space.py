"""`occupancy tile MANIFEST --kernel NAME -d DEV...` for a `triton:` entry: every config
compiled offline for each device's architecture (build/triton_entry.py: in parallel,
cached), then per device and config: shared memory, registers, spills, programs per SM,
occupancy, whether it loads (Triton's own reason where not), and per problem size a
predicted time and rank.

The time comes from tune/triton_rank.py's tiled-GEMM model where it describes the kernel
(configs with BLOCK_SIZE_M/N/K, a problem with N and K); any other kernel is ranked by
occupancy (then programs per SM), and the report says so. The result gives the table the
pruning hook reads (tune/triton_prune.py) and a vLLM config file per device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from occupancy.build.triton import CompileStats, TritonKernel, occupancy, out_of_resources
from occupancy.build.triton_entry import EntryKernels, compile_entry
from occupancy.core.device import Device
from occupancy.inputs.manifest.triton import TritonSpec
from occupancy.tune.triton_prune import build_table, config_key, prune_config_file
from occupancy.tune.triton_rank import GemmProblem, predict_gemm_ms

GEMM, OCCUPANCY = "gemm", "occupancy"
_BYTES = {"fp8e4nv": 1, "fp8e5": 1, "fp8e4b15": 1, "fp8e4b8": 1, "fp8e5b16": 1, "fp16": 2,
          "bf16": 2, "fp32": 4, "fp64": 8}


@dataclass
class SizeResult:
    """One config at one problem size (its own specialization)."""

    fits: bool
    reason: str | None
    shared: int = 0
    registers: int = 0
    spills: int = 0
    programs_per_sm: int = 0
    occupancy: float = 0.0
    predicted_ms: float | None = None
    rank: int | None = None  # 1-based among the configs that fit at this size
    grid: int | None = None


@dataclass
class ConfigResult:
    index: int  # 1-based, as check's "config N"
    config: dict[str, int]
    key: str
    compiled: bool
    error: str
    by_size: dict[int, SizeResult]

    @property
    def fits(self) -> bool:
        return all(s.fits for s in self.by_size.values())

    @property
    def reason(self) -> str | None:
        return next((s.reason for s in self.by_size.values() if s.reason), None)

    @property
    def first(self) -> SizeResult:
        return next(iter(self.by_size.values()))


@dataclass
class DeviceTile:
    device: Device
    configs: list[ConfigResult]
    sizes: list[int]
    model: str  # GEMM or OCCUPANCY
    note: str

    def best(self, size: int) -> ConfigResult | None:
        return next((c for c in self.configs if c.by_size[size].rank == 1), None)


@dataclass
class TritonTile:
    spec: TritonSpec
    key: str  # the problem size the sizes are of (M)
    triton_version: str
    devices: list[DeviceTile]
    stats: CompileStats = field(default_factory=CompileStats)

    def table(self) -> dict[str, Any]:
        """The JSON table make_prune_hook reads (format occupancy.triton-table/1)."""
        return build_table(self.spec.function, self.triton_version, self.key,
                           {d.device.key: table_row(d) for d in self.devices})

    def vllm_file(self, tile: DeviceTile) -> tuple[dict[int, dict[str, Any]], list[str]]:
        """A config file for this device in vLLM's format: the entry's own config file
        with every config that does not fit replaced by the predicted best (one note per
        replacement), or, for a list or space, the predicted best per size."""
        if self.spec.config_file:
            from occupancy.inputs.triton_configs import read_config_file

            return prune_config_file(read_config_file(self.spec.config_file), self.table(),
                                     tile.device.key)
        out, notes = {}, []
        for m in tile.sizes:
            best = tile.best(m)
            if best is None:
                notes.append(f"{self.key}={m}: no config fits {tile.device.name}")
                continue
            out[m] = dict(best.config)
        return out, notes


def rank_entry(spec: TritonSpec, devices: Sequence[Device], *, jobs: int | None = None,
               cache: bool = True) -> TritonTile:
    """Compile every config for the devices' architectures and rank them per device
    (cache=False: compile again, which also fills Triton's own cache for a launch)."""
    built = compile_entry(spec, [d.compute_capability for d in devices], jobs=jobs,
                          cache=cache)
    key = spec.sweep or ("M" if "M" in spec.problem else next(iter(spec.problem), "M"))
    tiles = [device_tile(spec, built, dev, key) for dev in devices]
    return TritonTile(spec, key, built.triton_version, tiles, built.stats)


def _gemm_model(spec: TritonSpec) -> tuple[Callable[[TritonKernel, Device, dict[str, int]],
                                                     float] | None, str]:
    need = {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"}
    names = {k for k, v in spec.problem.items()}
    if not all(need <= set(c) for c in spec.configs) or not {"M", "N", "K"} <= names:
        return None, ("ranked by occupancy (then programs per SM): the time model describes "
                      "tiled GEMMs (configs with BLOCK_SIZE_M/N/K, a problem with M, N and K)")
    experts = int(spec.problem.get("E", (1,))[0])
    top_k = spec.constexprs.get("top_k", spec.problem.get("top_k", (1,))[0])
    top_k = int(top_k) if isinstance(top_k, int) and not isinstance(top_k, bool) else 1
    pointers = [t.lstrip("*k") for t in spec.signature.values() if t.startswith("*")]
    width = _BYTES.get(pointers[0], 2) if pointers else 2

    def predict(k: TritonKernel, dev: Device, point: dict[str, int]) -> float:
        p = GemmProblem(point["M"], point["N"], point["K"], experts, top_k, width)
        return predict_gemm_ms(k, dev, p)

    what = "fused-MoE grouped GEMM" if experts > 1 else "tiled GEMM"
    return predict, f"times from the {what} model (tune/triton_rank.py): they rank, " \
                    "they are not promises"


def _size_result(spec: TritonSpec, k: TritonKernel, dev: Device, config: dict[str, int],
                 point: dict[str, int]) -> SizeResult:
    if not k.compiled:
        return SizeResult(False, k.error)
    occ = occupancy(k, dev)
    reason = out_of_resources(k, dev) or ("; ".join(occ.cannot_launch) or None)
    try:
        grid = spec.grid_size(config, point)
    except (ArithmeticError, ValueError, TypeError):
        grid = None
    return SizeResult(reason is None and occ.active_blocks_per_sm > 0, reason, k.shared,
                      k.registers, k.n_spills, occ.active_blocks_per_sm,
                      round(occ.occupancy, 4), grid=grid)


def device_tile(spec: TritonSpec, built: EntryKernels, dev: Device, key: str) -> DeviceTile:
    predict, note = _gemm_model(spec)
    points = spec.points()
    sizes = [p.get(key, 0) for p in points]
    configs = []
    for ci, cfg in enumerate(spec.configs):
        by_size: dict[int, SizeResult] = {}
        first = built.at(ci, 0, dev.compute_capability)
        for pi, point in enumerate(points):
            k = built.at(ci, pi, dev.compute_capability)
            r = _size_result(spec, k, dev, cfg, point)
            if r.fits and predict is not None:
                t = predict(k, dev, point)
                r.predicted_ms = None if math.isinf(t) else round(t, 6)
            by_size[sizes[pi]] = r
        configs.append(ConfigResult(ci + 1, dict(cfg), config_key(cfg), first.compiled,
                                    first.error, by_size))
    for m in sizes:
        fitting = [c for c in configs if c.by_size[m].fits]
        if predict is not None:
            fitting = [c for c in fitting if c.by_size[m].predicted_ms is not None]
            fitting.sort(key=lambda c: (c.by_size[m].predicted_ms or 0.0, c.index))
        else:
            fitting.sort(key=lambda c: (-c.by_size[m].occupancy, -c.by_size[m].programs_per_sm,
                                        c.index))
        for place, c in enumerate(fitting, 1):
            c.by_size[m].rank = place
    return DeviceTile(dev, configs, sizes, GEMM if predict else OCCUPANCY, note)


def table_row(tile: DeviceTile) -> dict[str, Any]:
    """One device's part of the table (the hook's format: tune/triton_prune.py)."""
    dev = tile.device
    configs: dict[str, Any] = {}
    for c in tile.configs:
        s = c.first
        row: dict[str, Any] = {"config": dict(c.config), "fits": c.fits, "reason": c.reason}
        if c.compiled:
            row.update(shared=s.shared, registers=s.registers, spills=s.spills,
                       programs_per_sm=s.programs_per_sm, occupancy=s.occupancy)
        configs[c.key] = row
    order: dict[str, list[str]] = {}
    predicted: dict[str, dict[str, float]] = {}
    for m in tile.sizes:
        ranked = sorted((c for c in tile.configs if c.by_size[m].rank is not None),
                        key=lambda c: c.by_size[m].rank or 0)
        order[str(m)] = [c.key for c in ranked]
        times = {c.key: c.by_size[m].predicted_ms for c in ranked}
        predicted[str(m)] = {k: t for k, t in times.items() if t is not None}
    names = sorted({dev.name, dev.name.replace(" ", "_"), dev.key, *dev.aliases})
    return {"names": names, "cc": dev.compute_capability, "configs": configs, "order": order,
            "predicted_ms": predicted}


def vllm_file_name(spec: TritonSpec, dev: Device) -> str:
    """vLLM's name for a device's config file: E=8,N=14336,device_name=NVIDIA_H200.json
    (the device as torch.cuda.get_device_name() spells it, spaces as '_')."""
    name = dev.name if dev.name.upper().startswith("NVIDIA") else f"NVIDIA {dev.name}"
    device = "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in name)
    shape = [f"{k}={spec.problem[k][0]}" for k in ("E", "N") if k in spec.problem]
    return ",".join([*shape, f"device_name={device}"]) + ".json"
