"""One warp of a kernel, run on its PTX: the addresses it touches.

SASS says how wide a shared-memory access is, not which banks its lanes hit; the
declared DRAM bytes say nothing of how many 128-byte lines a warp's global load spans.
Both decide the speed of real kernels (a transpose's 32-way column read, llm.c's
row-per-thread loads), so this module runs one warp of one block through the kernel's
PTX with the launch's real arguments (sizes as numbers, arrays as aligned base
addresses, data as zeros) and counts, per warp instruction, the shared-memory
wavefronts (`banks.bank_conflicts`), the global lines and sectors, the barriers and the
floating-point work.

The warp runs in lock step with per-lane program counters (the lanes at the lowest
counter step together, the usual reconvergence rule for structured code). ptxas merges
scalar shared accesses at consecutive offsets of one base register into 64- and 128-bit
ones when the address is aligned; that is applied here too, per basic block, so the
wavefronts are those of the SASS. The run stops at MAX_STEPS warp instructions, a fixed
bound that no input changes (or earlier, once three iterations of a loop with
floating-point work repeat exactly): a kernel that runs longer is measured per iteration
of its hottest loop (the backward branch whose iterations hold the most floating-point
work), a kernel that ends before it, per warp.

Data-dependent addresses (gathers through loaded indices) see zeros; unknown
instructions leave their destination at zero. It is an estimate of the access pattern,
exact for the affine addressing of tiled kernels.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass
from functools import cache

from occupancy.build.names import split_top
from occupancy.core.banks import bank_conflicts

MAX_STEPS = 12_000  # warp instructions per run; fixed, no manifest or PTX number changes it
MAX_ATOMIC_LOG = 1024  # lane atomics whose addresses a run keeps (run_warp's atomic_log)
MAX_PTX_BYTES = 8 << 20
WARP = 32
SHARED_TAG = 1 << 56  # generic addresses of shared memory (cvta.shared)
LOCAL_TAG = 2 << 56
ARRAY_STRIDE = 1 << 36  # array i lives at (i + 1) << 36: aligned, never overlapping

# Counters, in this order, for a unit of work (one warp's run, or one loop iteration).
FIELDS = ("steps", "flops", "ffma", "shared_wavefronts", "shared_ideal", "shared_accesses",
          "global_loads", "global_load_lines", "global_load_sectors", "load_bytes",
          "global_stores", "global_store_lines", "global_store_sectors",
          "partial_store_sectors", "barriers", "load_cover", "covered_loads",
          "reread_lines", "reread_distance")
_I = {f: i for i, f in enumerate(FIELDS)}
_REUSE = ("reread_lines", "reread_distance")  # the last fields: diagnostics, not work
assert FIELDS[-len(_REUSE):] == _REUSE


class PtxError(ValueError):
    """PTX this module cannot run (no such entry, or not PTX at all)."""


@dataclass(frozen=True)
class Traffic:
    """What one warp does per unit: its whole run (`complete`), else one iteration of its
    hottest loop. Shared wavefronts include bank conflicts; global lines are 128-byte
    lines (L1 wavefronts), sectors 32-byte ones."""

    complete: bool
    lanes: int  # active lanes of the warp emulated
    steps: float
    flops: float  # lane FLOPs (an FMA is 2)
    ffma: float
    shared_wavefronts: float
    shared_ideal: float  # the same accesses without conflicts
    shared_accesses: float
    global_loads: float
    global_load_lines: float
    global_load_sectors: float
    load_bytes: float
    global_stores: float
    global_store_lines: float
    global_store_sectors: float
    partial_store_sectors: float
    barriers: float
    load_cover: float  # warp instructions between global loads and the first use of their data
    covered_loads: float  # the loads load_cover sums over
    inner_ffma: float = 0.0  # FFMAs per iteration of the innermost loop that repeated
    # lane atomics to global memory whose address every block of the grid shares (a norm's
    # or a total's one counter), floating-point and integer, per warp; and how many such
    # addresses there are. Set by tune/traffic.py, which runs a second block to tell them
    # from per-block addresses; one warp's run alone leaves them 0.
    contended_float_atomics: float = 0.0
    contended_int_atomics: float = 0.0
    contended_addresses: float = 0.0
    # lines the warp loads again that an earlier instruction of its own already loaded or
    # stored (a softmax's second pass over its row), and the sum over them of the bytes the
    # warp loaded and stored in between: their reuse distance in the warp's own stream
    reread_lines: float = 0.0
    reread_distance: float = 0.0

    @property
    def cover(self) -> float:
        """Instructions a global load's latency overlaps before the warp needs its data."""
        return self.load_cover / self.covered_loads if self.covered_loads else 0.0

    @property
    def conflict_factor(self) -> float:
        return self.shared_wavefronts / self.shared_ideal if self.shared_ideal else 1.0


