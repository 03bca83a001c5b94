"""tests/cli_runner.py, the forked stand-in for `python -m occupancy` that the hostile-input
tests run the CLI with, answers as a fresh interpreter does, and keeps answering."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cli_runner
from tests.cli_runner import ENV

CASES = [  # (args, exit status)
    (["calc", "-d", "mine", "-t", "256", "--json"], 0),  # output; the environment applies
    (["calc", "-d", "profs/mine.yaml", "-t", "256"], 0),  # the cwd applies
    (["calc", "-d", "v100\udc80", "-t", "256"], 2),  # one Error: line
    (["calc", "--nope"], 2),  # a usage error, naming the program as -m names it
    ([], 0),  # the help
]


@pytest.mark.parametrize(("args", "code"), CASES, ids=["env", "cwd", "error", "usage", "bare"])
def test_the_runner_answers_as_a_fresh_interpreter(tmp_path: Path, args: list[str],
                                                   code: int) -> None:
    (tmp_path / "profs").mkdir()
    (tmp_path / "profs" / "mine.yaml").write_text('extends: a100\nname: "Mine"\n')
    env = {**os.environ, **ENV, "OCCUPANCY_PROFILES": str(tmp_path / "profs")}
    forked = cli_runner.run_cli(args, tmp_path, env, 30)
    fresh = subprocess.run([sys.executable, "-m", "occupancy", *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert forked.args == fresh.args and forked.returncode == code, forked
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr)


def test_a_timeout_kills_and_raises_as_subprocess_run_does(tmp_path: Path) -> None:
    env = {**os.environ, **ENV}
    with pytest.raises(subprocess.TimeoutExpired) as err:
        cli_runner.run_cli(["devices"], tmp_path, env, 1e-4)
    assert err.value.cmd == [sys.executable, "-m", "occupancy", "devices"]
    r = cli_runner.run_cli(["--version"], tmp_path, env, 30)  # and it goes on
    assert r.returncode == 0 and "version" in r.stdout


def test_a_missing_cwd_raises_as_subprocess_run_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        cli_runner.run_cli(["devices"], tmp_path / "gone", {**os.environ, **ENV}, 30)
    assert cli_runner.run_cli(["--version"], tmp_path, {**os.environ, **ENV}, 30).returncode == 0
