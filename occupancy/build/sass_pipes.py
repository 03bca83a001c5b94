"""Which execution pipe a SASS instruction occupies, and for how long: the issue side of a
loop is not its instruction count where most of them go to a pipe narrower than a warp.

An SM sub-partition issues one warp instruction a clock, but its pipes are of different
widths (Volta to Hopper): the FMA pipes take FP32 arithmetic (two 16-lane halves from
Ampere's GA10x on, one FFMA a clock between them; IMAD and IMUL the "heavy" half alone), the
ALU pipe (16 lanes: compares, selects, min/max, integer adds and logic) takes a warp
instruction every 2 clocks, and the special-function unit (MUFU: exp2, rcp, rsqrt, sin...)
one every 8. Measured on the H200 (bench/results/h200-pipes; bench/pipes/pipes.cu, 64 warps
an SM, independent chains): FFMA 1.0 clock, FMNMX 2.0, FSETP + FSEL 2.0, IMAD 2.0, MUFU.EX2
8.1; FFMA and FMNMX, or FFMA and IMAD, alternating: 1.04 clocks an instruction (the pipes
work side by side). kernel_tuner's pnpoly, whose loop is 58% compares and selects, was
predicted at its instruction count. Not counted (issue slots only): FSET/ISET, conversions
(F2I, I2F, F2F: the special-function unit's rate), shuffles; and pipes that are close run
4-13% over their count: the count is a floor.
"""

from __future__ import annotations

from collections.abc import Mapping

from occupancy.core.device import Device, cc_row
from occupancy.core.errors import OccupancyError

# The ALU pipe's instructions (Nsight Compute: "bit manipulation and logic instructions,
# integer instructions excluding IMAD and IMUL"; FP32 compare, select and min/max too, as
# measured): 16 lanes a sub-partition.
ALU_OPS = frozenset({
    "FSETP", "FSEL", "FMNMX", "ISETP", "IADD3", "LOP3", "PLOP3", "SEL", "SHF", "LEA", "PRMT",
    "IMNMX", "VIMNMX", "IABS", "SGXT", "BMSK", "MOV", "P2R", "R2P", "CSET", "CSETP", "PSETP",
})
FMA_HEAVY_OPS = frozenset({"IMAD", "IMUL"})  # the FMA pipe's 16-lane heavy half alone
MUFU_OPS = frozenset({"MUFU"})
ALU_CLOCKS = 2  # clocks a warp instruction holds the ALU pipe (16 lanes)
HEAVY_CLOCKS = 2  # an IMAD on the FMA-heavy half (16 lanes)
MUFU_CLOCKS = 8  # the special-function unit: 16 results a clock an SM, 4 a sub-partition
PIPE_KEYS = ("alu", "imad", "mufu")
SCHEDULERS_PER_SM = 4  # an SM's sub-partitions, each with its scheduler and pipes (Volta on)


def pipe_key(op: str) -> str | None:
    """The mix key (PIPE_KEYS) of one SASS opcode, or None for one counted only as issued."""
    if op in ALU_OPS:
        return "alu"
    if op in FMA_HEAVY_OPS:
        return "imad"
    if op in MUFU_OPS:
        return "mufu"
    return None


def issue_slots(mix: Mapping[str, int]) -> int:
    """The clocks a pass of the loop takes to issue on its own: its instructions, and the
    clocks its FFMAs wait for the register banks (sass_loops.REGISTER_BANKS)."""
    return mix.get("total", 0) + mix.get("reg_reads", 0)


def pipe_factor(dev: Device, mix: Mapping[str, int]) -> float:
    """How much longer than one issue slot an instruction the loop's issue side takes: its
    issue clocks (issue_slots: the register banks' waits too) or the busiest pipe's clocks,
    whichever is more, over the instructions issued (1 where the SASS was not read). FP32
    arithmetic (`fp32`) shares the FMA pipes with IMAD at the architecture's FP32 lanes a
    sub-partition. Pipes are priced on compute capability 7.x-9.x, whose ALU pipe is 16 lanes
    a sub-partition (measured on the H200, 9.0; 7.x and 8.x from the architectures'
    documented widths); on older and newer chips only the issue clocks count."""
    total, slots = mix.get("total", 0), issue_slots(mix)
    if total <= 0:
        return 1.0
    if not all(k in mix for k in PIPE_KEYS):
        return slots / total
    try:
        major, lanes = int(dev.compute_capability.split(".")[0]), cc_row(
            dev.compute_capability).fp32_lanes
    except (ValueError, OccupancyError):
        return slots / total
    if not 7 <= major <= 9:
        return slots / total
    halves = max(1, lanes // 64)  # 16-lane FMA halves a sub-partition (4 an SM)
    fma = max(HEAVY_CLOCKS * mix["imad"], 2 * (mix["imad"] + mix.get("fp32", 0)) / halves)
    busiest = max(slots, ALU_CLOCKS * mix["alu"], fma, MUFU_CLOCKS * mix["mufu"])
    return busiest / total
