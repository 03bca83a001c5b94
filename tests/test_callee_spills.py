"""A kernel spills where the device functions it calls do (ptxas reports their spills on
lines of their own): the log's clones for a whole-program build, the cubin's call graph for
-rdc (occupancy/build/resources.py, binaries.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from occupancy.build.binaries import reachable
from occupancy.build.resolve import CheckResolver
from occupancy.build.resources import (
    device_function_spills,
    parse_ptxas_log,
    with_callee_spills,
)
from occupancy.gate.check import evaluate
from occupancy.inputs.manifest import load_manifest
from tests.needs import need_nvcc

# nvcc 13.0 -arch=sm_90 -Xptxas -v -maxrregcount=32 of KERNELS below (compile times left out)
WHOLE = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2k2PfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z2k2PfPKfi
    376 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 376 bytes cumulative stack size
ptxas info    : Function properties for _Z5innerPKfi
    0 bytes stack frame, 448 bytes spill stores, 580 bytes spill loads
ptxas info    : Compiling entry function '_Z1kPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z1kPfPKfi
    392 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 392 bytes cumulative stack size
ptxas info    : Function properties for _Z3midPKfi
    0 bytes stack frame, 20 bytes spill stores, 12 bytes spill loads
ptxas info    : Function properties for _Z5innerPKfi
    0 bytes stack frame, 476 bytes spill stores, 624 bytes spill loads
ptxas info    : Compiling entry function '_Z5plainPf' for 'sm_90'
ptxas info    : Function properties for _Z5plainPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
"""
# the same with -rdc=true: each device function once, some before any kernel
RDC = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z5innerPKfi
    496 bytes stack frame, 584 bytes spill stores, 772 bytes spill loads
ptxas info    : Function properties for _Z3midPKfi$1
    24 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads
ptxas info    : Compiling entry function '_Z2k2PfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z2k2PfPKfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers
ptxas info    : Compiling entry function '_Z1kPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z1kPfPKfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers
ptxas info    : Function properties for _Z3midPKfi
    24 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads
"""
# a device function that spills under -maxrregcount=32: 64 values live at once
_SPILLS = """float v[64];
#pragma unroll
    for (int i = 0; i < 64; i++) v[i] = a[i * n];
    float s = 0;
