"""The README's two set-up commands are what CI runs, word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    head = text.split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", head)


def test_readme_starts_with_exactly_two_commands() -> None:
    cmds = _readme_commands()
    assert len(cmds) == 2
    assert "pip install ." in cmds[0] and "occupancy calc" in cmds[0]
    assert "[test]" in cmds[1] and "pytest" in cmds[1]


def test_ci_runs_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for cmd in _readme_commands():
        assert cmd in ci, cmd


def test_the_test_command_states_its_expected_time() -> None:
    """The line after the two commands says how long the second one takes, and on how
    many cores (the number is measured, bench/; the wording stays)."""
    text = (ROOT / "README.md").read_text()
    after = text.split("\n## ", 1)[0].rsplit("```", 1)[1]
    said = " ".join(after.split())
    assert re.search(r"runs the tests \(about \d+(\.\d+)? (minutes|seconds) on \d+ cores", said), said
