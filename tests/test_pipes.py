"""The issue side's narrow pipes (occupancy/build/sass_pipes.py): which SASS instructions
take the ALU pipe, the FMA-heavy half and the special-function unit, and how much longer
than an issue slot a loop of them runs, checked against the H200's microbenchmark record."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from occupancy import load_device
from occupancy.build.sass_loops import sass_loop_mix
from occupancy.build.sass_pipes import pipe_factor, pipe_key

RECORD = Path(__file__).resolve().parent.parent / "bench" / "results" / "h200-pipes"


def test_opcodes_go_to_their_pipes() -> None:
    alu = ("FSETP", "FSEL", "FMNMX", "ISETP", "LOP3", "SEL", "IADD3", "MOV", "SHF", "LEA",
           "PRMT", "PLOP3", "IMNMX")
    assert [pipe_key(op) for op in alu] == ["alu"] * len(alu)
    assert pipe_key("IMAD") == "imad" and pipe_key("MUFU") == "mufu"
    assert [pipe_key(op) for op in ("FFMA", "FADD", "LDS", "LDG", "BRA", "ULDC")] == [None] * 6


def test_the_sass_mix_counts_each_pipe_once_per_instruction() -> None:
    """A predicated instruction still takes its pipe; an opcode's suffix (IMAD.MOV.U32,
    MUFU.EX2) does not change which pipe."""
    sass = """
.text._Z1kPfS_j:
.L_x_1:
        /*0000*/                   FSETP.GT.AND P0, PT, R20, R7, PT ;
        /*0010*/               @!P1 SEL R17, RZ, 0x1, P6 ;
        /*0020*/                   IMAD.MOV.U32 R12, RZ, RZ, R19 ;
        /*0030*/                   MUFU.EX2 R4, R4 ;
        /*0040*/                   FFMA R21, R21, UR8, R10 ;
        /*0050*/                   ISETP.NE.AND P0, PT, R19, 0x259, PT ;
        /*0060*/               @P0 BRA `(.L_x_1) ;
        /*0070*/                   EXIT ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPfS_j"])
    assert (mix["total"], mix["alu"], mix["imad"], mix["mufu"], mix["fp32"]) == (7, 3, 1, 1, 1)


def _measured() -> list[tuple[dict[str, int], float]]:
    """(loop mix, clocks an instruction) for each row of the H200 record at 64 warps an SM."""
    rows = []
    for line in (RECORD / "clocks.txt").read_text().splitlines():
        m = re.match(r"kind \d blocks 1056: (\d+) insts a loop (\{.*\}); ([\d.]+) clocks", line)
        if not m:
            continue
        ops = {k: int(v) for k, v in re.findall(r"'(\w+)': (\d+)", m.group(2))}
        mix = {"total": int(m.group(1)), "alu": 0, "imad": 0, "mufu": 0,
               "fp32": sum(n for op, n in ops.items() if op in ("FFMA", "FADD", "FMUL"))}
        for op, n in ops.items():
            key = pipe_key(op)
            if key:
                mix[key] += n
        rows.append((mix, float(m.group(3))))
    return rows


def test_the_pipe_count_is_a_floor_under_what_the_h200_measured() -> None:
    """Every loop of the microbenchmark ran at no less than its pipes' count (2% timing
    slack) and within 15% of it; the single-pipe loops within 3%."""
    h200 = load_device("h200")
    rows = _measured()
    assert len(rows) == 9
    for mix, clocks in rows:
        count = pipe_factor(h200, mix)
        assert 0.98 * count <= clocks <= 1.15 * count, (mix, clocks, count)
    narrow = [(m, c) for m, c in rows if pipe_factor(h200, m) > 1.5]
    assert len(narrow) == 4  # FMNMX, FSETP + FSEL, IMAD, MUFU
    assert all(c == pytest.approx(pipe_factor(h200, m), rel=0.03) for m, c in narrow)


def test_fp32_shares_the_fma_pipe_by_the_device_lanes_and_old_or_new_chips_are_not_priced() \
        -> None:
    mix = {"total": 100, "alu": 10, "imad": 40, "mufu": 0, "fp32": 40}
    assert pipe_factor(load_device("h200"), mix) == pytest.approx(1.0)  # 80 on two halves
    assert pipe_factor(load_device("a100"), mix) == pytest.approx(1.6)  # 16 lanes: 160 clocks
    assert pipe_factor(load_device("gtx1080"), {**mix, "alu": 90}) == 1.0  # Pascal: not these
    assert pipe_factor(load_device("h200"), {"total": 100, "fp32": 40}) == 1.0  # no pipe keys
    # one pipe key missing (a mix read before they were counted): not priced
    assert pipe_factor(load_device("h200"), {"total": 100, "alu": 90, "imad": 0}) == 1.0
    busy = {"total": 100, "alu": 90, "imad": 0, "mufu": 0, "fp32": 0}
    assert pipe_factor(load_device("h200"), busy) == pytest.approx(1.8)
    assert pipe_factor(load_device("b200"), busy) == 1.0  # Blackwell: not measured
    assert pipe_factor(load_device("rtx5090"), busy) == 1.0


def test_a_nested_loop_counts_its_pipes_once_per_its_iteration() -> None:
    """The narrow pipes' counts scale with the FFMA loop nested in the hot one, as every
    counted key does (tune/model.unit_mix; SGEMM_CUDA's 2-D blocktiling at BK 32)."""
    from occupancy.tune.model import unit_mix
    from occupancy.tune.ptxsim import FIELDS, Traffic

    mix = {"total": 354, "ffma": 128, "fp32": 128, "alu": 40, "imad": 30, "mufu": 0,
           "inner_total": 149, "inner_ffma": 128, "inner_fp32": 128, "inner_alu": 10,
           "inner_imad": 5, "inner_mufu": 0}
    unit = Traffic(False, 32, **(dict.fromkeys(FIELDS, 0.0) | {"ffma": 1024.0,
                                                                "flops": 64.0 * 1024}))
    tile = unit_mix(mix, unit)
    assert (tile["alu"], tile["imad"], tile["total"]) == (40 + 7 * 10, 30 + 7 * 5, 354 + 7 * 149)


def test_a_loop_of_compares_predicts_twice_the_issue_time_of_one_of_ffmas() -> None:
    from occupancy.core.solver import solve
    from occupancy.tune.model import predict_work

    dev = load_device("h200")
    occ = solve(dev, 256, 32)
    grid = 8 * dev.sm_count
    flops = 2.0 * 32 * 8 * 1e6 * grid
    base = {"total": 100, "ffma": 8, "fp32": 8, "lds_wavefronts": 0, "sts_wavefronts": 0,
            "ldg": 0, "stg": 0, "bar": 0, "loop": 1, "warp_wait": 0, "alu": 0, "imad": 0,
            "mufu": 0}

    def fp32(mix: dict[str, int]) -> float:
        return predict_work(dev, occ, grid, flops, 0.0, 32, tuple(mix.items())).roofs_ms["fp32"]

    # 180 ALU clocks for 100 issued (the clock under load takes ~1% back)
    assert fp32({**base, "alu": 90}) / fp32(base) == pytest.approx(1.8, rel=0.02)
    assert fp32({**base, "alu": 40}) == pytest.approx(fp32(base))
