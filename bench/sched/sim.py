"""A sub-partition's scheduler issuing a loop's SASS over its warps, from the compiler's own
control bits: a probe for issue 18 (docs/model.md item 34), not part of the model.

The time model prices a loop's issue side in closed form (the instruction count or the
busiest pipe, FP32_EFFICIENCY, a lone warp's wait shared as f^w, ISSUE_LSU_OVERLAP), and
the calibration part and SGEMM_CUDA's GEMMs disagree on its constants (items 31 and 34).
This probe reads what ptxas decided instead: every sm_70+ instruction is 128 bits whose top
23 (105-127) hold its control field, which `nvdisasm -c -hex` prints as the second 64-bit
word of each instruction:

  stall (4 bits): clocks before the warp's next instruction may issue; yield (1);
  write scoreboard (3; 7 = none) a variable-latency instruction sets when its result lands;
  read scoreboard (3) it sets when its sources have been read; wait mask (6) of the
  scoreboards the instruction waits on; reuse (4): operand slots kept in the reuse cache.

`simulate` issues one loop on one sub-partition holding W warps: each warp in order, at most
one instruction a clock over them (the warp that issued last first, else the one ready
longest), an instruction when its warp's stall count has passed, its scoreboards have
cleared and its pipe is free. Assumed (the constants below): a shared load's result
SHARED_LOAD_CLOCKS after issue, other variable-latency results OTHER_LOAD_CLOCKS (a global
load's: the caller sets it, tile_loop.py to the L2's or DRAM's latency); a read scoreboard
READ_SB_CLOCKS; the FMA pipe 1 clock an FP32 instruction and 2 an IMAD, the ALU pipe
ALU_CLOCKS, the load/store unit LSU_CLOCKS a wavefront (an SM's one a clock shared by 4
sub-partitions: bench/results/h200-pipemix): a shared access its width's wavefronts, times
SHARED_WAVEFRONT_SCALE where the caller knows its bank conflicts, a global load one a
128-byte line (its width where coalesced, GLOBAL_LINES_PER_LOAD where counted); MUFU 8; a
register read stalls a clock for each source beyond the first in one of BANKS banks
(register number mod 2) that the reuse cache does not hold.
A barrier releases when the block's warps on this sub-partition reach it.

Usage: python bench/sched/sim.py CUBIN W [W ...] [--inner] [--seeds N [--jitter J]] [--iters I]
(issued instructions a clock, per loop; --inner: the innermost loop with FFMAs; --seeds N:
the mean of N seeds, ready warps in a random order; --jitter J: each shared load up to J
clocks late; --iters: iterations a warp runs, 16 unless given)
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SHARED_LOAD_CLOCKS = 30
OTHER_LOAD_CLOCKS = 30
READ_SB_CLOCKS = 4
ALU_CLOCKS = 2
LSU_CLOCKS = 4
BANKS = 2
SHARED_WAVEFRONT_SCALE = 1.0  # ptxsim's shared wavefronts over the widths' (bank conflicts)
GLOBAL_LINES_PER_LOAD: float | None = None  # ptxsim's lines a warp load; None: its width

_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x[0-9a-f]{16} \*/")
_HI = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/")
_FUNC = re.compile(r"^\s*\.text\.(\S+):")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_SRC = re.compile(r"^-?\|?R(\d+)\b")
_NO_PIPE = ("BRA", "NOP", "EXIT", "ULDC", "UIADD3", "UMOV", "UISETP", "S2UR", "ULEA", "ULOP3")
_MEMORY = ("LDS", "STS", "LDSM", "LDG", "STG", "LD", "ST", "ATOMS", "ATOM", "RED", "BAR")


@dataclass(frozen=True)
class Insn:
    addr: int
    op: str  # the mnemonic with its suffixes
    text: str
    stall: int
    wbar: int
    rbar: int
    wait: int
    reuse: int
    srcs: tuple[int, ...]  # registers in operand slots a, b, c (-1: none)
    target: str | None  # a branch's label

    @property
    def base(self) -> str:
        return self.op.split(".")[0]


def parse(sass: str) -> tuple[dict[str, list[Insn]], dict[str, int]]:
    """Per function, its instructions with their control fields; and every label's address."""
    funcs: dict[str, list[Insn]] = {}
    labels: dict[str, int] = {}
    cur: str | None = None
    pending: list[str] = []
    lines = sass.splitlines()
    for i, line in enumerate(lines):
        if m := _FUNC.match(line):
            cur, pending = m.group(1), []
            funcs[cur] = []
        elif m := _LABEL.match(line):
            pending.append(m.group(1))
        elif (m := _INSN.match(line)) and cur is not None and i + 1 < len(lines) \
                and (hi := _HI.match(lines[i + 1])):
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[lab] = addr
            pending = []
            text = m.group(2)
            body = re.sub(r"^@!?U?P\w+\s+", "", text)
            op = body.split()[0]
            ops = [o.strip() for o in body[len(op):].split(",")]
            srcs = tuple(int(s.group(1)) if (s := _SRC.match(o)) else -1 for o in ops[1:4])
            ctrl = int(hi.group(1), 16) >> 41
            target = re.search(r"`\((\.L_x_\d+)\)", text)
            funcs[cur].append(Insn(addr, op, text, ctrl & 0xF, ctrl >> 5 & 7, ctrl >> 8 & 7,
                                   ctrl >> 11 & 0x3F, ctrl >> 17 & 0xF, srcs,
                                   target.group(1) if target else None))
    return funcs, labels


