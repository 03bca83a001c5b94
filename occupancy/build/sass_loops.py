"""The SASS of a compiled kernel (`nvdisasm -c` output): the instruction mix of its hottest
loop, what the time model reads for the issue side (tune/model.py). Standard library only;
the text may come from a hostile cubin, and nothing in it is run or trusted beyond counting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from occupancy.build.sass_pipes import PIPE_KEYS, pipe_key

_SASS_FUNC = re.compile(r"^\.text\.(\S+):\s*$")
_SASS_LABEL = re.compile(r"^(\.L_x_\d+):\s*$")
_SASS_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?"
                        r"(?:.*?`\((\.L_x_\d+)\))?")
COUNTED_KEYS = ("total", "ffma", "fp32", "lds_wavefronts", "lds_scalar", "sts_wavefronts", "ldg",
                "stg", "bar", "div_ffma", "uldc", "ldc3", "warp_wait", "reg_reads", *PIPE_KEYS)
# `lds_scalar`: the loop's shared loads of 32 bits or less, beside `lds_wavefronts` (the 32-bit
# words all its shared loads move): where ptxas kept a load scalar that steps one element
# an iteration of the loop it unrolled, ptxsim must not merge it (tune/traffic.py)
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
# + 0x8]`: a loop walking the table, every lane at the same entry); `ldc3`: reads of it
# through a register index (`LDC.64 R6, c[0x3][R6]`, the same walk where ptxas kept the
# index in a register). Where such reads queue behind the immediate constant cache's misses
# the model prices them (tune/constwalk.py; docs/model.md items 29-30). sm_75-sm_90's forms:
# nvcc 13 reads the table with LDCU on sm_100 and sm_120, which is not measured or counted.
_ULDC_INDEXED = re.compile(r"c\[0x3\]\[\s*UR")
_LDC_INDEXED = re.compile(r"c\[0x3\]\[\s*R\d")
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
# `reg_reads`: the clocks a pass of the loop loses reading the FFMAs' source registers. From
# Volta on the register file has two banks (register number mod 2), each giving one register
# a clock to an instruction's operands; an FFMA's sources in one bank are read one after the
# other, and the next instruction waits where it needs a bank in a clock still taken. A
# source is read from the reuse cache instead where it is the register last marked `.reuse`
# in its bank (any operand slot). Measured on the H200 (bench/results/h200-rbank-ffma:
# bench/rbank/ffma.cu's loop with its registers rewritten, one warp a scheduler): three
# sources in one bank 3.08-3.12 clocks an FFMA, two in one 2.09, whatever the destination's
# bank and the register number mod 4; real loops' FFMAs replayed alone 1.24-1.65. On all 35
# loops timed, this count is within -0.06 to +0.19 clocks an FFMA of the measured less ~0.07
# of loop overhead (docs/model.md item 42). Other instructions take their issue slot and no
# bank clocks here (not measured).
REGISTER_BANKS = 2
_MEMORY_LOADS = ("LD", "ATOM", "RED", "TEX", "TLD", "SU")
_SOURCE_REG = re.compile(r"^[-|!~]*R(\d+|Z)\b(\.reuse)?")
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
        mix.update(_timed(body, cyclic=bool(loops)))
        for key, wide in (("wide_lds", "LDS"), ("wide_sts", "STS")):
            mix[key] = sum(op == wide and _width(suffix) > 1 for _, op, suffix, _, _ in insns)
        nested = {i[0] for b in _nested_ffma_loops(body, loops) for i in b}
        inner = [i for i in body if i[0] in nested]
        mix.update({f"inner_{k}": v for k, v in _timed(inner, cyclic=True).items()})
        out[fn] = tuple(mix.items())
    return out


_Insn = tuple[int, str, str | None, str | None, str]


def _timed(body: Sequence[_Insn], cyclic: bool) -> dict[str, int]:
    """The COUNTED_KEYS of a pass of `body` (`cyclic`: a loop), with the clocks its FFMAs
    wait for the register banks and the clocks a lone warp waits, the banks walked once."""
    banks = register_read_waits(body, cyclic)
    mix = _counts(body)
    mix["reg_reads"] = sum(banks)
    mix["warp_wait"] = _lone_warp_wait(body, cyclic, banks)
    return mix


def _counts(body: Sequence[_Insn]) -> dict[str, int]:
    """The COUNTED_KEYS of these instructions, each counted once (the register banks' and
    the lone warp's clocks are _timed's)."""
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
            mix["lds_scalar"] += op == "LDS" and _width(suffix) == 1
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
        elif op == "LDC" and _LDC_INDEXED.search(rest):
            mix["ldc3"] += 1
        elif (key := pipe_key(op)) is not None:  # the narrow pipes' (sass_pipes)
            mix[key] += 1
    mix["div_ffma"] = min(mix["div_ffma"], mix["ffma"])
    return mix


def register_read_waits(body: Sequence[_Insn], cyclic: bool = True) -> list[int]:
    """The clocks each instruction of a pass of `body` waits for the register banks (see
    REGISTER_BANKS), in order: a loop is passed twice and the second pass counted (the
    reuse cache and the banks' last clocks carry over the back edge), straight-line code
    once. An FFMA's three sources only: a longer operand list (a hostile text) reads no more."""
    decoded = [(op, [source_register(o) for o in rest.split(";")[0].split(",")[1:4]])
               for _, op, _, _, rest in body]
    taken: set[tuple[int, int]] = set()
    cached: dict[int, int] = {}
    t = 0
    waits: list[int] = []
    for _ in range(2 if cyclic else 1):
        waits = []
        for op, sources in decoded:
            if op != "FFMA":
                waits.append(0)
                t += 1
                continue
            reads = [s[0] for s in sources if s is not None and cached.get(s[0] % REGISTER_BANKS) != s[0]]
            start = t
            while True:  # the first clock at which every read finds its bank free
                plan: set[tuple[int, int]] = set()
                for r in reads:
                    clock = t
                    while (r % REGISTER_BANKS, clock) in plan:
                        clock += 1
                    plan.add((r % REGISTER_BANKS, clock))
                if not plan & taken:
                    break
                t += 1
            taken |= plan
            taken = {x for x in taken if x[1] >= t - 1}
            cached.update({s[0] % REGISTER_BANKS: s[0] for s in sources if s is not None and s[1]})
            waits.append(t - start)
            t += 1
    return waits


def source_register(operand: str) -> tuple[int, bool] | None:
    """(register, marked .reuse) of one operand of `nvdisasm` text (`R3`, `-R3.reuse`, `|R3|`),
    or None (RZ, a constant, a literal)."""
    m = _SOURCE_REG.match(operand.strip())
    if m is None or m.group(1) == "Z":
        return None
    return int(m.group(1)), bool(m.group(2))


def _lone_warp_wait(body: Sequence[_Insn], cyclic: bool, banks: Sequence[int]) -> int:
    """Clocks one warp alone waits for the results it reads in a pass of `body` (see
    SHARED_LOAD_CLOCKS): in order, one instruction a clock, each instruction that reads a
    register held until the LDS/LDSM or arithmetic instruction that writes it is done. A
    loop is passed three times and the third pass measured (a load for the next pass is in
    flight around the back edge); straight-line code once. `banks`: each instruction's
    clocks waiting for the register banks (register_read_waits), during which it waits for
    its results too."""
    if not body:
        return 0
    decoded = [(op, suffix, *_operands(rest, op), wait) for (_, op, suffix, _, rest), wait
               in zip(body, banks, strict=True)]
    ready: dict[int, int] = {}
    t = 0
    starts = []
    for _ in range(3 if cyclic else 1):
        starts.append(t)
        for op, suffix, writes, reads, wait in decoded:
            # the bank clocks and the wait for a result run at the same time
            t = max(t + wait, *(ready.get(r, 0) for r in reads), 0) + 1
            if op in ("LDS", "LDSM") and writes:
                ready.update(dict.fromkeys(range(writes[0], writes[0] + _width(suffix)),
                                           t - 1 + SHARED_LOAD_CLOCKS))
            elif op.startswith(_MEMORY_LOADS):
                for r in writes:
                    ready.pop(r, None)
            else:
                ready.update(dict.fromkeys(writes, t - 1 + ALU_RESULT_CLOCKS))
    passed = t - starts[-1]
    return max(0, passed - len(decoded) - sum(d[-1] for d in decoded))


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
