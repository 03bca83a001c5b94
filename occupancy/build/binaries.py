"""Pure readers of compiled CUDA: cubin ELF attributes, PTX entry directives, fatbin sniffing.

A cubin keeps what the driver reads at launch in `.nv.info` sections (EIATTR records):
registers, stack frame, barriers and the launch bound (`__launch_bounds__` becomes
EIATTR_MAX_THREADS). Static shared memory is the size of `.nv.shared.<kernel>`; on sm_90
and newer that size already includes the 1 KB the driver reserves per block.
Standard library only; every offset read from a file is bounds-checked (the file may be
hostile), and a malformed file is an OccupancyError, never a crash.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from occupancy.build.sass_pipes import PIPE_KEYS, pipe_key
from occupancy.core.errors import OccupancyError

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = struct.pack("<I", 0xBA55ED50)

# EIATTR codes, as cuobjdump -elf names them (checked against nvcc 13 cubins).
EIATTR_MAX_THREADS = 0x05
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_REQNTID = 0x10
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C
EIATTR_CTA_PER_CLUSTER = 0x3D  # __cluster_dims__(x, y, z), sm_90+
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4

_SHT_SYMTAB, _SHT_NOBITS = 2, 8
_ET_REL = 1
_STT_OBJECT, _STT_FUNC, _STO_CUDA_ENTRY = 1, 2, 0x10


@dataclass(frozen=True)
class CubinKernel:
    """One kernel's attributes as the cubin records them."""

    name: str  # mangled
    registers: int
    stack_frame_bytes: int
    shared_bytes: int  # .nv.shared.<name> size as stored (sm_90+: includes the reserved 1 KB)
    barriers: int
    max_threads: int | None  # __launch_bounds__ max threads (x*y*z), None if unbounded
    cluster_dims: tuple[int, int, int] | None = None  # __cluster_dims__, None if not fixed


@dataclass(frozen=True)
class Cubin:
    arch: str  # "sm_80"
    kernels: dict[str, CubinKernel]
    # ELF e_type ET_REL: compiled with -rdc=true / -dc and not yet device-linked. Static
    # shared memory (and, across calls, registers and stack) are only final after nvlink.
    relocatable: bool = False
    objects: dict[str, int] = field(default_factory=dict)  # data symbols' sizes: __constant__...


def _u(fmt: str, data: bytes, off: int) -> tuple[int, ...]:
    if off < 0 or off + struct.calcsize(fmt) > len(data):
        raise OccupancyError("truncated ELF")
    return struct.unpack_from(fmt, data, off)


def cubin_arch(data: bytes) -> str:
    """sm_XX from a CUDA ELF header's e_flags (layout differs before and after ABI 8)."""
    flags = _u("<I", data, 0x30)[0]
    abi = data[8] if len(data) > 8 else 0
    sm = (flags >> 8) & 0xFF if abi >= 8 else flags & 0xFF
    if not 10 <= sm <= 255:
        raise OccupancyError(f"unrecognised CUDA ELF (e_flags {flags:#x})")
    return f"sm_{sm}"


def _records(blob: bytes) -> list[tuple[int, bytes]]:
    """(attribute, value bytes) of an .nv.info section."""
    out, i = [], 0
    while i + 4 <= len(blob):
        fmt, attr = blob[i], blob[i + 1]
        if fmt == EIFMT_SVAL:
            size = struct.unpack_from("<H", blob, i + 2)[0]
            out.append((attr, blob[i + 4:i + 4 + size]))
            i += 4 + size
        elif fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
            out.append((attr, blob[i + 2:i + 4]))
            i += 4
        else:
            break  # unknown format: stop rather than misread
    return out