def loops(insns: list[Insn], labels: dict[str, int]) -> list[list[Insn]]:
    """Every backward branch's body, from its target to the branch."""
    return [[i for i in insns if labels[b.target] <= i.addr <= b.addr] for b in insns
            if b.base == "BRA" and b.target in labels and labels[b.target] < b.addr]


def hottest_loop(insns: list[Insn], labels: dict[str, int]) -> list[Insn]:
    """The loop with the most FFMAs, then the longest."""
    return max(loops(insns, labels), default=[],
               key=lambda b: (sum(i.base == "FFMA" for i in b), len(b)))


def pipe_of(ins: Insn) -> tuple[str, int]:
    """The pipe an instruction takes and the clocks it holds it."""
    b = ins.base
    if b in ("FFMA", "FMUL", "FADD", "HFMA2"):
        return "fma", 1
    if b in ("IMAD", "IMUL") and ".MOV" not in ins.op:
        return "fma", 2
    if b in _MEMORY:
        width = 4 if ".128" in ins.op else 2 if ".64" in ins.op else 1
        if b in ("LDS", "STS"):
            return "lsu", max(1, round(LSU_CLOCKS * width * SHARED_WAVEFRONT_SCALE))
        if b == "LDG" and GLOBAL_LINES_PER_LOAD:  # one wavefront a 128-byte line
            return "lsu", max(1, round(LSU_CLOCKS * GLOBAL_LINES_PER_LOAD))
        if b in ("LDG", "STG"):  # a coalesced warp access: one wavefront a 128-byte line
            return "lsu", LSU_CLOCKS * width
        return "lsu", LSU_CLOCKS
    if b == "MUFU":
        return "mufu", 8
    if b in _NO_PIPE:
        return "", 1
    return "alu", ALU_CLOCKS


def bank_stalls(prev: Insn, ins: Insn) -> int:
    """Clocks to read the sources: one for each beyond the first in a bank, less those the
    previous instruction left in the reuse cache (same slot, same register)."""
    if ins.base in _MEMORY or ins.base in _NO_PIPE:
        return 0
    regs = {r for k, r in enumerate(ins.srcs) if r >= 0 and r != 255
            and not (k < len(prev.srcs) and prev.reuse >> k & 1 and prev.srcs[k] == r)}
    per_bank = [sum(r % BANKS == b for r in regs) for b in range(BANKS)]
    return sum(max(0, n - 1) for n in per_bank)