#pragma unroll
    for (int i = 0; i < 64; i++) s += v[i] * v[63 - i] + v[(i * {k}) % 64];
    return s;"""
KERNELS = f"""\
__device__ __noinline__ float inner(const float* a, int n) {{
    {_SPILLS.format(k=7)}
}}
__device__ __noinline__ float mid(const float* a, int n) {{ return inner(a, n) * 2.f + inner(a + 1, n); }}
__global__ void k(float* out, const float* a, int n) {{ out[threadIdx.x] = mid(a + threadIdx.x, n); }}
__global__ void k2(float* out, const float* a, int n) {{ out[threadIdx.x] = inner(a + threadIdx.x, n); }}
__global__ void plain(float* out) {{ out[threadIdx.x] = 1.f; }}
extern "C" __device__ __noinline__ float sp$ill(const float* a, int n) {{
    {_SPILLS.format(k=3)}
}}
__global__ void dollar(float* out, const float* a, int n) {{ out[threadIdx.x] = sp$ill(a, n); }}
// after every kernel and called by none: an -rdc log reports it after the last one
__device__ __noinline__ float exported(const float* a, int n) {{
    {_SPILLS.format(k=5)}
}}
"""


def test_a_whole_program_log_gives_each_kernel_its_clones_spills() -> None:
    got = parse_ptxas_log(WHOLE)["sm_90"]
    k, k2, plain = got["_Z1kPfPKfi"], got["_Z2k2PfPKfi"], got["_Z5plainPf"]
    assert (k.spill_stores_bytes, k.spill_loads_bytes) == (20 + 476, 12 + 624)
    assert k.spilling_callees == ("_Z3midPKfi", "_Z5innerPKfi") and k.spills
    assert (k2.spill_stores_bytes, k2.spill_loads_bytes) == (448, 580)
    assert not plain.spills and plain.spilling_callees == ()
    assert (k.registers_per_thread, k.stack_frame_bytes) == (32, 392)


def test_an_rdc_log_attributes_by_the_call_graph() -> None:
    got = parse_ptxas_log(RDC)["sm_90"]
    assert not got["_Z1kPfPKfi"].spills  # the log alone does not say who calls what
    spills = device_function_spills(RDC)
    assert spills == {"_Z5innerPKfi": (584, 772), "_Z3midPKfi$1": (24, 24), "_Z3midPKfi": (24, 24)}
    calls = {"_Z3midPKfi$1": ("_Z5innerPKfi",), "_Z2k2PfPKfi": ("_Z5innerPKfi",),
             "_Z1kPfPKfi": ("_Z3midPKfi$1",), "_Z3midPKfi": ("_Z5innerPKfi",)}
    k = with_callee_spills(got["_Z1kPfPKfi"], calls, spills)
    assert (k.spill_stores_bytes, k.spill_loads_bytes) == (24 + 584, 24 + 772)
    assert k.spilling_callees == ("_Z3midPKfi$1", "_Z5innerPKfi")
    assert with_callee_spills(got["_Z2k2PfPKfi"], calls, spills).spill_stores_bytes == 584


def test_reachable_cuts_a_recursion() -> None:
    calls = {"k": ("f",), "f": ("g", "f"), "g": ("f", "k")}
    assert sorted(reachable(calls, "k")) == ["f", "g"]
    assert reachable(calls, "nobody") == []


@pytest.mark.slow
@pytest.mark.parametrize("extra", ["", ", -rdc=true", ", -G"])
def test_no_spills_sees_what_a_kernel_calls(tmp_path: Path, extra: str) -> None:
    """Whole-program (clones after each kernel), -rdc and -G (functions compiled once each,
    the cubin's call graph)."""
    need_nvcc()
    (tmp_path / "k.cu").write_text(KERNELS)
    entries = "".join(f"  - name: {n}\n    source: k.cu\n    block: 256\n    no_spills: true\n"
                      f"    flags: [-maxrregcount=32{extra}]\n"
                      for n in ("k", "k2", "plain", "dollar"))
    (tmp_path / "m.yaml").write_text("devices: [h100]\nkernels:\n" + entries)
    v = {x.kernel: x for x in evaluate(load_manifest(tmp_path / "m.yaml"), CheckResolver())}
    assert not v["k"].ok and "which it calls" in v["k"].problems[0], v["k"].problems
    assert "inner(float const*, int)" in v["k"].problems[0] and "mid(" in v["k"].problems[0]
    assert not v["k2"].ok and "inner(float const*, int)" in v["k2"].problems[0]
    assert v["plain"].ok, v["plain"].problems
    # a name with a `$` of its own (`f$1` is ptxas's clone of f under -rdc); never `exported`
    assert not v["dollar"].ok and "sp$ill" in v["dollar"].problems[0], v["dollar"].problems
    assert "exported" not in v["dollar"].problems[0]


def test_a_kernel_compiled_twice_counts_its_last_report() -> None:
    """Two -gencode targets of one arch (or two logs appended) report a kernel twice: its
    own spills count once, and it does not call itself."""
    twice = WHOLE + WHOLE.replace("0 bytes gmem", "0 bytes gmem ")
    got = parse_ptxas_log(twice)["sm_90"]
    assert (got["_Z2k2PfPKfi"].spill_stores_bytes, got["_Z2k2PfPKfi"].spilling_callees) == \
        (448, ("_Z5innerPKfi",))
    saxpy = ("ptxas info    : Compiling entry function 'saxpy' for 'sm_80'\n"
             "ptxas info    : Function properties for saxpy\n"
             "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
             "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem\n")
    (res,) = parse_ptxas_log(saxpy + saxpy)["sm_80"].values()
    assert (res.spill_stores_bytes, res.spilling_callees) == (8, ())


def test_functions_compiled_on_their_own_are_attributed_by_no_order() -> None:
    """-G (and -rdc) compile each function once, each with its own `Compile time` line, and
    report them anywhere: a log alone does not say who calls them."""
    log = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z5innerPKfi
    272 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads
ptxas info    : Compile time = 30.1 ms
ptxas info    : Compiling entry function '_Z1kPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z1kPfPKfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 296 bytes cumulative stack size
ptxas info    : Compile time = 3.2 ms
ptxas info    : Function properties for _Z6lib_fnPKfi
    512 bytes stack frame, 596 bytes spill stores, 764 bytes spill loads
ptxas info    : Compile time = 40.7 ms
"""
    assert parse_ptxas_log(log)["sm_90"]["_Z1kPfPKfi"].spilling_callees == ()
    # the same function reported after the kernel, with no earlier one: still its own compile
    tail = log[log.index("ptxas info    : Compiling"):]
    assert parse_ptxas_log(tail)["sm_90"]["_Z1kPfPKfi"].spilling_callees == ()


def test_an_rdc_log_said_so_attributes_nothing_by_order() -> None:
    """A device function an -rdc log reports after the last kernel is not that kernel's."""
    log = WHOLE.replace("ptxas info    : Function properties for _Z3midPKfi",
                        "ptxas info    : Function properties for _Z8exportedPKfi")
    assert parse_ptxas_log(log)["sm_90"]["_Z1kPfPKfi"].spilling_callees == \
        ("_Z8exportedPKfi", "_Z5innerPKfi")  # whole-program: a clone reported after k is k's
    assert parse_ptxas_log(log, relocatable=True)["sm_90"]["_Z1kPfPKfi"].spilling_callees == ()
    nvlink = log + "nvlink info    : Function properties for '_Z1kPfPKfi':\n"
    assert parse_ptxas_log(nvlink)["sm_90"]["_Z1kPfPKfi"].spilling_callees == ()


def test_a_kernel_s_own_spills_count_once() -> None:
    log = ("ptxas info    : Compiling entry function 'saxpy' for 'sm_80'\n"
           "ptxas info    : Function properties for saxpy\n"
           "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem\n")
    (res,) = parse_ptxas_log(log)["sm_80"].values()
    assert (res.spill_stores_bytes, res.spill_loads_bytes, res.spilling_callees) == (8, 8, ())


def test_a_log_of_functions_compiled_on_their_own_leaves_their_spills_unknown() -> None:
    """An -rdc log (and -G's) does not say who calls its spilling functions: every kernel of
    it carries their names, and nothing is added to its counts."""
    got = parse_ptxas_log(RDC, relocatable=True)["sm_90"]
    for k in got.values():
        assert not k.spills and k.spilling_callees == ()
        assert set(k.unattributed_spills) == {"_Z5innerPKfi", "_Z3midPKfi$1", "_Z3midPKfi"}
    whole = parse_ptxas_log(WHOLE)["sm_90"]  # clones after each kernel: attributed
    assert all(k.unattributed_spills == () for k in whole.values())


@pytest.mark.slow
def test_no_spills_on_a_g_log_says_it_cannot_tell_and_the_source_can(tmp_path: Path) -> None:
    """The -G build's own log: no_spills fails on a kernel that calls a function with a frame,
    naming the spilling function (demangled) and what would tell; the same build from source
    attributes by the cubin's call graph."""
    need_nvcc()
    import json
    import subprocess

    from click.testing import CliRunner

    from occupancy.build.compilers import nvcc_path
    from occupancy.cli import main

    (tmp_path / "k.cu").write_text(KERNELS)
    r = subprocess.run([nvcc_path(), "-G", "-cubin", "-arch=sm_90", "-maxrregcount=32",
                        "-Xptxas", "-v", str(tmp_path / "k.cu"), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True, check=True)
    (tmp_path / "k.log").write_text(r.stdout + r.stderr)
    entries = "".join(f"  - name: {n}\n    ptxas_log: k.log\n    block: 256\n    no_spills: true\n"
                      for n in ("k", "plain"))
    (tmp_path / "m.yaml").write_text("devices: [h100]\nkernels:\n" + entries)
    v = {x.kernel: x for x in evaluate(load_manifest(tmp_path / "m.yaml"), CheckResolver())}
    assert not v["k"].ok and "does not say which kernels call them" in v["k"].problems[0]
    assert "inner(float const*, int)" in v["k"].problems[0] and "give the source" in v["k"].problems[0]
    # a -G kernel with no cumulative stack calls no function with a frame, and one that
    # spills has one (second review, stop 40)
    assert v["plain"].ok, v["plain"].problems
    rows = json.loads(CliRunner().invoke(main, ["resources", str(tmp_path / "k.log"), "--json"]).stdout)
    known = {row["function"]: row["spills_known"] for row in rows}
    assert known["k(float*, float const*, int)"] is False and known["plain(float*)"] is True
    from_source = {x["function"]: x for x in json.loads(CliRunner().invoke(main, [
        "resources", str(tmp_path / "k.cu"), "--arch", "sm_90", "--flag=-G",
        "--flag=-maxrregcount=32", "--json"]).stdout)}
    assert all(x["spills_known"] for x in from_source.values())
    assert from_source["plain(float*)"]["spill_bytes"] == 0
    assert from_source["k(float*, float const*, int)"]["spill_bytes"] > 0


def test_thousands_of_unattributed_functions_share_one_short_tuple() -> None:
    """Attack run, stop 40: each kernel had copied the list of every spilling function, a
    log's size squared (10k functions and kernels: 77 s, 1.6 GB)."""
    from occupancy.build.resources import UNATTRIBUTED_SHOWN

    fns = "".join(f"ptxas info    : Function properties for _Z2f{i}v\n"
                  "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                  "ptxas info    : Compile time = 1.0 ms\n" for i in range(2000))
    ks = "".join(f"ptxas info    : Compiling entry function '_Z2k{i}v' for 'sm_90'\n"
                 f"ptxas info    : Function properties for _Z2k{i}v\n"
                 "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                 "ptxas info    : Used 8 registers, used 0 barriers\n" for i in range(2000))
    got = parse_ptxas_log(fns + ks)["sm_90"]
    first = got["_Z2k0v"].unattributed_spills
    assert len(got) == 2000 and len(first) == UNATTRIBUTED_SHOWN
    assert all(k.unattributed_spills is first for k in got.values())


@pytest.mark.parametrize("bad", ["used 20 registers, used 0 barriers, 0 stack, 1234567890123 bytes smem",
                                 "used 20 registers, used 0 barriers, -16 stack, 0 bytes smem",
                                 "used 20 registers, used one barriers, 0 stack, 0 bytes smem"])
def test_an_nvlink_line_that_does_not_read_is_an_error_not_skipped(bad: str) -> None:
    """Attack run, stop 40: the report was dropped and the compile step's numbers passed."""
    from occupancy.core.errors import OccupancyError

    log = ("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z1kv\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 20 registers, used 0 barriers\n"
           "nvlink info    : Function properties for '_Z1kv':\n"
           f"nvlink info    : {bad}, 536 bytes cmem[0], 0 bytes lmem\n")
    with pytest.raises(OccupancyError, match=r"line (5|6)\b"):
        parse_ptxas_log(log, label="ptxas log k.log")


def test_sm_90a_s_nvlink_report_loses_the_reserved_kilobyte_too() -> None:
    from occupancy.build.resources import log_section

    line = ("nvlink info    : Function properties for '_Z1kv':\n"
            "nvlink info    : used 12 registers, used 1 barriers, 0 stack, 3072 bytes smem, "
            "536 bytes cmem[0], 0 bytes lmem{}\n")
    targeted = parse_ptxas_log(line.format(" (target: sm_90a)"))
    assert targeted["sm_90a"]["_Z1kv"].static_shared_memory == 2048
    bare = parse_ptxas_log(line.format(""))
    assert log_section(bare, "sm_90a", "k.log")["_Z1kv"].static_shared_memory == 2048
    assert log_section(bare, "sm_100", "k.log")["_Z1kv"].static_shared_memory == 3072


def test_another_arch_s_spilling_function_is_not_this_arch_s() -> None:
    """Review, stop 40: a function that spills on sm_90 only had failed the sm_80 kernels.
    Each compile (after its `gmem` line) is its kernels' arch; one of device functions only
    names none and counts for every arch."""
    def compile_(arch: str, spill: int, fn: str = "_Z6helperPKfi", kernel: bool = True) -> str:
        out = ("ptxas info    : 0 bytes gmem\n"
               f"ptxas info    : Function properties for {fn}\n"
               f"    0 bytes stack frame, {spill} bytes spill stores, {spill} bytes spill loads\n"
               "ptxas info    : Compile time = 1.0 ms\n")
        if kernel:
            out += (f"ptxas info    : Compiling entry function '_Z4kernPf' for '{arch}'\n"
                    "ptxas info    : Function properties for _Z4kernPf\n"
                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                    "ptxas info    : Used 24 registers, used 0 barriers\n")
        return out

    got = parse_ptxas_log(compile_("sm_80", 0) + compile_("sm_90", 284), relocatable=True)
    assert got["sm_80"]["_Z4kernPf"].unattributed_spills == ()
    assert got["sm_90"]["_Z4kernPf"].unattributed_spills == ("_Z6helperPKfi",)
    # a log cut without its `bytes gmem` lines tells no compile from another: every arch
    cut = "".join(ln for ln in (compile_("sm_80", 0) + compile_("sm_90", 284)).splitlines(True)
                  if "bytes gmem" not in ln)
    got = parse_ptxas_log(cut, relocatable=True)
    assert all(got[a]["_Z4kernPf"].unattributed_spills == ("_Z6helperPKfi",) for a in ("sm_80", "sm_90"))
    shared = compile_("", 12, "_Z6remotev", kernel=False)  # another file's functions, no kernel
    got = parse_ptxas_log(compile_("sm_80", 0) + compile_("sm_90", 0) + shared, relocatable=True)
    assert all(got[a]["_Z4kernPf"].unattributed_spills == ("_Z6remotev",) for a in ("sm_80", "sm_90"))


def test_a_relocatable_compile_s_log_is_said_to_be_before_the_link() -> None:
    """Real-code run, stop 40: an -rdc compile's log was listed as final (k_spill 24 registers
    and no stack, where the link gives 32 and 280)."""
    assert all(k.before_link for k in parse_ptxas_log(RDC)["sm_90"].values())
    assert not any(k.before_link for k in parse_ptxas_log(WHOLE)["sm_90"].values())
    g = ("ptxas info    : Function properties for _Z5heavyPKfi\n"
         "    112 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads\n"
         "ptxas info    : Compile time = 3.5 ms\n"
         "ptxas info    : Compiling entry function '_Z5callsPfPKfi' for 'sm_90'\n"
         "ptxas info    : Function properties for _Z5callsPfPKfi\n"
         "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
         "ptxas info    : Used 24 registers, used 0 barriers, 112 bytes cumulative stack size\n"
         "ptxas info    : Compile time = 0.9 ms\n")  # -G: the kernel's cumulative stack
    assert not parse_ptxas_log(g)["sm_90"]["_Z5callsPfPKfi"].before_link
    linked = RDC + ("nvlink info    : Function properties for '_Z1kPfPKfi':\n"
                    "nvlink info    : used 32 registers, used 0 barriers, 520 stack, 0 bytes smem, "
                    "536 bytes cmem[0], 0 bytes lmem\n")
    assert not parse_ptxas_log(linked)["sm_90"]["_Z1kPfPKfi"].before_link
