"""One INT32_MAX, one ordered limiter tuple, one name rule (issue 19); the size limits are in
test_shape.py."""

from __future__ import annotations

import ast
from pathlib import Path

from occupancy import load_device
from occupancy.core.solver import LIMIT_NAMES, solve

PACKAGE = Path(__file__).resolve().parent.parent / "occupancy"


def test_one_int32_max() -> None:
    defined = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "INT32_MAX" for t in targets):
                    defined.append(path.relative_to(PACKAGE).as_posix())
    assert defined == ["core/limits.py"]


def test_one_name_rule() -> None:
    """Names in manifests go through safety.is_name, never str.isidentifier (which takes
    non-ASCII letters a compiler's -D would not) or a regex of their own."""
    for path in (PACKAGE / "inputs").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert ".isidentifier()" not in text, path
        assert "re.compile(r\"[A-Za-z_]" not in text or path.name == "safety.py", path


def test_limiters_come_in_one_order() -> None:
    r = solve(load_device("v100"), 256, 32)
    assert r.limiters == {"warps", "registers"} and r.ordered_limiters == ("warps", "registers")
    smem = solve(load_device("v100"), 1024, 64, 48 * 1024)
    assert smem.ordered_limiters == tuple(n for n in LIMIT_NAMES if n in smem.limiters)
    assert len(smem.ordered_limiters) >= 1
