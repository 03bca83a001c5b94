"""What the instructions that are not memory, branches or barriers do to a warp's lanes
(ptxsim): compares, selects, moves and conversions, integer and floating-point arithmetic,
and warp shuffles. Unknown instructions leave their destination at zero."""

from __future__ import annotations

import math

from occupancy.tune.ptx_parse import LOCAL_TAG, PTX_TYPES, SHARED_TAG, Insn
from occupancy.tune.ptx_warp import WARP, Warp, type_kind


def alu(w: Warp, ins: Insn, lanes: list[int]) -> None:
    """Run one ALU instruction on these lanes: its result into its destination register."""
    op, parts, args = ins.op, ins.parts, ins.args
    types = [p for p in parts if p in PTX_TYPES]
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
    """One lane's result of an arithmetic or logic op on its source values x (type t);
    0 for an op this module does not know."""
    bits = type_kind(t)[0]
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


def shfl(w: Warp, ins: Insn, lanes: list[int]) -> None:
    """shfl.sync: each lane reads the value of the lane its mode names (its own where that
    lane does not run the shuffle)."""
    args = list(ins.args)
    d = args[0].split("|")[0]
    mode = next((p for p in ins.parts if p in ("idx", "up", "down", "bfly")), "idx")
    src = {ln: w.val(args[1], ln) for ln in lanes}
    for ln in lanes:
        b = int(w.val(args[2], ln))
        other = {"idx": b, "up": ln - b, "down": ln + b, "bfly": ln ^ b}[mode] % WARP
        w.set(d, ln, src.get(other, src[ln]))
