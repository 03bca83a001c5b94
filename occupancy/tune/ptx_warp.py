"""One warp of a block, as ptxsim runs it: its lanes' registers and special registers, the
values of an instruction's operands, and the memory accesses it counts (shared wavefronts
with bank conflicts, global lines and sectors, re-read lines, global atomics)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from typing import Any

from occupancy.core.banks import bank_conflicts
from occupancy.tune.ptx_counters import COUNTER, FIELDS, Distinct
from occupancy.tune.ptx_parse import MEM_OPERAND, PTX_TYPES, SHARED_TAG, Insn, Kernel, access_bytes

MAX_ATOMIC_LOG = 1024  # lane atomics whose addresses a run keeps (run_warp's atomic_log)
# A line the warp loads again after moving at most this many bytes: the previous access
# just touched it (a row that does not start on a 128-B line has each warp load straddle
# two lines, the second of them loaded again by the next load: llm.c's softmax at C =
# 50,257). 1 KB a warp times every warp the GPU can hold is under its L2 on every profile
# shipped (the tightest, P100 and M2050, at 7/8 of it; tests/test_tile.py), so such a
# re-read never goes to DRAM; tune/model.reread_miss_bytes leaves them out. A re-read a
# little further apart (a float4 walk over two rows off their lines, 1,280 B) still counts
# as far: 1 KB is the bound every profile holds, not each GPU's own.
NEAR_REREAD_BYTES = 1024
WARP = 32
# count_global's arguments: lane addresses, bytes per lane, store, atomic (float or not),
# evict_first (the .cs cache operator)
GlobalAccess = tuple[list[int], int, bool, bool | None, bool]
# a setp's comparison, the lanes that ran it, and their two operands
Compare = tuple[Callable[[Any, Any], bool], list[int], list[float | int], list[float | int]]


@cache
def type_kind(t: str) -> tuple[int, bool, bool]:
    """(bits, signed, float) of a PTX type name."""
    if t.startswith("f") or t == "bf16":
        return int(re.sub(r"\D", "", t) or 32), True, True
    return int(re.sub(r"\D", "", t) or 32), t.startswith("s"), False


def _wrap(v: int, bits: int, signed: bool) -> int:
    """v as a register of that many bits holds it, two's complement where signed."""
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def _ints(raw: Sequence[float | int], bits: int, signed: bool) -> list[float | int]:
    """Each value as an integer register of that many bits holds it (_wrap; a float is
    truncated first, a non-finite one is 0)."""
    mask = (1 << bits) - 1
    if signed:  # (x & mask ^ top) - top: the low bits, sign-extended from the top one
        top = 1 << (bits - 1)
        return [((v & mask) ^ top) - top if v.__class__ is int else _one(v, bits, signed)
                for v in raw]
    return [v & mask if v.__class__ is int else _one(v, bits, signed) for v in raw]


def _one(v: float | int, bits: int, signed: bool) -> int:
    if isinstance(v, float):
        v = int(v) if math.isfinite(v) else 0
    return _wrap(int(v), bits, signed)


@lru_cache(maxsize=4096)
def _wavefronts(offsets: tuple[int, ...], elem: int, banks: int) -> int:
    """bank_conflicts' passes for one warp's access at these offsets from a 128-byte
    aligned base (a tiled loop repeats a handful of patterns at moving bases)."""
    return bank_conflicts(offsets, element_bytes=elem, banks=banks).wavefronts


@lru_cache(maxsize=4096)
def _mem_operand(a: str) -> tuple[str, int] | None:
    """A memory operand's base and offset ([%rd1+16] -> ('%rd1', 16)); None if not one."""
    m = MEM_OPERAND.match(a)
    if not m:
        return None
    return m.group(1), int(m.group(2).replace(" ", ""), 0) if m.group(2) else 0


def _fbits(word: str) -> float:
    """A float immediate written as its bits (0f3F800000, 0d3FF0000000000000)."""
    import struct
    if word[:2] in ("0f", "0F"):
        return struct.unpack(">f", bytes.fromhex(word[2:].rjust(8, "0")))[0]
    return struct.unpack(">d", bytes.fromhex(word[2:].rjust(16, "0")))[0]


