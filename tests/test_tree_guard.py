"""The guard that fails a session whose tests wrote into the checked-in tree (tree_guard.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import tree_guard

HERE = Path(__file__).resolve().parent


def _tree(root: Path) -> None:
    for rel in ("README.md", "tests/fixtures/project/launches.yaml", "kernels/copy.cu",
                "tests/__pycache__/x.pyc", ".hypothesis/db", "occupancy.egg-info/PKG-INFO",
                "build/lib/x.py", "examples/build/keep.cu"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)


def test_added_removed_and_rewritten_files_are_named_caches_are_not(tmp_path: Path) -> None:
    _tree(tmp_path)
    before = tree_guard.snapshot(tmp_path)
    assert "examples/build/keep.cu" in before  # only the top build/ is a build output
    assert not any(p.startswith(("tests/__pycache__", ".hypothesis", "occupancy.egg-info", "build/"))
                   for p in before)
    (tmp_path / "tests/fixtures/project/.typed-true.yaml").write_text("x")  # added
    (tmp_path / "kernels/copy.cu").unlink()  # removed
    launches = tmp_path / "tests/fixtures/project/launches.yaml"
    st = launches.stat()
    launches.write_text("same size, other text!"[: st.st_size])
    os.utime(launches, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # rewritten
    (tmp_path / "tests/__pycache__/y.pyc").write_text("")  # caches: not the tree
    (tmp_path / ".hypothesis/db2").write_text("")
    (tmp_path / "build/lib/y.py").write_text("")
    after = tree_guard.snapshot(tmp_path)
    assert tree_guard.changes(before, after) == [
        "removed kernels/copy.cu",
        "added tests/fixtures/project/.typed-true.yaml",
        "rewritten tests/fixtures/project/launches.yaml"]
    assert tree_guard.changes(before, after, ("tests/",)) == ["removed kernels/copy.cu"]
    assert tree_guard.changes(after, tree_guard.snapshot(tmp_path)) == []


def test_a_file_written_and_removed_again_is_seen_a_new_cache_is_not(tmp_path: Path) -> None:
    """What test_realcode did: a manifest written beside the fixture and unlinked in a
    finally; the folder's mtime shows it. A __pycache__ created beside a module does not count."""
    _tree(tmp_path)
    project = tmp_path / "tests/fixtures/project"
    st = project.stat()
    before = tree_guard.snapshot(tmp_path)
    p = project / ".typed-true.yaml"
    p.write_text("x")
    p.unlink()
    os.utime(project, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a coarse clock
    (tmp_path / "examples" / "__pycache__").mkdir()
    os.utime(tmp_path / "examples", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    (tmp_path / ".hypothesis" / "db2").write_text("")  # the top folder's mtime: not compared
    (tmp_path / "kernels" / "new").mkdir()  # a folder explained by its new entry
    assert tree_guard.changes(before, tree_guard.snapshot(tmp_path)) == [
        "added kernels/new/", "wrote and removed a file in tests/fixtures/project/"]


def test_what_a_session_may_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Golden files under OCCUPANCY_REGEN=1; scratch folders it was given inside the tree."""
    monkeypatch.delenv("OCCUPANCY_REGEN", raising=False)
    assert tree_guard.allowed_writes(tmp_path) == ()
    assert tree_guard.allowed_writes(tmp_path, None, "/elsewhere/cache", tmp_path.parent / "x",
                                     tmp_path) == ()
    monkeypatch.setenv("OCCUPANCY_REGEN", "1")
    assert tree_guard.allowed_writes(tmp_path, tmp_path / "scratch", str(tmp_path / "c") + "/") \
        == ("tests/golden/", "scratch/", "c/")


def test_the_hooks_fail_the_session_in_the_controller_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import conftest

    monkeypatch.setattr(conftest, "REPO", tmp_path)
    _tree(tmp_path)
    option = SimpleNamespace(basetemp=None)
    worker = SimpleNamespace(stash=pytest.Stash(), option=option, workerinput={"workerid": "gw0"})
    controller = SimpleNamespace(stash=pytest.Stash(), option=option)
    for config in (worker, controller):
        conftest.pytest_configure(config)  # type: ignore[arg-type]
    (tmp_path / "kernels" / "stray.yaml").write_text("written by a test")
    sessions = [SimpleNamespace(config=c, exitstatus=pytest.ExitCode.OK) for c in (worker, controller)]
    for s in sessions:
        conftest.pytest_sessionfinish(s, 0)  # type: ignore[arg-type]
    assert sessions[0].exitstatus == pytest.ExitCode.OK  # a worker leaves it to the controller
    assert sessions[1].exitstatus == pytest.ExitCode.TESTS_FAILED
    lines: list[str] = []
    reporter = SimpleNamespace(section=lambda title, **kw: lines.append(title), line=lines.append)
    conftest.pytest_terminal_summary(reporter, 1, controller)  # type: ignore[arg-type]
    assert lines[:2] == ["tests wrote into the checked-in tree", "added kernels/stray.yaml"]
    lines.clear()
    conftest.pytest_terminal_summary(reporter, 0, worker)  # type: ignore[arg-type]
    assert lines == []


def test_a_real_session_that_writes_into_the_tree_fails(tmp_path: Path) -> None:
    """End to end, in a copy of the tests' package: pytest exits 1 and names the file. (The
    xdist split is the hooks' test above: one more session with workers costs seconds.)"""
    tests = tmp_path / "tests"
    tests.mkdir()
    for f in ("__init__.py", "conftest.py", "tree_guard.py"):
        shutil.copy(HERE / f, tests / f)
    (tests / "fixtures").mkdir()
    (tests / "test_writes.py").write_text(
        "from pathlib import Path\n\n\ndef test_writes_beside_a_fixture():\n"
        "    (Path(__file__).parent / 'fixtures' / 'm.yaml').write_text('x')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(HERE.parent)])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-q", "tests/test_writes.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "1 passed" in r.stdout and "tests wrote into the checked-in tree" in r.stdout
    assert "added tests/fixtures/m.yaml" in r.stdout, r.stdout
