"""`resources` with several archs or files: one that does not compile no longer hides the
others' tables. What compiled is listed (text or JSON on stdout), each failure follows as
its own `Error:` line, and the exit is 2; where nothing compiles, the first error alone. A
starter manifest stays all or nothing. Real compilers (nvcc for sm_90; sm_61 through the
CUDA 12.9 NVRTC wheel or a CUDA 12 nvcc: __nanosleep needs sm_70)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy.build.compilers import nvcc_path
from occupancy.cli import main
from tests.needs import need

SRC = """__global__ void napper(int *p) { __nanosleep(100); p[threadIdx.x] = 1; }
__global__ void plain(float *p) { p[threadIdx.x] *= 2.f; }
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path / "cache"))


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["resources", *args], env={"COLUMNS": "100"})
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


def test_one_arch_that_fails_leaves_the_others_listed(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    src = tmp_path / "ns.cu"
    src.write_text(SRC)
    code, out, err = _run(str(src), "--arch", "sm_61", "--arch", "sm_90")
    assert code == 2 and "napper" in out and "plain" in out and "sm_90" in out
    assert "sm_61" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "for sm_61" in lines[0]
    assert "__nanosleep" in lines[0] and "Traceback" not in err
    code, out, err = _run(str(src), "--arch", "sm_61", "--arch", "sm_90", "--json")
    rows = json.loads(out)
    assert code == 2 and {r["arch"] for r in rows} == {"sm_90"} and len(rows) == 2
    assert err.count("Error: ") == 1


def test_nothing_compiles_gives_the_first_error_alone(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    src = tmp_path / "ns.cu"
    src.write_text(SRC)
    code, out, err = _run(str(src), "--arch", "sm_61")
    assert code == 2 and out == "" and err.count("Error: ") == 1 and "for sm_61" in err


def test_a_missing_file_among_several_and_the_starter_manifest(tmp_path: Path) -> None:
    need(nvcc_path(), "nvcc")
    src = tmp_path / "ns.cu"
    src.write_text(SRC)
    code, out, err = _run(str(src), str(tmp_path / "gone.cu"), "--arch", "sm_90")
    assert code == 2 and "napper" in out and err.count("Error: ") == 1 and "gone.cu" in err
    code, out, err = _run(str(src), "--arch", "sm_61", "--arch", "sm_90", "--manifest")
    assert code == 2 and out == "" and "for sm_61" in err
