"""`occupancy measure MANIFEST --kernel K --tiles LABEL,...`: only the points named, checked
before anything compiles or launches (it was ignored with a manifest, and every point of the
space was timed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from occupancy.cli import main
from occupancy.core.errors import OccupancyError
from occupancy.inputs.manifest.tuning import load_tuning
from occupancy.tune.bounds import WorkLimits
from occupancy.tune.spaces import points

ROOT = Path(__file__).resolve().parents[1]
SGEMM = ROOT / "examples" / "sgemm" / "tune.yaml"
TRITON = ROOT / "examples" / "triton" / "manifest.yaml"


def test_only_keeps_the_points_named_in_space_order() -> None:
    spec = load_tuning(SGEMM, "sgemm2d", {})
    every, _ = points(spec)
    want = [every[3].label, every[0].label]
    only, _ = points(spec, only=want)
    assert [p.label for p in only] == [every[0].label, every[3].label]
    assert [p.params for p in only] == [every[0].params, every[3].params]


def test_a_label_that_is_no_point_is_an_error_naming_it() -> None:
    spec = load_tuning(SGEMM, "sgemm2d", {})
    label = points(spec)[0][0].label
    with pytest.raises(OccupancyError) as e:
        points(spec, only=[label, "BM=3 BN=3", "x\n::error"])
    msg = str(e.value)
    assert msg.startswith("--tiles: BM=3 BN=3, 'x\\n::error': not a point of kernel 'sgemm2d'")
    assert "occupancy tile" in msg and "\n" not in msg and label not in msg


def test_the_compile_limit_counts_the_points_named_only() -> None:
    spec = load_tuning(SGEMM, "sgemm2d", {})
    label = points(spec)[0][0].label
    with pytest.raises(OccupancyError, match="compil"):
        points(spec, limits=WorkLimits(compiles=1))
    assert len(points(spec, limits=WorkLimits(compiles=1), only=[label])[0]) == 1


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """CuPy and an H200 that answer; measure_tuning records the labels it was given and
    stops there (nothing is launched)."""
    import occupancy.core.device as cd
    import occupancy.gpu.measure as gm
    from occupancy import load_device

    seen: list[list[str]] = []

    def stop(spec: Any, report: Any, *a: Any, **k: Any) -> Any:
        seen.append([r.label for r in report.ranked])
        raise OccupancyError("stopped before the launch")

    monkeypatch.setattr(gm, "cupy_module", lambda what: object())
    monkeypatch.setattr(gm, "device_properties", lambda i: {})
    monkeypatch.setattr(cd, "from_cuda_properties", lambda props: load_device("h200"))
    monkeypatch.setattr(gm, "measure_tuning", stop)
    return seen


def _one_error_line(r: Any, text: str) -> None:
    assert r.exit_code == 2, r.output
    out = r.output.lstrip("\n")
    assert out.startswith("Error: ") and text in out, r.output
    assert out.count("\n") == 1 and "Traceback" not in out


def test_measure_times_only_the_tiles_named(fake_gpu: list[list[str]]) -> None:
    spec = load_tuning(SGEMM, "sgemm2d", {})
    label = points(spec)[0][-1].label
    r = CliRunner().invoke(main, ["measure", str(SGEMM), "--kernel", "sgemm2d",
                                  "--tiles", f" {label} ", "--max-compiles", "1"])
    _one_error_line(r, "stopped before the launch")
    assert fake_gpu == [[label]]


def test_measure_names_the_tiles_that_are_no_point(fake_gpu: list[list[str]]) -> None:
    r = CliRunner().invoke(main, ["measure", str(SGEMM), "--kernel", "sgemm2d",
                                  "--tiles", "BM=7,BM=8"])
    _one_error_line(r, "--tiles: BM=7, BM=8: not a point of kernel 'sgemm2d'")
    assert fake_gpu == []


def test_measure_refuses_tiles_for_a_triton_entry(fake_gpu: list[list[str]]) -> None:
    r = CliRunner().invoke(main, ["measure", str(TRITON), "--kernel", "matmul", "--set",
                                  "M=64", "--tiles", "BLOCK_SIZE_M=64"])
    _one_error_line(r, "--tiles: a Triton entry's configs are measured all together")
