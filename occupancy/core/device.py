"""The Device value: every architectural constant the solver needs, plus model figures."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from occupancy.core.errors import UnknownComputeCapabilityError

KIB = 1024


@dataclass(frozen=True)
class Device:
    """One GPU. Field names carry their units; counts (threads, registers) are plain."""

    name: str
    compute_capability: str  # "major.minor", e.g. "9.0"
    architecture: str
    # --- limits the occupancy solver reads
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    registers_per_block: int
    max_registers_per_thread: int
    register_allocation: str  # "warp" (CC >= 2.0) or "block" (CC 1.x)
    register_allocation_unit: int
    warp_allocation_granularity: int
    sub_partitions: int
    register_check_sub_partitions: int | None
    shared_memory_per_sm_bytes: int
    shared_memory_per_block_bytes: int
    shared_memory_per_block_optin_bytes: int
    reserved_shared_memory_per_block_bytes: int
    shared_memory_allocation_unit_bytes: int
    shared_memory_carveout_bytes: tuple[int, ...]
    block_barriers_per_sm: int | None
    partitioned_global_caching: bool
    # --- figures for the performance model
    sm_count: int
    boost_clock_mhz: float
    dram_bandwidth_gb_s: float
    fp32_gflops: float
    l2_cache_bytes: int
    shared_memory_banks: int
    shared_memory_bank_width_bytes: int
    # --- optional: Blackwell's per-SM virtual resources, thread-block clusters
    virtual_resources_per_sm: int | None = None  # CC 10-12: 128 (cuda_occupancy.h 13.0)
    max_cluster_size: int | None = None  # non-portable limit (portable: 8); None: no clusters
    gpc_count: int | None = None  # for the bounds of an estimate without a measured table
    # The unified L1 data cache + shared memory array per SM (CC >= 7.0): the L1 is what
    # the shared-memory configuration leaves, and it holds the lines of loads in flight.
    l1_shared_memory_bytes: int | None = None
    # Active clusters per GPU measured on the chip: row b-1 = b blocks per SM, column s-1 =
    # cluster size s. Placement follows the GPC/TPC layout, so no formula gives it.
    cluster_table: tuple[tuple[int, ...], ...] = ()
    aliases: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    path: str | None = None  # the file it came from, None for a detected or built device
    overrides: str | None = None  # the shipped profile a user profile replaces

    @property
    def cc_major(self) -> int:
        return int(self.compute_capability.split(".")[0])

    @property
    def cc_minor(self) -> int:
        return int(self.compute_capability.split(".")[1])

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    @property
    def key(self) -> str:
        """Short name: the first alias, else the name."""
        return self.aliases[0] if self.aliases else self.name

    def to_dict(self) -> dict[str, Any]:
        """The profile's keys and values, in profile order (what `devices show --json` prints)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in ("path", "overrides"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = [list(v) if isinstance(v, tuple) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out

    @staticmethod
    def from_cuda_properties(props: Mapping[str, Any]) -> Device:
        """Build a Device from `cupy.cuda.runtime.getDeviceProperties(i)`'s dict."""
        return from_cuda_properties(props)


# --- what cudaDeviceProp does not say, per compute capability -----------------------------
# Each row follows cuda_occupancy.h (CUDA 13.0) and the CUDA Programming Guide:
# smem allocation unit, max regs/thread as the header checks it, sub-partitions, max blocks
# per SM, carveout sizes (KB), barrier slots per block slot (CC >= 9), partitioned global
# caching, FP32 lanes per SM (for the model's peak rate).
_VOLTA = (0, 8, 16, 32, 64, 96)
_A100 = (0, 8, 16, 32, 64, 100, 132, 164)
_GA10X = (0, 8, 16, 32, 64, 100)
_HOPPER = (*_A100, 196, 228)
_TURING = (32, 64)


class _CCRow(NamedTuple):
    """What one compute capability adds to cudaDeviceProp."""

    smem_unit: int
    max_regs: int
    sub_partitions: int
    blocks: int
    carveout_kib: tuple[int, ...]
    barrier_factor: int | None
    pgc: bool
    fp32_lanes: int
    architecture: str
    check_sub_partitions: int | None = None
    virtual_resources: int | None = None  # per SM (cudaOccMaxVirtualResourceCountPerSM)
    max_cluster: int | None = None  # non-portable cluster size limit; None: no clusters


