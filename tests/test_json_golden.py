"""Exact outputs of the machine formats (every key and value), against golden files.
Regenerate after an intended change: OCCUPANCY_REGEN=1 python -m pytest tests/test_json_golden.py"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from occupancy.build.resources import KernelResources
from occupancy.cli import main

GOLDEN = Path(__file__).parent / "golden" / "json"
MANIFEST = """devices: [v100, h200, nosuchgpu]
min_occupancy: 0.5
kernels:
  - {name: fits, block: 256, registers: 32}
  - {name: low, block: 1024, registers: 64, max_registers: 48}
  - {name: spills, block: 128, registers: 40, spill_stores_bytes: 8, no_spills: true,
     devices: [h200]}
  - {name: clustered, block: 128, registers: 32, cluster: [4, 2, 1], grid: [64, 2],
     devices: [h200, v100]}
  - {name: broken, block: 0, registers: 1}
  - {name: "odd: a, b 50%", block: 2048, registers: 300, devices: [v100]}
"""


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("OCCUPANCY_REGEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden file"


CASES = [
    ("calc_h200_cluster.json", ["calc", "-d", "h200", "-t", "128", "-r", "32", "--smem", "8K",
                                "--dyn-smem", "60K", "--cluster", "2x2", "--json"]),
    ("calc_v100_gtx980.json", ["calc", "-d", "v100", "-d", "gtx980", "-t", "416", "-r", "72",
                               "--carveout", "25", "--launch-bound", "512", "--json"]),
    ("best_a100_h200.json", ["best", "-d", "a100", "-d", "h200", "-r", "64", "--smem-per-thread",
                             "16", "--cluster", "4", "--json"]),
    ("banks_column.json", ["banks", "--column", "--pitch", "33", "--json"]),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_command_json(name: str, args: list[str]) -> None:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    _golden(name, r.stdout)


@pytest.mark.parametrize("fmt", ["json", "junit", "github", "sarif"])
def test_check_formats(tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("m.yaml").write_text(MANIFEST)
    r = CliRunner().invoke(main, ["check", "m.yaml", "--format", fmt])
    assert r.exit_code == 2
    _golden(f"check.{fmt}", r.stdout.replace(str(tmp_path), "TMP"))


@pytest.mark.slow
def test_tile_json_with_a_fake_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped families' JSON, every field, with registers from a fake compiler (the
    compiler's own numbers are tested elsewhere; this pins the hand counts and the output).
    Without a SASS loop mix the model has nothing to read: the hand counts predict."""
    import occupancy.build.builds as builds
    import occupancy.build.resolve  # noqa: F401 - binds the real compile_build before the patch

    def fake(build: Any, loop_mix: bool = True) -> dict[str, KernelResources]:
        names = ["matmul_naive", "matmul_tiled", "matmul_regblock", "transpose_naive",
                 "transpose_tiled", "transpose_padded", "transpose_vec", "transpose_tall"]
        regs = 32 + 8 * sum(int(v) for _, v in build.defines) % 97
        return {n: KernelResources(n, regs, 0, 1, 0, 0, 0, None, "fake") for n in names}

    monkeypatch.setattr(builds, "compile_build", fake)
    for kernel in ("matmul", "transpose"):
        r = CliRunner().invoke(main, ["tile", kernel, "-d", "h200", "-n", "4096", "--json"])
        assert r.exit_code == 0, r.output
        data = json.loads(r.stdout)
        _golden(f"tile_{kernel}_fake.json", json.dumps(data, indent=2, sort_keys=True) + "\n")


ROOT = Path(__file__).resolve().parent.parent


def test_plot_json() -> None:
    r = CliRunner().invoke(main, ["plot", "-d", "rtx3090", "-t", "192", "-r", "48", "--smem", "6K",
                                  "--json"])
    assert r.exit_code == 0
    _golden("plot_rtx3090.json", r.stdout)


@pytest.mark.slow
def test_tune_and_resources_json() -> None:
    """Registers come from nvcc 13.0 for sm_90 (the CI machine's), so these pin the real
    compiler's numbers too."""
    from occupancy.build.compilers import nvcc_path, tool_version

    nvcc = nvcc_path()
    if nvcc is None or tool_version(nvcc) != "13.0":
        if os.environ.get("CI"):
            pytest.fail("nvcc 13.0 missing in CI")
        pytest.skip("the goldens were made with nvcc 13.0")
    r = CliRunner().invoke(main, ["tile", str(ROOT / "examples/transpose/tune.yaml"), "--kernel",
                                  "transpose", "-d", "h200", "--json"])
    assert r.exit_code == 0, r.output
    _golden("tune_transpose_h200.json", r.stdout)
    src = ROOT / "tests/fixtures/project/src/kernels.cu"
    r = CliRunner().invoke(main, ["resources", str(src), "-I", str(src.parent.parent / "include"),
                                  "--arch", "sm_90", "--json"])
    _golden("resources_project_sm90.json", r.stdout.replace(str(ROOT), "ROOT"))
