"""The hand counts of the shipped kernels (kernels/*.cu): what each candidate costs.

The candidates themselves are the points of kernels/<family>.yaml (tune/family.py). For
every candidate: its block shape (from its parameters), the macros it is compiled
with, and per-launch counts the performance model needs: FLOPs, global and shared
memory instructions with their sectors and bank-conflict ways (computed from the
addresses a warp touches, with banks.py), barriers, and global traffic (the seeds'
2N^3 naive loads against 2N^3/TILE tiled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from occupancy.core.banks import BankResult, bank_conflicts, ideal_sectors, sectors
from occupancy.core.errors import OccupancyError

FAMILIES = ("matmul", "transpose")
_ESTIMATED_REGISTERS = {"matmul_naive": 32, "matmul_tiled": 32, "matmul_regblock": 128,
                        "transpose_naive": 26, "transpose_tiled": 30, "transpose_padded": 30,
                        "transpose_vec": 32, "transpose_tall": 40}


@dataclass(frozen=True)
class Candidate:
    """One kernel configuration: which function, which macros, which block."""

    kernel: str  # family: "matmul" / "transpose"
    variant: str  # naive, tiled, regblock, padded
    function: str  # the __global__ in kernels/<family>.cu
    block: tuple[int, int]
    defines: dict[str, int] = field(default_factory=dict)
    tile: int = 0  # the tile edge (0: none)
    coarsening: int = 1  # outputs (matmul) or elements (transpose) per thread

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1]

    @property
    def static_shared_memory(self) -> int:
        """Static shared memory the kernel declares (bytes), exact from its macros."""
        if self.variant == "tiled" and self.kernel == "matmul":
            return 2 * self.tile * self.tile * 4
        if self.variant == "regblock":
            d = self.defines
            return 2 * d["BK"] * (d["BM"] + d["BN"]) * 4
        if self.variant == "vec":
            return self.tile * (self.tile + 1) * 4
        if self.variant == "tall":
            return 128 * (64 + 1) * 4  # a 128 x 64 tile, padded by one float per row
        if self.kernel == "transpose" and self.variant in ("tiled", "padded"):
            return self.tile * (self.tile + (1 if self.variant == "padded" else 0)) * 4
        return 0

    @property
    def estimated_registers(self) -> int:
        """Registers to assume where no compiler can build for the device at all (marked as
        an estimate): about what ptxas 13.0 assigns the kernel for sm_90."""
        return _ESTIMATED_REGISTERS[self.function]

    def grid(self, n: int, resident_blocks: int = 1) -> tuple[int, ...]:
        """The launch's grid for an n x n problem (`resident_blocks`: what the GPU holds at
        once, for the persistent variant)."""
        if self.variant == "regblock":
            return (-(-n // self.defines["BN"]), -(-n // self.defines["BM"]))
        if self.kernel == "matmul":
            return (-(-n // self.block[0]), -(-n // self.block[1]))
        if self.variant == "tall":  # 128 rows x 64 columns of the input per block
            return (-(-n // 64), -(-n // 128))
        tiles = -(-n // self.tile)
        if self.defines.get("PERSIST"):  # one resident wave of blocks loops over the tiles
            return (min(tiles * tiles, max(resident_blocks, 1)),)
        return (tiles, tiles)  # SWAP reorders the tiles inside the kernel

    @property
    def arrays(self) -> int:
        """Pointer arguments the kernel takes first: (A, B, C) or (in, out)."""
        return 3 if self.kernel == "matmul" else 2

    def sizes(self, n: int) -> tuple[int, ...]:
        """The int arguments after the arrays: (n,) for matmul, (rows, cols) for transpose."""
        return (n,) if self.kernel == "matmul" else (n, n)

    @property
    def label(self) -> str:
        if self.variant == "regblock":
            d = self.defines
            return f"regblock{d['BM']} {d['TM']}x{d['TN']}" + (f" k{d['BK']}" if d["BK"] != 8 else "")
        if self.kernel == "transpose":
            tags = "".join(f" {t.lower()}" for t in ("SWAP", "PERSIST") if self.defines.get(t))
            return f"{self.variant} {self.block[0]}x{self.block[1]}{tags}"
        return "naive" if self.variant == "naive" else f"{self.variant} {self.tile}"


@dataclass(frozen=True, kw_only=True)
class Counts:
    """Per launch, warp-level. Wavefronts: passes through the load/store unit."""

    flops: float
    fma_instructions: float
    global_load_elements: float  # what the threads ask for (the seeds' count)
    global_loads: float  # warp instructions
    global_load_sectors: float
    global_stores: float
    global_store_sectors: float
    compulsory_bytes: float  # read each input once, write each output once
    grid_blocks: int
    iterations_per_warp: float  # main-loop trips per warp (latency chain length)
    bank_conflict_ways: int  # worst shared-memory access of the candidate
    load_sectors_per_request: float
    store_sectors_per_request: float
    ideal_sectors_per_request: float
    panel_bytes_per_block: float  # matmul: A and B panels one block streams (L2 reuse)
    bytes_in_flight_per_warp: float  # global loads a warp issues before it needs them
    # shared memory and barriers: none in the naive kernels
    shared_loads: float = 0.0
    shared_load_wavefronts: float = 0.0
    shared_stores: float = 0.0
    shared_store_wavefronts: float = 0.0
    barriers: float = 0.0  # warp-level barrier instructions
    other_instructions: float = 0.0  # warp instructions besides FFMA (loads, stores, sync, loop)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _warp_threads(block: tuple[int, int]) -> list[tuple[int, int]]:
    """(tx, ty) of the first warp of a block."""
    bx = block[0]
    return [(t % bx, t // bx) for t in range(min(32, block[0] * block[1]))]


def counts(c: Candidate, n: int, banks: int = 32) -> Counts:
    """Per-launch counts; `banks`: the device's shared-memory banks (16 on CC 1.x, where a
    half-warp is served at a time; 32 since Fermi), as its profile says."""
    if n <= 0:
        raise OccupancyError(f"the matrix size must be a positive integer, got {n}")
    conflicts = partial(bank_conflicts, banks=banks)
    return _matmul(c, n, conflicts) if c.kernel == "matmul" else _transpose(c, n, conflicts)


def _matmul(c: Candidate, n: int, bank_conflicts: Callable[..., BankResult]) -> Counts:
    w = _warp_threads(c.block)
    flops = 2.0 * n ** 3
    fma = n ** 3 / 32
    if c.variant == "naive":
        # Per k: A[row][k] (a broadcast per row) and B[k][col] (consecutive columns).
        a_sec = sectors([(ty * n) * 4 for tx, ty in w])
        b_sec = sectors([tx * 4 for tx, ty in w])
        loads = 2 * fma
        grid = _cdiv(n, c.block[0]) * _cdiv(n, c.block[1])
        return Counts(
            flops=flops,
            fma_instructions=fma,
            global_load_elements=2.0 * n ** 3,
            global_loads=loads,
            global_load_sectors=fma * (a_sec + b_sec),
            global_stores=n * n / 32,
            global_store_sectors=n * n / 32 * ideal_sectors(32, 4),
            compulsory_bytes=12.0 * n * n,
            grid_blocks=grid,
            iterations_per_warp=n,
            bank_conflict_ways=1,
            load_sectors_per_request=(a_sec + b_sec) / 2,
            store_sectors_per_request=ideal_sectors(32, 4),
            ideal_sectors_per_request=ideal_sectors(32, 4),
            panel_bytes_per_block=float(n * 4 * (c.block[0] + c.block[1])),
            bytes_in_flight_per_warp=256.0,
        )
    if c.variant == "tiled":
        t = c.tile
        tiles = _cdiv(n, t)
        warps_total = _cdiv(n, t) ** 2 * _cdiv(t * t, 32)
        # Inner loop: As[ty][k] is the same word for a row of threads (a broadcast; ptxas
        # reads 4 k at a time with one LDS.128), Bs[k][tx] consecutive words.
        a = bank_conflicts([(ty * t) * 4 for tx, ty in w]).ways
        b = bank_conflicts([tx * 4 for tx, ty in w]).ways
        st = bank_conflicts([(ty * t + tx) * 4 for tx, ty in w]).ways
        lds = fma * (1 + 0.25)
        lds_wf = fma * (b + 0.25 * a)
        ldg = float(warps_total * tiles * 2)
        row_sec = sectors([(ty * n + tx) * 4 for tx, ty in w])
        return Counts(
            flops=flops,
            fma_instructions=fma,
            global_load_elements=2.0 * n ** 3 / t,
            global_loads=ldg,
            global_load_sectors=ldg * row_sec,
            global_stores=n * n / 32,
            global_store_sectors=n * n / 32 * row_sec,
            shared_loads=lds,
            shared_load_wavefronts=lds_wf,
            shared_stores=ldg,
            shared_store_wavefronts=ldg * st,
            barriers=warps_total * tiles * 2,
            compulsory_bytes=12.0 * n * n,
            grid_blocks=tiles * tiles,
            iterations_per_warp=tiles,
            bank_conflict_ways=max(a, b, st),
            load_sectors_per_request=row_sec,
            store_sectors_per_request=row_sec,
            ideal_sectors_per_request=ideal_sectors(len(w), 4),
            panel_bytes_per_block=float(2 * t * n * 4),
            bytes_in_flight_per_warp=256.0,
        )
    d = c.defines
    bm, bn, bk, tm, tn = d["BM"], d["BN"], d["BK"], d["TM"], d["TN"]
    blocks = _cdiv(n, bm) * _cdiv(n, bn)
    warps = c.threads // 32
    ktiles = _cdiv(n, bk)
    # float4 global loads: A tile BM x BK and B tile BK x BN per k step, per block.
    ldg = blocks * ktiles * (bm * bk + bk * bn) / 4 / 32
    ldg_sec = ldg * 16  # 32 threads x 16 B = 512 B = 16 sectors, fully used
    # Shared: per k, each thread reads TM/4 + TN/4 float4s (As column, Bs row).
    lds = blocks * warps * ktiles * bk * (tm // 4 + tn // 4)
    tid = list(range(32))
    col_groups = bn // tn
    b_addr = [(((t % col_groups) * 4) * 4) for t in tid]
    a_addr = [(((t // col_groups) * 4) * 4) for t in tid]
    bw = bank_conflicts(b_addr, 16).wavefronts / 4
    aw = bank_conflicts(a_addr, 16).wavefronts / 4
    lds_wf = blocks * warps * ktiles * bk * ((tm // 4) * aw * 4 + (tn // 4) * bw * 4) / 4
    # A is stored transposed: 4 scalar stores per float4, threads 2 apart in a column.
    sts_a = blocks * ktiles * bm * bk / 32
    a_store = bank_conflicts([((t % (bk // 4)) * 4 * bm + t // (bk // 4)) * 4 for t in tid]).ways
    sts_b = blocks * ktiles * bk * bn / 4 / 32
    # Per k-tile and warp, besides the BK x TM x TN FFMAs: the LDS.128s, the float4 loads,
    # their stores to shared memory, the barrier and about a dozen loop/address instructions.
    a_loads, b_loads = bm * bk // 4 // c.threads, bk * bn // 4 // c.threads
    other = blocks * warps * ktiles * (bk * (tm // 4 + tn // 4) + 5 * a_loads + 2 * b_loads + 1 + 12)
    return Counts(
        flops=flops,
        fma_instructions=fma,
        global_load_elements=n ** 3 * (1 / bm + 1 / bn),
        global_loads=ldg,
        global_load_sectors=ldg_sec,
        global_stores=n * n / 32 / 4,
        global_store_sectors=n * n / 32 / 4 * 16,
        shared_loads=lds,
        shared_load_wavefronts=lds_wf,
        shared_stores=sts_a + sts_b,
        shared_store_wavefronts=sts_a * a_store + sts_b * 4,
        barriers=blocks * warps * ktiles,
        compulsory_bytes=12.0 * n * n,
        grid_blocks=blocks,
        iterations_per_warp=ktiles,
        bank_conflict_ways=max(a_store, int(bw), int(aw), 1),
        load_sectors_per_request=16,
        store_sectors_per_request=16,
        ideal_sectors_per_request=16,
        panel_bytes_per_block=float(n * 4 * (bm + bn)),
        bytes_in_flight_per_warp=(bm * bk + bk * bn) * 4.0 / warps,
        other_instructions=other,
    )


def _transpose(c: Candidate, n: int, bank_conflicts: Callable[..., BankResult]) -> Counts:
    t = c.tile
    rows = c.block[1]
    tiles = _cdiv(n, t) ** 2
    warps = c.threads // 32
    per_thread = t // rows
    w = _warp_threads(c.block)
    instr = tiles * warps * per_thread  # each of loads and stores
    read_sec = sectors([(ty * n + tx) * 4 for tx, ty in w])
    if c.variant == "naive":
        write_sec = sectors([(tx * n + ty) * 4 for tx, ty in w])
        return Counts(
            flops=0,
            fma_instructions=0,
            global_load_elements=n * n,
            global_loads=instr,
            global_load_sectors=instr * read_sec,
            global_stores=instr,
            global_store_sectors=instr * write_sec,
            compulsory_bytes=8.0 * n * n,
            grid_blocks=tiles,
            iterations_per_warp=per_thread,
            bank_conflict_ways=1,
            load_sectors_per_request=read_sec,
            store_sectors_per_request=write_sec,
            ideal_sectors_per_request=ideal_sectors(32, 4),
            panel_bytes_per_block=0,
            bytes_in_flight_per_warp=128.0 * per_thread,
        )
    if c.variant == "tall":
        tiles_tall = _cdiv(n, 128) * _cdiv(n, 64)
        vinstr = tiles_tall * 128 * 64 / 4 / 32  # float4 warp loads (and as many stores)
        smem_instr = tiles_tall * 128 * 64 / 32
        return Counts(
            flops=0,
            fma_instructions=0,
            global_load_elements=n * n,
            global_loads=vinstr,
            global_load_sectors=vinstr * 16,
            global_stores=vinstr,
            global_store_sectors=vinstr * 16,
            shared_loads=smem_instr,
            shared_load_wavefronts=smem_instr,
            shared_stores=smem_instr,
            shared_store_wavefronts=smem_instr * 2,
            barriers=tiles_tall * warps,
            compulsory_bytes=8.0 * n * n,
            grid_blocks=tiles_tall,
            iterations_per_warp=8,
            bank_conflict_ways=2,
            load_sectors_per_request=16,
            store_sectors_per_request=16,
            ideal_sectors_per_request=16,
            panel_bytes_per_block=0,
            bytes_in_flight_per_warp=8 * 512.0,
        )
    if c.variant == "vec":
        # float4 rows in and out (16 sectors per warp request), scalar smem with pitch 65.
        vec_instr = tiles * t * t / 4 / 32  # each of loads and stores
        st = bank_conflicts([((ty * 65) + 4 * tx) * 4 for tx, ty in w]).ways
        ld = bank_conflicts([((4 * tx) * 65 + ty) * 4 for tx, ty in w]).ways
        smem_instr = tiles * t * t / 32
        per_thread = t // rows  # float4 per thread, each way
        return Counts(
            flops=0,
            fma_instructions=0,
            global_load_elements=n * n,
            global_loads=vec_instr,
            global_load_sectors=vec_instr * 16,
            global_stores=vec_instr,
            global_store_sectors=vec_instr * 16,
            shared_loads=smem_instr,
            shared_load_wavefronts=smem_instr * ld,
            shared_stores=smem_instr,
            shared_store_wavefronts=smem_instr * st,
            barriers=tiles * warps,
            compulsory_bytes=8.0 * n * n,
            grid_blocks=tiles,
            iterations_per_warp=per_thread,
            bank_conflict_ways=max(st, ld),
            load_sectors_per_request=16,
            store_sectors_per_request=16,
            ideal_sectors_per_request=16,
            panel_bytes_per_block=0,
            bytes_in_flight_per_warp=per_thread * 512.0,
        )
    pitch = t + (1 if c.variant == "padded" else 0)
    store_ways = bank_conflicts([(ty * pitch + tx) * 4 for tx, ty in w]).ways
    load_ways = bank_conflicts([(tx * pitch + ty) * 4 for tx, ty in w]).ways
    return Counts(
        flops=0,
        fma_instructions=0,
        global_load_elements=n * n,
        global_loads=instr,
        global_load_sectors=instr * read_sec,
        global_stores=instr,
        global_store_sectors=instr * read_sec,
        shared_loads=instr,
        shared_load_wavefronts=instr * load_ways,
        shared_stores=instr,
        shared_store_wavefronts=instr * store_ways,
        barriers=tiles * warps,
        compulsory_bytes=8.0 * n * n,
        grid_blocks=tiles,
        iterations_per_warp=per_thread,
        bank_conflict_ways=max(load_ways, store_ways),
        load_sectors_per_request=read_sec,
        store_sectors_per_request=read_sec,
        ideal_sectors_per_request=ideal_sectors(32, 4),
        panel_bytes_per_block=0,
        bytes_in_flight_per_warp=128.0 * per_thread,
    )
