"""Tuning and Triton entries of a manifest, key by key: each value read back exactly and
each refusal with its message and line, the caps on both sides. No compiler runs here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from occupancy.core.errors import OccupancyError
from occupancy.inputs.expr import Expr
from occupancy.inputs.manifest import ManifestError, entry_kind, keys_of, load_manifest, tuning_entry
from occupancy.inputs.manifest import triton as triton_module
from occupancy.inputs.manifest.keys import ALL, KEYS, TOP_KEYS, parse_compilers, parse_defines
from occupancy.inputs.manifest.triton import TritonSpec, find_kind, load_triton
from occupancy.inputs.manifest.tuning import ArrayArg, load_tuning

I32 = "2,147,483,647"
TUNE = {"name": "t", "source": "k.cu", "space": {"TILE": [16, 32]}, "problem": {"N": 1024},
        "block": "TILE", "grid": "ceil(N / TILE)"}


def write(tmp_path: Path, entries: list[Any], **top: Any) -> Path:
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "m.py").write_text("")
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump({**top, "kernels": entries}, sort_keys=False))
    return p


def tune(tmp_path: Path, overrides: dict[str, int] | None = None, kernel: str = "t",
         others: list[Any] | None = None, **change: Any) -> Any:
    e = {k: v for k, v in {**TUNE, **change}.items() if v is not None}
    return load_tuning(write(tmp_path, [e, *(others or [])]), kernel, overrides)


def tune_error(tmp_path: Path, **kw: Any) -> str:
    with pytest.raises(ManifestError) as info:
        tune(tmp_path, **kw)
    return _no_line(str(info.value).removeprefix(f"{tmp_path / 'm.yaml'}: "))


def _no_line(msg: str) -> str:
    """The message without its `line N: ` (test_lines checks those)."""
    return re.sub(r"^line \d+: ", "", msg)


def line_of(path: Path, *keys: str) -> int:
    """The line of an entry's key (and a key nested under it) in a manifest written by write()."""
    lines = path.read_text().splitlines()
    n = next(i for i, t in enumerate(lines) if re.match(rf"^(- |  ){re.escape(keys[0])}:", t))
    for sub in keys[1:]:
        n = next(i for i in range(n + 1, len(lines)) if re.match(rf"^ +(- )?{re.escape(sub)}:", lines[i]))
    return n + 1


def test_keys_table() -> None:
    assert keys_of("triton") == {k for k, key in KEYS.items() if "triton" in key.kinds}
    assert {"name", "devices", "min_occupancy", "grid"} <= keys_of("triton")
    assert all(k in keys_of("launch") for k, key in KEYS.items() if key.kinds == ALL)
    assert TOP_KEYS == {"devices", "min_occupancy", "kernels", "compilers", "include_dirs", "flags",
                        "defines"}
    assert entry_kind({"triton": "a.py:f", "space": {}}) == "triton"
    assert entry_kind({"space": {}}) == "tune" and entry_kind({"args": []}) == "tune"
    assert entry_kind({"name": "k"}) == "launch" and entry_kind(["space"]) == "launch"
    assert tuning_entry({"space": {}}) and not tuning_entry({"triton": 1}) and not tuning_entry(3)


def test_compilers_and_defines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nvcc = tmp_path / "nvcc"
    nvcc.write_text("")
    # a program the manifest's folder holds is no CUDA install's nvcc: refused, naming the leave
    monkeypatch.delenv("OCCUPANCY_TRUST_COMPILERS", raising=False)
    for v in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(OccupancyError) as info:
        parse_compilers({"sm_61": "nvcc"}, tmp_path, 1)
    assert str(info.value).startswith(f"compilers.sm_61: {nvcc} is not the nvcc of a CUDA install")
    assert str(info.value).endswith("set OCCUPANCY_TRUST_COMPILERS=1 if you trust it")
    monkeypatch.setenv("OCCUPANCY_TRUST_COMPILERS", "yes")  # only 1 is the leave
    with pytest.raises(OccupancyError):
        parse_compilers({"sm_61": "nvcc"}, tmp_path, 1)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path.parent))  # $CUDA_HOME/bin/nvcc: not this one
    with pytest.raises(OccupancyError):
        parse_compilers({"sm_61": "nvcc"}, tmp_path, 1)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text("")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))  # the user's own toolkit
    assert parse_compilers({"sm_61": "bin/nvcc"}, tmp_path, 1) == {"sm_61": str(tmp_path / "bin" / "nvcc")}
    monkeypatch.setenv("OCCUPANCY_TRUST_COMPILERS", "1")
    assert parse_compilers({"sm_61": "nvcc", "sm_90a": str(nvcc)}, tmp_path, 1) == {
        "sm_61": str(nvcc), "sm_90a": str(nvcc)}
    assert parse_compilers({}, tmp_path, 1) == {}
    for bad in ({"sm_6": "nvcc"}, {"sm_1000": "nvcc"}, {"sm_61": ""}, {"sm_61": 3}, ["nvcc"],
                {"sm_61x": "nvcc"}, {"sm_61": "a\x00b"}):
        with pytest.raises(OccupancyError) as info:
            parse_compilers(bad, tmp_path, 1)
        assert str(info.value) == ("compilers maps an arch to an nvcc, e.g. "
                                   "{sm_61: /usr/local/cuda-12.4/bin/nvcc}")
    with pytest.raises(OccupancyError) as info:
        parse_compilers({"sm_61": "nope"}, tmp_path, 1)
    assert str(info.value) == f"compilers.sm_61: no such file {tmp_path / 'nope'}"
    assert parse_defines({"A": True, "B": 2, "C": "x y"}, 1) == {"A": "1", "B": "2", "C": "x y"}
    with pytest.raises(OccupancyError) as info:
        parse_defines({"9A": 1}, 1)
    assert str(info.value).startswith("defines: define name 9A is not a C identifier")
    with pytest.raises(OccupancyError) as info:
        parse_defines({f"A{i}": 1 for i in range(1025)}, 1)
    assert str(info.value) == "defines must be a mapping, e.g. {TILE: 32, USE_FAST: true}"
    assert len(parse_defines({f"A{i}": 1 for i in range(1024)}, 1)) == 1024


def test_manifest_top_level_compilers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_TRUST_COMPILERS", "1")  # a stand-in nvcc, with the user's leave
    (tmp_path / "nvcc").write_text("")
    m = load_manifest(write(tmp_path, [{"name": "k", "block": 1, "registers": 1}], devices=["v100"],
                            compilers={"sm_70": "nvcc"}))
    assert dict(m.kernels[0].compilers) == {"sm_70": str(tmp_path / "nvcc")}