def sector_masks(addrs: Sequence[int], width: int) -> dict[int, int]:
    """Per 32-B sector an access touches, the bytes its lanes touch in it (bit b: byte b)."""
    masks: dict[int, int] = {}
    for a in addrs:
        for sector in range(a // 32, (a + width - 1) // 32 + 1):
            lo, hi = max(a, sector * 32) - sector * 32, min(a + width, sector * 32 + 32) - sector * 32
            masks[sector] = masks.get(sector, 0) | ((1 << (hi - lo)) - 1) << lo
    return masks


class Warp:
    """The lanes of warp `warp` of the block at `block_index`: their registers, the launch's
    parameter values, and the counters (FIELDS) its accesses add to."""

    def __init__(self, k: Kernel, params: Mapping[str, float | int], block: Sequence[int],
                 block_index: Sequence[int], grid: Sequence[int], banks: int,
                 warp: int = 0, unroll: int = 1, merge: tuple[bool, ...] = (True, True)
                 ) -> None:
        self.k = k
        # ptxas's unroll of the hottest loop (its SASS body over one PTX iteration): a
        # scalar shared access that steps one element per iteration is then one wide
        # access per `unroll` iterations (As[row * BK + k] for k, k+1, ... -> LDS.128)
        self.unroll = unroll
        # whether ptxas merged scalar shared (loads, stores) into wide ones at all (the
        # SASS has some): where it did not, each scalar access counts as issued; a third
        # flag, whether it merged loads across the iterations it unrolled (tune/traffic.py
        # reads that from the SASS loop; without it, as loads)
        self.merge = merge
        self.across = merge[0] and (merge[2] if len(merge) > 2 else True)
        self.last_shared: dict[int, list[int]] = {}
        self.streaming: set[int] = set()  # accesses seen stepping one element per iteration
        # each shared load (explicitly .shared) that ran: instruction -> (the words one
        # execution moves, as the SASS counts them: a scalar load one, a wide one its
        # width in 32-bit words; whether it went scalar; how often it ran); with
        # `stepping` (the scalar loads seen stepping one element, whatever the unroll)
        # what lds_words reports
        self.shared_loads: dict[int, list[float]] = {}
        self.stepping: set[int] = set()
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
        self.line_seen: dict[int, int] = {}  # global line -> the moment the warp last touched it
        self.reuse = Distinct()  # the sectors the warp touched, by moment
        self.reuse_l2 = Distinct()  # the same less streaming stores (count_global)
        # sectors a store left open at an end (open_store_sectors) -> the bytes written so far
        self.open_ends: dict[int, int] = {}
        self.stored: dict[int, int] = {}  # sector -> the moment the warp last stored to it
        # sector -> the bytes of its current far touch, by load and by store (_far)
        self.far_loaded: dict[int, tuple[int, float]] = {}
        self.far_stored: dict[int, tuple[int, float]] = {}
        # each global access counted, as count_global's arguments, where a skip-ahead may
        # replay them (ptx_skip); None: not noted
        self.events: list[GlobalAccess] | None = None
        # and each setp's comparison, its lanes and their two values (the same)
        self.compares: list[Compare] | None = None

    # operands
    def val(self, a: str, lane: int, t: str = "b32") -> float | int:
        bits, signed, flt = type_kind(t)
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

    def vals(self, a: str, lanes: Sequence[int], t: str = "b32") -> list[float | int]:
        """val of each lane: one operand decoded once for the lanes."""
        if a.startswith("%"):
            r = self.regs.get(a)
            if r is None:
                s = self.special.get(a)
                raw: list[float | int] = [s[ln] for ln in lanes] if s else [0] * len(lanes)
            else:
                raw = [r[ln] for ln in lanes]
        elif a.startswith("-") and a[1:].startswith("%"):
            raw = [-v for v in self.vals(a[1:], lanes, t)]
        else:  # an immediate or a symbol: the same in every lane
            return [self.val(a, 0, t)] * len(lanes)
        bits, signed, flt = type_kind(t)
        if flt:
            return [float(v) for v in raw]
        return _ints(raw, bits, signed)

    def set_lanes(self, a: str, lanes: Sequence[int], values: Sequence[float | int],
                  t: str = "b32") -> None:
        """set for each lane, its value from `values` in the same order."""
        if not a.startswith("%"):
            return
        bits, signed, flt = type_kind(t)
        if not flt:
            values = _ints(values, bits, signed)
        r = self.regs.setdefault(a, [0] * WARP)
        for ln, v in zip(lanes, values, strict=True):
            r[ln] = v

    def addresses(self, a: str, lanes: Sequence[int]) -> list[int]:
        """The address each lane's memory operand names (0 where it is not one)."""
        m = _mem_operand(a)
        if m is None:
            return [0] * len(lanes)
        base, off = m
        if base.startswith("%"):
            return [int(v) + off for v in self.vals(base, lanes, "u64")]
        return [self.k.symbols.get(base, 0) + off] * len(lanes)

    # accounting
    def count_shared(self, addrs: list[int], width: int) -> None:
        c = self.counters
        elem = width if width in (1, 2, 4, 8, 16) else 4
        base = min(addrs, default=0) // 128 * 128  # (the banks repeat every 128 bytes)
        wavefronts = _wavefronts(tuple(a - base for a in addrs), elem, self.banks)
        phase = WARP // max(1, elem // 4) if elem > 4 else WARP
        ideal = sum(-(-len(addrs[s:s + phase]) * elem // 128) for s in range(0, len(addrs), phase))
        c[COUNTER["shared_wavefronts"]] += wavefronts
        c[COUNTER["shared_ideal"]] += max(1, ideal)
        c[COUNTER["shared_accesses"]] += 1

    def count_global(self, addrs: list[int], width: int, store: bool,
                     atomic: bool | None = None, evict_first: bool = False) -> None:
        """One warp access to global (or local) memory: its lines and sectors, the lines it
        loads again, and, for an atomic (`atomic`: whether floating-point), its lanes'
        addresses into atomic_log. An `evict_first` store (PTX's .cs cache operator, CUDA's
        __stcs: its lines are the first L2 evicts) takes no room in L2 from the lines other
        accesses will want again: it adds nothing to their distances as L2 sees them
        (reuse_l2). llm.c's layernorms write their output so, and Nsight Compute found L2
        keeping their rows where plain stores at the same distances lost them
        (bench/results/h200-layernorm-ncu against h200-l2reuse). A streaming load (__ldcs)
        counts as any: softmax 7 reads its input so, and L2 lost its rows at the distances
        that count them. Not handled: a load of what the warp itself stored evict-first (the
        likeliest line to be gone, here taken at L2's short distance), and the other
        evict-first hints (L2::evict_first, createpolicy)."""
        if self.events is not None:
            self.events.append((addrs, width, store, atomic, evict_first))
        c = self.counters
        lines = {b // 128 for a in addrs for b in (a, a + width - 1)}
        sectors: dict[int, int] = {}
        for a in addrs:
            for s in range(a // 32, (a + width - 1) // 32 + 1):
                lo, hi = max(a, s * 32), min(a + width, s * 32 + 32)
                sectors[s] = sectors.get(s, 0) + (hi - lo)
        masks = sector_masks(addrs, width)
        if store:
            self._close_ends(masks, atomic is None)
            share, apart = self._far(masks, self.stored, self.far_stored)
            c[COUNTER["far_rewrite_sectors"]] += share
            c[COUNTER["far_rewrite_distance"]] += apart
            moment = self.reuse.touch(masks)
            self.reuse_l2.touch({} if evict_first else masks)
            self.stored.update(dict.fromkeys(sectors, moment))
            for line in lines:  # a later load of what the warp wrote is a re-read too
                self.line_seen[line] = moment
            c[COUNTER["global_stores"]] += 1
            c[COUNTER["global_store_lines"]] += len(lines)
            c[COUNTER["global_store_sectors"]] += len(sectors)
            c[COUNTER["partial_store_sectors"]] += sum(1 for b in sectors.values() if b < 32)
        else:
            c[COUNTER["global_loads"]] += 1
            c[COUNTER["global_load_lines"]] += len(lines)
            c[COUNTER["global_load_sectors"]] += len(sectors)
            c[COUNTER["load_bytes"]] += width * len(addrs)
            for line in lines:
                seen = self.line_seen.get(line)
                if seen is not None:
                    # the distinct bytes the warp touched since it last touched the line
                    apart = 32.0 * self.reuse.since(seen)
                    c[COUNTER["reread_lines"]] += 1
                    c[COUNTER["reread_distance"]] += apart
                    if apart <= NEAR_REREAD_BYTES:
                        c[COUNTER["near_reread_lines"]] += 1
                        c[COUNTER["near_reread_distance"]] += apart
                    else:
                        in_l2 = 32.0 * self.reuse_l2.since(seen)
                        c[COUNTER["far_l2_distance"]] += in_l2
                        c[COUNTER["far_l2_sq"]] += in_l2 * in_l2
            c[COUNTER["far_reread_sectors"]] += self._far(masks, self.reuse.last, self.far_loaded)[0]
            moment = self.reuse.touch(masks)
            self.reuse_l2.touch(masks)
            for line in lines:
                self.line_seen[line] = moment
        if atomic is not None and len(self.atomic_log) + len(addrs) <= MAX_ATOMIC_LOG:
            self.atomic_log.extend((a, atomic) for a in addrs)

    def save_reuse(self) -> tuple[Any, ...]:
        """What the warp holds of its past accesses (re-reads, stores, open ends), for a
        probe to put back (ptx_skip), which starts from none of it."""
        state = (self.line_seen, self.reuse, self.reuse_l2, self.open_ends, self.stored,
                 self.far_loaded, self.far_stored)
        self.line_seen, self.open_ends, self.stored = {}, {}, {}
        self.reuse = Distinct(self.reuse.foreign)
        self.reuse_l2 = Distinct(self.reuse.foreign)
        self.far_loaded, self.far_stored = {}, {}
        return state

    def restore_reuse(self, state: tuple[Any, ...]) -> None:
        (self.line_seen, self.reuse, self.reuse_l2, self.open_ends, self.stored,
         self.far_loaded, self.far_stored) = state

    def _far(self, masks: Mapping[int, int], then: Mapping[int, int],
             episode: dict[int, tuple[int, float]]) -> tuple[float, float]:
        """(sectors, summed distance) of the access's far touches: the sectors it touches
        that the warp touched (`then`: their last moments) further back than a near
        re-read, each by the share of its bytes the warp touches; a sector the warp then
        touches again near (`episode`: the bytes of its far touch so far, and how far back
        that touch reached) adds the bytes it had not touched, at that far touch's distance.
        A sector the neighbouring warp shares (the end of a warp load on a row off its
        lines) counts its part, and one the warp fills itself, all of it: what a miss
        brings from DRAM, split among the warps that use it. Far or near is judged on all
        the warp's accesses (reuse); the distance recorded is L2's (reuse_l2, without
        evict-first stores), for the re-writes' law as for the re-reads'."""
        share = apart = 0.0
        for sector, mask in masks.items():
            moment = then.get(sector)
            if moment is None:
                continue
            d = 32.0 * self.reuse.since(moment)
            if d > NEAR_REREAD_BYTES:
                d = 32.0 * self.reuse_l2.since(moment)  # its distance as L2 sees it
                episode[sector] = (mask, d)
                share += mask.bit_count() / 32
                apart += d * mask.bit_count() / 32
            elif sector in episode:
                seen, far = episode[sector]
                new = mask & ~seen
                episode[sector] = (seen | mask, far)
                share += new.bit_count() / 32
                apart += far * new.bit_count() / 32
        return share, apart

    def _close_ends(self, masks: Mapping[int, int], plain: bool = True) -> None:
        """A store (its sectors' byte masks): the open ends it completes close; where it
        fills a whole sector, its own partly written ones (its ends; a `plain` store's, not
        an atomic's, count as split_store_sectors too) open, and an open end
        it writes the same part of again opens a second time (the warp's earlier stores to
        a sector that is not open are not looked at)."""
        c = self.counters
        full = (1 << 32) - 1
        opens = full in masks.values()  # a store that fills a whole sector opens its ends
        if opens and plain:
            c[COUNTER["split_store_sectors"]] += sum(1 for m in masks.values() if m != full)
        for sector, mask in masks.items():
            if sector in self.open_ends:
                before = self.open_ends[sector]
                if mask | before == full:
                    del self.open_ends[sector]
                    c[COUNTER["open_store_sectors"]] -= 1
                elif opens and not mask & ~before:
                    # the same part written again (a softmax scaling its output in place):
                    # left for the other warp a second time
                    c[COUNTER["open_store_sectors"]] += 1
                else:
                    self.open_ends[sector] = mask | before
            elif opens and mask != full:
                self.open_ends[sector] = mask
                c[COUNTER["open_store_sectors"]] += 1

    def memory(self, i: int, ins: Insn, lanes: list[int]) -> bool:
        """Count one warp-wide access; True where it went to global (or local) memory."""
        store = ins.op in ("st", "red")
        is_async = ins.op == "cp"
        if is_async:  # cp.async.ca.shared.global [dst], [src], bytes
            width = int(self.val(ins.args[2], 0)) if len(ins.args) > 2 else 4
            src = self.addresses(ins.args[1], lanes)
            dst = self.addresses(ins.args[0], lanes)
            self.count_global(src, width, False)
            self.count_shared(dst, width)
            return False
        slot = ins.args[0] if store else ins.args[1] if len(ins.args) > 1 else ins.args[0]
        if ins.op in ("atom", "red") and not store:
            slot = ins.args[1]
        width = access_bytes(ins.parts)
        addrs = self.addresses(slot, lanes)
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
            group = self.k.groups.get(i) if self.merge[1 if ins.op == "st" else 0] else None
            if group:
                leader, gw, off = group
                if leader == i:
                    ok = all((a - off) % gw == 0 for a in addrs)
                    self.vec_ok[i] = ok
                    if ok:
                        self.count_shared([a - off for a in addrs], gw)
                        if ins.op == "ld" and "shared" in ins.parts:
                            self._note_load(i, gw, False)
                        return False
                elif self.vec_ok.get(leader):
                    return False
            if ins.op == "ld" and "shared" in ins.parts:
                self._note_load(i, width, width <= 4)
            merged = self.across_iterations(i, ins, addrs, width)
            if merged:
                return False
            self.count_shared(addrs, width)
            if ins.op in ("atom", "red"):
                self.count_shared(addrs, width)
            return False
        atomic = any(p.startswith(("f", "bf")) for p in ins.parts) \
            if ins.op in ("atom", "red") and space == "global" else None
        self.count_global(addrs, width, store or ins.op == "atom", atomic, "cs" in ins.parts)
        return True

    def _note_load(self, i: int, width: int, scalar: bool) -> None:
        seen = self.shared_loads.setdefault(i, [1.0 if scalar else max(1.0, width / 4), scalar, 0])
        seen[2] += 1

    def lds_words(self) -> dict[str, float]:
        """The 32-bit words one pass of the warp's loops moves by shared loads (each load that
        ran twice or more counted once, as the SASS loop body holds it; a scalar load one
        word, byte or half loads too, as sass_loops counts them): all of them, and of those
        moved by scalar loads, the ones stepping one element an iteration (`stream`: what
        ptxas may merge across the iterations it unrolls) and the rest (`plain`). Loads that
        ran once (a prologue's) are left out; a skip-ahead does not change the counts it
        reads. 8-byte loads that step are merged as 4-byte ones are judged, not counted."""
        looped = {i: v for i, v in self.shared_loads.items() if v[2] >= 2}
        stream = sum(v[0] for i, v in looped.items() if v[1] and i in self.stepping)
        return {"all": sum(v[0] for v in looped.values()), "stream": stream,
                "plain": sum(v[0] for v in looped.values() if v[1]) - stream}

    def across_iterations(self, i: int, ins: Insn, addrs: list[int], width: int) -> bool:
        """Count a scalar shared load that the unrolled loop merges with its next
        iterations' as 1/n of the wide access at the aligned base (n elements of `width`);
        False where it does not step one element per iteration."""
        prev, self.last_shared[i] = self.last_shared.get(i), addrs
        if ins.op != "ld" or width not in (4, 8):
            return False
        steps = prev is not None and len(prev) == len(addrs) \
            and all(a - p == width for a, p in zip(addrs, prev, strict=True))
        if steps:
            self.stepping.add(i)
        if self.unroll < 2 or not self.across:
            return False
        if steps:
            self.streaming.add(i)  # (the unrolled body's first iteration is merged too)
        if i not in self.streaming:
            return False
        wide = min(16, width * self.unroll)
        n = wide // width
        c = self.counters
        before = (c[COUNTER["shared_wavefronts"]], c[COUNTER["shared_ideal"]], c[COUNTER["shared_accesses"]])
        self.count_shared([a - a % wide for a in addrs], wide)
        for key, b in zip(("shared_wavefronts", "shared_ideal", "shared_accesses"), before,
                          strict=True):
            c[COUNTER[key]] = b + (c[COUNTER[key]] - b) / n
        return True

    def load_value(self, ins: Insn, lanes: list[int]) -> None:
        t = next((p for p in reversed(ins.parts) if p in PTX_TYPES), "b32")
        dst = ins.args[0]
        if "param" in ins.parts:
            m = MEM_OPERAND.match(ins.args[1])
            name = m.group(1) if m else ""
            v = self.params.get(name, 0) if not (m and m.group(2)) else 0
            self.set_lanes(dst, lanes, [v] * len(lanes), t)
            return
        names = [x.strip() for x in dst.strip("{}").split(",")] if dst.startswith("{") else [dst]
        for n in names:
            self.set_lanes(n, lanes, [0.0 if t.startswith("f") else 0] * len(lanes), t)
