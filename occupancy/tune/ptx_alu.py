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
        _setp(w, parts, args, t, lanes)
        return
    if op == "selp":  # each lane reads only the operand its predicate picks
        p = w.vals(args[3], lanes, "pred")
        on = [ln for ln, c in zip(lanes, p, strict=True) if c]
        off = [ln for ln, c in zip(lanes, p, strict=True) if not c]
        got = dict(zip(on, w.vals(args[1], on, t), strict=True)) if on else {}
        got.update(zip(off, w.vals(args[2], off, t), strict=True) if off else {})
        w.set_lanes(d, lanes, [got[ln] for ln in lanes], t)
        return
    if op in ("mov", "cvta", "cvt"):
        _move(w, op, parts, args, types, t, lanes)
        return
    wide = "wide" in parts
    src_t = t
    dst_t = (t[0] + str(2 * int(t[1:]))) if wide and t[1:].isdigit() else t
    flt = t.startswith("f")
    cols = [w.vals(a, lanes, "pred" if a.lstrip("!").startswith("%p") and op in
                   ("and", "or", "xor", "not") and t == "pred" else src_t) for a in args[1:]]
    out: list[float | int] = []
    for x in zip(*cols, strict=True) if cols else ([] for _ in lanes):
        try:
            v = _apply(op, parts, list(x), src_t, flt)
        except (ArithmeticError, ValueError, IndexError):
            v = 0.0 if flt else 0
        out.append(v)
    w.set_lanes(d, lanes, out, dst_t)


_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
            "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
            "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b, "hi": lambda a, b: a > b,
            "hs": lambda a, b: a >= b, "equ": lambda a, b: a == b, "neu": lambda a, b: a != b,
            "ltu": lambda a, b: a < b, "leu": lambda a, b: a <= b, "gtu": lambda a, b: a > b,
            "geu": lambda a, b: a >= b, "num": lambda a, b: True, "nan": lambda a, b: False}


def _setp(w: Warp, parts: tuple[str, ...], args: tuple[str, ...], t: str,
          lanes: list[int]) -> None:
    """setp: the comparison of each lane's two values (and-ed, or-ed or xor-ed with a third
    predicate where the instruction names one) into its one or two predicates."""
    cmp_ = _COMPARE.get(parts[0], lambda a, b: False)
    targets = args[0].split("|")
    xs, ys = w.vals(args[1], lanes, t), w.vals(args[2], lanes, t)
    if w.compares is not None:
        w.compares.append((cmp_, lanes, xs, ys))
    res = [bool(cmp_(a, b)) for a, b in zip(xs, ys, strict=True)]
    if len(args) > 3 and parts[1] in ("and", "or", "xor"):
        neg = args[3].startswith("!")
        cs = [bool(c) != neg for c in w.vals(args[3].lstrip("!"), lanes, "pred")]
        how = parts[1]
        res = [(r and c) if how == "and" else (r or c) if how == "or" else r != c
               for r, c in zip(res, cs, strict=True)]
    w.set_lanes(targets[0], lanes, [int(r) for r in res], "pred")
    if len(targets) > 1:
        w.set_lanes(targets[1], lanes, [int(not r) for r in res], "pred")


def _move(w: Warp, op: str, parts: tuple[str, ...], args: tuple[str, ...],
          types: list[str], t: str, lanes: list[int]) -> None:
    """mov, cvta (into and out of the shared and local windows) and cvt (a float to an
    integer by the rounding its modifier names)."""
    src_t = types[-1] if op == "cvt" and len(types) > 1 else t
    dst_t = types[0] if op == "cvt" and types else t
    d = args[0]
    if d.startswith("{") or len(args) < 2:
        return
    vs = w.vals(args[1], lanes, src_t)
    if op == "cvta":
        tag = SHARED_TAG if "shared" in parts else LOCAL_TAG if "local" in parts else 0
        vs = [int(v) - tag for v in vs] if "to" in parts else [int(v) + tag for v in vs]
    elif op == "cvt" and not dst_t.startswith("f"):
        vs = [_to_int(v, parts) if isinstance(v, float) else v for v in vs]
    w.set_lanes(d, lanes, vs, dst_t)


def _to_int(v: float, parts: tuple[str, ...]) -> int:
    """cvt of a float to an integer, by the rounding its modifier names (0 if not finite)."""
    if not math.isfinite(v):
        return 0
    return (math.floor(v) if "rmi" in parts else math.ceil(v) if "rpi" in parts
            else round(v) if "rni" in parts else math.trunc(v))


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
    src = dict(zip(lanes, w.vals(args[1], lanes), strict=True))
    out = []
    for ln, v in zip(lanes, w.vals(args[2], lanes), strict=True):
        b = int(v)
        other = {"idx": b, "up": ln - b, "down": ln + b, "bfly": ln ^ b}[mode] % WARP
        out.append(src.get(other, src[ln]))
    w.set_lanes(d, lanes, out)
