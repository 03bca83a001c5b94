"""What-if curves: occupancy against block size, registers and shared memory (pure).

The three graphs of NVIDIA's spreadsheet, for one launch config on one device: each
curve holds, per x, the occupancy, the active blocks and the limiter(s), with the
current point marked. Renderers (terminal, SVG, matplotlib) only draw them.
"""

from __future__ import annotations

from dataclasses import dataclass

from occupancy.core.device import Device
from occupancy.core.limits import DEFAULT_REGISTERS_PER_THREAD
from occupancy.core.solver import solve


@dataclass(frozen=True)
class Point:
    x: int
    occupancy: float
    active_blocks_per_sm: int
    limiters: tuple[str, ...]


@dataclass(frozen=True)
class Curve:
    name: str  # "threads_per_block", "registers_per_thread", "shared_memory_per_block"
    x_label: str
    points: tuple[Point, ...]
    current: Point


@dataclass(frozen=True)
class Config:
    """The launch the curves vary one input of."""

    threads_per_block: int
    registers_per_thread: int = DEFAULT_REGISTERS_PER_THREAD
    shared_memory_per_block: int = 0  # static + dynamic, bytes
    carveout: int | None = None
    opt_in: bool = True


def _point(dev: Device, x: int, threads: int, regs: int, smem: int, cfg: Config) -> Point:
    r = solve(dev, threads, regs, 0, smem, cfg.carveout, opt_in=cfg.opt_in)
    return Point(x, r.occupancy, r.active_blocks_per_sm, r.ordered_limiters)


def sweep_threads(dev: Device, cfg: Config) -> Curve:
    xs = sorted(set(range(dev.warp_size, dev.max_threads_per_block + 1, dev.warp_size))
                | {cfg.threads_per_block})
    pts = tuple(_point(dev, t, t, cfg.registers_per_thread, cfg.shared_memory_per_block, cfg)
                for t in xs)
    cur = next(p for p in pts if p.x == cfg.threads_per_block)
    return Curve("threads_per_block", "threads per block", pts, cur)


def sweep_registers(dev: Device, cfg: Config) -> Curve:
    top = min(dev.max_registers_per_thread, 255)
    xs = sorted(set(range(0, top + 1)) | {cfg.registers_per_thread})
    pts = tuple(_point(dev, r, cfg.threads_per_block, r, cfg.shared_memory_per_block, cfg)
                for r in xs)
    cur = next(p for p in pts if p.x == cfg.registers_per_thread)
    return Curve("registers_per_thread", "registers per thread", pts, cur)


def sweep_shared_memory(dev: Device, cfg: Config) -> Curve:
    top = (dev.shared_memory_per_block_optin_bytes if cfg.opt_in
           else dev.shared_memory_per_block_bytes)
    unit = dev.shared_memory_allocation_unit_bytes
    xs = sorted(set(range(0, top + 1, unit)) | {cfg.shared_memory_per_block})
    pts = tuple(_point(dev, s, cfg.threads_per_block, cfg.registers_per_thread, s, cfg)
                for s in xs)
    cur = next(p for p in pts if p.x == cfg.shared_memory_per_block)
    return Curve("shared_memory_per_block", "shared memory per block (bytes)", pts, cur)


def sweeps(dev: Device, cfg: Config) -> tuple[Curve, Curve, Curve]:
    return sweep_threads(dev, cfg), sweep_registers(dev, cfg), sweep_shared_memory(dev, cfg)