CC_TABLE: dict[str, _CCRow] = {
    "3.0": _CCRow(256, 255, 4, 16, (), None, False, 192, "Kepler"),
    "3.2": _CCRow(256, 255, 4, 16, (), None, False, 192, "Kepler"),
    "3.5": _CCRow(256, 255, 4, 16, (), None, False, 192, "Kepler"),
    "3.7": _CCRow(256, 255, 4, 16, (), None, False, 192, "Kepler"),
    "5.0": _CCRow(256, 255, 4, 32, (), None, False, 128, "Maxwell"),
    "5.2": _CCRow(256, 255, 4, 32, (), None, True, 128, "Maxwell"),
    "5.3": _CCRow(256, 255, 4, 32, (), None, True, 128, "Maxwell"),
    "6.0": _CCRow(256, 255, 2, 32, (), None, False, 64, "Pascal", check_sub_partitions=4),
    "6.1": _CCRow(256, 255, 4, 32, (), None, True, 128, "Pascal"),
    "6.2": _CCRow(256, 255, 4, 32, (), None, True, 128, "Pascal"),
    "7.0": _CCRow(256, 256, 4, 32, _VOLTA, None, False, 64, "Volta"),
    "7.2": _CCRow(256, 256, 4, 32, _VOLTA, None, False, 64, "Volta"),
    "7.5": _CCRow(256, 256, 4, 16, _TURING, None, False, 64, "Turing"),
    "8.0": _CCRow(128, 256, 4, 32, _A100, None, False, 64, "Ampere"),
    "8.6": _CCRow(128, 256, 4, 16, _GA10X, None, False, 128, "Ampere"),
    "8.7": _CCRow(128, 256, 4, 16, _A100, None, False, 128, "Ampere"),
    "8.9": _CCRow(128, 256, 4, 24, _GA10X, None, False, 128, "Ada Lovelace"),
    "9.0": _CCRow(128, 256, 4, 32, _HOPPER, 2, False, 128, "Hopper", max_cluster=16),
    "10.0": _CCRow(128, 256, 4, 32, _HOPPER, 2, False, 128, "Blackwell", None, 128, 16),
    "10.1": _CCRow(128, 256, 4, 24, _HOPPER, 1, False, 128, "Blackwell", None, 128, 16),
    "10.3": _CCRow(128, 256, 4, 32, _HOPPER, 2, False, 128, "Blackwell", None, 128, 16),
    "11.0": _CCRow(128, 256, 4, 24, _HOPPER, 1, False, 128, "Blackwell", None, 128, 16),
    "12.0": _CCRow(128, 256, 4, 24, _GA10X, 1, False, 128, "Blackwell", None, 128, 8),
    "12.1": _CCRow(128, 256, 4, 24, _GA10X, 1, False, 128, "Blackwell", None, 128, 8),
}

_PROPS_REQUIRED = (
    "major", "minor", "multiProcessorCount", "maxThreadsPerBlock",
    "maxThreadsPerMultiProcessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize",
    "sharedMemPerBlock", "sharedMemPerMultiprocessor",
)


def cc_row(cc: str) -> _CCRow:
    """The table row of a compute capability, or an error listing the known ones."""
    try:
        return CC_TABLE[cc]
    except KeyError:
        known = ", ".join(CC_TABLE)
        raise UnknownComputeCapabilityError(
            f"unknown compute capability {cc}: this tool knows {known}"
        ) from None


