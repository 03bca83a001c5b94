"""Every --json output validates against docs/json-schema.json, the documented contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from occupancy.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "json-schema.json").read_text())


def _validate(data: Any, name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(data, {**SCHEMA, "$ref": f"#/$defs/{name}"})


CASES = [
    ("calc", ["calc", "-d", "h200", "-t", "128", "-r", "32", "--cluster", "2", "--json"]),
    ("best", ["best", "-d", "h200", "-r", "64", "--cluster", "1", "--json"]),
    ("devices", ["devices", "--json"]),
    ("banks", ["banks", "--column", "--json"]),
    ("plot", ["plot", "-d", "a100", "--json"]),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_outputs_match_the_schema(name: str, args: list[str]) -> None:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    _validate(json.loads(r.stdout), name)


def test_check_and_multi_device_outputs(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text("devices: [v100, nosuch]\nkernels:\n  - {name: k, block: 256, registers: 32}\n")
    r = CliRunner().invoke(main, ["check", str(m), "--json"])
    _validate(json.loads(r.stdout), "check")
    for d in json.loads(CliRunner().invoke(main, ["calc", "-d", "v100", "-d", "h200", "-t", "64",
                                                  "--json"]).stdout):
        _validate(d, "calc")


def test_tune_and_resources_outputs() -> None:
    from occupancy.toolchain import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    r = CliRunner().invoke(main, ["tile", str(ROOT / "examples/transpose/tune.yaml"), "--kernel",
                                  "transpose", "-d", "h200", "--json"])
    _validate(json.loads(r.stdout), "tune")
    src = ROOT / "tests/fixtures/project/src/kernels.cu"
    r = CliRunner().invoke(main, ["resources", str(src), "-I", str(src.parent.parent / "include"),
                                  "--json"])
    _validate(json.loads(r.stdout), "resources")