def parse_cubin(data: bytes) -> Cubin:
    """Every kernel of a cubin (ELF64, little-endian) with its resources."""
    if data[:4] != ELF_MAGIC or len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise OccupancyError("not a 64-bit little-endian ELF (a cubin)")
    arch = cubin_arch(data)
    shoff = _u("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = _u("<HHH", data, 0x3A)
    if shentsize < 64 or shnum > 65535 or shstrndx >= max(shnum, 1):
        raise OccupancyError("malformed ELF section table")
    sections = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, info, _align, entsize = _u(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((name, typ, off, size, link, info, entsize))
    str_off, str_size = sections[shstrndx][2], sections[shstrndx][3]

    def section_name(off: int) -> str:
        start = str_off + off
        end = data.find(b"\0", start, str_off + str_size)
        if start >= len(data) or end < 0:
            raise OccupancyError("malformed ELF section names")
        return data[start:end].decode("utf-8", errors="replace")

    def body(sec: tuple[int, ...]) -> bytes:
        _, typ, off, size = sec[0], sec[1], sec[2], sec[3]
        if typ == _SHT_NOBITS:
            return b""
        if off + size > len(data):
            raise OccupancyError("truncated ELF section")
        return data[off:off + size]

    named = [(section_name(s[0]), s) for s in sections]
    symbols, entries, objects = _symbols(named, sections, body)
    regs: dict[str, int] = {}
    frames: dict[str, int] = {}
    per_fn: dict[str, list[tuple[int, bytes]]] = {}
    shared: dict[str, int] = {}
    for sec_name, sec in named:
        if sec_name == ".nv.info":
            for attr, val in _records(body(sec)):
                if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(val) >= 8:
                    sym, value = struct.unpack_from("<II", val)
                    fn = symbols.get(sym)
                    if fn is not None:
                        (regs if attr == EIATTR_REGCOUNT else frames)[fn] = value
        elif sec_name.startswith(".nv.info."):
            per_fn[sec_name[len(".nv.info."):]] = _records(body(sec))
        elif sec_name.startswith(".nv.shared.") and not sec_name.startswith(".nv.shared.reserved"):
            shared[sec_name[len(".nv.shared."):]] = sec[3]
    kernels: dict[str, CubinKernel] = {}
    for fn, records in per_fn.items():
        barriers, max_threads = 0, None
        cluster: tuple[int, int, int] | None = None
        for attr, val in records:
            if attr == EIATTR_CTA_PER_CLUSTER and len(val) >= 12:
                cx, cy, cz = struct.unpack_from("<III", val)
                cluster = (cx, cy, cz)
            if attr == EIATTR_NUM_BARRIERS and val:
                barriers = val[0]
            elif attr in (EIATTR_MAX_THREADS, EIATTR_REQNTID) and len(val) >= 12:
                x, y, z = struct.unpack_from("<III", val)
                threads = max(x, 1) * max(y, 1) * max(z, 1)
                max_threads = threads if max_threads is None else min(max_threads, threads)
        if fn not in regs or (entries and fn not in entries):
            continue  # a device function's info (a linked image holds them), not a kernel's
        kernels[fn] = CubinKernel(fn, regs[fn], frames.get(fn, 0), shared.get(fn, 0), barriers,
                                  max_threads, cluster)
    return Cubin(arch, kernels, is_relocatable(data), objects)


def _symbols(named: Sequence[tuple[str, tuple[int, ...]]], sections: Sequence[tuple[int, ...]],
             body: Callable[[tuple[int, ...]], bytes]
             ) -> tuple[dict[int, str], set[str], dict[str, int]]:
    """Symbol index -> name (for the per-function records in the global .nv.info), the
    FUNC symbols marked STO_CUDA_ENTRY (kernels, not device functions), and the OBJECT
    symbols' sizes (a __constant__ or __device__ variable)."""
    symbols: dict[int, str] = {}
    entries: set[str] = set()
    objects: dict[str, int] = {}
    for _, sec in named:
        if sec[1] == _SHT_SYMTAB and sec[6] >= 24:
            strtab = sections[sec[4]] if sec[4] < len(sections) else None
            if strtab is None:
                continue
            sym_str = body(strtab)
            blob = body(sec)
            for idx in range(len(blob) // 24):
                st_name, st_info, st_other, _, _, st_size = struct.unpack_from(
                    "<IBBHQQ", blob, idx * 24)
                end = sym_str.find(b"\0", st_name)
                if 0 <= st_name < len(sym_str) and end >= 0:
                    symbols[idx] = sym_str[st_name:end].decode("utf-8", errors="replace")
                    if st_info & 0xF == _STT_FUNC and st_other & _STO_CUDA_ENTRY:
                        entries.add(symbols[idx])
                    elif st_info & 0xF == _STT_OBJECT:
                        objects[symbols[idx]] = st_size
    return symbols, entries, objects


def is_relocatable(data: bytes) -> bool:
    """An ELF whose e_type is ET_REL: a relocatable (unlinked) cubin or object."""
    return data[:4] == ELF_MAGIC and len(data) >= 18 and _u("<H", data, 0x10)[0] == _ET_REL


def static_shared_from_cubin(k: CubinKernel, arch: str, reserved: int,
                             relocatable: bool = False) -> int:
    """Static smem the kernel declares: linked sm_90+ cubins include the driver's reserved
    bytes; a relocatable one does not hold them yet (nvlink adds them), so nothing is
    subtracted there."""
    major = int(arch[3:]) // 10
    if relocatable or major < 9 or not k.shared_bytes:
        return k.shared_bytes
    return max(k.shared_bytes - reserved, 0)


# --- PTX -------------------------------------------------------------------------------------

_PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(")
_PTX_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+)", re.MULTILINE)


@dataclass(frozen=True)
class PtxEntry:
    name: str
    max_threads: int | None  # .maxntid / .reqntid
    min_blocks: int | None  # .minnctapersm


MAX_PTX_BYTES = 16 << 20
MAX_PTX_ENTRIES = 1_000  # ptxas takes ~3 s for 1,000 entries here, minutes for 20,000
PTX_ENTRIES_ENV = "OCCUPANCY_MAX_PTX_ENTRIES"


def check_ptx_size(ptx: str) -> None:
    """Refuse PTX that would keep ptxas busy for minutes (before it runs); the entry limit
    is raised with $OCCUPANCY_MAX_PTX_ENTRIES."""
    import os

    raw = os.environ.get(PTX_ENTRIES_ENV, "")
    limit = int(raw) if raw.isdigit() and len(raw) < 10 else MAX_PTX_ENTRIES
    if len(ptx) > MAX_PTX_BYTES:
        raise OccupancyError(f"its PTX is {len(ptx):,} characters, over {MAX_PTX_BYTES >> 20} MiB")
    entries = len(_PTX_ENTRY.findall(ptx))
    if entries > limit:
        raise OccupancyError(f"its PTX has {entries:,} .entry kernels, over {limit:,} (set "
                             f"{PTX_ENTRIES_ENV} to raise the limit)")


def ptx_target(ptx: str) -> str | None:
    m = _PTX_TARGET.search(ptx)
    return m.group(1) if m else None


def ptx_entries(ptx: str) -> dict[str, PtxEntry]:
    """Every .entry with its performance directives, scanned linearly (no backtracking)."""
    out: dict[str, PtxEntry] = {}
    for m in _PTX_ENTRY.finditer(ptx):
        # Directives sit between the parameter list's ')' and the body's '{'.
        close = ptx.find(")", m.end())
        brace = ptx.find("{", close) if close >= 0 else -1
        head = ptx[close + 1:brace] if brace >= 0 else ""
        threads = None
        for d in re.finditer(r"\.(?:maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?",
                             head):
            t = int(d.group(1)) * int(d.group(2) or 1) * int(d.group(3) or 1)
            threads = t if threads is None else min(threads, t)
        mb = re.search(r"\.minnctapersm\s+(\d+)", head)
        out[m.group(1)] = PtxEntry(m.group(1), threads, int(mb.group(1)) if mb else None)
    return out


# What fatbins may declare unpacked: one entry (a cubin or PTX), and all of a file's entries.
# A 200 KB compressed fatbin can declare gigabytes; cuobjdump would try to allocate them.
MAX_ENTRY_BYTES = 256 << 20
MAX_UNPACKED_BYTES = 1 << 30
_FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
_ENTRY_HEADER = 0x40  # kind, version, header size, padded payload ... uncompressed size at 0x38


def fatbin_declared_sizes(data: bytes) -> list[int]:
    """The unpacked size each fatbin entry declares (payload, or uncompressed size when
    compressed), for every fatbin in the data (a host binary embeds several)."""
    sizes: list[int] = []
    start = data.find(FATBIN_MAGIC)
    while start >= 0 and len(sizes) < 100_000:
        if start + _FATBIN_HEADER.size <= len(data):
            _, version, hsize, fat_size = _FATBIN_HEADER.unpack_from(data, start)
            if version == 1 and hsize == _FATBIN_HEADER.size:
                off, end = start + hsize, min(start + hsize + fat_size, len(data))
                while off + _ENTRY_HEADER <= end:
                    ehsize, padded = struct.unpack_from("<IQ", data, off + 4)
                    unpacked = struct.unpack_from("<Q", data, off + 0x38)[0]
                    sizes.append(max(padded, unpacked if ehsize >= _ENTRY_HEADER else 0))
                    if ehsize < 16 or len(sizes) >= 100_000:
                        break
                    off += ehsize + padded
        start = data.find(FATBIN_MAGIC, start + 4)
    return sizes


def check_fatbin_sizes(data: bytes) -> None:
    """Refuse a fatbin whose entries declare more than a tool may unpack (before any runs)."""
    sizes = fatbin_declared_sizes(data)
    big = max(sizes, default=0)
    if big > MAX_ENTRY_BYTES:
        raise OccupancyError(f"a fatbin entry declares {big:,} bytes unpacked, over the "
                             f"{MAX_ENTRY_BYTES >> 20} MiB an entry may hold (a decompression bomb?)")
    if sum(sizes) > MAX_UNPACKED_BYTES:
        raise OccupancyError(f"its fatbin entries declare {sum(sizes):,} bytes unpacked, over "
                             f"the {MAX_UNPACKED_BYTES >> 30} GiB a file may hold")


def kind_of(data: bytes) -> str:
    """'cubin', 'fatbin', 'host' (an executable or library that may embed fatbins), or 'ptx'."""
    if data[:4] == ELF_MAGIC:
        if len(data) > 7 and data[7] in (0x33, 0x41):  # CUDA's ELF OS/ABI bytes
            return "cubin"
        return "host"
    if data[:4] == FATBIN_MAGIC:
        return "fatbin"
    head = data[:4096].decode("utf-8", errors="replace")
    if ".version" in head and ".target" in head:
        return "ptx"
    return "unknown"


# --- SASS: the instruction mix of a kernel's hottest loop ------------------------------------

_SASS_FUNC = re.compile(r"^\.text\.(\S+):\s*$")
_SASS_LABEL = re.compile(r"^(\.L_x_\d+):\s*$")
_SASS_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?"
                        r"(?:.*?`\((\.L_x_\d+)\))?")
COUNTED_KEYS = ("total", "ffma", "fp32", "lds_wavefronts", "sts_wavefronts", "ldg", "stg",
                "bar", "div_ffma", "uldc", "warp_wait", *PIPE_KEYS)
# `inner_*`: the part of the body that lies in loops nested inside it with FFMAs (a k loop
# ptxas kept rolled inside the tile loop): those instructions run once per iteration of
# the inner loop, not of the body (model.unit_mix scales them)
# `pass_loops`: the kernel's other loops that load one element at a time although unrolled
# (2+ loads an iteration, a wait for each: a store or a dependence between them), outside the
# hottest loop and not around it: a row kernel's other passes (llm.c's online softmax: its
# first pass issues 4 loads together, its second loads, computes and stores each element
# before the next load, its pointers not __restrict__). Loops that batch their loads are
# left to the hottest loop's count (llm.c's layernorm 3: three passes, each one wait an
# iteration), as is a rolled loop of one load, the hottest loop's remainder.
# `wide_lds`, `wide_sts`: the function's 64- and 128-bit shared loads and stores, anywhere
# in it. ptxas merges scalar shared accesses at [r], [r+4], ... into one only where it
# proves r aligned; where the SASS has none, it merged none, and ptxsim counts each scalar
# access as issued (tune/traffic.py). flash-attention-minimal's Qi[tx * d + x] with a
# runtime d: every lane on one bank, 32 wavefronts a scalar LDS, where a merged LDS.128
# would take 32 for four.
MIX_KEYS = (*COUNTED_KEYS, "loop", "ldg_batches", "ldg_cover",
            *(f"inner_{k}" for k in COUNTED_KEYS), "pass_loops", "wide_lds", "wide_sts")
# An IEEE-rounded float division (`a / b` without --use_fast_math) is expanded by ptxas into
# MUFU.RCP, an FCHK that sends special operands to a slow-path subroutine, and five FFMAs
# (two Newton steps on the reciprocal, the quotient, its residual and the corrected
# quotient), on every architecture nvcc 13 builds (sm_75, 80, 86, 89, 90, 100, 120 checked,
# 2026-12-01). Those FFMAs are instructions the loop issues, not the multiply-adds of its
# work: `div_ffma` counts them apart (5 per FCHK), so the loop's trip count and the choice
# of the hottest loop are not read from them. Only this form: `1.0f / x` (MUFU.RCP and two
# FFMAs, no FCHK), `sqrtf` (MUFU.RSQ and two) and double divisions still count as work.
DIVISION_FFMAS = 5
# `uldc`: reads of a __constant__ table through a uniform-register index (`ULDC c[0x3][UR4
# + 0x8]`: a loop walking the table, every lane at the same entry). On the H200 such a loop
# ran up to 9x slower than its issue count once 8 or more blocks shared an SM and the table
# was over 256 B (bench/results/h200-uldc-walk); the model does not price that, and `tile`
# says where it may happen (tune/ranked.findings). sm_75-sm_90's form: nvcc 13 reads the
# table with LDCU on sm_100 and sm_120, which is not measured and not counted.
_ULDC_INDEXED = re.compile(r"c\[0x3\]\[\s*UR")
# `warp_wait`: the clocks one warp alone waits per pass of the loop for the results it
# reads, issuing one instruction a clock: a shared load's registers SHARED_LOAD_CLOCKS after
# the load (the latency as a warp sees it, issue to first use: 50 clocks on the H200, set on
# bench/results/h200-lsu-overlap's rolled 8x8 loop at one warp a scheduler; there the lone
# warp alone, bench/lsu/lone_warp.py, put its 22 other issue-bound rows within -15% to +6%;
# the whole model on 228 rows: bench/lsu/model_check.py), an arithmetic result
# ALU_RESULT_CLOCKS after its instruction (FFMA, IMAD, IADD3...: 4 on Volta to Hopper). A
# rolled k loop waits a whole shared-load latency a step; an unrolled one that issues the
# next step's loads among the current step's FFMAs waits less; a chain of dependent FFMAs
# waits 3 clocks a link. Global, local and constant loads are ready at once here: their
# latency is the tiled stall's and the memory side's. Units slower than the ALU (MUFU,
# SHFL, S2R) are taken at 4 clocks too, and a 64-bit result's second register and uniform
# registers are not followed: the wait is a lower bound. The model shares it among a
# scheduler's warps.
SHARED_LOAD_CLOCKS = 50
ALU_RESULT_CLOCKS = 4
_MEMORY_LOADS = ("LD", "ATOM", "RED", "TEX", "TLD", "SU")
_REG = re.compile(r"\bR(\d+)\b")


def _width(suffix: str | None) -> int:
    """Wavefronts of one warp-wide shared access by its width (.64: 2, .128: 4)."""
    if suffix and ".128" in suffix:
        return 4
    if suffix and ".64" in suffix:
        return 2
    return 1


def sass_loop_mix(sass: str) -> dict[str, tuple[tuple[str, int], ...]]:
    """Per function of `nvdisasm` output: the static instruction mix of its hottest loop
    (the backward-branch body with the most FFMAs, else the most instructions), or of the
    whole function when it has no loop. Static counts of an unrolled loop body stand in for
    the dynamic mix: the loop is where the time goes. The counts of the loops nested in
    that body with FFMAs are given apart (`inner_*`): they run many times per iteration."""
    funcs: dict[str, list[tuple[int, str, str | None, str | None, str]]] = {}
    labels: dict[str, dict[str, int]] = {}
    current: str | None = None
    pending: list[str] = []
    exits: dict[str, list[int]] = {}  # unconditional EXITs per function
    for line in sass.splitlines():
        m = _SASS_FUNC.match(line.strip())
        if m:
            current = m.group(1)
            funcs[current], labels[current], pending = [], {}, []
            continue
        if current is None:
            continue
        m = _SASS_LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _SASS_INSN.match(line)
        if m:
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[current][lab] = addr
            pending = []
            op = m.group(3)
            if op == "EXIT" and not m.group(2):
                exits.setdefault(current, []).append(addr)
            funcs[current].append((addr, op, m.group(4), m.group(5),
                                   line[m.end(4) if m.group(4) else m.end(3):]))
    out = {}
    for fn, insns in funcs.items():
        loops = []
        for addr, op, _, target, _ in insns:
            if op == "BRA" and target in labels[fn] and labels[fn][target] < addr:
                start = labels[fn][target]
                # code that cannot fall through to its branch is no loop: a warp-divergent
                # fallback placed after the kernel's unconditional EXIT jumps back into the
                # main path (reduce6's shuffles under BRA.DIV), and would pass for the
                # longest loop of a kernel without FFMAs
                if any(start <= e < addr for e in exits.get(fn, ())):
                    continue
                loops.append([i for i in insns if start <= i[0] <= addr])
        # the most FFMAs; without any, the most global loads and stores (a kernel's streaming
        # loop over its data, not the longer unrolled loop of a block's final reduction over
        # shared memory that only thread 0 runs: llm.c's softmax kernel 4); then the longest
        body = max(loops, key=lambda b: (sum(i[1] == "FFMA" for i in b)
                                         - DIVISION_FFMAS * sum(i[1] == "FCHK" for i in b),
                                         sum(i[1] in ("LDG", "STG", "LD", "ST") for i in b),
                                         len(b))) if loops else \
            [i for i in insns if i[1] not in ("NOP", "BRA", "EXIT")]
        mix = dict.fromkeys(MIX_KEYS, 0)
        mix["loop"] = int(bool(loops))
        mix["ldg_batches"], mix["ldg_cover"] = _load_batches(body)
        mix["pass_loops"] = sum(_load_batches(other)[0] >= _loads(other)
                                for other in _other_passes(body, loops))
        mix.update(_counts(body))
        mix["warp_wait"] = _lone_warp_wait(body, cyclic=bool(loops))
        for key, wide in (("wide_lds", "LDS"), ("wide_sts", "STS")):
            mix[key] = sum(op == wide and _width(suffix) > 1 for _, op, suffix, _, _ in insns)
        nested = {i[0] for b in _nested_ffma_loops(body, loops) for i in b}
        inner = [i for i in body if i[0] in nested]
        mix.update({f"inner_{k}": v for k, v in _counts(inner).items()})
        mix["inner_warp_wait"] = _lone_warp_wait(inner, cyclic=True)
        out[fn] = tuple(mix.items())
    return out


_Insn = tuple[int, str, str | None, str | None, str]


def _counts(body: Sequence[_Insn]) -> dict[str, int]:
    """The COUNTED_KEYS of these instructions, each counted once."""
    mix = dict.fromkeys(COUNTED_KEYS, 0)
    for _, op, suffix, _, rest in body:
        mix["total"] += 1
        if op == "FFMA":
            mix["ffma"] += 1
            mix["fp32"] += 1
        elif op in ("FADD", "FMUL"):
            mix["fp32"] += 1
        elif op in ("LDS", "LDSM"):
            mix["lds_wavefronts"] += _width(suffix)
        elif op == "STS":
            mix["sts_wavefronts"] += _width(suffix)
        elif op in ("LDG", "LD"):
            mix["ldg"] += 1
        elif op in ("STG", "ST"):
            mix["stg"] += 1
        elif op == "BAR":
            mix["bar"] += 1
        elif op == "FCHK":
            mix["div_ffma"] += DIVISION_FFMAS
        elif op == "ULDC" and _ULDC_INDEXED.search(rest):
            mix["uldc"] += 1
        elif (key := pipe_key(op)) is not None:  # the narrow pipes' (sass_pipes)
            mix[key] += 1
    mix["div_ffma"] = min(mix["div_ffma"], mix["ffma"])
    return mix


def _lone_warp_wait(body: Sequence[_Insn], cyclic: bool) -> int:
    """Clocks one warp alone waits for the results it reads in a pass of `body` (see
    SHARED_LOAD_CLOCKS): in order, one instruction a clock, each instruction that reads a
    register held until the LDS/LDSM or arithmetic instruction that writes it is done. A
    loop is passed three times and the third pass measured (a load for the next pass is in
    flight around the back edge); straight-line code once."""
    if not body:
        return 0
    decoded = [(op, suffix, *_operands(rest, op)) for _, op, suffix, _, rest in body]
    ready: dict[int, int] = {}
    t = 0
    starts = []
    for _ in range(3 if cyclic else 1):
        starts.append(t)
        for op, suffix, writes, reads in decoded:
            t = max(t, *(ready.get(r, 0) for r in reads), 0) + 1
            if op in ("LDS", "LDSM") and writes:
                ready.update(dict.fromkeys(range(writes[0], writes[0] + _width(suffix)),
                                           t - 1 + SHARED_LOAD_CLOCKS))
            elif op.startswith(_MEMORY_LOADS):
                for r in writes:
                    ready.pop(r, None)
            else:
                ready.update(dict.fromkeys(writes, t - 1 + ALU_RESULT_CLOCKS))
    passed = t - starts[-1]
    return max(0, passed - len(decoded))


def _loads(body: Sequence[_Insn]) -> int:
    """The global loads among these instructions."""
    return sum(i[1] in ("LDG", "LD") for i in body)


def _other_passes(body: list[_Insn], loops: list[list[_Insn]]) -> list[list[_Insn]]:
    """The loops that load 2+ times an iteration apart from the hottest one (`body`): not
    inside it, not around it, and not around another such loop (the innermost counts). A
    loop with several backward branches to its head (a `continue`) is one loop, to its last
    branch; loops that overlap without nesting (code that is not structured) count once."""
    def inside(a: list[_Insn], b: list[_Insn]) -> bool:  # a within b
        return b[0][0] <= a[0][0] and a[-1][0] <= b[-1][0]
    by_head: dict[int, list[_Insn]] = {}
    for b in loops:
        if b[0][0] not in by_head or b[-1][0] > by_head[b[0][0]][-1][0]:
            by_head[b[0][0]] = b
    loading = [b for b in by_head.values()
               if _loads(b) >= 2 and not inside(b, body) and not inside(body, b)]
    innermost = sorted((b for b in loading if not any(o is not b and inside(o, b) for o in loading)),
                       key=lambda b: b[0][0])
    kept: list[list[_Insn]] = []
    for b in innermost:
        if not kept or b[0][0] > kept[-1][-1][0]:
            kept.append(b)
    return kept


def _nested_ffma_loops(body: list[_Insn], loops: list[list[_Insn]]) -> list[list[_Insn]]:
    """The loops inside `body` that hold FFMAs (a k loop ptxas left rolled, or unrolled only
    in part, inside a tile loop). A second backward branch to the body's own head (a
    `continue`) is the same loop, not a nested one."""
    if not body:
        return []
    lo, hi = body[0][0], body[-1][0]
    return [b for b in loops if lo < b[0][0] and b[-1][0] <= hi
            and any(i[1] == "FFMA" for i in b)]


def _operands(rest: str, op: str) -> tuple[list[int], list[int]]:
    """(registers written, registers read) of one SASS instruction's operand text."""
    operands = rest.split(";")[0]
    regs = [int(r) for r in _REG.findall(operands)]
    if not op.startswith(("ST", "RED", "BAR", "BRA")) and regs and operands.strip().startswith("R"):
        return regs[:1], regs[1:]
    return [], regs


def _load_batches(body: list[tuple[int, str, str | None, str | None, str]]) -> tuple[int, int]:
    """How a warp running this code waits for its global loads: it issues loads until an
    instruction reads a register one of them writes, then stalls for the data (a tile load
    that the compiler keeps to 6 registers at a time waits 6 loads at a time). Returns the
    number of such waits and the fewest instructions between a load and its first use (in
    a loop, counted around the back edge: a load prefetched for the next iteration is
    covered by the whole body)."""
    pending: set[int] = set()
    batches = 0
    decoded = [(op, suffix, *_operands(rest, op)) for _, op, suffix, _, rest in body]
    cover = len(body)
    for i, (op, suffix, writes, reads) in enumerate(decoded):
        if pending and pending.intersection(reads):
            batches += 1
            pending.clear()
        if op in ("LDG", "LD") and writes:
            width = 4 if suffix and ".128" in suffix else 2 if suffix and ".64" in suffix else 1
            dest = set(range(writes[0], writes[0] + width))
            pending.update(dest)
            for d in range(1, len(body)):
                if dest.intersection(decoded[(i + d) % len(body)][3]):
                    cover = min(cover, d)
                    break
    return batches + (1 if pending else 0), cover
