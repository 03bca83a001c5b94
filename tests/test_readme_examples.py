"""Every complete example in the README prints what the README shows (80 columns)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy.cli import main

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```console\n\$ occupancy (.+?)\n(.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    out = []
    for cmd, shown in BLOCK.findall(text):
        if ("\n...\n" in "\n" + shown or shown.rstrip().endswith("...") or "-o " in cmd
                or cmd.startswith("measure")):
            continue  # abridged on purpose, writes a file, or needs a GPU (bench/ holds it)
        out.append((cmd, shown))
    return out


@pytest.mark.parametrize(("cmd", "shown"), [
    pytest.param(c, s, marks=[pytest.mark.slow] if c.startswith(("tile", "check")) else [])
    for c, s in examples()
], ids=[c for c, _ in examples()])  # tile and check compile: slow
def test_readme_example(cmd: str, shown: str) -> None:
    r = CliRunner().invoke(main, shlex.split(cmd), env={"COLUMNS": "80"})
    got = "\n".join(line.rstrip() for line in r.stdout.rstrip().splitlines())
    want = "\n".join(line.rstrip() for line in shown.rstrip().splitlines())
    assert got == want


def test_there_are_examples() -> None:
    assert len(examples()) >= 6