# --- parsing ---------------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)")
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$.]+)(\[\d+\])?")
_DECL = re.compile(r"^\.(shared|local)\s+(?:\.align\s+(\d+)\s+)?\.\w+\s+([\w$.]+)(?:\[(\d*)\])?")
_LABEL = re.compile(r"^([\w$.]+):\s*")
_SCOPE = re.compile(r"^\s*[{}]\s*$", re.M)
_MEM = re.compile(r"^\[\s*([%\w$.]+)\s*(?:\+\s*(-?\s*(?:0x[0-9a-fA-F]+|\d+)))?\s*\]$")
_TYPES = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64",
          "f16", "f32", "f64", "pred", "bf16", "f16x2", "b128"}


@dataclass
class _Insn:
    guard: str | None
    negate: bool
    op: str
    parts: tuple[str, ...]
    args: tuple[str, ...]
    label_target: int | None = None


@dataclass
class _Kernel:
    name: str
    params: list[tuple[str, str]]  # (name, type)
    code: list[_Insn]
    labels: dict[str, int]
    symbols: dict[str, int]  # shared and local symbols -> address
    groups: dict[int, tuple[int, int, int]]  # insn -> (leader insn, bytes, offset from leader)


def parse_kernel(ptx: str, entry: str) -> _Kernel:
    """The entry's body, decoded. PtxError when it is not there."""
    if len(ptx) > MAX_PTX_BYTES:
        raise PtxError("PTX over 8 MiB")
    text = _COMMENT.sub("", ptx)
    for m in _ENTRY.finditer(text):
        if m.group(1) == entry:
            break
    else:
        raise PtxError(f"no entry {entry} in the PTX")
    params = [(p.group(2), p.group(1)) for p in _PARAM.finditer(m.group(2))]
    start = text.find("{", m.end())
    if start < 0:
        raise PtxError(f"entry {entry} has no body")
    depth, i = 0, start
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    # scopes ({ on a line of its own) flatten away; braces inside a line are vector operands
    body = _SCOPE.sub(";", text[start + 1:i])
    code: list[_Insn] = []
    labels: dict[str, int] = {}
    symbols: dict[str, int] = {}
    shared_top, local_top = 0, 0
    dynamic: list[tuple[str, int]] = []
    for stmt in body.split(";"):
        stmt = stmt.strip()
        while True:
            lm = _LABEL.match(stmt)
            if not lm:
                break
            labels[lm.group(1)] = len(code)
            stmt = stmt[lm.end():].strip()
        if not stmt:
            continue
        if stmt.startswith("."):
            d = _DECL.match(stmt)
            if d:
                align = int(d.group(2) or 4)
                size = int(d.group(4)) if d.group(4) else 0
                if d.group(1) == "shared":
                    if d.group(4) == "":
                        dynamic.append((d.group(3), align))
                        continue
                    shared_top = -(-shared_top // align) * align
                    symbols[d.group(3)] = shared_top
                    shared_top += max(size, 4)
                else:
                    local_top = -(-local_top // align) * align
                    symbols[d.group(3)] = LOCAL_TAG + local_top
                    local_top += max(size, 4)
            continue
        guard, negate = None, False
        if stmt.startswith("@"):
            g, _, stmt = stmt.partition(" ")
            negate = g.startswith("@!")
            guard = g[2:] if negate else g[1:]
            stmt = stmt.strip()
        op, _, rest = stmt.partition(" ")
        if not op.islower() and not op[:1].isalpha():
            continue
        parts = tuple(op.split("."))
        code.append(_Insn(guard, negate, parts[0], parts[1:], tuple(split_top(rest, "[{", "]}"))))
    for name, align in dynamic:  # extern __shared__ arrays start after the static ones
        symbols[name] = -(-shared_top // align) * align
    for ins in code:
        if ins.op in ("bra", "brx") and ins.args:
            ins.label_target = labels.get(ins.args[-1])
    return _Kernel(entry, params, code, labels, symbols,
                   _vector_groups(code, set(labels.values())))


def _vector_groups(code: list[_Insn], starts: set[int]) -> dict[int, tuple[int, int, int]]:
    """ptxas's merge of scalar 32-bit shared accesses at [reg+o], [reg+o+4], ... into one
    64- or 128-bit access (o aligned), per basic block while reg is not written."""
    groups: dict[int, tuple[int, int, int]] = {}
    pending: dict[tuple[str, str], dict[int, int]] = {}  # (ld|st, base) -> offset -> insn

    def flush() -> None:
        for offs in pending.values():
            taken: set[int] = set()
            for width in (16, 8):
                for o in sorted(offs):
                    members = [o + 4 * j for j in range(width // 4)]
                    if o % width or any(m not in offs or m in taken for m in members):
                        continue
                    idx = [offs[m] for m in members]
                    for m, j in zip(members, idx, strict=True):
                        groups[j] = (min(idx), width, m - o)
                    taken.update(members)
        pending.clear()

    for i, ins in enumerate(code):
        if i in starts or ins.op in ("bra", "brx", "ret", "exit", "bar", "barrier", "call"):
            flush()
        if ins.op in ("ld", "st") and "shared" in ins.parts and len(ins.args) > 1 \
                and _bytes(ins.parts) == 4:
            mem = _MEM.match(ins.args[1] if ins.op == "ld" else ins.args[0])
            if mem and mem.group(1).startswith("%"):
                off = int(mem.group(2).replace(" ", ""), 0) if mem.group(2) else 0
                pending.setdefault((ins.op, mem.group(1)), {}).setdefault(off, i)
        if ins.op not in ("st", "red", "bar", "barrier", "bra") and ins.args \
                and any(base == ins.args[0] for _, base in pending):
            flush()  # the base register changes: later offsets are from another address
    flush()
    return groups


def _bytes(parts: Sequence[str]) -> int:
    t = next((p for p in reversed(parts) if p in _TYPES), "b32")
    n = int(re.sub(r"\D", "", t) or 32) // 8 if t != "pred" else 1
    vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    return max(n, 1) * vec


# --- running ---------------------------------------------------------------------------------


@cache
def _kind(t: str) -> tuple[int, bool, bool]:
    """(bits, signed, float) of a PTX type name."""
    if t.startswith("f") or t == "bf16":
        return int(re.sub(r"\D", "", t) or 32), True, True
    return int(re.sub(r"\D", "", t) or 32), t.startswith("s"), False


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def _fbits(word: str) -> float:
    import struct
    if word[:2] in ("0f", "0F"):
        return struct.unpack(">f", bytes.fromhex(word[2:].rjust(8, "0")))[0]
    return struct.unpack(">d", bytes.fromhex(word[2:].rjust(16, "0")))[0]


class _Warp:
    def __init__(self, k: _Kernel, params: Mapping[str, float | int], block: Sequence[int],
                 block_index: Sequence[int], grid: Sequence[int], banks: int,
                 warp: int = 0, unroll: int = 1) -> None:
        self.k = k
        # ptxas's unroll of the hottest loop (its SASS body over one PTX iteration): a
        # scalar shared access that steps one element per iteration is then one wide
        # access per `unroll` iterations (As[row * BK + k] for k, k+1, ... -> LDS.128)
        self.unroll = unroll
        self.last_shared: dict[int, list[int]] = {}
        self.streaming: set[int] = set()  # accesses seen stepping one element per iteration
        self.params = params
        self.banks = banks
        bx, by, bz = (list(block) + [1, 1])[:3]
        threads = bx * by * bz
        first = warp * WARP
        self.lanes = list(range(max(0, min(WARP, threads - first))))
        self.regs: dict[str, list[float | int]] = {}
        tid = [((first + t) % bx, ((first + t) // bx) % by, (first + t) // (bx * by))
               for t in self.lanes]
        cx, cy, cz = (list(block_index) + [0, 0])[:3]
        gx, gy, gz = (list(grid) + [1, 1])[:3]
        special: dict[str, list[int] | int] = {"%tid.x": [t[0] for t in tid], "%tid.y": [t[1] for t in tid],
                   "%tid.z": [t[2] for t in tid], "%ntid.x": bx, "%ntid.y": by, "%ntid.z": bz,
                   "%ctaid.x": cx, "%ctaid.y": cy, "%ctaid.z": cz, "%nctaid.x": gx,
                   "%nctaid.y": gy, "%nctaid.z": gz, "%laneid": list(self.lanes),
                   "%warpid": warp, "%nwarpid": -(-threads // WARP)}
        self.special: dict[str, list[int]] = {
            n: (v if isinstance(v, list) else [v] * WARP) for n, v in special.items()}
        self.counters = [0.0] * len(FIELDS)
        self.vec_ok: dict[int, bool] = {}
        self.pending: dict[str, float] = {}  # register -> step its global load issued
        self.atomic_log: list[tuple[int, bool]] = []  # (address, floating-point) per lane
        self.line_seen: dict[int, float] = {}  # global line -> the warp's line bytes then
        self.loaded = 0.0  # bytes of lines the warp has loaded or stored so far

    # operands
    def val(self, a: str, lane: int, t: str = "b32") -> float | int:
        bits, signed, flt = _kind(t)
        if a.startswith("%"):
            r = self.regs.get(a)
            if r is None:
                s = self.special.get(a)
                v: float | int = s[lane] if s else 0
            else:
                v = r[lane]
        elif a == "WARP_SZ":
            v = WARP
        elif a.startswith("-") and a[1:].startswith("%"):
            v = -self.val(a[1:], lane, t)
        elif a[:2] in ("0f", "0F", "0d", "0D") and len(a) > 2:
            v = _fbits(a)
        else:
            try:
                v = int(a, 0) if not re.search(r"[.eE]", a) or a.startswith("0x") else float(a)
            except ValueError:
                v = self.k.symbols.get(a, 0)
        if flt:
            return float(v)
        if isinstance(v, float):
            v = int(v) if math.isfinite(v) else 0
        return _wrap(v, bits, signed)

    def set(self, a: str, lane: int, v: float | int, t: str = "b32") -> None:
        if not a.startswith("%"):
            return
        bits, signed, flt = _kind(t)
        if not flt and not isinstance(v, float):
            v = _wrap(int(v), bits, signed)
        elif not flt:
            v = _wrap(int(v), bits, signed) if math.isfinite(v) else 0
        self.regs.setdefault(a, [0] * WARP)[lane] = v

    def address(self, a: str, lane: int) -> int:
        m = _MEM.match(a)
        if not m:
            return 0
        base, off = m.group(1), int(m.group(2).replace(" ", ""), 0) if m.group(2) else 0
        if base.startswith("%"):
            return int(self.val(base, lane, "u64")) + off
        if base in self.k.symbols:
            return self.k.symbols[base] + off
        return off

    # accounting
    def count_shared(self, addrs: list[int], width: int) -> None:
        c = self.counters
        elem = width if width in (1, 2, 4, 8, 16) else 4
        r = bank_conflicts(addrs, element_bytes=elem, banks=self.banks)
        phase = WARP // max(1, elem // 4) if elem > 4 else WARP
        ideal = sum(-(-len(addrs[s:s + phase]) * elem // 128) for s in range(0, len(addrs), phase))
        c[_I["shared_wavefronts"]] += r.wavefronts
        c[_I["shared_ideal"]] += max(1, ideal)
        c[_I["shared_accesses"]] += 1

    def count_global(self, addrs: list[int], width: int, store: bool) -> None:
        c = self.counters
        lines = {b // 128 for a in addrs for b in (a, a + width - 1)}
        sectors: dict[int, int] = {}
        for a in addrs:
            for s in range(a // 32, (a + width - 1) // 32 + 1):
                lo, hi = max(a, s * 32), min(a + width, s * 32 + 32)
                sectors[s] = sectors.get(s, 0) + (hi - lo)
        if store:
            for line in lines:  # a later load of what the warp wrote is a re-read too
                self.line_seen[line] = self.loaded
            self.loaded += 128.0 * len(lines)
            c[_I["global_stores"]] += 1
            c[_I["global_store_lines"]] += len(lines)
            c[_I["global_store_sectors"]] += len(sectors)
            c[_I["partial_store_sectors"]] += sum(1 for b in sectors.values() if b < 32)
        else:
            c[_I["global_loads"]] += 1
            c[_I["global_load_lines"]] += len(lines)
            c[_I["global_load_sectors"]] += len(sectors)
            c[_I["load_bytes"]] += width * len(addrs)
            for line in lines:
                seen = self.line_seen.get(line)
                if seen is not None:
                    c[_I["reread_lines"]] += 1
                    c[_I["reread_distance"]] += self.loaded - seen
                self.line_seen[line] = self.loaded
            self.loaded += 128.0 * len(lines)

    def memory(self, i: int, ins: _Insn, lanes: list[int]) -> bool:
        """Count one warp-wide access; True where it went to global (or local) memory."""
        store = ins.op in ("st", "red")
        is_async = ins.op == "cp"
        if is_async:  # cp.async.ca.shared.global [dst], [src], bytes
            width = int(self.val(ins.args[2], 0)) if len(ins.args) > 2 else 4
            src = [self.address(ins.args[1], lane) for lane in lanes]
            dst = [self.address(ins.args[0], lane) for lane in lanes]
            self.count_global(src, width, False)
            self.count_shared(dst, width)
            return False
        slot = ins.args[0] if store else ins.args[1] if len(ins.args) > 1 else ins.args[0]
        if ins.op in ("atom", "red") and not store:
            slot = ins.args[1]
        width = _bytes(ins.parts)
        addrs = [self.address(slot, lane) for lane in lanes]
        space = next((p for p in ins.parts if p in ("shared", "global", "local", "param",
                                                    "const")), None)
        if space is None:  # generic: by the address's window
            space = "shared" if addrs and addrs[0] >> 56 == 1 else \
                "local" if addrs and addrs[0] >> 56 == 2 else "global"
            if space == "shared":
                addrs = [a - SHARED_TAG for a in addrs]
        if space in ("param", "const"):
            return False
        if space == "shared":
            group = self.k.groups.get(i)
            if group:
                leader, gw, off = group
                if leader == i:
                    ok = all((a - off) % gw == 0 for a in addrs)
                    self.vec_ok[i] = ok
                    if ok:
                        self.count_shared([a - off for a in addrs], gw)
                        return False
                elif self.vec_ok.get(leader):
                    return False
            merged = self.across_iterations(i, ins, addrs, width)
            if merged:
                return False
            self.count_shared(addrs, width)
            if ins.op in ("atom", "red"):
                self.count_shared(addrs, width)
            return False
        self.count_global(addrs, width, store or ins.op == "atom")
        if ins.op in ("atom", "red") and space == "global" and \
                len(self.atomic_log) + len(addrs) <= MAX_ATOMIC_LOG:
            flt = any(p.startswith(("f", "bf")) for p in ins.parts)
            self.atomic_log.extend((a, flt) for a in addrs)
        return True

    def across_iterations(self, i: int, ins: _Insn, addrs: list[int], width: int) -> bool:
        """Count a scalar shared load that the unrolled loop merges with its next
        iterations' as 1/n of the wide access at the aligned base (n elements of `width`);
        False where it does not step one element per iteration."""
        prev, self.last_shared[i] = self.last_shared.get(i), addrs
        if self.unroll < 2 or ins.op != "ld" or width not in (4, 8):
            return False
        if prev is not None and len(prev) == len(addrs) \
                and all(a - p == width for a, p in zip(addrs, prev, strict=True)):
            self.streaming.add(i)  # (the unrolled body's first iteration is merged too)
        if i not in self.streaming:
            return False
        wide = min(16, width * self.unroll)
        n = wide // width
        c = self.counters
        before = (c[_I["shared_wavefronts"]], c[_I["shared_ideal"]], c[_I["shared_accesses"]])
        self.count_shared([a - a % wide for a in addrs], wide)
        for key, b in zip(("shared_wavefronts", "shared_ideal", "shared_accesses"), before,
                          strict=True):
            c[_I[key]] = b + (c[_I[key]] - b) / n
        return True

    def load_value(self, ins: _Insn, lanes: list[int]) -> None:
        t = next((p for p in reversed(ins.parts) if p in _TYPES), "b32")
        dst = ins.args[0]
        if "param" in ins.parts:
            m = _MEM.match(ins.args[1])
            name = m.group(1) if m else ""
            v = self.params.get(name, 0) if not (m and m.group(2)) else 0
            for lane in lanes:
                self.set(dst, lane, v, t)
            return
        names = [x.strip() for x in dst.strip("{}").split(",")] if dst.startswith("{") else [dst]
        for n in names:
            for lane in lanes:
                self.set(n, lane, 0.0 if t.startswith("f") else 0, t)


def _alu(w: _Warp, ins: _Insn, lanes: list[int]) -> None:
    op, parts, args = ins.op, ins.parts, ins.args
    types = [p for p in parts if p in _TYPES]
    t = types[-1] if types else "b32"
    if not args:
        return
    d = args[0]
    if op == "setp":
        cmp_ = parts[0]
        targets = d.split("|")
        for lane in lanes:
            a, b = w.val(args[1], lane, t), w.val(args[2], lane, t)
            res = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
                   "ge": a >= b, "lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b,
                   "equ": a == b, "neu": a != b, "ltu": a < b, "leu": a <= b, "gtu": a > b,
                   "geu": a >= b, "num": True, "nan": False}.get(cmp_, False)
            if len(args) > 3 and parts[1] in ("and", "or", "xor"):
                c = bool(w.val(args[3].lstrip("!"), lane, "pred")) != args[3].startswith("!")
                res = {"and": res and c, "or": res or c, "xor": res != c}[parts[1]]
            w.set(targets[0], lane, int(res), "pred")
            if len(targets) > 1:
                w.set(targets[1], lane, int(not res), "pred")
        return
    if op == "selp":
        for lane in lanes:
            p = w.val(args[3], lane, "pred")
            w.set(d, lane, w.val(args[1] if p else args[2], lane, t), t)
        return
    if op in ("mov", "cvta", "cvt"):
        src_t = types[-1] if op == "cvt" and len(types) > 1 else t
        dst_t = types[0] if op == "cvt" and types else t
        if d.startswith("{") or len(args) < 2:
            return
        for lane in lanes:
            v = w.val(args[1], lane, src_t)
            if op == "cvta":
                if "to" in parts:
                    v = int(v) - (SHARED_TAG if "shared" in parts else
                                  LOCAL_TAG if "local" in parts else 0)
                else:
                    v = int(v) + (SHARED_TAG if "shared" in parts else
                                  LOCAL_TAG if "local" in parts else 0)
            elif op == "cvt" and isinstance(v, float) and not dst_t.startswith("f"):
                v = (math.floor(v) if "rmi" in parts else math.ceil(v) if "rpi" in parts
                     else round(v) if "rni" in parts else math.trunc(v)) if math.isfinite(v) else 0
            w.set(d, lane, v, dst_t)
        return
    wide = "wide" in parts
    src_t = t
    dst_t = (t[0] + str(2 * int(t[1:]))) if wide and t[1:].isdigit() else t
    flt = t.startswith("f")
    for lane in lanes:
        x = [w.val(a, lane, "pred" if a.lstrip("!").startswith("%p") and op in
                   ("and", "or", "xor", "not") and t == "pred" else src_t) for a in args[1:]]
        try:
            v = _apply(op, parts, x, src_t, flt)
        except (ArithmeticError, ValueError, IndexError):
            v = 0.0 if flt else 0
        w.set(d, lane, v, dst_t)


def _apply(op: str, parts: tuple[str, ...], x: list[float | int], t: str, flt: bool
           ) -> float | int:
    bits = _kind(t)[0]
    if op == "add":
        return x[0] + x[1]
    if op == "sub":
        return x[0] - x[1]
    if op in ("mul", "mul24"):
        p = x[0] * x[1]
        return (int(p) >> bits) if "hi" in parts and not flt else p
    if op in ("mad", "mad24", "fma"):
        p = x[0] * x[1]
        if "hi" in parts and not flt:
            p = int(p) >> bits
        return p + x[2]
    if op == "div":
        if flt:
            return x[0] / x[1]
        q = abs(int(x[0])) // abs(int(x[1]))
        return q if (x[0] >= 0) == (x[1] >= 0) else -q
    if op == "rem":
        r = abs(int(x[0])) % abs(int(x[1]))
        return r if x[0] >= 0 else -r
    if op == "neg":
        return -x[0]
    if op == "abs":
        return abs(x[0])
    if op == "min":
        return min(x[0], x[1])
    if op == "max":
        return max(x[0], x[1])
    if op == "and":
        return int(x[0]) & int(x[1])
    if op == "or":
        return int(x[0]) | int(x[1])
    if op == "xor":
        return int(x[0]) ^ int(x[1])
    if op == "not":
        return ~int(x[0]) if t != "pred" else int(not x[0])
    if op == "cnot":
        return int(x[0] == 0)
    if op == "shl":
        return int(x[0]) << min(int(x[1]), bits)
    if op == "shr":
        return int(x[0]) >> min(int(x[1]), bits)
    if op == "popc":
        return bin(int(x[0]) & ((1 << bits) - 1)).count("1")
    if op == "clz":
        return bits - (int(x[0]) & ((1 << bits) - 1)).bit_length()
    if op == "bfe":
        return (int(x[0]) >> int(x[1])) & ((1 << int(x[2])) - 1)
    if op == "rcp":
        return 1.0 / x[0]
    if op == "sqrt":
        return math.sqrt(x[0])
    if op == "rsqrt":
        return 1.0 / math.sqrt(x[0])
    if op == "ex2":
        return 2.0 ** min(x[0], 1000.0)
    if op == "lg2":
        return math.log2(x[0])
    if op in ("sin", "cos", "tanh"):
        return getattr(math, op)(x[0])
    if op == "copysign":
        return math.copysign(x[1], x[0])
    return 0.0 if flt else 0


_FLOP = {"fma": 2, "add": 1, "sub": 1, "mul": 1, "mad": 2, "div": 1, "rcp": 1, "sqrt": 1,
         "rsqrt": 1, "ex2": 1, "lg2": 1, "min": 1, "max": 1, "neg": 0, "abs": 0}


def run_warp(ptx: str, entry: str, params: Sequence[float | int], block: Sequence[int],
             grid: Sequence[int], banks: int = 32, warp: int = 0, whole: bool = False,
             unroll: int = 1, first_block: bool = False,
             atomic_log: list[tuple[int, bool]] | None = None) -> Traffic:
    """Run one warp (0 by default) of the middle block of the grid (of block 0 where
    `first_block`); its traffic per unit (see Traffic). A loop that repeats itself ends the
    run early (its iteration is the unit) unless `whole`: then only MAX_STEPS does (a
    kernel without declared FLOPs has nothing that says how many iterations run).
    `unroll`: how many iterations of the hottest loop ptxas unrolled into one SASS body
    (see _Warp). `atomic_log` receives the (address, floating-point) of each lane atomic to
    global memory, up to MAX_ATOMIC_LOG. PtxError for PTX it cannot follow, whatever went
    wrong inside."""
    import struct

    if warp < 0 or warp * WARP >= math.prod(block):
        raise PtxError(f"{entry}: the block has no warp {warp}")
    try:
        return _run_warp(ptx, entry, params, block, grid, banks, warp, whole, unroll,
                         first_block, atomic_log)
    except PtxError:
        raise
    except (ArithmeticError, ValueError, IndexError, KeyError, TypeError, AttributeError,
            struct.error, RecursionError) as exc:
        raise PtxError(f"{entry}: cannot follow its PTX ({type(exc).__name__}: {exc})") from None


def _run_warp(ptx: str, entry: str, params: Sequence[float | int], block: Sequence[int],
              grid: Sequence[int], banks: int, warp: int, whole: bool, unroll: int,
              first_block: bool = False, atomic_log: list[tuple[int, bool]] | None = None
              ) -> Traffic:
    k = parse_kernel(ptx, entry)
    names = [n for n, _ in k.params]
    values: dict[str, float | int] = {}
    for (name, t), v in zip(k.params, list(params) + [0] * (len(names) - len(params)),
                            strict=False):
        values[name] = float(v) if t.startswith("f") else int(v)
    where = [0] * len(grid) if first_block else [max(0, (g - 1) // 2) for g in grid]
    w = _Warp(k, values, block, where, grid, banks, warp, unroll)
    code = k.code
    pcs: list[int | None] = [0] * len(w.lanes)
    snaps: dict[int, list[list[float]]] = {}
    spans: dict[int, int] = {}  # loop start -> its backward branch
    loops = [(ins.label_target, i) for i, ins in enumerate(code)
             if ins.op in ("bra", "brx") and ins.label_target is not None and ins.label_target <= i]
    steps, finished = 0, False
    c = w.counters
    while True:
        live = [p for p in pcs if p is not None]
        if not live:
            finished = True
            break
        if steps >= MAX_STEPS:
            break
        pc = min(live)
        if pc >= len(code):
            pcs = [None if p == pc else p for p in pcs]
            continue
        ins = code[pc]
        group = [i for i, p in enumerate(pcs) if p == pc]
        lanes = [w.lanes[i] for i in group]
        if ins.guard is not None:
            run = [ln for ln in lanes if bool(w.val(ins.guard, ln, "pred")) != ins.negate]
        else:
            run = lanes
        for i in group:
            pcs[i] = pc + 1
        steps += 1
        c[_I["steps"]] += 1
        if not run:
            continue
        op = ins.op
        if w.pending:
            _first_uses(w, ins, steps)
        if op in ("bra", "brx"):
            tgt = ins.label_target
            if tgt is not None:
                for i in group:
                    if w.lanes[i] in run:
                        pcs[i] = tgt
                if tgt <= pc:
                    rows = snaps.setdefault(tgt, [])
                    spans[tgt] = pc
                    rows.append(list(c))
                    if not whole and _steady(rows) and not _enclosed(tgt, pc, loops):
                        break  # three identical iterations of an outermost loop doing FP work
            continue
        if op in ("ret", "exit", "trap"):
            for i in group:
                if w.lanes[i] in run:
                    pcs[i] = None
            continue
        if op in ("bar", "barrier"):
            c[_I["barriers"]] += 1
            continue
        if op in ("ld", "ldu", "st", "atom", "red", "cp") and ins.args:
            if op == "cp" and "async" not in ins.parts:
                continue
            if w.memory(pc, ins, run) and op in ("ld", "ldu"):
                for reg in _REGS.findall(ins.args[0]):
                    w.pending[reg] = steps
            if op in ("ld", "ldu"):
                w.load_value(ins, run)
            elif op == "atom":
                w.load_value(ins, run)
            continue
        flt = any(p in ("f32", "f64", "f16") for p in ins.parts)
        if flt and op in _FLOP:
            c[_I["flops"]] += _FLOP[op] * len(run)
            if op in ("fma", "mad"):
                c[_I["ffma"]] += 1
        if op == "shfl":
            _shfl(w, ins, run)
            continue
        if flt and op in _FLOP:
            continue  # floating-point values never make an address: only their work counts
        _alu(w, ins, run)
    unit = c
    complete = finished
    # per iteration of each loop that repeated: the unit is the outermost one doing FP work
    # (a tiled kernel's tile loop: its loads, barriers and every FMA of the tile), else the
    # one that ran the most FP work; the innermost one's FFMAs say how far ptxas unrolled
    per_loop = []
    for tgt, rows in snaps.items():
        if len(rows) >= 2:
            delta = [b - a for a, b in zip(rows[0], rows[-1], strict=True)]
            # one iteration's FFMAs: the fewest between two back edges (the mean over
            # several also holds the enclosing loop's work between its runs)
            ffma = min(b[_I["ffma"]] - a[_I["ffma"]] for a, b in zip(rows, rows[1:], strict=False))
            per_loop.append((spans[tgt] - tgt, [x / (len(rows) - 1) for x in delta], len(rows) - 1,
                             ffma))
    fp = [x for x in per_loop if x[1][_I["flops"]] > 0]
    inner = min(fp, key=lambda x: x[0])[3] if fp else 0.0
    if not finished and per_loop:
        unit = max(fp or per_loop, key=lambda x: (x[0], x[1][_I["flops"]] * x[2]))[1]
    if atomic_log is not None:
        atomic_log.extend(w.atomic_log)
    return Traffic(complete, len(w.lanes), **dict(zip(FIELDS, unit, strict=True)), inner_ffma=inner)


def block_sample(first: Traffic, last: Traffic | None) -> Traffic:
    """A block's warps from two of them, its first and its last: their mean where both are
    the same unit (whole runs, or loop iterations of the same work). One warp alone cannot
    show how rows fall on 128-B lines: at n = 5000 floats a row starts 32 B further into a
    line than the one before, and warp 0 of a 4-row block reads only the aligned rows."""
    if last is None or last.complete != first.complete or last.flops != first.flops:
        return first
    mean = [(a + b) / 2 for a, b in zip(astuple(first)[2:], astuple(last)[2:], strict=True)]
    return Traffic(first.complete, first.lanes, *mean)


def _enclosed(start: int, end: int, loops: list[tuple[int, int]]) -> bool:
    """Another loop of the code holds the loop [start, end] inside its own body."""
    return any(s <= start and end <= e and (s, e) != (start, end) for s, e in loops)


def _steady(rows: list[list[float]]) -> bool:
    """The last three iterations of a loop did the same work, floating-point work among it:
    more of them would only repeat it."""
    if len(rows) < 4:
        return False
    # (the reuse counters may alternate between iterations, a 64-B tile row re-reading
    # the other half of a line every second k step: they do not make the work differ)
    work = len(FIELDS) - len(_REUSE)
    d = [[b - a for a, b in zip(rows[i - 1][:work], rows[i][:work], strict=True)]
         for i in (-3, -2, -1)]
    return d[0] == d[1] == d[2] and d[2][_I["flops"]] > 0


_REGS = re.compile(r"%\w+")


def _first_uses(w: _Warp, ins: _Insn, step: int) -> None:
    """Close the pending global loads whose data this instruction reads."""
    reads = ins.args if ins.op in ("st", "red", "atom", "bar", "barrier") else ins.args[1:]
    for a in reads:
        for reg in _REGS.findall(a):
            issued = w.pending.pop(reg, None)
            if issued is not None:
                w.counters[_I["load_cover"]] += step - issued - 1
                w.counters[_I["covered_loads"]] += 1


def _shfl(w: _Warp, ins: _Insn, lanes: list[int]) -> None:
    args = list(ins.args)
    d = args[0].split("|")[0]
    mode = next((p for p in ins.parts if p in ("idx", "up", "down", "bfly")), "idx")
    src = {ln: w.val(args[1], ln) for ln in lanes}
    for ln in lanes:
        b = int(w.val(args[2], ln))
        other = {"idx": b, "up": ln - b, "down": ln + b, "bfly": ln ^ b}[mode] % WARP
        w.set(d, ln, src.get(other, src[ln]))
