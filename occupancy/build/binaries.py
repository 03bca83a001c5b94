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
COMPAT_ARCH_SPECIFIC = 0x09  # a .nv.compat record: 1 for an arch-specific (sm_XXa) build
COMPAT_BYTES = 1024  # of .nv.compat read (nvcc 13 writes 36)

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
    constant_bytes: int = 0  # the module's __constant__ data (.nv.constant3), every table
    # caller -> callees, from .nv.callgraph: -rdc's calls between functions (a whole-program
    # build clones what a kernel calls into it and records none here)
    calls: dict[str, tuple[str, ...]] = field(default_factory=dict)


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


_Section = tuple[int, ...]  # name, type, offset, size, link, info, entry size


def _sections(data: bytes) -> tuple[list[tuple[str, _Section]], Callable[[_Section], bytes]]:
    """A cubin's (ELF64, little-endian) sections by name, and how to read one's bytes."""
    if data[:4] != ELF_MAGIC or len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise OccupancyError("not a 64-bit little-endian ELF (a cubin)")
    shoff = _u("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = _u("<HHH", data, 0x3A)
    if shentsize < 64 or not 0 < shnum <= 65535 or shstrndx >= shnum:
        raise OccupancyError("malformed ELF section table")
    sections = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, info, _align, entsize = _u(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((name, typ, off, size, link, info, entsize))
    str_off, str_size = sections[shstrndx][2], sections[shstrndx][3]
    read = [0]  # bytes handed out: sections that all name the same megabyte re-read it

    def section_name(off: int) -> str:
        start = str_off + off
        end = data.find(b"\0", start, str_off + str_size)
        if start >= len(data) or end < 0:
            raise OccupancyError("malformed ELF section names")
        return data[start:end].decode("utf-8", errors="replace")

    def body(sec: _Section) -> bytes:
        _, typ, off, size = sec[0], sec[1], sec[2], sec[3]
        if typ == _SHT_NOBITS:
            return b""
        if off + size > len(data):
            raise OccupancyError("truncated ELF section")
        read[0] += size
        if read[0] > 2 * len(data):  # each section is read once, and they do not overlap
            raise OccupancyError("malformed ELF: its sections overlap")
        return data[off:off + size]

    return [(section_name(s[0]), s) for s in sections], body


def elf_arch(data: bytes) -> str:
    """sm_XX, or sm_XXa for an arch-specific build (-arch=sm_90a): its e_flags say sm_90 as
    sm_90's do; its `.nv.compat` records say which (attribute 9 is 1; nvcc 13)."""
    return _arch(data, *_sections(data))


def _arch(data: bytes, named: list[tuple[str, _Section]], body: Callable[[_Section], bytes]
          ) -> str:
    """elf_arch, on a cubin's sections already read."""
    arch = cubin_arch(data)
    compat = next((sec for name, sec in named if name == ".nv.compat"), None)
    if compat is not None:  # the first only, and its first records: a handful in a real one
        for attr, val in _records(body(compat)[:COMPAT_BYTES]):
            if attr == COMPAT_ARCH_SPECIFIC:
                return arch + "a" if val[:1] == b"\x01" else arch
    return arch


def parse_cubin(data: bytes) -> Cubin:
    """Every kernel of a cubin (ELF64, little-endian) with its resources."""
    named, body = _sections(data)
    arch = _arch(data, named, body)
    sections = [sec for _, sec in named]
    symbols, entries, objects = _symbols(named, sections, body)
    regs: dict[str, int] = {}
    frames: dict[str, int] = {}
    per_fn: dict[str, list[tuple[int, bytes]]] = {}
    shared: dict[str, int] = {}
    bank3 = 0
    calls: dict[str, tuple[str, ...]] = {}
    for sec_name, sec in named:
        if sec_name == ".nv.info":
            for attr, val in _records(body(sec)):
                if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE) \
                        and len(val) >= 8:
                    sym, value = struct.unpack_from("<II", val)
                    fn = symbols.get(sym)
                    if fn is None:
                        continue
                    if attr == EIATTR_REGCOUNT:
                        regs[fn] = value
                    else:  # the stack: its own frame, or with its callees' (MIN_STACK_SIZE)
                        frames[fn] = max(frames.get(fn, 0), value)
        elif sec_name.startswith(".nv.info."):
            per_fn[sec_name[len(".nv.info."):]] = _records(body(sec))
        elif sec_name.startswith(".nv.shared.") and not sec_name.startswith(".nv.shared.reserved"):
            shared[sec_name[len(".nv.shared."):]] = sec[3]
        elif sec_name == ".nv.constant3":
            bank3 = sec[3]
        elif sec_name == ".nv.callgraph":
            calls = _calls(body(sec), symbols)
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
    return Cubin(arch, kernels, is_relocatable(data), objects, bank3, calls)


def _calls(blob: bytes, symbols: dict[int, str]) -> dict[str, tuple[str, ...]]:
    """.nv.callgraph's (caller, callee) symbol pairs; the markers (0xfffffffX) left out."""
    out: dict[str, list[str]] = {}
    for off in range(0, len(blob) - 7, 8):
        caller, callee = struct.unpack_from("<II", blob, off)
        if caller in symbols and callee in symbols and callee < 0xFFFFFFF0:
            out.setdefault(symbols[caller], []).append(symbols[callee])
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def reachable(calls: dict[str, tuple[str, ...]], start: str) -> list[str]:
    """Every function `start` calls, directly or not (each once, a recursion's cycle cut)."""
    seen: dict[str, None] = {}
    todo = list(calls.get(start, ()))
    while todo:
        fn = todo.pop()
        if fn != start and fn not in seen:
            seen[fn] = None
            todo.extend(calls.get(fn, ()))
    return list(seen)


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


def arch_number(arch: str) -> int:
    """90 for sm_90 and sm_90a (compute_90 too)."""
    return int(re.sub(r"\D", "", arch) or 0)


def static_shared_from_cubin(k: CubinKernel, arch: str, reserved: int,
                             relocatable: bool = False) -> int:
    """Static smem the kernel declares: linked sm_90+ cubins include the driver's reserved
    bytes; a relocatable one does not hold them yet (nvlink adds them), so nothing is
    subtracted there."""
    major = arch_number(arch) // 10
    if relocatable or major < 9 or not k.shared_bytes:
        return k.shared_bytes
    return max(k.shared_bytes - reserved, 0)


# --- PTX -------------------------------------------------------------------------------------

_PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(")
_PTX_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+[af]?)\b", re.MULTILINE)


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