def test_a_tuning_entry_read_back(tmp_path: Path) -> None:
    s = tune(tmp_path, defines={"T": "TILE", "W": "WORD", "F": True, "N2": "N * 2", "X": 3},
             restrict=["TILE > 8"], work={"flops": "2 * N", "dram_bytes": "4 * N"},
             args=["N", {"array": "A", "shape": ["N"]},
                   {"array": "B", "dtype": "int8", "shape": [2, "N"], "output": True}],
             dynamic_shared_memory="TILE * 4", block=["TILE", 2], grid=["N", 1, 1], carveout=50,
             tolerance="1e-4")
    assert (s.name, s.manifest, s.line, s.source, s.shown_source, s.function) == (
        "t", str(tmp_path / "m.yaml"), 2, str(tmp_path / "k.cu"), "k.cu", "t")
    assert s.space == {"TILE": (16, 32)} and s.problem == {"N": 1024}
    assert isinstance(s.defines["T"], Expr) and isinstance(s.defines["N2"], Expr)
    assert (s.defines["W"], s.defines["F"], s.defines["X"]) == ("WORD", "1", "3")
    env = {"TILE": 16, "N": 1024}
    assert [r(env) for r in s.restrict] == [True]
    assert {k: v(env) for k, v in s.work.items()} == {"flops": 2048, "dram_bytes": 4096}
    assert isinstance(s.args[0], Expr) and s.args[0](env) == 1024
    a, b = s.args[1], s.args[2]
    assert isinstance(a, ArrayArg) and isinstance(b, ArrayArg)
    assert (a.name, a.dtype, a.output, [x(env) for x in a.shape]) == ("A", "float32", False, [1024])
    assert (b.name, b.dtype, b.output, [x(env) for x in b.shape]) == ("B", "int8", True, [2, 1024])
    assert s.dynamic_shared_memory(env) == 64
    assert [x(env) for x in s.block] == [16, 2] and [x(env) for x in s.grid] == [1024, 1, 1]
    assert (s.carveout, s.tolerance, s.reference, s.reference_kernel) == (50, 1e-4, None, None)
    d = tune(tmp_path)
    assert (d.carveout, d.tolerance, d.work, d.args, d.restrict, d.include_dirs, d.flags) == (
        None, 1e-3, {}, (), (), (), ())
    assert d.dynamic_shared_memory({}) == 0 and dict(d.defines) == {}
    assert tune(tmp_path, overrides={"N": 7}).problem == {"N": 7}
    assert tune(tmp_path, function="ns::k<TILE>").function == "ns::k<TILE>"
    assert tune(tmp_path, tolerance=0.5).tolerance == 0.5 and tune(tmp_path, carveout=0).carveout == 0
    assert tune(tmp_path, carveout=100).carveout == 100
    assert tune(tmp_path, problem={"N": 2147483647}).problem == {"N": 2147483647}
    assert tune(tmp_path, restrict=["TILE > 1"] * 64).restrict[63]({"TILE": 2}) is True
    assert len(tune(tmp_path, space={"TILE": list(range(1000))}).space["TILE"]) == 1000
    assert tune(tmp_path, args=[{"array": "A", "shape": [1, 2, 3, 4]}]).args[0].shape[3]({}) == 4