def _prop_int(props: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = props.get(key, default)
    if value is None:
        raise UnknownComputeCapabilityError(f"device properties lack '{key}'")
    return int(value)


def _props_row(props: Mapping[str, Any]) -> tuple[str, _CCRow]:
    """The compute capability the properties name and its row of the CC table."""
    missing = [k for k in _PROPS_REQUIRED if k not in props]
    if missing:
        raise UnknownComputeCapabilityError(
            "device properties lack " + ", ".join(f"'{k}'" for k in missing)
        )
    cc = f"{int(props['major'])}.{int(props['minor'])}"
    try:
        return cc, cc_row(cc)
    except UnknownComputeCapabilityError as exc:
        raise UnknownComputeCapabilityError(f"{exc}; for this GPU, write its profile by hand "
                                            "(see README, 'Device profiles')") from None


def _props_name(props: Mapping[str, Any], cc: str) -> str:
    raw_name = props.get("name", f"GPU (CC {cc})")
    name = raw_name.decode(errors="replace") if isinstance(raw_name, bytes) else str(raw_name)
    return name.rstrip("\x00").strip() or f"GPU (CC {cc})"


def _props_speeds(props: Mapping[str, Any], row: _CCRow, sms: int) -> tuple[float, float, float]:
    """(clock MHz, DRAM GB/s, FP32 GFLOP/s) from the properties."""
    # cudaDeviceProp gives clocks in kHz; CUDA 13 dropped them, CuPy may still report 0.
    clock_mhz = float(props.get("clockRate") or 0) / 1000.0
    mem_khz = float(props.get("memoryClockRate") or 0)
    bus_bits = float(props.get("memoryBusWidth") or 0)
    dram_gb_s = 2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9  # double data rate
    fp32 = 2.0 * row.fp32_lanes * sms * clock_mhz / 1000.0
    return clock_mhz, dram_gb_s, fp32


def _unified_l1(row: _CCRow, cc: str) -> tuple[int | None, dict[str, str]]:
    """The unified L1 + shared memory array (CC >= 7.0), and where the figure comes from."""
    # The largest shared-memory size leaves 32 KB of L1 on CC 7.x and 28 KB from 8.0 (the
    # shipped profiles' figures).
    if not row.carveout_kib:
        return None, {}
    unified = (row.carveout_kib[-1] + (32 if cc.startswith("7.") else 28)) * KIB
    return unified, {"l1_shared_memory_bytes": "occupancy's CC table: the largest shared-memory "
                     "size plus the L1 it leaves (32 KB on CC 7.x, 28 KB from 8.0)"}


def from_cuda_properties(props: Mapping[str, Any]) -> Device:
    """Device from cudaDeviceProp as CuPy returns it; constants it lacks come from CC_TABLE."""
    cc, row = _props_row(props)
    name = _props_name(props, cc)
    sms = _prop_int(props, "multiProcessorCount")
    smem_sm = _prop_int(props, "sharedMemPerMultiprocessor")
    smem_block = _prop_int(props, "sharedMemPerBlock")
    blocks = int(props.get("maxBlocksPerMultiProcessor") or row.blocks)
    clock_mhz, dram_gb_s, fp32 = _props_speeds(props, row, sms)
    measured = "cudaGetDeviceProperties"
    unified, extra = _unified_l1(row, cc)
    return Device(
        name=name,
        compute_capability=cc,
        architecture=row.architecture,
        warp_size=_prop_int(props, "warpSize"),
        max_threads_per_block=_prop_int(props, "maxThreadsPerBlock"),
        max_threads_per_sm=_prop_int(props, "maxThreadsPerMultiProcessor"),
        max_blocks_per_sm=blocks,
        registers_per_sm=_prop_int(props, "regsPerMultiprocessor"),
        registers_per_block=_prop_int(props, "regsPerBlock"),
        max_registers_per_thread=row.max_regs,
        register_allocation="warp",
        register_allocation_unit=256,
        warp_allocation_granularity=1,
        sub_partitions=row.sub_partitions,
        register_check_sub_partitions=row.check_sub_partitions,
        shared_memory_per_sm_bytes=smem_sm,
        shared_memory_per_block_bytes=smem_block,
        # Opt-in above the default per-block limit exists from Volta (CC 7.0) on.
        shared_memory_per_block_optin_bytes=(
            int(props.get("sharedMemPerBlockOptin") or smem_block) if int(props["major"]) >= 7
            else smem_block
        ),
        reserved_shared_memory_per_block_bytes=int(props.get("reservedSharedMemPerBlock") or 0),
        shared_memory_allocation_unit_bytes=row.smem_unit,
        shared_memory_carveout_bytes=tuple(k * KIB for k in row.carveout_kib),
        block_barriers_per_sm=None if row.barrier_factor is None else blocks * row.barrier_factor,
        partitioned_global_caching=row.pgc,
        sm_count=sms,
        boost_clock_mhz=clock_mhz,
        dram_bandwidth_gb_s=round(dram_gb_s, 1),
        fp32_gflops=round(fp32, 1),
        l2_cache_bytes=int(props.get("l2CacheSize") or 0),
        shared_memory_banks=32,
        shared_memory_bank_width_bytes=4,
        virtual_resources_per_sm=row.virtual_resources,
        max_cluster_size=row.max_cluster,
        l1_shared_memory_bytes=unified,
        aliases=(),
        sources={
            "limits": f"{measured} (live GPU); constants it lacks from occupancy's CC {cc} table",
            "sm_count": measured,
            "boost_clock_mhz": f"{measured} clockRate (0 when the runtime no longer reports it)",
            "dram_bandwidth_gb_s": f"{measured}: 2 x memoryClockRate x memoryBusWidth / 8",
            "fp32_gflops": f"2 x {row.fp32_lanes} FP32 lanes/SM x SMs x clock",
            "l2_cache_bytes": measured,
            **extra,
        },
    )
