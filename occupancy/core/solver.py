"""Exact occupancy: one pure function per limiter, combined once, as cuda_occupancy.h does.

Standard library only. Every rule reads its constants from the Device (the profile), so
a new GPU is a new YAML file, never a code change here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.limits import DEFAULT_REGISTERS_PER_THREAD, INT32_MAX, block_shape_problem

if TYPE_CHECKING:
    from occupancy.core.clusters import ClusterResult

LIMIT_NAMES = ("warps", "registers", "shared_memory", "blocks", "barriers", "virtual_resources")


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _round_up(x: int, y: int) -> int:
    return _ceil_div(x, y) * y


@dataclass(frozen=True)
class OccupancyResult:
    """Everything one launch config gives on one device; keeps every per-resource limit."""

    device: str
    threads_per_block: int
    registers_per_thread: int
    static_shared_memory: int
    dynamic_shared_memory: int
    carveout: int | None
    max_threads_per_block: int | None
    block_barriers: int
    opt_in: bool
    warps_per_block: int
    max_warps_per_sm: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    active_threads_per_sm: int
    occupancy: float
    limiters: frozenset[str]
    block_limits: dict[str, int | None]
    allocated_registers_per_block: int
    allocated_shared_memory_per_block: int
    shared_memory_per_sm_bytes: int  # what the SM is configured to, after the carveout
    requires_opt_in: bool
    partitioned_global_caching: bool  # in effect (it falls back off when a block won't fit)
    cannot_launch: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    virtual_resources: int = 0  # the kernel's per-block count (CC 10-12)
    cluster: ClusterResult | None = None

    @property
    def launchable(self) -> bool:
        return not self.cannot_launch

    @property
    def ordered_limiters(self) -> tuple[str, ...]:
        """The limiters in LIMIT_NAMES' order: every output lists them so, from here."""
        return tuple(n for n in LIMIT_NAMES if n in self.limiters)

    def resident_blocks(self, grid_blocks: int, sm_count: int) -> int:
        """Blocks an SM holds at once: what the occupancy allows (at least 1), and no more
        than the grid gives each of `sm_count` SMs."""
        return min(max(self.active_blocks_per_sm, 1), -(-grid_blocks // max(sm_count, 1)))


# --- one function per limiter ------------------------------------------------------------


def blocks_by_warps(dev: Device, warps_per_block: int, threads: int, pgc: bool) -> int:
    """Warp slots: max warps per SM // warps per block (per half-SM with partitioned caching)."""
    if threads > dev.max_threads_per_block:
        return 0
    if pgc:
        # A block with partitioned global caching lives in one half of the SM.
        return (dev.max_warps_per_sm // 2 // warps_per_block) * 2
    return dev.max_warps_per_sm // warps_per_block


class _RegLimit(NamedTuple):
    """Register limit and what one block is allocated."""

    blocks: int | None  # None: the kernel uses no registers
    allocated_per_block: int
    pgc: bool
    problem: str | None


def _regs_per_warp_limit(dev: Device, regs: int, warps: int, sub_partitions: int,
                         pgc: bool) -> _RegLimit:
    unit = dev.register_allocation_unit
    per_warp = _round_up(regs * dev.warp_size, unit)
    per_block = per_warp * warps
    # The hardware's launch check assumes every sub-partition gets the same number of warps,
    # so it rounds the block's warps up to a multiple of the sub-partitions.
    assumed = per_warp * _round_up(warps, sub_partitions)
    if regs > dev.max_registers_per_thread:
        return _RegLimit(0, per_block, pgc, f"{regs} registers per thread exceed the device's "
                         f"maximum of {dev.max_registers_per_thread}")
    if assumed > dev.registers_per_block or per_block > dev.registers_per_block:
        threads = warps * dev.warp_size
        return _RegLimit(0, per_block, pgc, _register_block_problem(dev, regs, threads, assumed))
    if per_warp == 0:
        return _RegLimit(None, per_block, pgc, None)
    # Registers are split evenly among the sub-partitions; a warp lives in one of them.
    warps_per_sub = (dev.registers_per_sm // sub_partitions) // per_warp
    blocks = 0
    if pgc:
        blocks = (warps_per_sub * (sub_partitions // 2) // warps) * 2
    if blocks == 0:
        pgc = False  # the driver turns partitioned caching off when a block won't fit
        blocks = (warps_per_sub * sub_partitions) // warps
    return _RegLimit(blocks, per_block, pgc, None)


def _register_block_problem(dev: Device, regs: int, threads: int, needed: int) -> str:
    """'1 block of 1024 threads needs 73,728 registers; ...: use <= 64 registers or 512 threads'."""
    # Bounded by the device's own limits, never by the input: a block of 10^18 threads is
    # answered at once.
    fit_regs = next((r for r in range(min(regs - 1, dev.max_registers_per_thread), 0, -1)
                     if _fits_block_regs(dev, r, threads)), 0) if threads <= dev.max_threads_per_block else 0
    top = min(threads - dev.warp_size, dev.max_threads_per_block)
    fit_threads = next((t for t in range(top - top % dev.warp_size, 0, -dev.warp_size)
                        if _fits_block_regs(dev, regs, t)), 0)
    fixes = []
    if fit_regs:
        fixes.append(f"<= {fit_regs} registers")
    if fit_threads:
        fixes.append(f"{fit_threads} threads")
    fix = (": use " + " or ".join(fixes)) if fixes else ""
    return (f"1 block of {threads} threads at {regs} registers needs {needed:,} registers; "
            f"the device allows {dev.registers_per_block:,} per block{fix}")


def _fits_block_regs(dev: Device, regs: int, threads: int) -> bool:
    warps = _ceil_div(threads, dev.warp_size)
    if dev.register_allocation == "block":
        return _regs_per_block_alloc(dev, regs, warps) <= dev.registers_per_block
    per_warp = _round_up(regs * dev.warp_size, dev.register_allocation_unit)
    return per_warp * max(warps, _round_up(warps, dev.sub_partitions)) <= dev.registers_per_block


def _regs_per_block_alloc(dev: Device, regs: int, warps: int) -> int:
    """CC 1.x: registers are allocated per block, warps rounded up to the warp granularity."""
    warps_alloc = _round_up(warps, dev.warp_allocation_granularity)
    return _round_up(warps_alloc * dev.warp_size * regs, dev.register_allocation_unit)


def blocks_by_registers(dev: Device, regs: int, warps: int, pgc: bool) -> _RegLimit:
    """Register file: per-warp allocation in units, split over sub-partitions."""
    if dev.register_allocation == "block":
        per_block = _regs_per_block_alloc(dev, regs, warps)
        if regs > dev.max_registers_per_thread:
            return _RegLimit(0, per_block, False, f"{regs} registers per thread exceed the "
                             f"device's maximum of {dev.max_registers_per_thread}")
        if per_block > dev.registers_per_block:
            problem = _register_block_problem(dev, regs, warps * dev.warp_size, per_block)
            return _RegLimit(0, per_block, False, problem)
        blocks = None if per_block == 0 else dev.registers_per_sm // per_block
        return _RegLimit(blocks, per_block, False, None)
    lim = _regs_per_warp_limit(dev, regs, warps, dev.sub_partitions, pgc)
    check = dev.register_check_sub_partitions
    if check and lim.blocks:
        # GP100 (2 sub-partitions): a kernel that cannot run on GP10x (4) is refused on
        # GP100 too, for forward compatibility within Pascal (cuda_occupancy.h).
        other = _regs_per_warp_limit(dev, regs, warps, check, lim.pgc)
        if other.blocks == 0:
            problem = other.problem or (
                f"{regs} registers x {warps} warps do not fit when checked with {check} "
                "sub-partitions (the driver refuses what GP10x could not run)")
            return _RegLimit(0, lim.allocated_per_block, lim.pgc, problem)
    return lim


class _SmemLimit(NamedTuple):
    """Shared-memory limit, the allocation and the SM's configured capacity."""

    blocks: int | None  # None: no shared memory at all
    allocated_per_block: int
    capacity_per_sm: int
    requires_opt_in: bool
    problem: str | None
    note: str | None


def carveout_capacity(dev: Device, carveout: int | None) -> int:
    """Shared memory per SM for a carveout (percent of max), rounded UP to a supported size."""
    sizes = dev.shared_memory_carveout_bytes
    if not sizes or carveout is None:
        return dev.shared_memory_per_sm_bytes
    wanted = carveout * dev.shared_memory_per_sm_bytes // 100
    return next(s for s in sizes if s >= wanted)


def blocks_by_shared_memory(dev: Device, static: int, dynamic: int, carveout: int | None,
                            opt_in: bool) -> _SmemLimit:
    """Shared memory: allocation rounded to the unit, reserved bytes included (CC >= 8)."""
    reserved = dev.reserved_shared_memory_per_block_bytes
    unit = dev.shared_memory_allocation_unit_bytes
    allocated = _round_up(static + reserved + dynamic, unit)
    # The reserved bytes count toward the SM's capacity but not toward the per-block cap.
    default_cap = dev.shared_memory_per_block_bytes + reserved
    optin_cap = dev.shared_memory_per_block_optin_bytes + reserved
    fits_default = allocated <= default_cap
    fits = allocated <= (optin_cap if opt_in else default_cap)
    requires_opt_in = fits and not fits_default
    asked = static + dynamic
    if static > dev.shared_memory_per_block_bytes:
        # ptxas refuses a kernel whose static __shared__ arrays exceed the default per-block
        # limit (48 KB): only dynamic shared memory can go above it, after opting in.
        problem = (f"{static:,} B of static shared memory exceeds the "
                   f"{dev.shared_memory_per_block_bytes:,} B that static __shared__ arrays may "
                   "use per block (ptxas refuses it): move the "
                   "array to dynamic shared memory (extern __shared__, the launch's third "
                   "argument) and opt in with cudaFuncSetAttribute(kernel, "
                   "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)")
        return _SmemLimit(0, allocated, carveout_capacity(dev, carveout), False, problem, None)
    if not fits:
        if not opt_in and allocated <= optin_cap:
            fix = (f"opt in with cudaFuncSetAttribute(kernel, "
                   f"cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic}) or use <= "
                   f"{dev.shared_memory_per_block_bytes:,} B")
        else:  # (static arrays over the per-block limit were refused above)
            cap = dev.shared_memory_per_block_optin_bytes if opt_in else \
                dev.shared_memory_per_block_bytes
            fix = f"use <= {cap - static:,} B of dynamic smem"
        limit = optin_cap if opt_in else default_cap
        what = "opt-in" if opt_in and optin_cap != default_cap else "default"
        problem = (f"{asked:,} B of shared memory per block (+{reserved:,} B reserved, "
                   f"{allocated:,} B allocated) exceeds the {what} per-block limit of "
                   f"{limit - reserved:,} B: {fix}")
        return _SmemLimit(0, allocated, carveout_capacity(dev, carveout), False, problem, None)
    capacity = carveout_capacity(dev, carveout)
    note = None
    if carveout is not None and not dev.shared_memory_carveout_bytes:
        note = f"carveout {carveout}% ignored: {dev.name} has a fixed shared-memory size"
    elif carveout is not None and capacity < allocated:
        # CC >= 7: when the preferred size cannot hold one block the driver picks the
        # smallest supported size that can.
        capacity = next(s for s in dev.shared_memory_carveout_bytes if s >= allocated)
        note = (f"carveout {carveout}% cannot hold one block of {allocated:,} B; "
                f"the driver configures {capacity:,} B instead")
    elif carveout is not None:
        note = (f"carveout {carveout}% of {dev.shared_memory_per_sm_bytes:,} B rounds up to "
                f"{capacity:,} B of shared memory per SM")
    blocks = capacity // allocated if allocated > 0 else None
    return _SmemLimit(blocks, allocated, capacity, requires_opt_in, None, note)


def blocks_by_virtual_resources(dev: Device, count: int) -> int | None:
    """CC 10-12: virtual resources per SM // the block's count (cuda_occupancy.h 13.0);
    None where the device has none or the kernel uses none."""
    if not dev.virtual_resources_per_sm or count <= 0:
        return None
    return dev.virtual_resources_per_sm // count


def blocks_by_barriers(dev: Device, block_barriers: int) -> int | None:
    """Named barriers per SM (applied from CC 9.0 on); None where the limit does not apply."""
    if dev.block_barriers_per_sm is None or block_barriers <= 0:
        return None
    return dev.block_barriers_per_sm // block_barriers


# --- combined once -----------------------------------------------------------------------


def _check_inputs(threads: int, regs: int, static: int, dynamic: int,
                  carveout: int | None, launch_bound: int | None, barriers: int,
                  virtual_resources: int = 0) -> None:
    if not isinstance(threads, int) or threads <= 0:
        raise OccupancyError(f"threads per block must be a positive integer, got {threads!r}")
    for what, value in (("threads per block", threads), ("registers per thread", regs),
                        ("virtual resources", virtual_resources),
                        ("static shared memory", static), ("dynamic shared memory", dynamic),
                        ("the launch bound", launch_bound or 0), ("block barriers", barriers)):
        if value > INT32_MAX:
            raise OccupancyError(f"{what}: {value} is over {INT32_MAX:,}, more than CUDA's "
                                 "own 32-bit sizes hold")
    if regs < 0:
        raise OccupancyError(f"registers per thread must be >= 0, got {regs}")
    if static < 0 or dynamic < 0:
        raise OccupancyError("shared memory sizes must be >= 0 bytes")
    if carveout is not None and not 0 <= carveout <= 100:
        raise OccupancyError(f"carveout is a percentage 0-100, got {carveout}")
    if launch_bound is not None and launch_bound <= 0:
        raise OccupancyError(f"the launch bound must be a positive integer, got {launch_bound}")
    if barriers < 0:
        raise OccupancyError(f"block barriers must be >= 0, got {barriers}")
    if virtual_resources < 0:
        raise OccupancyError(f"virtual resources must be >= 0, got {virtual_resources}")



def _combine(dev: Device, warps: int, threads: int, reg: _RegLimit, smem: _SmemLimit,
             block_barriers: int, virtual_resources: int) -> tuple[dict[str, int | None], int]:
    """Every limiter's blocks per SM, in LIMIT_NAMES' order, and the fewest of them."""
    limits: dict[str, int | None] = {
        "warps": blocks_by_warps(dev, warps, threads, reg.pgc),
        "registers": reg.blocks,
        "shared_memory": smem.blocks,
        "blocks": dev.max_blocks_per_sm,
        "barriers": None,
        "virtual_resources": blocks_by_virtual_resources(dev, virtual_resources),
    }
    active = min(v for v in limits.values() if v is not None)
    # From CC 9.0 the barrier limit is applied after the others (cuda_occupancy.h).
    limits["barriers"] = blocks_by_barriers(dev, block_barriers)
    if limits["barriers"] is not None:
        active = min(active, limits["barriers"])
    return limits, active


def _launch_problems(dev: Device, threads: int, reg: _RegLimit, smem: _SmemLimit,
                     barrier_blocks: int | None, block_barriers: int) -> list[str]:
    """Why a block cannot launch at all, in the order the result lists them."""
    problems: list[str] = []
    if threads > dev.max_threads_per_block:
        problems.append(f"a block of {threads} threads exceeds the device's maximum of "
                        f"{dev.max_threads_per_block} threads per block")
    if reg.problem:
        problems.append(reg.problem)
    if smem.problem:
        problems.append(smem.problem)
    if barrier_blocks == 0:
        problems.append(f"{block_barriers} barriers per block exceed the "
                        f"{dev.block_barriers_per_sm} available per SM")
    return problems


def _smem_notes(dev: Device, smem: _SmemLimit, static: int, dynamic: int) -> list[str]:
    notes = [smem.note] if smem.note else []
    if smem.requires_opt_in:
        notes.append(f"needs cudaFuncSetAttribute(kernel, "
                     f"cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic}): "
                     f"{static + dynamic:,} B is over the default {dev.shared_memory_per_block_bytes:,} B "
                     "per block")
    return notes


def _cluster(dev: Device, cluster: tuple[int, int, int], active: int,
             grid: tuple[int, ...] | None) -> ClusterResult:
    from occupancy.core.clusters import cluster_occupancy

    if len(cluster) != 3 or any(not isinstance(c, int) or not 1 <= c <= 1024 for c in cluster):
        raise OccupancyError(f"a cluster is (x, y, z) of positive integers, got {cluster!r}")
    return cluster_occupancy(dev, active, cluster, grid)

def solve(dev: Device, threads_per_block: int,
          registers_per_thread: int = DEFAULT_REGISTERS_PER_THREAD,
          static_shared_memory: int = 0, dynamic_shared_memory: int = 0,
          carveout: int | None = None, max_threads_per_block: int | None = None,
          block_barriers: int = 1, opt_in: bool = True,
          partitioned_global_caching: bool = False, virtual_resources: int = 0,
          cluster: tuple[int, int, int] | None = None,
          grid: tuple[int, ...] | None = None,
          block: tuple[int, ...] | None = None) -> OccupancyResult:
    """Active blocks per SM and everything that decides it.

    opt_in: the kernel raises cudaFuncAttributeMaxDynamicSharedMemorySize where it needs
    to (the result says so in requires_opt_in); False models a kernel that never does.
    max_threads_per_block: the kernel's __launch_bounds__; the occupancy API ignores it,
    but a larger block fails to launch, so the result is 0 blocks with the reason.
    virtual_resources: the kernel's count on CC 10-12 (0: unused, as the header's default).
    cluster: thread-block cluster dims (x, y, z), CC >= 9: adds `result.cluster` (active
    clusters per GPU, measured or bounded); grid: the launch's grid, checked against it.
    """
    threads, regs = threads_per_block, registers_per_thread
    static, dynamic = static_shared_memory, dynamic_shared_memory
    _check_inputs(threads, regs, static, dynamic, carveout, max_threads_per_block,
                  block_barriers, virtual_resources)
    warps = _ceil_div(threads, dev.warp_size)
    pgc = partitioned_global_caching and dev.partitioned_global_caching
    notes: list[str] = []
    if partitioned_global_caching and not dev.partitioned_global_caching:
        notes.append(f"partitioned global caching does not exist on {dev.name}: ignored")

    reg = blocks_by_registers(dev, regs, warps, pgc)
    if pgc and not reg.pgc:
        notes.append("partitioned global caching turned off: a block does not fit in half an SM")
    smem = blocks_by_shared_memory(dev, static, dynamic, carveout, opt_in)
    limits, active = _combine(dev, warps, threads, reg, smem, block_barriers, virtual_resources)
    limiters = frozenset(k for k, v in limits.items() if v == active)
    problems = _launch_problems(dev, threads, reg, smem, limits["barriers"], block_barriers)
    if max_threads_per_block is not None and threads > max_threads_per_block:
        problems.append(f"a block of {threads} threads exceeds the kernel's launch bound of "
                        f"{max_threads_per_block} (__launch_bounds__); the occupancy API "
                        "ignores launch bounds, but this launch fails")
        active, limiters = 0, frozenset()
    if shape := block_shape_problem(block or (), threads, dev.max_threads_per_block):
        problems.append(shape)  # the occupancy API takes threads, not the shape
        active, limiters = 0, frozenset()
    notes += _smem_notes(dev, smem, static, dynamic)
    cluster_result = None
    if cluster is not None:
        cluster_result = _cluster(dev, cluster, active if not problems else 0, grid)
        notes += list(cluster_result.notes)
    active_warps = active * warps
    return OccupancyResult(
        device=dev.key,
        threads_per_block=threads,
        registers_per_thread=regs,
        static_shared_memory=static,
        dynamic_shared_memory=dynamic,
        carveout=carveout,
        max_threads_per_block=max_threads_per_block,
        block_barriers=block_barriers,
        opt_in=opt_in,
        warps_per_block=warps,
        max_warps_per_sm=dev.max_warps_per_sm,
        active_blocks_per_sm=active,
        active_warps_per_sm=active_warps,
        active_threads_per_sm=active * threads,
        occupancy=active_warps / dev.max_warps_per_sm,
        limiters=limiters,
        block_limits=limits,
        allocated_registers_per_block=reg.allocated_per_block,
        allocated_shared_memory_per_block=smem.allocated_per_block,
        shared_memory_per_sm_bytes=smem.capacity_per_sm,
        requires_opt_in=smem.requires_opt_in,
        partitioned_global_caching=reg.pgc,
        cannot_launch=(tuple(problems) if active == 0 else ()) + (
            cluster_result.problems if cluster_result else ()),
        notes=tuple(notes),
        virtual_resources=virtual_resources,
        cluster=cluster_result,
    )


# --- searches built on solve() -------------------------------------------------------------


@dataclass(frozen=True)
class BestBlockSize:
    """What cudaOccupancyMaxPotentialBlockSize answers, with the winning solve."""

    block_size: int
    min_grid_size: int
    result: OccupancyResult
    candidates: tuple[tuple[int, int], ...]  # (block size, active threads per SM), tried order


SmemFunction = Callable[[int], int]


def best_block_size(dev: Device, registers_per_thread: int = 0, static_shared_memory: int = 0,
                    dynamic_shared_memory: int | SmemFunction = 0, carveout: int | None = None,
                    max_threads_per_block: int | None = None, block_barriers: int = 1,
                    opt_in: bool = True) -> BestBlockSize:
    """The block size with the most resident threads; ties go to the larger block.

    dynamic_shared_memory may be a function of the block size (bytes for that block).
    """
    limit = dev.max_threads_per_block
    if max_threads_per_block is not None:
        limit = min(limit, max_threads_per_block)
    best: tuple[int, int, OccupancyResult] | None = None
    tried: list[tuple[int, int]] = []
    size = _round_up(limit, dev.warp_size)
    while size > 0:
        block = min(limit, size)
        dyn = dynamic_shared_memory(block) if callable(dynamic_shared_memory) \
            else dynamic_shared_memory
        r = solve(dev, block, registers_per_thread, static_shared_memory, dyn, carveout,
                  max_threads_per_block, block_barriers, opt_in)
        tried.append((block, r.active_threads_per_sm))
        if best is None or r.active_threads_per_sm > best[1]:
            best = (block, r.active_threads_per_sm, r)
        if best[1] == dev.max_threads_per_sm:
            break
        size -= dev.warp_size
    assert best is not None
    block, _, result = best
    if result.active_blocks_per_sm == 0:
        block = 0
    return BestBlockSize(block, result.active_blocks_per_sm * dev.sm_count, result, tuple(tried))


@dataclass(frozen=True)
class AvailableSmem:
    """Dynamic smem one block may use so that `blocks` of them stay resident."""

    bytes: int | None  # None: that many blocks never fit, whatever the smem
    driver_bytes: int | None  # what cudaOccupancyAvailableDynamicSMemPerBlock would say
    blocks: int


def available_dynamic_smem(dev: Device, blocks: int, threads_per_block: int,
                           registers_per_thread: int = 0, static_shared_memory: int = 0,
                           carveout: int | None = None, opt_in: bool = True,
                           block_barriers: int = 1) -> AvailableSmem:
    """Exact on CC >= 8, where the driver forgets each block's reserved 1 KB."""
    if blocks <= 0:
        raise OccupancyError(f"the number of resident blocks must be >= 1, got {blocks}")
    base = solve(dev, threads_per_block, registers_per_thread, static_shared_memory, 0,
                 carveout, None, block_barriers, opt_in)
    if base.active_blocks_per_sm < blocks:
        return AvailableSmem(None, None, blocks)
    unit = dev.shared_memory_allocation_unit_bytes
    reserved = dev.reserved_shared_memory_per_block_bytes
    per_block_cap = (dev.shared_memory_per_block_optin_bytes if opt_in
                     else dev.shared_memory_per_block_bytes) + reserved
    if blocks == 1:
        per_sm = per_block_cap
    else:
        per_sm = carveout_capacity(dev, carveout)
        if per_sm == 0:
            per_sm = next(s for s in dev.shared_memory_carveout_bytes if s > 0)
    total = min((per_sm // blocks) // unit * unit, per_block_cap)
    # The driver's formula stops here: it subtracts only the static size, then caps at the
    # kernel's max dynamic smem attribute (taken as the per-block limit).
    driver = max(min(total - static_shared_memory, per_block_cap - reserved), 0)
    exact = max(total - reserved - static_shared_memory, 0)
    return AvailableSmem(exact, driver, blocks)


@dataclass(frozen=True)
class Cliff:
    """How far a resource is from changing the number of resident blocks."""

    resource: str  # "registers" or "shared_memory"
    current: int
    gain_at: int | None  # the largest value below current that fits one more block
    gain_blocks: int | None
    lose_at: int | None  # the smallest value above current that loses a block
    lose_blocks: int | None


def _search(f: Callable[[int], int], lo: int, hi: int, want: Callable[[int], bool],
            largest: bool) -> int | None:
    """Largest (or smallest) x in [lo, hi] with want(f(x)), f monotone non-increasing."""
    if lo > hi:
        return None
    if largest:
        if not want(f(lo)):
            return None
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if want(f(mid)):
                lo = mid
            else:
                hi = mid - 1
        return lo
    if not want(f(hi)):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if want(f(mid)):
            hi = mid
        else:
            lo = mid + 1
    return lo


def cliffs(dev: Device, result: OccupancyResult) -> tuple[Cliff, Cliff]:
    """Registers and shared memory: fewer to gain a block, more to lose one."""
    r = result
    a = r.active_blocks_per_sm

    def by_regs(x: int) -> int:
        return solve(dev, r.threads_per_block, x, r.static_shared_memory,
                     r.dynamic_shared_memory, r.carveout, r.max_threads_per_block,
                     r.block_barriers, r.opt_in).active_blocks_per_sm

    def by_smem(x: int) -> int:
        # x: total smem the kernel asks for; the static part stays where it is if it can.
        static = min(r.static_shared_memory, x)
        return solve(dev, r.threads_per_block, r.registers_per_thread, static, x - static,
                     r.carveout, r.max_threads_per_block, r.block_barriers,
                     r.opt_in).active_blocks_per_sm

    max_regs = min(dev.max_registers_per_thread, 255)
    regs = r.registers_per_thread
    smem = r.static_shared_memory + r.dynamic_shared_memory
    smem_max = dev.shared_memory_per_block_optin_bytes
    out = []
    for name, f, cur, top in (("registers", by_regs, regs, max_regs),
                              ("shared_memory", by_smem, smem, smem_max)):
        gain = _search(f, 0, cur - 1, lambda n: n > a, largest=True)
        lose = _search(f, cur + 1, top, lambda n: n < a, largest=False) if a > 0 else None
        out.append(Cliff(name, cur, gain, None if gain is None else f(gain),
                         lose, None if lose is None else f(lose)))
    return out[0], out[1]
