"""One warp run through a kernel's PTX (ptxsim): the lanes in lock step with per-lane program
counters, each instruction counted and executed, until the warp ends, MAX_STEPS, or a loop
that repeats itself says what one iteration does (a run followed whole jumps through such
a loop instead: ptx_skip)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import cast

from occupancy.tune.ptx_alu import alu, shfl
from occupancy.tune.ptx_counters import COUNTER, FIELDS, Distinct, Traffic, enclosed, loop_unit, steady
from occupancy.tune.ptx_parse import Insn, Kernel, PtxError, parse_kernel
from occupancy.tune.ptx_skip import Skipper
from occupancy.tune.ptx_warp import WARP, Warp

MAX_STEPS = 12_000  # warp instructions per run; fixed, no manifest or PTX number changes it
_FLOP = {"fma": 2, "add": 1, "sub": 1, "mul": 1, "mad": 2, "div": 1, "rcp": 1, "sqrt": 1,
         "rsqrt": 1, "ex2": 1, "lg2": 1, "min": 1, "max": 1, "neg": 0, "abs": 0}
_REGS = re.compile(r"%\w+")

def run_warp(ptx: str, entry: str, params: Sequence[float | int], block: Sequence[int],
             grid: Sequence[int], banks: int = 32, warp: int = 0, whole: bool = False,
             unroll: int = 1, first_block: bool = False,
             atomic_log: list[tuple[int, bool]] | None = None, next_block: int = 0,
             merge: tuple[bool, ...] = (True, True), foreign: Mapping[int, int] | None = None,
             touched: dict[int, int] | None = None, along: int = 0,
             lds_words: dict[str, float] | None = None) -> Traffic:
    """Run one warp (0 by default) of the middle block of the grid (of block 0 where
    `first_block`); its traffic per unit (see Traffic). A loop that repeats itself ends the
    run early (its iteration is the unit) unless `whole`: then only MAX_STEPS does (a
    kernel without declared FLOPs has nothing that says how many iterations run).
    `unroll`: how many iterations of the hottest loop ptxas unrolled into one SASS body
    (see Warp). `atomic_log` receives the (address, floating-point) of each lane atomic to
    global memory, up to MAX_ATOMIC_LOG. `next_block`: the block that many after (before,
    negative) the middle one along grid axis `along` (x: 0), within the grid (1 along x: a
    second sample where a block is one warp).
    `merge`: whether ptxas merged scalar shared (loads, stores) into wide accesses (see
    Warp). `foreign`: per 32-B sector, the bytes another warp of the sample touches too,
    which weigh nothing in the warp's reuse distances (ptx_counters.Distinct); `touched`
    receives the bytes this warp touched, per sector; `lds_words` the 32-bit words its
    shared loads moved (Warp.lds_words). PtxError for PTX it cannot follow,
    whatever went wrong inside."""
    import struct

    if warp < 0 or warp * WARP >= math.prod(block):
        raise PtxError(f"{entry}: the block has no warp {warp}")
    try:
        return _run_warp(ptx, entry, params, block, grid, banks, warp, whole, unroll,
                         first_block, atomic_log, next_block, merge, foreign, touched, along,
                         lds_words)
    except PtxError:
        raise
    except (ArithmeticError, ValueError, IndexError, KeyError, TypeError, AttributeError,
            struct.error, RecursionError) as exc:
        raise PtxError(f"{entry}: cannot follow its PTX ({type(exc).__name__}: {exc})") from None


def _run_warp(ptx: str, entry: str, params: Sequence[float | int], block: Sequence[int],
              grid: Sequence[int], banks: int, warp: int, whole: bool, unroll: int,
              first_block: bool = False, atomic_log: list[tuple[int, bool]] | None = None,
              next_block: int = 0, merge: tuple[bool, ...] = (True, True),
              foreign: Mapping[int, int] | None = None,
              touched: dict[int, int] | None = None, along: int = 0,
              lds_words: dict[str, float] | None = None) -> Traffic:
    """run_warp's work: the kernel decoded, the warp placed in its block, run, and its
    counters reduced to the unit."""
    k = _parsed(ptx, entry)
    where = [0] * len(grid) if first_block else [max(0, (g - 1) // 2) for g in grid]
    if next_block and 0 <= along < len(where):
        where[along] = min(max(where[along] + int(next_block), 0), max(0, grid[along] - 1))
    w = Warp(k, _param_values(k, params), block, where, grid, banks, warp, unroll, merge)
    if foreign:
        w.reuse, w.reuse_l2 = Distinct(foreign), Distinct(foreign)
    walk = _LockStep(w, whole)
    finished = walk.run()
    at_max = not finished and walk.steps - walk.skipped >= MAX_STEPS
    unit, inner, phases = loop_unit(w.counters, finished, walk.snaps, walk.spans, walk.iters,
                                    walk.loops, at_max)
    if atomic_log is not None:
        atomic_log.extend(w.atomic_log)
    if touched is not None:
        touched.update(w.reuse.bytes)
    if lds_words is not None:
        lds_words.update(w.lds_words())
    return Traffic(finished, len(w.lanes), **dict(zip(FIELDS, unit, strict=True)), inner_ffma=inner,
                   phases=float(phases))


# a kernel's runs (warp 0, its unrolled rerun, the last warp, block 0) decode one PTX
_parsed = lru_cache(maxsize=4)(parse_kernel)


def _param_values(k: Kernel, params: Sequence[float | int]) -> dict[str, float | int]:
    """The launch's arguments by the entry's parameter names: floats where the PTX type is
    one, integers elsewhere, 0 for parameters past the arguments given."""
    names = [n for n, _ in k.params]
    values: dict[str, float | int] = {}
    for (name, t), v in zip(k.params, list(params) + [0] * (len(names) - len(params)),
                            strict=False):
        values[name] = float(v) if t.startswith("f") else int(v)
    return values


class _LockStep:
    """The warp's lanes in lock step: each has its program counter, and the lanes at the
    lowest one run its instruction together (the reconvergence rule for structured code).
    Each backward branch taken notes the counters (`snaps`) for loop_unit and, in a
    `whole` run, may skip ahead through the loop (ptx_skip). (Not in a run that stops at a
    steady loop: skipping its inner loops would only change which loop's iteration a cut
    run's unit is, a heuristic choice either way.)"""

    def __init__(self, w: Warp, whole: bool) -> None:
        self.w = w
        self.whole = whole
        self.pcs: list[int | None] = [0] * len(w.lanes)  # per lane; None: exited
        self.steps = 0  # the warp's instruction clock, skipped iterations included
        # steps that do not count toward MAX_STEPS: the iterations a skip jumped, and the
        # probes of a skip (undone after; ptx_skip.MAX_PROBE_STEPS bounds them)
        self.skipped = 0
        self.spent = 0
        self.snaps: dict[int, list[list[float]]] = {}  # loop start -> counters at each back edge
        self.spans: dict[int, int] = {}  # loop start -> its backward branch
        self.iters: dict[int, int] = {}  # loop start -> its back edges that a skip jumped
        self.loops = [(ins.label_target, i) for i, ins in enumerate(w.k.code)
                      if ins.op in ("bra", "brx") and ins.label_target is not None
                      and ins.label_target <= i]
        self.probing = False
        self.skip = Skipper(self) if whole else None

    def run(self) -> bool:
        """Step until every lane has exited (True), or until MAX_STEPS or a steady loop ends
        the run (False)."""
        while True:
            done = self.step()
            if done is not None:
                return done

    def step(self) -> bool | None:
        """One warp instruction (or the exit of lanes that ran off the code): True where every
        lane has exited, False where MAX_STEPS or a steady loop ends the run, else None."""
        w, code = self.w, self.w.k.code
        pcs = self.pcs
        if None in pcs:
            live = [p for p in pcs if p is not None]
            if not live:
                return True
            pc = min(live)
        else:
            pc = min(cast(list[int], pcs))
        if self.steps - self.skipped >= MAX_STEPS:
            return False
        if pc >= len(code):  # ran off the end of the code: those lanes are done
            self.pcs = [None if p == pc else p for p in pcs]
            return None
        ins = code[pc]
        n = len(pcs)  # lane i is w.lanes[i] == i
        if pcs.count(pc) == n:  # the warp together (the usual case)
            group = list(range(n))
            self.pcs = [pc + 1] * n
        else:
            group = [i for i, p in enumerate(pcs) if p == pc]
            for i in group:
                pcs[i] = pc + 1
        run = self._guarded(ins, group)
        self.steps += 1
        w.counters[COUNTER["steps"]] += 1
        if not run:
            return None
        if w.pending:
            _first_uses(w, ins, self.steps)
        if ins.op in ("bra", "brx"):
            if self._branch(ins, pc, group, run):
                return False  # three identical iterations of an outermost loop doing FP work
        elif ins.op in ("ret", "exit", "trap"):
            for i in group:
                if w.lanes[i] in run:
                    self.pcs[i] = None
        else:
            _execute(w, ins, pc, run, self.steps)
        return None

    def _guarded(self, ins: Insn, lanes: list[int]) -> list[int]:
        """The lanes whose guard predicate lets the instruction run (all without one)."""
        if ins.guard is None:
            return lanes
        keep = self.w.vals(ins.guard, lanes, "pred")
        return [ln for ln, v in zip(lanes, keep, strict=True) if bool(v) != ins.negate]

    def _branch(self, ins: Insn, pc: int, group: list[int], run: list[int]) -> bool:
        """The lanes that take the branch go to its target. Taken backward, it ends an
        iteration of a loop, whose counters are noted, and a `whole` run may skip ahead
        through the loop; True where that loop, an outermost one, has repeated steadily and
        the run may stop (never for a `whole` run)."""
        tgt = ins.label_target
        if tgt is None:
            return False
        for i in group:
            if self.w.lanes[i] in run:
                self.pcs[i] = tgt
        if tgt > pc:
            return False
        rows = self.snaps.setdefault(tgt, [])
        self.spans[tgt] = pc
        rows.append(list(self.w.counters))
        if self.skip is not None and not self.probing:
            self.skip.back_edge(tgt)
        return not self.whole and steady(rows) and not enclosed(tgt, pc, self.loops)


def _execute(w: Warp, ins: Insn, pc: int, run: list[int], step: int) -> None:
    """An instruction other than a branch or an exit, on the lanes that run it: what it
    counts (barriers, memory accesses, floating-point work) and what it computes."""
    op = ins.op
    c = w.counters
    if op in ("bar", "barrier"):
        c[COUNTER["barriers"]] += 1
        return
    if op in ("ld", "ldu", "st", "atom", "red", "cp") and ins.args:
        if op == "cp" and "async" not in ins.parts:
            return
        if w.memory(pc, ins, run) and op in ("ld", "ldu"):
            for reg in _REGS.findall(ins.args[0]):
                w.pending[reg] = step
        if op in ("ld", "ldu", "atom"):
            w.load_value(ins, run)
        return
    flt = any(p in ("f32", "f64", "f16") for p in ins.parts)
    if flt and op in _FLOP:
        c[COUNTER["flops"]] += _FLOP[op] * len(run)
        if op in ("fma", "mad"):
            c[COUNTER["ffma"]] += 1
    if op == "shfl":
        shfl(w, ins, run)
        return
    if flt and op in _FLOP:
        return  # floating-point values never make an address: only their work counts
    alu(w, ins, run)


def _first_uses(w: Warp, ins: Insn, step: int) -> None:
    """Close the pending global loads whose data this instruction reads."""
    reads = ins.args if ins.op in ("st", "red", "atom", "bar", "barrier") else ins.args[1:]
    for a in reads:
        for reg in _REGS.findall(a):
            issued = w.pending.pop(reg, None)
            if issued is not None:
                w.counters[COUNTER["load_cover"]] += step - issued - 1
                w.counters[COUNTER["covered_loads"]] += 1
