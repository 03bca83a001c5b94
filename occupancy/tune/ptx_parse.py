"""PTX text decoded into a kernel the emulator can run (ptxsim): one entry's parameters,
instructions, labels, shared and local symbols, and the scalar shared accesses ptxas merges
into vector ones. Also the emulator's address space, which the symbols are laid out in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from occupancy.build.names import split_top

MAX_PTX_BYTES = 8 << 20
# The emulator's address space: shared and local memory in windows of their own (generic
# addresses carry the tag, as after cvta), the launch's arrays far apart below them.
SHARED_TAG = 1 << 56  # generic addresses of shared memory (cvta.shared)
LOCAL_TAG = 2 << 56
ARRAY_STRIDE = 1 << 36  # array i lives at (i + 1) << 36: aligned, never overlapping


class PtxError(ValueError):
    """PTX the emulator cannot run (no such entry, or not PTX at all)."""


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)")
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$.]+)(\[\d+\])?")
_DECL = re.compile(r"^\.(shared|local)\s+(?:\.align\s+(\d+)\s+)?\.\w+\s+([\w$.]+)(?:\[(\d*)\])?")
_LABEL = re.compile(r"^([\w$.]+):\s*")
_SCOPE = re.compile(r"^\s*[{}]\s*$", re.M)
# a memory operand, [base] or [base+offset]: base a register or a symbol
MEM_OPERAND = re.compile(r"^\[\s*([%\w$.]+)\s*(?:\+\s*(-?\s*(?:0x[0-9a-fA-F]+|\d+)))?\s*\]$")
PTX_TYPES = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64",
             "f16", "f32", "f64", "pred", "bf16", "f16x2", "b128"}


@dataclass
class Insn:
    guard: str | None
    negate: bool
    op: str
    parts: tuple[str, ...]
    args: tuple[str, ...]
    label_target: int | None = None


@dataclass
class Kernel:
    name: str
    params: list[tuple[str, str]]  # (name, type)
    code: list[Insn]
    labels: dict[str, int]
    symbols: dict[str, int]  # shared and local symbols -> address
    groups: dict[int, tuple[int, int, int]]  # insn -> (leader insn, bytes, offset from leader)


def parse_kernel(ptx: str, entry: str) -> Kernel:
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
    code: list[Insn] = []
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
        code.append(Insn(guard, negate, parts[0], parts[1:], tuple(split_top(rest, "[{", "]}"))))
    for name, align in dynamic:  # extern __shared__ arrays start after the static ones
        symbols[name] = -(-shared_top // align) * align
    for ins in code:
        if ins.op in ("bra", "brx") and ins.args:
            ins.label_target = labels.get(ins.args[-1])
    return Kernel(entry, params, code, labels, symbols,
                   _vector_groups(code, set(labels.values())))


def _vector_groups(code: list[Insn], starts: set[int]) -> dict[int, tuple[int, int, int]]:
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
                and access_bytes(ins.parts) == 4:
            mem = MEM_OPERAND.match(ins.args[1] if ins.op == "ld" else ins.args[0])
            if mem and mem.group(1).startswith("%"):
                off = int(mem.group(2).replace(" ", ""), 0) if mem.group(2) else 0
                pending.setdefault((ins.op, mem.group(1)), {}).setdefault(off, i)
        if ins.op not in ("st", "red", "bar", "barrier", "bra") and ins.args \
                and any(base == ins.args[0] for _, base in pending):
            flush()  # the base register changes: later offsets are from another address
    flush()
    return groups


@lru_cache(maxsize=256)
def access_bytes(parts: tuple[str, ...]) -> int:
    """Bytes one lane moves in an access of these type parts (.v2/.v4 vectors included)."""
    t = next((p for p in reversed(parts) if p in PTX_TYPES), "b32")
    n = int(re.sub(r"\D", "", t) or 32) // 8 if t != "pred" else 1
    vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
    return max(n, 1) * vec
