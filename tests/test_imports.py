"""Start-up stays light: the CLI never imports CuPy or matplotlib; the core not even click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)


def _modules_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", code + "; import sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, env=env, check=True).stdout
    return set(out.split())


def test_cli_import_is_light() -> None:
    mods = _modules_after("import occupancy.cli")
    assert not {"cupy", "matplotlib", "numpy", "triton"} & mods


def test_calc_path_is_light() -> None:
    code = ("from click.testing import CliRunner; from occupancy.cli import main; "
            "r = CliRunner().invoke(main, ['calc', '-d', 'v100', '-t', '256', '-r', '32']); "
            "assert r.exit_code == 0, r.output")
    mods = _modules_after(code)
    assert not {"cupy", "matplotlib", "numpy"} & mods
    # nor the other commands' modules, nor what only JSON output needs (bench/startup.py)
    assert not {"occupancy.cli.devices", "occupancy.cli.gate", "occupancy.cli.measure",
                "occupancy.cli.report", "occupancy.cli.tile", "occupancy.output.serialize"} & mods


def test_core_imports_neither_click_nor_rich() -> None:
    mods = _modules_after("import occupancy, occupancy.core.solver, occupancy.inputs.profiles")
    assert "click" not in mods and "rich" not in mods and "cupy" not in mods
