"""Put the corpus's fetched sources beside its manifests (bench/CORPUS.md; SOURCES.tsv).

    python bench/corpus/place_sources.py siboehm/SGEMM_CUDA=PATH KernelTuner/kernel_tuner=PATH ...

PATH: a git clone of that repository (bare or not; the pinned commit is read with `git
show`, whatever is checked out) or a plain folder holding its files at their upstream
paths (llm.c in ../shared/realcode). Without arguments: which files are missing. The
fetched files stay out of commits (.gitignore here); the manifests, wrappers and the
polygon are this project's and committed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


COMMIT = re.compile(r"[0-9a-f]{7,40}")


def _plain(path: str) -> bool:
    """A relative path without '..', an option's dash or a control character."""
    parts = path.split("/")
    return bool(path) and not path.startswith(("/", "-")) and ".." not in parts \
        and "" not in parts and all(c.isprintable() for c in path)


def sources() -> list[tuple[str, str, str, str]]:
    """(repository, commit, upstream path, path here) per fetched file, every row checked
    before anything is written: a hex commit, plain relative paths, and a place here that
    .gitignore keeps out of commits (no row can replace a manifest or land outside)."""
    ignored = {line for line in (HERE / ".gitignore").read_text(encoding="utf-8").splitlines()
               if line.startswith("/")}
    rows = []
    for n, line in enumerate((HERE / "SOURCES.tsv").read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 4 or not COMMIT.fullmatch(fields[1]) \
                or not all(_plain(f) for f in fields[2:]) or f"/{fields[3]}" not in ignored:
            print(f"Error: SOURCES.tsv line {n}: give repository, a hex commit, a relative "
                  "upstream path and a place listed in .gitignore, tab-separated", file=sys.stderr)
            raise SystemExit(2)
        repo, commit, upstream, here = fields
        rows.append((repo, commit, upstream, here))
    return rows


def read(where: Path, commit: str, upstream: str) -> bytes:
    """The file at the pinned commit (a git clone) or at its upstream path (a folder)."""
    if (where / "HEAD").is_file() or (where / ".git").exists():
        git = ["git", "--git-dir", str(where if (where / "HEAD").is_file() else where / ".git")]
        return subprocess.run([*git, "show", f"{commit}:{upstream}"], check=True,
                              capture_output=True).stdout
    return (where / upstream).read_bytes()


def main(argv: list[str]) -> int:
    given: dict[str, Path] = {}
    for a in argv:
        name, sep, path = a.partition("=")
        if not sep or not path:
            print(f"Error: {a!r}: give REPOSITORY=PATH (e.g. siboehm/SGEMM_CUDA=../SGEMM_CUDA)",
                  file=sys.stderr)
            return 2
        given[name] = Path(path)
    rows = sources()
    known = {r[0] for r in rows}
    for name in given:
        if name not in known:
            print(f"Error: {name}: not a corpus repository (one of {', '.join(sorted(known))})",
                  file=sys.stderr)
            return 2
    missing = 0
    for repo, commit, upstream, here in rows:
        dest = HERE / here
        if repo not in given:
            if not dest.is_file():
                print(f"missing: {here} ({repo} {commit}: {upstream})")
                missing += 1
            continue
        try:
            data = read(given[repo], commit, upstream)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"Error: {repo} at {given[repo]}: cannot read {upstream} at {commit} ({exc})",
                  file=sys.stderr)
            return 2
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, dest)
        print(f"placed: {here}")
    return 1 if missing and not given else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
