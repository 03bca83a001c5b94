"""The register file's banks (occupancy/build/sass_loops.register_read_waits): an FFMA reads
its sources one register a clock from each of two banks (register number mod 2), except one
held in the reuse cache, and the next instruction waits for a bank still in use. Checked on
hand-written loops and against the H200's microbenchmark record (bench/rbank/ffma_patch.py's
rewritten loops, bench/results/h200-rbank-ffma)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from occupancy.build.sass_loops import register_read_waits, sass_loop_mix
from occupancy.build.sass_pipes import issue_slots

RECORD = Path(__file__).resolve().parent.parent / "bench" / "results" / "h200-rbank-ffma"


def _loop(*body: str) -> str:
    lines = [f"        /*{16 * i:04x}*/                   {b} ;" for i, b in enumerate(body)]
    return "\n".join([".text._Z1kPf:", ".L_x_1:", *lines,
                      f"        /*{16 * len(body):04x}*/               @P0 BRA `(.L_x_1) ;",
                      f"        /*{16 * len(body) + 16:04x}*/                   EXIT ;"])


def _waits(*body: str) -> list[int]:
    """The waits of `body` as a loop, three instructions without FFMAs closing it (the banks
    free again when the next pass starts)."""
    code = [*body, *["IADD3 R30, RZ, 0x1, RZ"] * 3]
    insns = [(16 * i, b.split()[0].split(".")[0], None, None, " " + b.split(None, 1)[1])
             for i, b in enumerate(code)]
    return register_read_waits(insns)[:len(body)]


def test_three_sources_in_one_bank_take_three_clocks_two_take_two() -> None:
    # the second FFMA waits two clocks for the first one's even bank, whose reads it shares
    assert _waits("FFMA R10, R2, R4, R6", "FFMA R12, R8, R14, R16") == [0, 2]
    assert _waits("FFMA R11, R3, R4, R6", "FFMA R13, R5, R8, R9") == [0, 1]
    # one read a bank: nothing to wait for, and the destination's bank does not matter
    assert _waits("FFMA R10, R2, R3, RZ", "FFMA R11, R4, R5, RZ") == [0, 0]


def test_sources_are_read_through_negation_absolute_value_and_predicates() -> None:
    """`-R3`, `|R4|`, `-|R5|` and a predicated FFMA read their registers like plain ones; RZ,
    constants and literals read none; a hostile operand list reads no more than three."""
    assert _waits("FFMA R10, R2, R4, R6", "FFMA R12, -R8, |R14|, -|R16|") == [0, 2]
    assert _waits("FFMA R10, R2, R4, R6", "FFMA R12, R9, c[0x0][0x10], 0x3f800000") == [0, 0]
    mix = dict(sass_loop_mix(_loop("@P1 FFMA R10, R2, R4, R6", "@!P1 FFMA R12, R8, R14, R16"))
               ["_Z1kPf"])
    # two clocks each, the branch between the passes taking one of the first FFMA's
    assert mix["ffma"] == 2 and mix["reg_reads"] == 3
    hostile = "FFMA R10, " + ", ".join(f"R{2 * i}" for i in range(5000))
    assert _waits(hostile, hostile) == [0, 2]


def test_the_reuse_cache_serves_the_register_last_marked_in_its_bank() -> None:
    # the second FFMA reads R2 and R4 from the even bank unless R2 comes from the cache; the
    # third then waits for that bank or not
    tail = ["IADD3 R30, RZ, 0x1, RZ", "FFMA R14, R5, R2, R4", "FFMA R16, R6, R7, RZ"]
    assert _waits("FFMA R10, R2, R3, RZ", *tail)[-1] == 1
    # marked .reuse: served from the cache in another operand slot, an instruction later
    assert _waits("FFMA R10, R2.reuse, R3, RZ", *tail)[-1] == 0
    # a later register marked in the same bank replaces it
    assert _waits("FFMA R10, R2.reuse, R3, RZ", "FFMA R12, R8.reuse, R9, RZ", *tail)[-1] == 1


def test_the_loop_mix_counts_the_clocks_and_the_issue_slots_add_them() -> None:
    mix = dict(sass_loop_mix(_loop("FFMA R10, R2, R4, R6", "FFMA R12, R8, R14, R16",
                                   "LDS R20, [R22]"))["_Z1kPf"])
    assert mix["reg_reads"] > 0 and mix["total"] == 4
    assert issue_slots(mix) == mix["total"] + mix["reg_reads"]
    assert issue_slots({"total": 7}) == 7  # a mix without the count (an old cache entry)


def _record() -> dict[str, tuple[float, str]]:
    """pattern -> (clocks an FFMA at one warp a scheduler, the loop's SASS)."""
    timed = {}
    for name in ("patterns-timed.txt", "replays-timed.txt"):
        for line in (RECORD / name).read_text().splitlines():
            m = re.match(r"(\S+)\s+clocks/FFMA at 1 warp a scheduler ([\d.]+)", line)
            if m:
                timed[m.group(1)] = float(m.group(2))
    text = gzip.decompress((RECORD / "loops.sass.gz").read_bytes()).decode()
    loops = dict(re.findall(r"== (\S+)\n(.*?)(?=\n== |\Z)", text, re.S))
    return {k: (v, loops[k]) for k, v in timed.items()}


def test_the_count_follows_what_the_h200_measured_on_rewritten_loops() -> None:
    """35 loops of 128 FFMAs (three loop instructions besides) timed at one warp a scheduler:
    the count's clocks an FFMA within 0.2 of the measured, less their ~0.07 of loop
    overhead; three sources in one bank and two in one apart by a clock, as measured."""
    rows = _record()
    assert len(rows) == 35
    got = {}
    for name, (clocks, sass) in rows.items():
        mix = dict(next(iter(sass_loop_mix(".text.ffma_loop:\n" + sass).values())))
        assert mix["ffma"] == 128
        got[name] = issue_slots(mix) / mix["ffma"]
        assert abs(got[name] + 0.07 - clocks) <= 0.2, (name, got[name], clocks)
    assert got["abc000-d0"] - got["abc010-d0"] == 1 and rows["abc000-d0"][0] - rows["abc010-d0"][0] > 0.95


def test_the_lone_warp_waits_for_a_result_while_the_banks_are_read() -> None:
    """The second FFMA reads R10 four clocks after the first issues; its own two bank clocks
    run meanwhile, so it waits one clock more, not three: warp_wait 1 a pass."""
    mix = dict(sass_loop_mix(_loop("FFMA R10, R2, R4, R6", "FFMA R12, R10, R8, R14",
                                   *["IADD3 R30, RZ, 0x1, RZ"] * 6))["_Z1kPf"])
    assert mix["reg_reads"] == 2 and mix["warp_wait"] == 1


def test_the_lone_warp_counts_the_bank_clocks_once() -> None:
    """Bank clocks are issue clocks, not a wait: a loop of independent FFMAs that only wait
    for the banks has no `warp_wait`, and a dependence the bank clocks already cover adds none."""
    banks_only = _loop("FFMA R10, R2, R4, R6", "FFMA R12, R8, R14, R16", "FFMA R18, R20, R22, R24",
                       "FFMA R11, R3, R5, R7")
    mix = dict(sass_loop_mix(banks_only)["_Z1kPf"])
    assert mix["reg_reads"] > 0 and mix["warp_wait"] == 0
    # R10 is read 2 + 2 bank clocks after the FFMA that writes it, more than its 4-clock result
    covered = _loop("FFMA R10, R2, R4, R6", "FFMA R12, R8, R14, R16", "FFMA R18, R20, R22, R24",
                    "FFMA R13, R10, R3, R5")
    assert dict(sass_loop_mix(covered)["_Z1kPf"])["warp_wait"] == 0
