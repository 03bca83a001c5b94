"""`check`'s manifest and verdicts, key by key: every launch key's value and refusal with its
exact message and line, the caps on both sides (block, cluster, carveout, the 32-bit sizes,
devices, kernels), max_registers at its boundary, and the floor advice for each limiter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from occupancy import load_device
from occupancy.build.resources import KernelResources
from occupancy.core.errors import OccupancyError
from occupancy.gate.check import evaluate, exit_code, tally
from occupancy.gate.judge import error_verdict, verdict
from occupancy.inputs.manifest import KernelSpec, ManifestError, load_manifest
from occupancy.inputs.manifest import launch as launch_module

I32 = "2,147,483,647"


def load(tmp_path: Path, text: str) -> Any:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return load_manifest(p)


def entry(tmp_path: Path, body: str, top: str = "devices: [v100]\n") -> KernelSpec:
    """The one kernel of a manifest whose entry is `body` (YAML flow mapping contents)."""
    m = load(tmp_path, f"{top}kernels:\n  - {{{body}}}\n")
    assert len(m.kernels) == 1
    return m.kernels[0]


def bad(tmp_path: Path, body: str, top: str = "devices: [v100]\n") -> str:
    spec = entry(tmp_path, body, top)
    assert spec.error is not None, spec
    return spec.error


@pytest.mark.parametrize(("body", "message"), [
    ("name: k, blok: 1, registers: 1", "kernel 'k': unknown key 'blok'; did you mean 'block'?"),
    ("name: k, block: 1, registers: 1, zzzzzz: 1",
     "kernel 'k': unknown key 'zzzzzz'; allowed: barriers, block, carveout, cluster, cubin, defines, "
     "devices, dynamic_shared_memory, flags, function, grid, include_dirs, link, max_registers, "
     "max_threads_per_block, min_occupancy, name, no_spills, opt_in_shared_memory, ptxas_log, "
     "registers, source, spill_loads_bytes, spill_stores_bytes, static_shared_memory, "
     "virtual_resources"),
    ("block: 1, registers: 1", "needs a 'name:' (a non-empty string)"),
    ("name: '', block: 1, registers: 1", "needs a 'name:' (a non-empty string)"),
    ("name: 3, block: 1, registers: 1", "needs a 'name:' (a non-empty string)"),
    ("name: k, registers: 1", "kernel 'k': needs 'block:' (threads per block: 256 or [x, y, z])"),
    ("name: k, block: 0, registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got 0"),
    ("name: k, block: 2147483648, registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got 2147483648"),
    ("name: k, block: [1, 2, 3, 4], registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got [1, 2, 3, 4]"),
    ("name: k, block: [], registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got []"),
    ("name: k, block: true, registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got True"),
    ("name: k, block: [2, true], registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got [2, True]"),
    ("name: k, block: '256', registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got '256'"),
    ("name: k, block: [1, 0], registers: 1",
     "kernel 'k': block must be a positive integer or a list [x, y, z] of 1-3, got [1, 0]"),
    ("name: k, block: 1", "kernel 'k': give its resources: 'registers:' (and the smem sizes), or "
                          "'source:' to compile, or 'ptxas_log:' / 'cubin:'"),
    ("name: k, block: 1, ptxas_log: a, cubin: b",
     "kernel 'k': give one of 'source:', 'ptxas_log:' or 'cubin:', not several"),
    ("name: k, block: 1, source: a, cubin: b",
     "kernel 'k': give one of 'source:', 'ptxas_log:' or 'cubin:', not several"),
    ("name: k, block: 1, registers: 1, devices: []",
     "kernel 'k': devices must be a list of 1-64 device names or profile paths, got []"),
    ("name: k, block: 1, registers: 1, devices: [v100, '']",
     "kernel 'k': devices must be a list of 1-64 device names or profile paths, got ['v100', '']"),
    ("name: k, block: 1, registers: 1, devices: 3",
     "kernel 'k': devices must be a list of 1-64 device names or profile paths, got 3"),
    ("name: k, block: 1, registers: 1, min_occupancy: 1.01",
     "kernel 'k': min_occupancy must be a fraction 0-1 (0.5 = 50%), got 1.01"),
    ("name: k, block: 1, registers: 1, min_occupancy: -0.01",
     "kernel 'k': min_occupancy must be a fraction 0-1 (0.5 = 50%), got -0.01"),
    ("name: k, block: 1, registers: 1, min_occupancy: true",
     "kernel 'k': min_occupancy must be a fraction 0-1 (0.5 = 50%), got True"),
    ("name: k, block: 1, registers: 1, min_occupancy: '0.5'",
     "kernel 'k': min_occupancy must be a fraction 0-1 (0.5 = 50%), got '0.5'"),
    ("name: k, block: 1, registers: 1, function: 'k;'",
     "kernel 'k': function k; is not a C++ name: use letters, digits, _, :: and template arguments "
     "<...> (no ;, #, /, quotes, braces or newlines)"),
    ("name: k, block: 1, registers: 1, carveout: 101", "kernel 'k': carveout is a percentage 0-100, got 101"),
    ("name: k, block: 1, registers: 1, carveout: -1",
     f"kernel 'k': carveout must be an integer 0..{I32}, got -1"),
    ("name: k, block: 1, registers: -1", f"kernel 'k': registers must be an integer 0..{I32}, got -1"),
    ("name: k, block: 1, registers: 2147483648",
     f"kernel 'k': registers must be an integer 0..{I32}, got 2147483648"),
    ("name: k, block: 1, registers: 1.5", f"kernel 'k': registers must be an integer 0..{I32}, got 1.5"),
    ("name: k, block: 1, registers: true", f"kernel 'k': registers must be an integer 0..{I32}, got True"),
    ("name: k, block: 1, registers: 1, max_registers: 0",
     f"kernel 'k': max_registers must be an integer 1..{I32}, got 0"),
    ("name: k, block: 1, registers: 1, max_threads_per_block: 0",
     f"kernel 'k': max_threads_per_block must be an integer 1..{I32}, got 0"),
    ("name: k, block: 1, registers: 1, static_shared_memory: 8Q",
     "kernel 'k': static_shared_memory: "),
    ("name: k, block: 1, registers: 1, dynamic_shared_memory: 2147483648",
     f"kernel 'k': dynamic_shared_memory must be an integer 0..{I32}, got 2147483648"),
    ("name: k, block: 1, registers: 1, opt_in_shared_memory: 'yes'",
     "kernel 'k': opt_in_shared_memory must be true or false, got 'yes'"),
    ("name: k, block: 1, registers: 1, no_spills: 1", "kernel 'k': no_spills must be true or false, got 1"),
    ("name: k, block: 1, registers: 1, source: 3", "kernel 'k': source must be a file path"),
    ("name: k, block: 1, registers: 1, source: ''", "kernel 'k': source must be a file path"),
    ("name: k, block: 1, registers: 1, link: a.cu", "kernel 'k': link must be a list of file paths"),
    ("name: k, block: 1, registers: 1, link: ['']", "kernel 'k': link must be a list of file paths"),
    ("name: k, block: 1, registers: 1, cluster: 65",
     "kernel 'k': cluster [65] is far over any GPU's limit (16)"),
    ("name: k, block: 1, registers: 1, cluster: [1, 65]",
     "kernel 'k': cluster [1, 65] is far over any GPU's limit (16)"),
    ("name: k, block: 1, registers: 1, cluster: [0]",
     "kernel 'k': cluster must be a positive integer or a list [x, y, z] of 1-3, got [0]"),
    ("name: k, block: 1, registers: 1, cluster: [1, 1, 1, 1]",
     "kernel 'k': cluster must be a positive integer or a list [x, y, z] of 1-3, got [1, 1, 1, 1]"),
    ("name: k, block: 1, registers: 1, cluster: true",
     "kernel 'k': cluster must be a positive integer or a list [x, y, z] of 1-3, got True"),
    ("name: k, block: 1, registers: 1, grid: [1, 2147483648]",
     "kernel 'k': grid must be a positive integer or a list [x, y, z] of 1-3, got [1, 2147483648]"),
    ("name: k, block: 1, registers: 1, grid: 0",
     "kernel 'k': grid must be a positive integer or a list [x, y, z] of 1-3, got 0"),
    ("name: k, block: 1, registers: 1, grid: []",
     "kernel 'k': grid must be a positive integer or a list [x, y, z] of 1-3, got []"),
    ("name: k, block: 1, registers: 1, defines: [1]",
     "kernel 'k': defines must be a mapping, e.g. {TILE: 32, USE_FAST: true}"),
    ("name: k, block: 1, registers: 1, defines: {A: '$x'}", "kernel 'k': defines.A: $x holds a character"),
    ("name: k, block: 1, registers: 1, include_dirs: nope",
     "kernel 'k': include_dirs must be a list of folders (relative to the manifest)"),
    ("name: k, block: 1, registers: 1, flags: -O3",
     "kernel 'k': flags must be a list, e.g. [-std=c++17, -rdc=true]"),
])
def test_entry_refusals(tmp_path: Path, body: str, message: str) -> None:
    assert bad(tmp_path, body).startswith(message)


def test_refusals_point_at_the_key_line(tmp_path: Path) -> None:
    m = load(tmp_path, "devices: [v100]\nkernels:\n  - name: a\n    block: 1\n    registers: 1\n"
                       "  - name: b\n    block: 1\n    registers: 1\n    carveout: 101\n"
                       "  - name: c\n    registers: 1\n"
                       "  - block: 1\n    registers: 1\n    flgs: 1\n")
    assert [(k.name, k.line, k.error is None) for k in m.kernels] == [
        ("a", 3, True), ("b", 9, False), ("c", 10, False), ("entry 4", 14, False)]
    assert m.kernels[3].error == "unknown key 'flgs'; did you mean 'flags'?"
    assert m.kernels[3].devices == ("v100",) and m.kernels[3].block == (1,)
    assert m.kernels[1].min_occupancy == 0.0


@pytest.mark.parametrize(("body", "field", "want"), [
    ("block: [4, 4, 4]", "block", (4, 4, 4)),
    ("block: 2147483647", "block", (2147483647,)),
    ("block: [2, 3]", "block", (2, 3)),
    ("registers: 2147483647", "registers", 2147483647),
    ("registers: 0", "registers", 0),
    ("cluster: 2", "cluster", (2, 1, 1)),
    ("cluster: [2, 2]", "cluster", (2, 2, 1)),
    ("cluster: [1, 1, 2]", "cluster", (1, 1, 2)),
    ("cluster: 64", "cluster", (64, 1, 1)),
    ("grid: 5", "grid", (5,)),
    ("grid: [1, 2, 3]", "grid", (1, 2, 3)),
    ("carveout: 100", "carveout", 100),
    ("carveout: 0", "carveout", 0),
    ("static_shared_memory: 8K", "static_shared_memory", 8192),
    ("static_shared_memory: 0", "static_shared_memory", 0),
    ("dynamic_shared_memory: 48K", "dynamic_shared_memory", 49152),
    ("dynamic_shared_memory: 2147483647", "dynamic_shared_memory", 2147483647),
    ("opt_in_shared_memory: true", "opt_in_shared_memory", True),
    ("no_spills: true", "no_spills", True),
    ("max_registers: 1", "max_registers", 1),
    ("max_threads_per_block: 1", "max_threads_per_block", 1),
    ("spill_stores_bytes: 4", "spill_stores_bytes", 4),
    ("spill_loads_bytes: 8", "spill_loads_bytes", 8),
    ("barriers: 0", "barriers", 0),
    ("virtual_resources: 3", "virtual_resources", 3),
    ("min_occupancy: 1", "min_occupancy", 1.0),
    ("min_occupancy: 0", "min_occupancy", 0.0),
    ("devices: h100", "devices", ("h100",)),
    ("devices: [h100, v100]", "devices", ("h100", "v100")),
    ("function: ns::k<32>", "function", "ns::k<32>"),
])
def test_entry_values(tmp_path: Path, body: str, field: str, want: object) -> None:
    spec = entry(tmp_path, f"name: k, block: 1, registers: 1, {body}")
    assert spec.error is None, spec.error
    got = getattr(spec, field)
    assert got == want and type(got) is type(want)


def test_entry_defaults(tmp_path: Path) -> None:
    spec = entry(tmp_path, "name: k, block: [8, 4], registers: 1", "devices: [v100]\nmin_occupancy: 0.5\n")
    assert spec.threads == 32
    assert (spec.dynamic_shared_memory, spec.static_shared_memory, spec.opt_in_shared_memory,
            spec.no_spills, spec.spill_stores_bytes, spec.spill_loads_bytes,
            spec.virtual_resources) == (0, None, False, False, 0, 0, 0)
    assert (spec.cluster, spec.grid, spec.carveout, spec.barriers, spec.max_registers,
            spec.max_threads_per_block, spec.function, spec.source, spec.ptxas_log,
            spec.cubin, spec.shown_source, spec.link) == (None,) * 11 + ((),)
    assert spec.min_occupancy == 0.5 and spec.devices == ("v100",) and spec.name == "k"


def test_exactly_64_devices(tmp_path: Path) -> None:
    names = ", ".join(["v100"] * 64)
    assert entry(tmp_path, f"name: k, block: 1, registers: 1, devices: [{names}]").devices == \
        ("v100",) * 64
    assert "1-64 device names" in bad(tmp_path, f"name: k, block: 1, registers: 1, devices: [{names}, v100]")


def test_files_defines_flags_and_folders(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc2").mkdir()
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "l.cu").write_text("")
    (tmp_path / "b.log").write_text("")
    top = ("devices: [v100]\ndefines: {A: 1, B: true}\nflags: [-O3]\ninclude_dirs: [inc]\n")
    spec = entry(tmp_path, "name: k, block: 1, source: k.cu, link: [l.cu], defines: {B: 2, C: x}, "
                           "flags: [-lineinfo], include_dirs: [inc2]", top)
    assert spec.error is None
    assert spec.source == str(tmp_path / "k.cu") and spec.shown_source == "k.cu"
    assert spec.link == (str(tmp_path / "l.cu"),)
    assert dict(spec.defines) == {"A": "1", "B": "2", "C": "x"}
    assert spec.flags == ("-O3", "-lineinfo")
    assert spec.include_dirs == (str(tmp_path / "inc2"), str(tmp_path / "inc"))
    log = entry(tmp_path, f"name: k, block: 1, ptxas_log: {tmp_path / 'b.log'}")
    assert log.ptxas_log == str(tmp_path / "b.log") and log.cubin is None and log.source is None
    cub = entry(tmp_path, "name: k, block: 1, cubin: b.log")
    assert cub.cubin == str(tmp_path / "b.log") and cub.ptxas_log is None
    assert bad(tmp_path, "name: k, block: 1, registers: 1, link: [l.cu]") == \
        "kernel 'k': 'link:' lists sources device-linked with 'source:'; give 'source:'"
    assert bad(tmp_path, "name: k, block: 1, source: no.cu") == \
        f"kernel 'k': source: no such file {tmp_path / 'no.cu'}"
    assert bad(tmp_path, "name: k, block: 1, source: k.cu, link: [no.cu]") == \
        f"kernel 'k': link: no such file {tmp_path / 'no.cu'}"
    assert bad(tmp_path, "name: k, block: 1, registers: 1, include_dirs: [nodir]") == \
        f"kernel 'k': include_dirs: no such folder {tmp_path / 'nodir'}"
    assert bad(tmp_path, "name: k, block: 1, registers: 1, include_dirs: [\"a\\0b\"]") == \
        "kernel 'k': include_dirs: a path contains a NUL byte"


def test_top_level(tmp_path: Path) -> None:
    def refused(text: str) -> str:
        with pytest.raises(ManifestError) as info:
            load(tmp_path, text)
        return str(info.value).removeprefix(f"{tmp_path / 'm.yaml'}: ")

    assert refused("[1]") == ("line 1: a manifest is a mapping with 'kernels:' (and optional 'devices:', "
                              "'min_occupancy:', 'include_dirs:', 'flags:', 'defines:')")
    # an empty file (a `resources --manifest > FILE` that failed) says so
    assert refused("") == ("line 1: the file holds no YAML (a `resources --manifest > FILE` that "
                           "failed leaves it empty); a manifest is a mapping with 'kernels:' (and "
                           "optional 'devices:', 'min_occupancy:', 'include_dirs:', 'flags:', "
                           "'defines:')")
    assert refused("devices: [v100]\nkernel: []\n") == "line 2: unknown key 'kernel'; did you mean 'kernels'?"
    assert refused("devices: []\nkernels: []\n").startswith("line 1: devices must be a list of 1-64")
    assert refused("min_occupancy: 2\nkernels: []\n").startswith("line 1: min_occupancy must be a fraction")
    assert refused("devices: [v100]\nkernels: []\n") == \
        "line 2: 'kernels:' must be a non-empty list of kernel entries"
    assert refused("devices: [v100]\nkernels: {a: 1}\n") == \
        "line 2: 'kernels:' must be a non-empty list of kernel entries"
    assert refused("devices: [v100]\nkernels:\n  - {name: t, space: {A: [1]}}\n") == (
        "line 2: every kernel here is a tuning entry (it has 'space:' or 'args:'): rank one with "
        "occupancy tile MANIFEST --kernel NAME -d DEVICE")
    assert refused("devices: [v100]\nflags: -O3\nkernels: []\n").startswith("line 2: flags must be a list")
    m = load(tmp_path, "kernels:\n  - {name: t, space: {A: [1]}}\n  - {name: k, block: 1, registers: 1}\n"
                       "  - 7\n")
    assert [k.name for k in m.kernels] == ["k", "entry 3"]
    assert m.kernels[0].error == "kernel 'k': no devices: add 'devices:' at the top of the manifest or " \
                                 "to this kernel"
    assert m.kernels[1].error == "kernel entry 3 must be a mapping with at least name and block"
    assert m.kernels[1].line == 4 and m.kernels[1].devices == ("-",)


def test_the_kernel_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch_module, "MAX_KERNELS", 2)
    two = "devices: [v100]\nkernels:\n" + "  - {name: k, block: 1, registers: 1}\n" * 2
    assert len(load(tmp_path, two).kernels) == 2
    with pytest.raises(ManifestError) as info:
        load(tmp_path, two + "  - {name: k, block: 1, registers: 1}\n")
    assert str(info.value).endswith("line 2: more than 2 kernel entries: split the manifest")


def test_broken_entries_keep_their_devices(tmp_path: Path) -> None:
    m = load(tmp_path, "devices: [v100]\nkernels:\n  - {name: a, block: 0, registers: 1, devices: [h100]}\n"
                       "  - {name: b, block: 0, registers: 1, devices: []}\n"
                       "  - {name: c, block: 0, registers: 1}\n")
    assert [(k.devices, k.block, k.min_occupancy) for k in m.kernels] == [
        (("h100",), (1,), 0.0), (("-",), (1,), 0.0), (("v100",), (1,), 0.0)]
    m2 = load(tmp_path, "kernels:\n  - {name: c, block: 0, registers: 1}\n")
    assert m2.kernels[0].devices == ("-",) and m2.devices == {}


def test_devices_load_once_and_errors_name_their_line(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "mine.yaml").write_text((Path(__file__).parent.parent / "profiles" /
                                               "v100.yaml").read_text())
    m = load(tmp_path, "devices: [v100, nosuchgpu]\nkernels:\n"
                       "  - {name: a, block: 1, registers: 1}\n"
                       "  - name: b\n    block: 1\n    registers: 1\n    devices:\n      - p/mine.yaml\n"
                       "      - othergpu\n")
    assert set(m.devices) == {"v100", "p/mine.yaml"}
    assert m.devices["p/mine.yaml"].name == m.devices["v100"].name
    assert {k: v[1] for k, v in m.device_errors.items()} == {"nosuchgpu": 1, "othergpu": 9}
    assert "nosuchgpu" in m.device_errors["nosuchgpu"][0]


def _res(regs: int = 32, static: int = 0, **kw: Any) -> KernelResources:
    base: dict[str, Any] = {"function": "k", "registers_per_thread": regs, "static_shared_memory": static,
                            "barriers": 1, "stack_frame_bytes": 0, "spill_stores_bytes": 0,
                            "spill_loads_bytes": 0, "max_threads_per_block": None, "source": "nvcc"}
    return KernelResources(**{**base, **kw})


def _spec(**kw: Any) -> KernelSpec:
    return KernelSpec(**{"name": "k", "line": 3, "block": (256,), "devices": ("v100",),
                         "min_occupancy": 0.0, **kw})


V100 = load_device("v100")


def test_max_registers_at_its_boundary() -> None:
    assert verdict(_spec(max_registers=64), V100, _res(64)).problems == ()
    v = verdict(_spec(max_registers=64), V100, _res(65))
    assert v.problems == ("65 registers per thread exceed max_registers 64 (nvcc)",)
    assert v.status == "fail" and not v.ok


@pytest.mark.parametrize(("spec", "res", "advice"), [
    # 256 threads x 64 registers: 4 blocks of 64 warps, 50%; 5 fit at 48 registers
    ({"min_occupancy": 0.75}, {"regs": 64},
     "occupancy 50% is below the floor of 75% (limited by registers: use <= 48 registers for 5 blocks)"),
    ({"min_occupancy": 0.9, "block": (1024,)}, {"regs": 64},
     "occupancy 50% is below the floor of 90% (limited by registers: use <= 32 registers for 2 blocks)"),
    ({"min_occupancy": 0.5}, {"regs": 32, "static": 40 * 1024},
     "occupancy 25% is below the floor of 50% (limited by shared memory: use <= 32,768 B of shared "
     "memory per block for 3 blocks)"),
    ({"min_occupancy": 0.9, "block": (32,)}, {"regs": 32},
     "occupancy 50% is below the floor of 90% (limited by blocks: change the block size)"),
    ({"min_occupancy": 1.0, "block": (1024,), "max_threads_per_block": 1024}, {"regs": 32},
     "occupancy 100% is below"),
])
def test_floor_advice_names_the_fix(spec: dict[str, Any], res: dict[str, Any], advice: str) -> None:
    v = verdict(_spec(**spec), V100, _res(**res))
    if advice.startswith("occupancy 100%"):
        assert v.problems == () and v.status == "pass"
        return
    assert v.problems == (advice,), v.problems


def test_spills_and_stack_frames() -> None:
    assert verdict(_spec(no_spills=True), V100, _res(spill_stores_bytes=4, spill_loads_bytes=8)).problems == (
        "spills 4 B stored / 8 B loaded per thread (nvcc); no_spills is set",)
    assert verdict(_spec(), V100, _res(spill_stores_bytes=4)).problems == ()
    frame = _res(stack_frame_bytes=16, spills_unknown=True, source="cubin")
    assert verdict(_spec(no_spills=True), V100, frame).problems == (
        "a 16 B stack frame per thread (cubin): local memory, from spills or local arrays (a binary "
        "or nvlink's report does not tell them apart); no_spills is set",)
    loose = _res(unattributed_spills=("heavy(float const*, int)",), source="ptxas log k.log sm_90")
    assert verdict(_spec(no_spills=True), V100, loose).problems == (
        "the log's device functions heavy(float const*, int) spill, compiled on their own (-G, "
        "-rdc), and a ptxas log does not say which kernels call them (ptxas log k.log sm_90): "
        "give the source or the cubin, whose call graph does; no_spills is set",)
    assert verdict(_spec(), V100, loose).problems == ()
    assert verdict(_spec(no_spills=True), V100, _res(stack_frame_bytes=16)).problems == ()
    assert verdict(_spec(no_spills=True), V100, _res(spills_unknown=True)).problems == ()


def test_the_launch_bound_is_the_lower_of_manifest_and_binary() -> None:
    def bound(spec_bound: int | None, res_bound: int | None) -> tuple[str, ...]:
        return verdict(_spec(block=(512,), max_threads_per_block=spec_bound), V100,
                       _res(max_threads_per_block=res_bound)).problems

    assert bound(None, None) == () and bound(512, None) == () and bound(None, 512) == ()
    assert bound(256, 1024) and bound(1024, 256) and bound(None, 256) and bound(256, None)
    assert bound(1024, 512) == () and bound(512, 1024) == ()


def test_manifest_numbers_override_the_binary() -> None:
    r = verdict(_spec(static_shared_memory=0), V100, _res(static=48 * 1024)).result
    assert r is not None and r.active_blocks_per_sm == 8
    r2 = verdict(_spec(), V100, _res(static=48 * 1024)).result
    assert r2 is not None and r2.active_blocks_per_sm == 2


def test_verdict_fields() -> None:
    v = verdict(_spec(block=(128,)), V100, _res(regs=32))
    assert (v.kernel, v.device, v.line, v.status, v.ok) == ("k", "v100", 3, "pass", True)
    assert v.active_blocks_per_sm == 16 and v.occupancy == 1.0
    assert v.limiters == ("warps", "registers")
    assert v.registers_per_thread == 32 and v.registers_source == "nvcc"
    e = error_verdict(_spec(), "h100", "bad\nthing", 9)
    assert (e.status, e.line, e.problems, e.active_blocks_per_sm, e.occupancy, e.limiters,
            e.registers_per_thread, e.registers_source) == ("error", 9, ("'bad\\nthing'",), 0, 0.0,
                                                            (), None, "")
    assert error_verdict(_spec(), "h100", "x").line == 3


def test_evaluate_exit_code_and_tally(tmp_path: Path) -> None:
    m = load(tmp_path, "devices: [v100, nosuchgpu]\nmin_occupancy: 0.5\nkernels:\n"
                       "  - {name: ok, block: 256, registers: 32}\n"
                       "  - {name: low, block: 256, registers: 128, devices: [v100]}\n"
                       "  - {name: broken, block: 0, registers: 1, devices: [v100, h100]}\n")
    seen: list[tuple[str, str]] = []
    vs = evaluate(m, prepare=lambda pairs: seen.extend((s.name, d.key) for s, d in pairs))
    assert seen == [("ok", "v100"), ("low", "v100")]
    assert [(v.kernel, v.device, v.status) for v in vs] == [
        ("ok", "v100", "pass"), ("ok", "nosuchgpu", "error"), ("low", "v100", "fail"),
        ("broken", "v100", "error"), ("broken", "h100", "error")]
    assert vs[1].line == 1 and vs[3].problems[0].startswith("kernel 'broken': block must be")
    assert tally(vs) == (1, 1, 3) and exit_code(vs) == 2
    assert exit_code(vs[:1]) == 0 and exit_code(vs[:1] + vs[2:3]) == 1 and exit_code([]) == 0
    assert tally([]) == (0, 0, 0)

    def resolve(spec: KernelSpec, dev: object) -> KernelResources:
        if spec.name == "low":
            raise OccupancyError("no compiler")
        return _res(16)

    vs2 = evaluate(m, resolve)
    assert [(v.kernel, v.status, v.problems) for v in vs2[:3]] == [
        ("ok", "pass", ()), ("ok", "error", vs[1].problems), ("low", "error", ("no compiler",))]
    assert vs2[0].registers_per_thread == 16 and vs[0].registers_per_thread == 32


def test_errors_do_not_stop_the_entries_and_devices_after_them(tmp_path: Path) -> None:
    m = load(tmp_path, "devices: [nosuchgpu, v100]\nkernels:\n"
                       "  - {name: broken, block: 0, registers: 1}\n"
                       "  - {name: ok, block: 256, registers: 32}\n")
    assert [(v.kernel, v.device, v.status) for v in evaluate(m)] == [
        ("broken", "nosuchgpu", "error"), ("broken", "v100", "error"),
        ("ok", "nosuchgpu", "error"), ("ok", "v100", "pass")]

    def resolve(spec: KernelSpec, dev: Any) -> KernelResources:
        raise OccupancyError("no compiler")

    assert [(v.device, v.problems) for v in evaluate(m, resolve)][2:] == [
        ("nosuchgpu", m.device_errors["nosuchgpu"][:1]), ("v100", ("no compiler",))]


def test_triton_verdicts_join_in_line_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import occupancy.gate.triton_check as triton_check

    (tmp_path / "m.py").write_text("")
    m = load(tmp_path, "devices: [v100]\nkernels:\n"
                       "  - {name: a, block: 256, registers: 32}\n"
                       "  - {name: t, triton: 'm.py:f', signature: {M: i32}, problem: {M: 1}, "
                       "configs: [{B: 1}, {B: 2}]}\n"
                       "  - {name: c, block: 256, registers: 32}\n")
    seen = []

    def fake(manifest: Any) -> list[Any]:
        seen.append(manifest)
        return [error_verdict(_spec(name="t1", line=4), "v100", "x"),
                error_verdict(_spec(name="t2", line=4), "v100", "y")]

    monkeypatch.setattr(triton_check, "triton_verdicts", fake)
    assert [v.kernel for v in evaluate(m)] == ["a", "t1", "t2", "c"]
    assert seen == [m]


H100 = load_device("h100")


def test_every_manifest_field_reaches_the_solver() -> None:
    from occupancy.core.solver import solve

    spec = _spec(block=(128,), dynamic_shared_memory=64 * 1024, carveout=50, opt_in_shared_memory=True,
                 virtual_resources=0, cluster=(2, 1, 1), grid=(264,), max_threads_per_block=256)
    res = _res(40, static=1024, barriers=3, max_threads_per_block=512, cluster_dims=(4, 1, 1))
    want = solve(H100, 128, 40, 1024, 64 * 1024, 50, 256, 3, opt_in=True, virtual_resources=0,
                 cluster=(2, 1, 1), grid=(264,))
    assert verdict(spec, H100, res).result == want
    plain = verdict(_spec(block=(128,)), H100, _res(40, barriers=0, cluster_dims=(4, 1, 1))).result
    assert plain == solve(H100, 128, 40, 0, 0, None, None, 1, opt_in=False, cluster=(4, 1, 1))
    no_opt_in = verdict(_spec(block=(128,), dynamic_shared_memory=64 * 1024), H100, _res(40))
    assert no_opt_in.status == "fail" and no_opt_in.result is not None
    assert not no_opt_in.result.launchable


def test_warps_advice_and_a_one_byte_frame() -> None:
    v = verdict(_spec(block=(640,), min_occupancy=0.95), V100, _res(16))
    assert v.problems == ("occupancy 93.8% is below the floor of 95% (limited by warps: change the "
                          "block size)",)
    one = verdict(_spec(no_spills=True), V100, _res(stack_frame_bytes=1, spills_unknown=True, source="c"))
    assert one.problems[0].startswith("a 1 B stack frame per thread (c)")


def test_top_level_defaults_name_their_lines(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    head = "devices: [v100]\nmin_occupancy: 0\n"
    body = "kernels:\n  - {name: k, block: 1, registers: 1}\n"
    for key, message in [
        ("include_dirs: [nodir]", f"include_dirs: no such folder {tmp_path / 'nodir'}"),
        ("include_dirs: [\"a\\0b\"]", "include_dirs: a path contains a NUL byte"),
        ("include_dirs: 3", "include_dirs must be a list of folders (relative to the manifest)"),
        ("defines: {9A: 1}", "defines: define name 9A is not a C identifier (letters, digits and _, "
                             "not starting with a digit, at most 64)"),
        ("defines: {A: '$x'}", "defines.A: $x holds a character that is not allowed in a define"),
        ("defines: 3", "defines must be a mapping, e.g. {TILE: 32, USE_FAST: true}"),
        ("compilers: {sm_61: nope}", f"compilers.sm_61: no such file {tmp_path / 'nope'}"),
        ("compilers: 3", "compilers maps an arch to an nvcc"),
        ("flags: [-O3, '-x;y']", "flags: "),
    ]:
        with pytest.raises(ManifestError) as info:
            load(tmp_path, f"{head}{key}\n{body}")
        assert str(info.value).startswith(f"{tmp_path / 'm.yaml'}: line 3: {message}"), str(info.value)
    inc = str(tmp_path / "inc")
    dirs, flags = ", ".join([inc] * 256), ", ".join(["-O3"] * 256)
    m = load(tmp_path, f"{head}include_dirs: [{dirs}]\nflags: [{flags}]\n{body}")
    assert m.kernels[0].include_dirs == (inc,) * 256 and m.kernels[0].flags == ("-O3",) * 256
    for key in (f"include_dirs: [{', '.join([inc] * 257)}]", f"flags: [{', '.join(['-O3'] * 257)}]"):
        with pytest.raises(ManifestError, match="line 3: (include_dirs|flags) must be a list"):
            load(tmp_path, f"{head}{key}\n{body}")


def _block_entry(tmp_path: Path, entry: dict[str, Any]) -> tuple[Path, KernelSpec]:
    import yaml

    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump({"devices": ["v100"], "kernels": [entry]}, sort_keys=False))
    return p, load_manifest(p).kernels[0]


def _line(p: Path, key: str) -> int:
    lines = p.read_text().splitlines()
    return next(i for i, t in enumerate(lines) if t.startswith((f"- {key}:", f"  {key}:"))) + 1


@pytest.mark.parametrize(("change", "key"), [
    ({"blok": 1}, "blok"), ({"name": None}, "block"), ({"block": None}, "name"),
    ({"block": 0}, "block"), ({"registers": None}, "name"), ({"ptxas_log": "a", "cubin": "b"}, "source"),
    ({"devices": []}, "devices"), ({"min_occupancy": 2}, "min_occupancy"), ({"defines": [1]}, "defines"),
    ({"include_dirs": ["nodir"]}, "include_dirs"), ({"flags": "-O3"}, "flags"),
    ({"function": "k;"}, "function"), ({"carveout": 101}, "carveout"), ({"link": ["x.cu"]}, "link"),
    ({"cluster": 65}, "cluster"), ({"cluster": [0]}, "cluster"), ({"registers": -1}, "registers"),
    ({"static_shared_memory": "8Q"}, "static_shared_memory"),
    ({"static_shared_memory": -1}, "static_shared_memory"),
    ({"opt_in_shared_memory": 1}, "opt_in_shared_memory"),
    ({"source": 3}, "source"), ({"source": "no.cu"}, "source"), ({"link": [""]}, "link"),
    ({"grid": 0}, "grid"),
])
def test_each_refusal_points_at_its_key(tmp_path: Path, change: dict[str, Any], key: str) -> None:
    entry = {k: v for k, v in {"name": "k", "block": 1, "registers": 1, **change}.items() if v is not None}
    if "source" in change or ("ptxas_log" in change):
        entry.pop("registers", None)
    if key == "source" and "cubin" in change:
        entry["source"] = "a.cu"
        entry.pop("ptxas_log")
    if "link" in change and change["link"] == ["x.cu"]:
        (tmp_path / "x.cu").write_text("")
    p, spec = _block_entry(tmp_path, entry)
    assert spec.error is not None
    want = _line(p, key) if key in entry else _line(p, "name")
    assert spec.line == want, (spec.error, spec.line, want)


def test_missing_name_points_at_the_entry(tmp_path: Path) -> None:
    p, spec = _block_entry(tmp_path, {"block": 1, "registers": 1})
    assert spec.line == _line(p, "block") and spec.name == "entry 1"
    _, three = _block_entry(tmp_path, {"name": 3, "block": 1, "registers": 1})
    assert three.name == "entry 1" and three.error == "needs a 'name:' (a non-empty string)"


def test_paths_and_devices(tmp_path: Path) -> None:
    (tmp_path / "b.log").write_text("")
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "l.cu").write_text("")
    v100 = (Path(__file__).parent.parent / "profiles" / "v100.yaml").read_text()
    (tmp_path / "mine.yaml").write_text(v100)
    (tmp_path / "mine.yml").write_text(v100)
    m = load(tmp_path, "devices:\n  - v100\n  - v100\n  - nosuchgpu\n  - mine.yaml\n  - mine.yml\n"
                       "  - a100\nkernels:\n"
                       "  - {name: a, block: 1, ptxas_log: b.log}\n"
                       f"  - {{name: b, block: 1, source: k.cu, link: [{tmp_path / 'l.cu'}], "
                       "grid: [2147483647]}\n")
    assert m.path == str(tmp_path / "m.yaml")
    assert set(m.devices) == {"v100", "mine.yaml", "mine.yml", "a100"}
    assert {k: v[1] for k, v in m.device_errors.items()} == {"nosuchgpu": 4}
    assert m.kernels[0].ptxas_log == str(tmp_path / "b.log") and m.kernels[0].min_occupancy == 0.0
    assert m.kernels[1].link == (str(tmp_path / "l.cu"),) and m.kernels[1].grid == (2147483647,)
    assert bad(tmp_path, 'name: k, block: 1, source: "a\\0b"') == "kernel 'k': source must be a file path"
    assert bad(tmp_path, 'name: k, block: 1, source: k.cu, link: ["a\\0b"]') == \
        "kernel 'k': link must be a list of file paths"
    assert load(tmp_path, "kernels:\n  - {name: c, block: 0, registers: 1}\n").device_errors == {}


def test_manifest_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifest(tmp_path / "no.yaml")
    assert str(info.value) == (f"{tmp_path / 'no.yaml'}: no such file: give the path of a launch "
                               "manifest (see README, 'occupancy check')")


def test_triton_entries_of_a_check_manifest(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("")
    t = "triton: 'm.py:f', signature: {M: i32}, problem: {M: 1}, configs: [{B: 1}]"
    m = load(tmp_path, f"min_occupancy: 0.5\nkernels:\n  - {{name: t, {t}, devices: [v100, nosuchgpu]}}\n"
                       f"  - {{name: u, {t}}}\n")
    assert m.triton[0].min_occupancy == 0.5 and m.triton[0].devices == ("v100", "nosuchgpu")
    assert m.device_errors["nosuchgpu"][1] == 3
    assert m.kernels[0].line == 4 and m.kernels[0].error is not None
    assert m.kernels[0].error.endswith("no devices: add 'devices:' at the top of the manifest or to "
                                       "this kernel")