@pytest.mark.parametrize(("change", "message"), [
    ({"spce": {}}, "kernel 't': unknown key 'spce'; did you mean 'space'?"),
    ({"space": None}, "kernel 't': a tuning entry needs 'space:'"),
    ({"grid": None}, "kernel 't': a tuning entry needs 'grid:'"),
    ({"block": None}, "kernel 't': a tuning entry needs 'block:'"),
    ({"source": 3}, "kernel 't': source: must be a file path"),
    ({"source": ""}, "kernel 't': source: must be a file path"),
    ({"space": []}, "kernel 't': space: must map names to lists of values, e.g. {TILE: [16, 32]}"),
    ({"space": {}}, "kernel 't': space: must map names to lists of values, e.g. {TILE: [16, 32]}"),
    ({"space": {"1A": [1]}}, "kernel 't': space: '1A' is not a name (letters, digits, _)"),
    ({"space": {"A" * 65: [1]}}, f"kernel 't': space: '{'A' * 65}' is not a name (letters, digits, _)"),
    ({"space": {"TILE": []}}, "kernel 't': space: TILE must be a list of 1-1000 numbers or words"),
    ({"space": {"TILE": 16}}, "kernel 't': space: TILE must be a list of 1-1000 numbers or words"),
    ({"space": {"TILE": [[1]]}}, "kernel 't': space: TILE must be a list of 1-1000 numbers or words"),
    ({"space": {"TILE": list(range(1001))}},
     "kernel 't': space: TILE must be a list of 1-1000 numbers or words"),
    ({"space": {"TILE": ["$x"]}}, "kernel 't': space.TILE: $x holds a character that is not allowed"),
    ({"problem": [1]}, "kernel 't': problem: must map sizes to numbers, e.g. {M: 4096}"),
    ({"problem": {"1N": 1}}, "kernel 't': problem: '1N' is not a name"),
    ({"problem": {"N": 0}}, f"kernel 't': problem: N must be an integer 1..{I32}, got 0"),
    ({"problem": {"N": 2147483648}},
     f"kernel 't': problem: N must be an integer 1..{I32}, got 2147483648"),
    ({"problem": {"N": True}}, f"kernel 't': problem: N must be an integer 1..{I32}, got True"),
    ({"problem": {"N": 1, "TILE": 2}}, "kernel 't': problem: TILE is both a space and a problem name"),
    ({"overrides": {"M": 1}}, "kernel 't': problem: --set M: no such problem size; the problem has N"),
    ({"overrides": {"M": 1}, "problem": {}},
     "kernel 't': problem: --set M: no such problem size; the problem has none"),
    ({"restrict": "TILE > 1"}, "kernel 't': restrict: must be a list of conditions"),
    ({"restrict": ["TILE > 1"] * 65}, "kernel 't': restrict: must be a list of conditions"),
    ({"restrict": ["Q > 1"]}, "kernel 't': restrict[0]: unknown name 'Q' in 'Q > 1' (known: N, TILE)"),
    ({"function": "k;"}, "kernel 't': function: function k; is not a C++ name: use letters, "
                         "digits, _, :: and template arguments <...> (no ;, #, /, quotes, braces or "
                         "newlines)"),
    ({"defines": [1]}, "kernel 't': defines must be a mapping, e.g. {TILE: 32, USE_FAST: true}"),
    ({"defines": {"A": [1]}}, "kernel 't': defines.A: a define value must be true/false, a "
                              "number or a string, got list"),
    ({"include_dirs": ["nodir"]}, "kernel 't': include_dirs: no such folder "),
    ({"flags": "-O3"}, "kernel 't': flags must be a list, e.g. [-std=c++17, -rdc=true]"),
    ({"work": {"flop": 1}}, "kernel 't': work: is {flops: EXPR, dram_bytes: EXPR}"),
    ({"work": [1]}, "kernel 't': work: is {flops: EXPR, dram_bytes: EXPR}"),
    ({"work": {"flops": "Q"}}, "kernel 't': work.flops: unknown name 'Q' in 'Q' (known: N, TILE)"),
    ({"args": "N"}, "kernel 't': args: must be the kernel's arguments in launch order"),
    ({"args": [1] * 65}, "kernel 't': args: must be the kernel's arguments in launch order"),
    ({"args": [{"array": "A", "shape": [1], "x": 1}]},
     "kernel 't': args: [0] is {array: NAME, dtype: float32, shape: [..], output: true}"),
    ({"args": [{"shape": [1]}]},
     "kernel 't': args: [0] is {array: NAME, dtype: float32, shape: [..], output: true}"),
    ({"args": [1, {"array": "1A", "shape": [1]}]}, "kernel 't': args: [1] array name must be a name"),
    ({"args": [{"array": "A", "dtype": "f32", "shape": [1]}]},
     "kernel 't': args: [0] dtype must be one of float32, float64, float16, bfloat16, int32, "
     "int64, int8, uint8"),
    ({"args": [{"array": "A", "shape": []}]}, "kernel 't': args: [0] shape must be a list of 1-4 sizes"),
    ({"args": [{"array": "A", "shape": [1] * 5}]},
     "kernel 't': args: [0] shape must be a list of 1-4 sizes"),
    ({"args": [{"array": "A", "shape": 4}]}, "kernel 't': args: [0] shape must be a list of 1-4 sizes"),
    ({"args": [{"array": "A", "shape": [1], "output": 1}]},
     "kernel 't': args: [0] output must be true or false"),
    ({"args": [{"array": "A", "shape": ["Q"]}]},
     "kernel 't': args[0].shape: unknown name 'Q' in 'Q' (known: N, TILE)"),
    ({"args": ["Q"]}, "kernel 't': args[0]: unknown name 'Q' in 'Q' (known: N, TILE)"),
    ({"tolerance": 0}, "kernel 't': tolerance: is a relative error between 0 and 1, e.g. 1e-3"),
    ({"tolerance": 1}, "kernel 't': tolerance: is a relative error between 0 and 1, e.g. 1e-3"),
    ({"tolerance": True}, "kernel 't': tolerance: is a relative error between 0 and 1, e.g. 1e-3"),
    ({"tolerance": "abc"}, "kernel 't': tolerance: is a relative error between 0 and 1, e.g. 1e-3"),
    ({"carveout": 101}, "kernel 't': carveout: is a percentage 0-100"),
    ({"carveout": -1}, "kernel 't': carveout: is a percentage 0-100"),
    ({"carveout": True}, "kernel 't': carveout: is a percentage 0-100"),
    ({"carveout": 5.0}, "kernel 't': carveout: is a percentage 0-100"),
    ({"dynamic_shared_memory": "Q"},
     "kernel 't': dynamic_shared_memory: unknown name 'Q' in 'Q' (known: N, TILE)"),
    ({"block": [1, 2, 3, 4]}, "kernel 't': block: give an expression or a list of 1-3"),
    ({"grid": []}, "kernel 't': grid: give an expression or a list of 1-3"),
    ({"grid": ["N", "Q"]}, "kernel 't': grid[1]: unknown name 'Q' in 'Q' (known: N, TILE)"),
    ({"reference": "A.T"}, "kernel 't': reference: unknown name 'A' in 'A.T' (known: N, TILE)"),
    ({"reference": "N.T", "args": [{"array": "A", "shape": [1]}]},
     "kernel 't': reference: N is not an array: .T and @ act on arrays (args given as {array: NAME, ...})"),
    ({"reference": "2 @ A", "args": [{"array": "A", "shape": [1]}]},
     "kernel 't': reference: a number is not an array: .T and @ act on arrays (args given as "
     "{array: NAME, ...})"),
    ({"kernel": "x"}, "no kernel 'x' (tuning entries: t); --kernel names one"),
])
def test_tuning_refusals(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    kw = {k: v for k, v in change.items() if k in ("overrides", "kernel")}
    rest = {k: v for k, v in change.items() if k not in kw}
    assert tune_error(tmp_path, **kw, **rest).startswith(message)


def test_tuning_file_level(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    for text in ("[1]\n", "kernels: {a: 1}\n"):
        p.write_text(text)
        with pytest.raises(ManifestError) as info:
            load_tuning(p, "t")
        assert str(info.value) == f"{p}: line 1: a manifest is a mapping with 'kernels:'"
    p.write_text("kernels:\n  - {name: x, block: 1}\n  - 3\n")
    with pytest.raises(ManifestError) as info:
        load_tuning(p, "t")
    assert str(info.value) == f"{p}: line 1: no kernel 't' (tuning entries: none); --kernel names one"
    p.write_text("kernels:\n  - {name: t, triton: 'm.py:f'}\n")
    with pytest.raises(ManifestError) as info:
        load_tuning(p, "t")
    assert str(info.value) == (f"{p}: line 2: kernel 't' is a triton entry: read it with "
                               "load_triton (occupancy tile, check and measure take it)")


def test_reference_kernels(tmp_path: Path) -> None:
    ref = {"name": "r", "source": "k.cu", "block": 1, "grid": "N", "problem": {"N": 5},
           "args": [{"array": "C", "shape": ["N"], "output": True}]}
    mine = {"args": [{"array": "C", "shape": ["N"], "output": True}], "reference": "r"}
    s = tune(tmp_path, others=[ref], overrides={"N": 9}, **mine)
    assert s.reference is None and s.reference_kernel is not None
    assert s.reference_kernel.name == "r" and s.reference_kernel.problem == {"N": 9}
    assert s.reference_kernel.space == {"_": (0,)} and s.reference_kernel.reference is None
    other = {**ref, "args": [{"array": "D", "shape": ["N"], "output": True}]}
    msg = tune_error(tmp_path, others=[other], **mine)
    assert msg == ("kernel 't': reference: kernel 'r' writes none of this kernel's outputs "
                   "(C): name its output arrays the same")
    msg = tune_error(tmp_path, others=[other], **{**mine, "args": ["N"]})
    assert msg.endswith("writes none of this kernel's outputs (none): name its output arrays the same")
    msg = tune_error(tmp_path, others=[{**ref, "name": "C"}], **{**mine, "reference": "C"})
    assert msg == ("kernel 't': reference: 'C' names both another kernel and an array or "
                   "size of this one: rename one")
    msg = tune_error(tmp_path, others=[{**ref, "name": "N"}], **{**mine, "reference": "N"})
    assert msg.endswith("'N' names both another kernel and an array or size of this one: rename one")
    s2 = tune(tmp_path, args=[{"array": "A", "shape": [1]}], reference="A.T @ A")
    assert s2.reference is not None and s2.reference.arrays and s2.reference_kernel is None


def _triton(tmp_path: Path, **change: Any) -> Path:
    e = {"name": "tk", "triton": "m.py:kern", "signature": {"a_ptr": "*fp16", "M": "i32", "s": "fp32"},
         "problem": {"M": 64}, "values": {"s": "1.5"}, "configs": [{"BLOCK": 32, "num_warps": 4}]}
    e = {k: v for k, v in {**e, **change}.items() if v is not None}
    return write(tmp_path, [e], devices=["h100"])


def trit(tmp_path: Path, **change: Any) -> TritonSpec:
    return load_triton(_triton(tmp_path, **change), "tk")


def trit_error(tmp_path: Path, **change: Any) -> str:
    with pytest.raises(ManifestError) as info:
        trit(tmp_path, **change)
    return _no_line(str(info.value).removeprefix(f"{tmp_path / 'm.yaml'}: "))


def test_a_triton_entry_read_back(tmp_path: Path) -> None:
    s = trit(tmp_path, constexprs={"top_k": 2, "FAST": False, "ct": "fp16", "x": None, "f": 1.5},
             grid=["ceil(M / BLOCK)", 1], unaligned="a_ptr", min_occupancy=0.25)
    p = tmp_path / "m.yaml"
    assert (s.name, s.line, s.module, s.shown_module, s.function) == (
        "tk", line_of(p, "name"), str(tmp_path / "m.py"), "m.py", "kern")
    assert s.signature == {"a_ptr": "*fp16", "M": "i32", "s": "fp32"}
    assert s.configs == ({"BLOCK": 32, "num_warps": 4},)
    assert s.config_lines == (line_of(p, "configs", "BLOCK"),)
    assert s.problem == {"M": (64,)} and s.sweep is None and s.devices == ("h100",)
    assert s.unaligned == frozenset({"a_ptr"}) and s.min_occupancy == 0.25 and s.config_file is None
    assert s.ref == f"{tmp_path / 'm.py'}:kern"
    assert s.points() == [{"M": 64}]
    env = s.env(s.configs[0], {"M": 64})
    assert env == {"top_k": 2, "f": 1.5, "M": 64, "BLOCK": 32, "num_warps": 4}
    assert s.call_values(s.configs[0], {"M": 64}) == {"M": 64, "s": 1.5}
    assert s.grid_size(s.configs[0], {"M": 64}) == 2
    assert trit(tmp_path).grid_size({"BLOCK": 1}, {"M": 1}) is None
    sw = trit(tmp_path, problem={"M": [1, 16, 16, 64], "K": 8}, unaligned=None)
    assert sw.problem == {"M": (1, 16, 64), "K": (8,)} and sw.sweep == "M"
    assert sw.points() == [{"M": 1, "K": 8}, {"M": 16, "K": 8}, {"M": 64, "K": 8}]
    assert sw.unaligned == frozenset() and sw.min_occupancy == 0.0
    ints = trit(tmp_path, signature={"E": "i32", "F": "fp32"}, values={"E": "M / 2", "F": "M / 2"})
    got = ints.call_values({}, {"M": 64})
    assert got == {"E": 32, "F": 32.0} and type(got["E"]) is int and type(got["F"]) is float
    zero = trit(tmp_path, grid=["M - 64", "2"])
    assert zero.grid_size({}, {"M": 64}) == 2  # a dimension of 0 counts as 1


def test_triton_spaces(tmp_path: Path) -> None:
    s = trit(tmp_path, configs=None, space={"BLOCK": [16, 32, 64], "num_warps": [4, 8]},
             restrict=["BLOCK * num_warps <= 128 + M"])
    assert s.configs == ({"BLOCK": 16, "num_warps": 4}, {"BLOCK": 16, "num_warps": 8},
                         {"BLOCK": 32, "num_warps": 4})
    assert s.config_lines == (line_of(tmp_path / "m.yaml", "space"),) * 3
    assert trit_error(tmp_path, configs=None, space={"BLOCK": [16]}, restrict=["BLOCK > 99"]) == \
        "kernel 'tk': restrict: no config of the space is left"
    assert trit_error(tmp_path, configs=None, space={"BLOCK": [16], "num_warps": [3]}) == \
        "kernel 'tk': space: num_warps must be one of 1, 2, 4, 8, 16, 32, got 3"
    assert trit_error(tmp_path, restrict=["M > 1"]) == \
        "kernel 'tk': restrict: restricts a 'space:'; this entry has none"
    big = {"A": list(range(1000)), "B": list(range(1000)), "C": [1, 2]}
    assert trit_error(tmp_path, configs=None, space=big) == \
        "kernel 'tk': space: 2,000,000 points: more than 1,000,000"


@pytest.mark.parametrize(("change", "message"), [
    ({"triton": 3}, "kernel 'tk': triton: must be 'path/to/module.py:function'"),
    ({"triton": "m.py"}, "kernel 'tk': triton: 'm.py' is not 'path/to/module.py:function' (a .py "
                         "file, relative to the manifest, and a Python identifier)"),
    ({"triton": "m.txt:kern"}, "kernel 'tk': triton: 'm.txt:kern' is not"),
    ({"triton": "m.py:1k"}, "kernel 'tk': triton: 'm.py:1k' is not"),
    ({"triton": "m.py:kérn"}, "kernel 'tk': triton: 'm.py:kérn' is not"),
    ({"triton": "n.py:kern"}, "kernel 'tk': triton: no such file "),
    ({"nme": 1}, "kernel 'tk': unknown key 'nme'; did you mean 'name'?"),
    ({"signature": {}}, "kernel 'tk': signature: must map every runtime argument to its type, "
                        "e.g. {a_ptr: '*fp16', M: i32, scale: fp32}"),
    ({"signature": {"1a": "i32"}}, "kernel 'tk': signature: '1a' is not an argument name"),
    ({"signature": {"a": "int"}}, "kernel 'tk': signature: a: 'int' is not a Triton type: a "
                                  "pointer '*fp16' ('*' + one of fp8e4nv, "),
    ({"signature": {"a": "*int"}}, "kernel 'tk': signature: a: '*int' is not a Triton type"),
    ({"signature": {"a": 3}}, "kernel 'tk': signature: a: 3 is not a Triton type"),
    ({"signature": {"a_ptr": "*fp16", "M": "i32"}, "constexprs": {"M": 1}},
     "kernel 'tk': constexprs: M is also in the signature"),
    ({"constexprs": [1]}, "kernel 'tk': constexprs: must map names to values, e.g. {top_k: 2, "
                          "MUL_ROUTED_WEIGHT: false, compute_type: fp16}"),
    ({"constexprs": {"1a": 1}}, "kernel 'tk': constexprs: '1a' is not a name"),
    ({"constexprs": {"a": "x y"}}, "kernel 'tk': constexprs: a: a constexpr is a number, "
                                   "true/false, or a word (a dtype name such as fp16), got 'x y'"),
    ({"constexprs": {"a": "x" * 65}}, "kernel 'tk': constexprs: a: a constexpr is a number"),
    ({"constexprs": {"a": [1]}}, "kernel 'tk': constexprs: a: a constexpr is a number"),
    ({"problem": [1]}, "kernel 'tk': problem: must map sizes to integers, e.g. {M: [1, 16, 64], "
                       "N: 14336, K: 4096}"),
    ({"problem": {"1M": 1}}, "kernel 'tk': problem: '1M' is not a name"),
    ({"problem": {"M": -1}}, f"kernel 'tk': problem: M must be an integer 0..{I32} or a list of 1-64"),
    ({"problem": {"M": 2147483648}}, "kernel 'tk': problem: M must be an integer 0.."),
    ({"problem": {"M": []}}, "kernel 'tk': problem: M must be an integer 0.."),
    ({"problem": {"M": list(range(65))}}, "kernel 'tk': problem: M must be an integer 0.."),
    ({"problem": {"M": [True]}}, "kernel 'tk': problem: M must be an integer 0.."),
    ({"problem": {"M": [1, 2], "N": [3, 4]}}, "kernel 'tk': problem: only one size may be a list "
                                             "(M, N are)"),
    ({"configs": None}, "kernel 'tk': give the configs: 'configs:' (a vLLM/SGLang JSON file or a "
                        "list) or 'space:' (lists of values), one of them"),
    ({"space": {"B": [1]}}, "kernel 'tk': give the configs: "),
    ({"configs": []}, "kernel 'tk': configs: is a config file path or a list of 1-10,000 configs"),
    ({"configs": 3}, "kernel 'tk': configs: is a config file path or a list of 1-10,000 configs"),
    ({"configs": [{}]}, "kernel 'tk': configs[0] is a mapping of parameters to integers, e.g. "
                        "{BLOCK_SIZE_M: 64, num_warps: 4, num_stages: 3}"),
    ({"configs": [{"B": 1}, {"1B": 1}]}, "kernel 'tk': configs[1]: '1B' is not a parameter name"),
    ({"configs": [{"B": -1}]}, "kernel 'tk': configs[0]: B must be an integer 0..1048576, got -1"),
    ({"configs": [{"B": 1048577}]}, "kernel 'tk': configs[0]: B must be an integer 0..1048576"),
    ({"configs": [{"B": True}]}, "kernel 'tk': configs[0]: B must be an integer 0..1048576"),
    ({"configs": [{"B": 1, "num_warps": 3}]},
     "kernel 'tk': configs[0]: num_warps must be one of 1, 2, 4, 8, 16, 32, got 3"),
    ({"configs": "nofile.json"}, "kernel 'tk': configs: no such file "),
    ({"configs": ""}, "kernel 'tk': configs: must be a file path"),
    ({"configs": None, "space": [1]}, "kernel 'tk': space: must map parameters to lists of values"),
    ({"configs": None, "space": {"1B": [1]}}, "kernel 'tk': space: '1B' is not a parameter name"),
    ({"configs": None, "space": {"B": []}}, "kernel 'tk': space: B must be a list of integers 0..1048576"),
    ({"configs": None, "space": {"B": [1048577]}}, "kernel 'tk': space: B must be a list of integers"),
    ({"configs": None, "space": {"B": [True]}}, "kernel 'tk': space: B must be a list of integers"),
    ({"configs": None, "space": {"B": list(range(1001))}}, "kernel 'tk': space: B must be a list"),
    ({"configs": None, "space": {"B": [1]}, "restrict": "B > 1"},
     "kernel 'tk': restrict: must be a list of conditions, e.g. "
     "['BLOCK_SIZE_M * BLOCK_SIZE_N <= 128 * 128']"),
    ({"configs": None, "space": {"B": [1]}, "restrict": ["Q > 1"]},
     "kernel 'tk': restrict[0]: unknown name 'Q' in 'Q > 1' (known: B, M)"),
    ({"values": [1]}, "kernel 'tk': values: must map integer arguments to expressions, e.g. "),
    ({"values": {"a_ptr": "1"}}, "kernel 'tk': values: 'a_ptr' is not a scalar argument of the signature"),
    ({"values": {"zz": "1"}}, "kernel 'tk': values: 'zz' is not a scalar argument of the signature"),
    ({"values": {"s": "Q"}}, "kernel 'tk': values.s: unknown name 'Q' in 'Q' (known: BLOCK, M, num_warps)"),
    ({"values": None}, "kernel 'tk': signature: s (fp32) needs a value: add it to 'problem:' or "
                       "'values:' (its specialization depends on it: 1, or divisible by 16)"),
    ({"unaligned": ["M"]}, "kernel 'tk': unaligned: must list pointer arguments of the signature "
                           "whose address is not a multiple of 16"),
    ({"unaligned": 3}, "kernel 'tk': unaligned: must list pointer arguments"),
    ({"grid": [1, 2, 3, 4]}, "kernel 'tk': grid: give an expression or a list of 1-3"),
    ({"grid": ["Q"]}, "kernel 'tk': grid[0]: unknown name 'Q' in 'Q' (known: BLOCK, M, num_warps, s)"),
    ({"devices": []}, "kernel 'tk': devices must be a list of 1-64 device names"),
    ({"min_occupancy": 2}, "kernel 'tk': min_occupancy must be a fraction 0-1 (0.5 = 50%), got 2"),
])
def test_triton_refusals(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    assert trit_error(tmp_path, **change).startswith(message)


def test_triton_config_files(tmp_path: Path) -> None:
    cfg = {"1": {"BLOCK": 16, "num_warps": 4, "num_stages": 2},
           "16": {"BLOCK": 32, "num_warps": 4, "num_stages": 2},
           "64": {"BLOCK": 16, "num_warps": 4, "num_stages": 2}}
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    s = trit(tmp_path, configs="c.json")
    assert s.configs == ({"BLOCK": 16, "num_warps": 4, "num_stages": 2},
                         {"BLOCK": 32, "num_warps": 4, "num_stages": 2})
    at = line_of(tmp_path / "m.yaml", "configs")
    assert s.config_lines == (at, at) and s.config_file == str(tmp_path / "c.json")
    (tmp_path / "bad.json").write_text("[")
    assert trit_error(tmp_path, configs="bad.json").startswith("kernel 'tk': configs: ")
    s2 = trit(tmp_path, configs=[{"B": 1}, {"B": 2}, {"B": 1}])
    at = line_of(tmp_path / "m.yaml", "configs", "B")
    assert s2.configs == ({"B": 1}, {"B": 2}) and s2.config_lines == (at, at + 1)


def test_triton_top_level_and_lookup(tmp_path: Path) -> None:
    p = _triton(tmp_path)
    assert find_kind(p, "tk") == "triton" and find_kind(p, "zz") is None
    assert find_kind(tmp_path / "nope.yaml", "tk") is None
    with pytest.raises(ManifestError) as info:
        load_triton(p, "zz")
    assert str(info.value) == f"{p}: line 3: no triton kernel 'zz' (triton entries: tk)"
    p.write_text("kernels:\n  - {name: k, block: 1}\n")
    assert find_kind(p, "k") == "launch"
    with pytest.raises(ManifestError) as info:
        load_triton(p, "k")
    assert str(info.value) == f"{p}: line 1: no triton kernel 'k' (triton entries: none)"
    for text in ("[1]\n", "kernels: 3\n"):
        p.write_text(text)
        with pytest.raises(ManifestError) as info:
            load_triton(p, "k")
        assert str(info.value) == f"{p}: line 1: a manifest is a mapping with 'kernels:'"
        assert find_kind(p, "k") is None
    p.write_text("devices: []\nkernels:\n  - {name: tk, triton: 'm.py:kern'}\n")
    with pytest.raises(ManifestError) as info:
        load_triton(p, "tk")
    assert str(info.value).startswith(f"{p}: line 1: devices must be a list of 1-64")
    p.write_text("min_occupancy: 0.5\nkernels:\n  - {name: tk, triton: 'm.py:kern', signature: {M: i32}, "
                 "problem: {M: 1}, configs: [{B: 1}]}\n")
    s = load_triton(p, "tk")
    assert s.min_occupancy == 0.5 and s.devices == ()


def test_triton_in_a_check_manifest(tmp_path: Path) -> None:
    m = load_manifest(_triton(tmp_path))
    assert [t.name for t in m.triton] == ["tk"] and m.kernels == () and set(m.devices) == {"h100"}
    p = write(tmp_path, [{"name": "tk", "triton": "m.py:kern", "signature": {"M": "i32"},
                          "problem": {"M": 1}, "configs": [{"B": 1}]}])
    m2 = load_manifest(p)
    assert m2.triton == () and m2.kernels[0].error == (
        "kernel 'tk': no devices: add 'devices:' at the top of the manifest or to this kernel")
    for name, label in (("", ""), ("x" * 201, f"kernel '{'x' * 201}': ")):
        p = write(tmp_path, [{"name": name, "triton": "m.py:kern", "signature": {"M": "i32"},
                              "problem": {"M": 1}, "configs": [{"B": 1}]}], devices=["h100"])
        assert load_manifest(p).kernels[0].error == f"{label}name: needs a 'name:' (a non-empty string)"
    p = write(tmp_path, [{"name": "x" * 200, "triton": "m.py:kern", "signature": {"M": "i32"},
                          "problem": {"M": 1}, "configs": [{"B": 1}]}], devices=["h100"])
    assert load_manifest(p).triton[0].name == "x" * 200


def test_triton_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triton_module, "MAX_CONFIGS", 2)
    assert len(trit(tmp_path, configs=[{"B": 1}, {"B": 2}]).configs) == 2
    assert trit_error(tmp_path, configs=[{"B": 1}, {"B": 2}, {"B": 3}]) == \
        "kernel 'tk': configs: is a config file path or a list of 1-2 configs"
    assert len(trit(tmp_path, configs=None, space={"B": [1, 2]}).configs) == 2
    assert trit_error(tmp_path, configs=None, space={"B": [1, 2, 3]}) == \
        "kernel 'tk': space: 3 configs after 'restrict:': more than 2"
    monkeypatch.setattr(triton_module, "MAX_SPACE", 4)
    assert len(trit(tmp_path, configs=None, space={"B": [1, 2], "C": [1]},
                    restrict=["B < 9"]).configs) == 2
    assert trit_error(tmp_path, configs=None, space={"B": [1, 2, 3], "C": [1, 2]}) == \
        "kernel 'tk': space: 6 points: more than 4"
    four = trit(tmp_path, configs=None, space={"B": [1, 2], "C": [1, 2]}, restrict=["B < 2"])
    assert len(four.configs) == 2


def test_lines(tmp_path: Path) -> None:
    """Each message names the line of the key at fault (a nested one where there is one)."""

    def at(fn: Any, *keys: str, plus: int = 0, **change: Any) -> None:
        with pytest.raises(ManifestError) as info:
            fn(tmp_path, **change)
        p = tmp_path / "m.yaml"
        want = line_of(p, *keys) + plus
        assert str(info.value).startswith(f"{p}: line {want}: "), (keys, str(info.value))

    def tuned(tmp_path: Path, **change: Any) -> Any:
        return tune(tmp_path, **change)

    at(tuned, "spce", spce={})
    at(tuned, "source", source=3)
    at(tuned, "space", space={"TILE": ["$x"]})
    at(tuned, "problem", problem={"N": 0})
    at(tuned, "restrict", restrict=["Q"])
    at(tuned, "defines", defines={"A": [1]})
    at(tuned, "defines", defines=[1])
    at(tuned, "flags", flags="-O3")
    at(tuned, "include_dirs", include_dirs=["nodir"])
    at(tuned, "grid", grid=["N", "Q"])
    at(tuned, "args", args=[{"array": "A", "shape": ["Q"]}])
    at(tuned, "work", work={"flops": "Q"})
    at(tuned, "name", space=None)  # a missing key: the entry's line
    at(trit, "nme", nme=1)
    at(trit, "triton", triton=3)
    at(trit, "signature", "a", signature={"a": "int"})
    at(trit, "constexprs", "a", constexprs={"a": [1]})
    at(trit, "problem", "M", problem={"M": -1})
    at(trit, "problem", "N", problem={"M": [1, 2], "N": [3, 4]})
    at(trit, "configs", "1B", configs=[{"B": 1}, {"1B": 1}])
    at(trit, "values", "a_ptr", values={"a_ptr": "1"})
    at(trit, "values", "s", values={"s": "Q"})
    at(trit, "grid", grid=[1, 2, 3, 4])
    at(trit, "name", configs=None)
    at(trit, "space", "B", configs=None, space={"B": []})
    at(trit, "restrict", plus=1, configs=None, space={"B": [1]}, restrict=["Q"])  # its item
    at(trit, "min_occupancy", min_occupancy=2)
    at(trit, "devices", devices=[])


def test_more_tuning_edges(tmp_path: Path) -> None:
    assert tune_error(tmp_path, source="no.cu") == f"kernel 't': source: no such file {tmp_path / 'no.cu'}"
    assert tune_error(tmp_path, source="a\x00b") == "kernel 't': source: must be a file path"
    # a define names the space or problem when all its names are known, a subset or the whole
    s = tune(tmp_path, defines={"A": "TILE + N", "B": "TILE + Q", "C": "+"})
    assert isinstance(s.defines["A"], Expr) and s.defines["B"] == "TILE + Q" and s.defines["C"] == "+"
    # an expression key other than `reference` never takes arrays
    assert tune_error(tmp_path, grid="A @ B").startswith(
        "kernel 't': grid[0]: @ and .T are allowed in 'reference' only")
    # the reference kernel's outputs are its output arrays only, not its inputs
    ref = {"name": "r", "source": "k.cu", "block": 1, "grid": "N", "problem": {"N": 5},
           "args": [{"array": "C", "shape": ["N"]}, {"array": "D", "shape": ["N"], "output": True}]}
    msg = tune_error(tmp_path, others=[ref], args=[{"array": "C", "shape": ["N"], "output": True}],
                     reference="r")
    assert msg.endswith("writes none of this kernel's outputs (C): name its output arrays the same")
    # a reference entry needs no space of its own; its problem takes the caller's sizes unchecked
    r = tune(tmp_path, others=[{**ref, "space": {"X": [1, 2]}}], reference="r", overrides={"N": 9},
             args=[{"array": "D", "shape": ["N"], "output": True}])
    assert r.reference_kernel is not None and r.reference_kernel.space == {"X": (1, 2)}


def test_more_triton_edges(tmp_path: Path) -> None:
    assert trit(tmp_path, configs=[{"B": 0}]).configs == ({"B": 0},)
    assert trit(tmp_path, problem={"M": [0, 2147483647]}).problem == {"M": (0, 2147483647)}
    assert trit(tmp_path, problem={"M": list(range(64))}).sweep == "M"
    assert trit(tmp_path, grid="ceil(M / BLOCK)").grid_size({"BLOCK": 32}, {"M": 64}) == 2
    assert len(trit(tmp_path, grid=[1, 2, 3]).grid) == 3
    long_ok = "m.py:" + "f" * 64
    (tmp_path / "x").mkdir()
    assert trit_error(tmp_path, triton="a\x00b.py:f") == \
        "kernel 'tk': triton: must be 'path/to/module.py:function'"
    assert trit_error(tmp_path, triton="m.py:" + "f" * 4092).startswith("kernel 'tk': triton: must be")
    assert trit_error(tmp_path, triton=long_ok.replace("m.py", "x:y.py")).startswith(
        "kernel 'tk': triton: no such file ")
    assert trit(tmp_path, triton=long_ok).function == "f" * 64
    assert trit_error(tmp_path, configs="a\x00b") == "kernel 'tk': configs: must be a file path"
    # restrict reads the numeric constexprs and the scalar problem sizes
    s = trit(tmp_path, configs=None, space={"B": [1, 2, 3]}, constexprs={"top": 2, "flag": True},
             restrict=["B * top <= 4"])
    assert s.configs == ({"B": 1}, {"B": 2})
    assert trit_error(tmp_path, configs=None, space={"B": [1]}, constexprs={"flag": True},
                      restrict=["flag"]).startswith("kernel 'tk': restrict[0]: unknown name 'flag'")
    # the swept size is not a name restrict may read; the others are
    assert trit_error(tmp_path, configs=None, space={"B": [1]}, problem={"M": [1, 2], "K": 4},
                      restrict=["M > 0"]).startswith("kernel 'tk': restrict[0]: unknown name 'M'")
    assert trit(tmp_path, configs=None, space={"B": [1, 9]}, problem={"M": [1, 2], "K": 4},
                restrict=["B < K"]).configs == ({"B": 1},)
    # '*kfp16' (a pointer to a constant) is a pointer type as well
    assert trit(tmp_path, signature={"a": "*kfp16", "M": "i32", "s": "fp32"}).signature["a"] == "*kfp16"
    assert trit_error(tmp_path, signature={"a": "*fp16k", "M": "i32", "s": "fp32"}).startswith(
        "kernel 'tk': signature: a: '*fp16k' is not a Triton type")
    bf = trit(tmp_path, signature={"E": "bf16", "M": "i32"}, values={"E": "M / 2"})
    assert type(bf.call_values({}, {"M": 64})["E"]) is float


def test_triton_measure_keys(tmp_path: Path) -> None:
    """`arrays`, `outputs`, `reference` and `inputs` (what `measure` reads), and the
    manifest's path, read back exactly."""
    p = tmp_path / "m.yaml"
    base: dict[str, Any] = {"signature": {"a_ptr": "*fp32", "c_ptr": "*fp32", "M": "i32"},
                            "values": None}
    s = trit(tmp_path, **base, arrays={"a_ptr": ["M", 4], "c_ptr": "M"}, outputs="c_ptr",
             reference="a_ptr @ a_ptr.T", inputs="m.py:make")
    assert {k: [x.text for x in v] for k, v in s.arrays.items()} == {"a_ptr": ["M", "4"],
                                                                   "c_ptr": ["M"]}
    assert [x({"M": 64}) for x in s.arrays["a_ptr"]] == [64, 4]
    assert s.outputs == ("c_ptr",) and s.reference is not None and s.reference.text == "a_ptr @ a_ptr.T"
    assert s.reference_function is None and s.manifest == str(p)
    assert s.inputs is not None and (s.inputs.path, s.inputs.shown, s.inputs.name) == (
        str(tmp_path / "m.py"), "m.py", "make")
    f = trit(tmp_path, **base, outputs=["c_ptr", "c_ptr"], reference="m.py:ref")
    assert f.outputs == ("c_ptr",) and f.reference is None and f.inputs is None
    assert f.reference_function is not None and f.reference_function.name == "ref"
    assert trit(tmp_path).arrays == {} and trit(tmp_path).outputs == ()


@pytest.mark.parametrize(("change", "message"), [
    ({"arrays": [1]}, "kernel 'tk': arrays: must map pointer arguments to shapes, e.g. "
                      "{a_ptr: [M, K], c_ptr: [M, N]}"),
    ({"arrays": {"M": [1]}}, "kernel 'tk': arrays: 'M' is not a pointer argument of the signature"),
    ({"arrays": {"a_ptr": [1, 2, 3, 4, 5]}}, "kernel 'tk': arrays: a_ptr: a shape is a list of 1-4 sizes"),
    ({"outputs": ["M"]}, "kernel 'tk': outputs: must list the pointer arguments the kernel "
                         "writes, e.g. [c_ptr]"),
    ({"outputs": ["zz"]}, "kernel 'tk': outputs: must list the pointer arguments"),
    ({"outputs": 3}, "kernel 'tk': outputs: must list the pointer arguments"),
    ({"reference": "a_ptr"}, "kernel 'tk': reference: checks the kernel's outputs: list them in "
                             "'outputs:' (e.g. [c_ptr])"),
    ({"reference": "M @ a_ptr", "outputs": "a_ptr"},
     "kernel 'tk': reference: M is not an array: .T and @ act on pointer arguments"),
    ({"reference": "Q @ a_ptr", "outputs": "a_ptr"},
     "kernel 'tk': reference: unknown name 'Q' in 'Q @ a_ptr'"),
    ({"values": [1]}, "kernel 'tk': values: must map integer arguments to expressions, e.g. "
                      "{EM: 'ceil(M * top_k / BLOCK_SIZE_M) * BLOCK_SIZE_M'}"),
])
def test_triton_measure_refusals(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    assert trit_error(tmp_path, **change).startswith(message)


def test_triton_caps_at_their_edges(tmp_path: Path) -> None:
    """256 constexprs, values and problem sizes are taken; 257 are not."""
    many = {f"c{i}": i for i in range(256)}
    assert len(trit(tmp_path, constexprs=many).constexprs) == 256
    assert trit_error(tmp_path, constexprs={**many, "c256": 1}).startswith(
        "kernel 'tk': constexprs: must map names to values")
    sig = {f"s{i}": "i32" for i in range(256)}
    vals = {f"s{i}": "1" for i in range(256)}
    assert len(trit(tmp_path, signature=sig, values=vals).values) == 256
    sizes = {f"P{i}": 1 for i in range(255)}
    assert len(trit(tmp_path, problem={**sizes, "M": 64}).problem) == 256
    assert trit_error(tmp_path, problem={**sizes, "P255": 1, "M": 64}).startswith(
        "kernel 'tk': problem: must map sizes to integers")


def test_triton_files_by_absolute_path_and_their_errors(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"1": {"B": 8, "num_warps": 4, "num_stages": 2}}))
    s = trit(tmp_path, configs=str(tmp_path / "c.json"))
    assert s.configs == ({"B": 8, "num_warps": 4, "num_stages": 2},)
    assert s.config_file == str(tmp_path / "c.json")
    (tmp_path / "bad.json").write_text("[")
    msg = trit_error(tmp_path, configs="bad.json")
    assert msg.startswith(f"kernel 'tk': configs: {tmp_path / 'bad.json'}"), msg
    p = tmp_path / "m.yaml"
    p.write_bytes(b"kernels: [\xff]\n")
    for load in (lambda: load_triton(p, "tk"), lambda: load_manifest(p)):
        with pytest.raises(ManifestError) as info:
            load()
        assert str(info.value).endswith("give a text manifest"), str(info.value)


def test_tuning_source_by_absolute_path_and_the_predictor(tmp_path: Path) -> None:
    s = tune(tmp_path, source=str(tmp_path / "k.cu"))
    assert s.source == str(tmp_path / "k.cu")
    h = tune(tmp_path, hand_counts="matmul", predictor="hand_counts")
    assert (h.hand_counts, h.predictor) == ("matmul", "hand_counts")
    assert tune(tmp_path, hand_counts="matmul").predictor == "model"
    assert tune_error(tmp_path, predictor="x") == "kernel 't': predictor: is model or hand_counts"
    assert tune_error(tmp_path, predictor="hand_counts") == (
        "kernel 't': predictor: hand_counts needs 'hand_counts: FAMILY' beside it")


def test_a_launch_entry_error_names_the_line_of_its_name(tmp_path: Path) -> None:
    """A bad or missing key of a launch entry is reported at the line of the entry's name
    (here not its first line), not at the entry's start."""
    p = tmp_path / "m.yaml"
    p.write_text("devices: [h100]\nkernels:\n  - block: 256\n    name: ''\n"
                 "  - registers: 32\n    name: k\n")
    bad_name, no_block = load_manifest(p).kernels
    assert (bad_name.error, bad_name.line) == ("needs a 'name:' (a non-empty string)", 4)
    assert no_block.error is not None and no_block.error.startswith("kernel 'k': needs 'block:'")
    assert no_block.line == 6