def simulate(body: list[Insn], warps: int, iters: int = 16, block_warps: int = 0,
             jitter: int = 0, seed: int | None = None) -> float:
    """Clocks a warp-iteration of the loop `body` on a sub-partition holding `warps` warps,
    in the steady state: the end of `iters` iterations of every warp less that of half as
    many, over the warp-iterations between. With a `seed`, warps ready at the same clock
    are taken in a random order and a shared load's result comes up to `jitter` clocks late
    (uniform), both from that seed (docs/model.md item 45); without one, in order and on
    time (`jitter` needs a seed)."""
    if jitter and seed is None:
        raise ValueError("jitter needs a seed")
    half = max(1, iters // 2)
    return (_run(body, warps, iters, block_warps, jitter, seed)
            - _run(body, warps, half, block_warps, jitter, seed)) / (warps * (iters - half))


def _run(body: list[Insn], warps: int, iters: int, block_warps: int, jitter: int = 0,
         seed: int | None = None) -> int:
    """The clock at which every warp has run `iters` iterations of `body`."""
    rng = random.Random(seed) if seed is not None else None
    n = len(body)
    pc, done, ready = [0] * warps, [0] * warps, [0] * warps
    scoreboard = [[0] * 6 for _ in range(warps)]
    pipe_free: dict[str, int] = {}
    at_barrier: set[int] = set()
    group = block_warps or warps
    last, t = -1, 0
    while any(d < iters for d in done):
        others = list(range(warps))
        if rng is not None:
            rng.shuffle(others)  # sorted() keeps this order among warps ready at one clock
        order = ([last] if last >= 0 else []) + sorted(others, key=lambda x: ready[x])
        for w in order:
            if done[w] >= iters or ready[w] > t or w in at_barrier:
                continue
            ins = body[pc[w]]
            pipe, clocks = pipe_of(ins)
            if any(scoreboard[w][b] > t for b in range(6) if ins.wait >> b & 1) \
                    or (pipe and pipe_free.get(pipe, 0) > t):
                continue
            if pipe:
                pipe_free[pipe] = t + clocks
            ready[w] = t + max(1, ins.stall) + bank_stalls(body[pc[w] - 1], ins)
            if ins.wbar != 7:
                late = rng.randint(0, jitter) if rng is not None and jitter > 0 else 0
                scoreboard[w][ins.wbar] = t + (SHARED_LOAD_CLOCKS + late
                                               if ins.base in ("LDS", "LDSM") else OTHER_LOAD_CLOCKS)
            if ins.rbar != 7:
                scoreboard[w][ins.rbar] = max(scoreboard[w][ins.rbar], t + READ_SB_CLOCKS)
            if ins.base == "BAR":
                at_barrier.add(w)
                first = w // group * group
                members = [x for x in range(first, min(first + group, warps)) if done[x] < iters]
                if all(x in at_barrier for x in members):
                    at_barrier.difference_update(members)
            pc[w] = (pc[w] + 1) % n
            done[w] += pc[w] == 0
            last = w
            t += 1
            break
        else:  # nothing could issue: on to the next clock at which something changes
            later = [x for x in (*ready, *pipe_free.values(), *(c for sb in scoreboard for c in sb))
                     if x > t]
            t = min(later, default=t + 1)
    return t


def innermost_ffma_loop(insns: list[Insn], labels: dict[str, int]) -> list[Insn]:
    """The shortest loop with FFMAs (a k loop ptxas kept rolled inside its tile loop)."""
    return min((b for b in loops(insns, labels) if any(i.base == "FFMA" for i in b)),
               key=len, default=[])


def main(argv: list[str]) -> None:
    import argparse
    sys.path.insert(0, str(ROOT))
    from occupancy.build.compilers import nvdisasm_path
    ap = argparse.ArgumentParser(prog="sim.py", description="Issue a cubin's loop over W warps.")
    ap.add_argument("cubin")
    ap.add_argument("warps", nargs="+", type=int, help="warps on the sub-partition (W)")
    ap.add_argument("--inner", action="store_true",
                    help="the innermost loop with FFMAs, not the hottest")
    ap.add_argument("--seeds", type=int, default=0,
                    help="average this many seeds, ready warps in a random order (0: in order)")
    ap.add_argument("--jitter", type=int, default=0,
                    help="with --seeds: each shared load up to this many clocks late")
    ap.add_argument("--iters", type=int, default=16, help="iterations a warp runs")
    a = ap.parse_args(argv)
    if a.jitter < 0 or a.seeds < 0 or (a.jitter and not a.seeds) or a.iters < 2 \
            or min(a.warps) < 1:
        ap.error("--jitter and --seeds take counts >= 0, --jitter needs --seeds, --iters >= 2, W >= 1")
    sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", "-hex", a.cubin], check=True,
                          capture_output=True, text=True).stdout
    funcs, labels = parse(sass)
    seeds = list(range(a.seeds)) or [None]
    for fn, insns in funcs.items():
        body = innermost_ffma_loop(insns, labels) if a.inner else hottest_loop(insns, labels)
        if body:
            rates = [len(body) * len(seeds) / sum(simulate(body, w, a.iters, jitter=a.jitter, seed=s)
                                                  for s in seeds) for w in a.warps]
            print(fn, f"{len(body)} instructions",
                  " ".join(f"W={w}: {r:.2f}" for w, r in zip(a.warps, rates, strict=True)))


if __name__ == "__main__":
    main(sys.argv[1:])
