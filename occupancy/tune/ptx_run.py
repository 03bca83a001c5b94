"""One warp run through a kernel's PTX (ptxsim): the lanes in lock step with per-lane program
counters, each instruction counted and executed, until the warp ends, MAX_STEPS, or a loop
that repeats itself says what one iteration does."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from occupancy.tune.ptx_alu import alu, shfl
from occupancy.tune.ptx_counters import COUNTER, FIELDS, Traffic, enclosed, loop_unit, steady
from occupancy.tune.ptx_parse import Insn, PtxError, parse_kernel
from occupancy.tune.ptx_warp import WARP, Warp

MAX_STEPS = 12_000  # warp instructions per run; fixed, no manifest or PTX number changes it
_FLOP = {"fma": 2, "add": 1, "sub": 1, "mul": 1, "mad": 2, "div": 1, "rcp": 1, "sqrt": 1,
         "rsqrt": 1, "ex2": 1, "lg2": 1, "min": 1, "max": 1, "neg": 0, "abs": 0}
_REGS = re.compile(r"%\w+")

def run_warp(ptx: str, entry: str, params: Sequence[float | int], block: Sequence[int],
             grid: Sequence[int], banks: int = 32, warp: int = 0, whole: bool = False,
             unroll: int = 1, first_block: bool = False,
             atomic_log: list[tuple[int, bool]] | None = None) -> Traffic:
    """Run one warp (0 by default) of the middle block of the grid (of block 0 where
    `first_block`); its traffic per unit (see Traffic). A loop that repeats itself ends the
    run early (its iteration is the unit) unless `whole`: then only MAX_STEPS does (a
    kernel without declared FLOPs has nothing that says how many iterations run).
    `unroll`: how many iterations of the hottest loop ptxas unrolled into one SASS body
    (see Warp). `atomic_log` receives the (address, floating-point) of each lane atomic to
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
    w = Warp(k, values, block, where, grid, banks, warp, unroll)
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
        c[COUNTER["steps"]] += 1
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
                    if not whole and steady(rows) and not enclosed(tgt, pc, loops):
                        break  # three identical iterations of an outermost loop doing FP work
            continue
        if op in ("ret", "exit", "trap"):
            for i in group:
                if w.lanes[i] in run:
                    pcs[i] = None
            continue
        if op in ("bar", "barrier"):
            c[COUNTER["barriers"]] += 1
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
            c[COUNTER["flops"]] += _FLOP[op] * len(run)
            if op in ("fma", "mad"):
                c[COUNTER["ffma"]] += 1
        if op == "shfl":
            shfl(w, ins, run)
            continue
        if flt and op in _FLOP:
            continue  # floating-point values never make an address: only their work counts
        alu(w, ins, run)
    unit, inner = loop_unit(c, finished, snaps, spans)
    if atomic_log is not None:
        atomic_log.extend(w.atomic_log)
    return Traffic(finished, len(w.lanes), **dict(zip(FIELDS, unit, strict=True)), inner_ffma=inner)


def _first_uses(w: Warp, ins: Insn, step: int) -> None:
    """Close the pending global loads whose data this instruction reads."""
    reads = ins.args if ins.op in ("st", "red", "atom", "bar", "barrier") else ins.args[1:]
    for a in reads:
        for reg in _REGS.findall(a):
            issued = w.pending.pop(reg, None)
            if issued is not None:
                w.counters[COUNTER["load_cover"]] += step - issued - 1
                w.counters[COUNTER["covered_loads"]] += 1
