"""No test writes into the checked-in tree: its files and folders listed before and after.

Tests write under tmp_path (a fixture they change is copied there first, or a manifest
written there points at it). conftest.py lists the repository when the session is
configured and again when it finishes, in the controller only (a pytest-xdist worker is
one of many): a file added, removed or rewritten fails the session with its path, and so
does a folder whose entries changed with no file to show for it (a test that wrote a file
beside a fixture and deleted it again: the folder's mtime moved). What Python and the tools
keep beside the code is not the tree (the names .gitignore lists). Plain os.walk: no git.
"""

from __future__ import annotations

import os
from pathlib import Path

# Kept in step with .gitignore: caches and environments, at any depth...
IGNORED_NAMES = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                           ".hypothesis", ".benchmarks", ".venv", "venv", "mutants", "dist",
                           ".coverage"})
IGNORED_SUFFIXES = (".egg-info",)
# ...and at the top only.
IGNORED_TOP = frozenset({"build"})

# relative path -> (size, mtime in ns) for a file; folders end in "/" -> (mtime in ns, the
# names of the caches in it), so that a cache created there explains a moved mtime.
Snapshot = dict[str, tuple[object, ...]]


def _ignored(name: str, top: bool) -> bool:
    return (name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES)
            or name.startswith(".coverage.") or (top and name in IGNORED_TOP))


def snapshot(root: Path) -> Snapshot:
    """Every file and folder under root that is not a cache (see Snapshot)."""
    out: Snapshot = {}
    for folder, dirs, names in os.walk(root):
        top = Path(folder) == root
        caches = tuple(sorted(n for n in [*dirs, *names] if _ignored(n, top)))
        dirs[:] = [d for d in dirs if not _ignored(d, top)]
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        try:
            out["" if rel == "." else rel + "/"] = (os.lstat(folder).st_mtime_ns, caches)
        except OSError:  # gone between the listing and the stat
            continue
        for name in names:
            if _ignored(name, top):
                continue
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            out[os.path.relpath(path, root).replace(os.sep, "/")] = (st.st_size, st.st_mtime_ns)
    return out


def changes(before: Snapshot, after: Snapshot, allowed: tuple[str, ...] = ()) -> list[str]:
    """'added PATH', 'removed PATH', 'rewritten PATH' (folders end in /), and 'wrote and
    removed a file in FOLDER/', sorted by path; paths under one of `allowed` (folder
    prefixes such as 'tests/golden/') are left out. The top folder's own mtime is not
    compared (tools that run the tests keep transient files there)."""
    out = []
    for path in sorted(before.keys() | after.keys()):
        if not path or path.startswith(allowed):
            continue
        if path not in before:
            out.append(f"added {path}")
        elif path not in after:
            out.append(f"removed {path}")
        elif not path.endswith("/"):
            if before[path] != after[path]:
                out.append(f"rewritten {path}")
        elif before[path][0] != after[path][0] and before[path][1] == after[path][1]:
            # the folder's entries changed and no cache explains it: unless an entry here
            # changed (listed already), a file was written and removed again
            here = [p for p in before.keys() | after.keys()
                    if p.startswith(path) and p != path and "/" not in p[len(path):].rstrip("/")]
            if all(before.get(p) == after.get(p) for p in here):
                out.append(f"wrote and removed a file in {path}")
    return out


def allowed_writes(root: Path, *scratch: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """What a session may write on purpose: the JSON goldens under OCCUPANCY_REGEN=1, and
    the scratch folders it was told to use (--basetemp, OCCUPANCY_CACHE_DIR) where they
    lie inside the tree."""
    out = ["tests/golden/"] if os.environ.get("OCCUPANCY_REGEN") else []
    for s in scratch:
        if not s:
            continue
        rel = os.path.relpath(os.path.abspath(s), root).replace(os.sep, "/")
        if rel != "." and not rel.startswith("../"):
            out.append(rel.rstrip("/") + "/")
    return tuple(out)


def is_controller(config: object) -> bool:
    """The process that runs the whole session: not a pytest-xdist worker."""
    return not hasattr(config, "workerinput")
