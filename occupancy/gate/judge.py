"""One verdict: a kernel's resources on one device against its launch, its occupancy
floor and its register / spill rules (check.py runs it per manifest entry, triton_check.py
per Triton config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occupancy.build.resources import KernelResources, callees_note
from occupancy.core.device import Device
from occupancy.core.solver import OccupancyResult, cliffs, solve
from occupancy.core.words import limiters, pct
from occupancy.inputs.manifest import KernelSpec
from occupancy.inputs.safety import inert


@dataclass(frozen=True)
class Verdict:
    kernel: str
    device: str
    line: int
    status: str  # "pass", "fail" or "error"
    problems: tuple[str, ...]
    result: OccupancyResult | None = None
    resources: KernelResources | None = None
    config: Mapping[str, Any] | None = None  # a Triton config's parameters

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    @property
    def active_blocks_per_sm(self) -> int:
        return self.result.active_blocks_per_sm if self.result else 0

    @property
    def occupancy(self) -> float:
        return self.result.occupancy if self.result else 0.0

    @property
    def limiters(self) -> tuple[str, ...]:
        return self.result.ordered_limiters if self.result else ()

    @property
    def registers_per_thread(self) -> int | None:
        return self.resources.registers_per_thread if self.resources else None

    @property
    def registers_source(self) -> str:
        return self.resources.source if self.resources else ""


def verdict(spec: KernelSpec, dev: Device, res: KernelResources) -> Verdict:
    """Can it launch, does it reach its floor, does it keep the register / spill rules."""
    bound = spec.max_threads_per_block or res.max_threads_per_block
    if spec.max_threads_per_block and res.max_threads_per_block:
        bound = min(spec.max_threads_per_block, res.max_threads_per_block)
    static = spec.static_shared_memory if spec.static_shared_memory is not None \
        else res.static_shared_memory
    regs = res.registers_per_thread  # the manifest's number when no binary or source is given
    barriers = spec.barriers if spec.barriers is not None else max(res.barriers, 1)
    r = solve(dev, spec.threads, regs, static, spec.dynamic_shared_memory, spec.carveout, bound,
              barriers, opt_in=spec.opt_in_shared_memory, virtual_resources=spec.virtual_resources,
              cluster=spec.cluster or res.cluster_dims, grid=spec.grid, block=spec.block)
    problems = list(r.cannot_launch)
    if r.launchable and r.occupancy < spec.min_occupancy:
        limiter = limiters(r.limiters)
        fix = ""
        reg_cliff, smem_cliff = cliffs(dev, r)
        if "registers" in r.limiters and reg_cliff.gain_at is not None:
            # a cliff's gain is at least 2 blocks: one more than a launchable kernel's 1
            fix = f": use <= {reg_cliff.gain_at} registers for {reg_cliff.gain_blocks} blocks"
        elif "shared_memory" in r.limiters and smem_cliff.gain_at is not None:
            fix = (f": use <= {smem_cliff.gain_at:,} B of shared memory per block for "
                   f"{smem_cliff.gain_blocks} blocks")
        elif "warps" in r.limiters or "blocks" in r.limiters:
            fix = ": change the block size"
        problems.append(f"occupancy {pct(r.occupancy)} is below the floor of "
                        f"{pct(spec.min_occupancy)} (limited by {limiter}{fix})")
    if spec.max_registers is not None and regs > spec.max_registers:
        problems.append(f"{regs} registers per thread exceed max_registers {spec.max_registers}"
                        f" ({res.source})")
    if spec.no_spills and res.spills:
        problems.append(f"spills {res.spill_stores_bytes} B stored / {res.spill_loads_bytes} B "
                        f"loaded per thread ({res.source}){callees_note(res)}; no_spills is set")
    elif spec.no_spills and res.unattributed_spills:
        names = ", ".join(inert(n) for n in res.unattributed_spills[:3])
        problems.append(f"the log's device functions {names} spill, compiled on their own (-G, "
                        "-rdc), and a ptxas log does not say which kernels call them "
                        f"({res.source}): give the source or the cubin, whose call graph "
                        "does; no_spills is set")
    elif spec.no_spills and res.spills_unknown and res.stack_frame_bytes > 0:
        problems.append(f"a {res.stack_frame_bytes} B stack frame per thread ({res.source}): "
                        "local memory, from spills or local arrays (a binary or nvlink's report "
                        "does not tell them apart); no_spills is set")
    return Verdict(spec.name, dev.key, spec.line, "fail" if problems else "pass",
                   tuple(problems), r, res)


def error_verdict(spec: KernelSpec, device: str, message: str, line: int | None = None
                  ) -> Verdict:
    return Verdict(spec.name, device, line or spec.line, "error", (inert(message),))
