"""The build cache on disk: keyed by the compiler, the arch, every flag, the tool's version and
the content of every file the compiler read (nvcc: the line markers of its device preprocessing;
NVRTC: the user's includes, over-approximated), and stale once a file appears where the include
search would now find it first. Failures are cached like successes. An entry `check` wrote holds
no SASS loop mix ("mix": false), or one of an older MIX_FORMAT: a build that wants it
disassembles the cached cubin."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from occupancy.build.compilers import Build, Compiler, nvdisasm_path
from occupancy.build.link import linker_inputs
from occupancy.build.resources import CompileError, KernelResources
from occupancy.core.version import __version__
from occupancy.inputs.safety import note_input

CACHE_FORMAT = 11  # what a cache entry holds; bump when KernelResources gains a field or what
# fills one changes (4: PTX, 5: -rdc builds read from the device-linked image, 6: the SASS
# loop mix skips out-of-line fallbacks that branch back over an EXIT, 7: and prefers a loop
# with global loads and stores among loops without FFMAs, 8: and counts a division's FFMAs
# apart, div_ffma, 9: and the loop's indexed reads of __constant__ data, uldc, 10: a kernel's
# spills include those of the device functions it calls, spilling_callees, 11: nvcc builds
# read __launch_bounds__' minimum blocks from their PTX, min_blocks_per_sm)
# What an entry's SASS loop mix holds (its "mix"; False: none): bump when sass_loop_mix
# changes. An entry with an older one is read again from its cached cubin, not recompiled.
# (1, written `true`: up to CACHE_FORMAT 9; 2: the counts of the FFMA loops nested in the
# hottest loop apart, `inner_*`; 3: and a lone warp's wait for its shared loads, `lds_wait`;
# 4: `warp_wait`, that wait with the arithmetic results' too; 5: the other passes' loads and
# waits, `pass_ldg*` (one commit); 6: instead, the other passes that wait for each load,
# `pass_loops`; 7: and the function's wide shared accesses, `wide_lds` and `wide_sts`, and
# `pass_loops` by whole loops, each counted once; 8: and the instructions of the narrow
# pipes, `alu`, `imad`, `mufu`; 9: and the register-indexed __constant__ reads, `ldc3`, and
# the module's __constant__ bytes, `cbank3`; 10: and the loop's scalar shared loads,
# `lds_scalar`; 11: and the clocks its FFMAs wait for the register banks, `reg_reads`; 12:
# the same keys, read again: some 11 entries held mixes an earlier form of the code wrote
# (re-read from their cubins, 430 of the corpus's 4,388 points moved by up to 0.66%).)
MIX_FORMAT = 12
# What NVRTC is given of a source (builds._nvrtc_ptx): bump when that text changes, so that a
# failure cached for the old text is compiled again. NVRTC entries only; nvcc reads the file.
# (1: `extern "C"__global__` gets a space: NVRTC read "C"__global__ as one literal.)
NVRTC_TEXT = 1


def cache_dir() -> Path:
    base = os.environ.get("OCCUPANCY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "occupancy")
    return Path(base) / "builds"


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _deps_unchanged(deps: list[list[object]]) -> bool:
    """Every file the compiler read is as it was: same stat, or else same content."""
    for path, st, sha in deps:
        assert isinstance(path, str)
        note_input(path)  # read by the cached build: an input of this run too
        if _stat(path) == st:
            continue
        if _sha(path) != sha:
            return False
    return True


def _key(build: Build, compiler: Compiler) -> str:
    text = _sha(build.source) or "missing"
    # nvdisasm's presence decides whether the entry holds the SASS loop mix
    blob = json.dumps([__version__, CACHE_FORMAT, compiler.label, compiler.path, nvdisasm_path(),
                       build.arch, *([NVRTC_TEXT] if compiler.kind == "nvrtc" else []),
                       build.source, text, build.include_dirs, build.flags, build.defines,
                       build.name_expressions, build.link,
                       linker_inputs(build.arch, compiler.path) if build.rdc else []])
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_load(key: str, with_mix: bool = False) -> dict[str, KernelResources] | None:
    """The kernels of a cached build; a cached failure raises its CompileError again (a
    manifest with one bad entry does not recompile it on every run); None: compile (or,
    `with_mix`, an entry written without the SASS loop mix: add it from the cubin)."""
    path = cache_dir() / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not _deps_unchanged(data["deps"]) or any(map(os.path.exists, data.get("absent", []))):
            return None  # a file it read changed, or a header now shadows one it found
        failed = str(data.get("error") or "")
        if with_mix and not failed and data.get("mix") != MIX_FORMAT:
            return None  # no mix, or an older one: _cached reads it from the cubin
        out = {}
        for k, v in data["kernels"].items() if not failed else ():
            dims = v.pop("cluster_dims", None)
            mix = v.pop("loop_mix", None)
            callees = v.pop("spilling_callees", ())
            v.pop("unattributed_spills", None)  # a build compiled here has its call graph: none
            v.pop("before_link", None)  # and is read from the image the driver loads
            out[k] = KernelResources(**v, cluster_dims=(int(dims[0]), int(dims[1]), int(dims[2]))
                                     if dims else None,
                                     loop_mix=tuple((str(a), int(b)) for a, b in mix) if mix else None,
                                     spilling_callees=tuple(str(c) for c in callees))
    except (OSError, ValueError, TypeError, KeyError, AssertionError, AttributeError):
        return None  # missing or corrupt: compile again
    if failed:
        raise CompileError(failed)
    return out


def _write_atomic(where: Path, name: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
    with os.fdopen(fd, "wb") as fb:
        fb.write(data)
    os.replace(tmp, where / name)


def _dep_rows(deps: Iterable[str]) -> list[list[object]]:
    rows: list[list[object]] = []
    for d in sorted(set(deps)):
        st, sha = _stat(d), _sha(d)
        if st is not None and sha is not None:
            rows.append([d, st, sha])
    return rows


def _cache_store_failure(key: str, message: str, deps: Iterable[str],
                         absent: Sequence[str] = ()) -> None:
    """A compile error, under the key a success would have: the same inputs fail the same way
    until one of the files it read changes."""
    try:
        where = cache_dir()
        where.mkdir(parents=True, exist_ok=True)
        blob = json.dumps({"error": message, "kernels": {}, "deps": _dep_rows(deps),
                           "absent": list(absent)})
        _write_atomic(where, f"{key}.json", blob.encode())
    except OSError:
        pass


def _cache_store(key: str, kernels: Mapping[str, KernelResources], deps: Iterable[str],
                 cubin: bytes | None = None, ptx: str | None = None,
                 absent: Sequence[str] = (), mix: bool = True) -> None:
    rows = _dep_rows(deps)
    try:
        where = cache_dir()
        where.mkdir(parents=True, exist_ok=True)
        # the binaries first, so a json entry never points at a missing one
        if cubin is not None:
            _write_atomic(where, f"{key}.cubin", cubin)
        if ptx is not None:
            _write_atomic(where, f"{key}.ptx", ptx.encode())
        blob = json.dumps({"kernels": {k: asdict(v) for k, v in kernels.items()}, "deps": rows,
                           "absent": list(absent), "mix": MIX_FORMAT if mix else False})
        _write_atomic(where, f"{key}.json", blob.encode())
    except OSError:
        pass  # a read-only home still works, only without the cache


def _cache_add_mix(key: str, kernels: Mapping[str, KernelResources]) -> None:
    """The entry again, now with the loop mix (same files read, same absent ones)."""
    try:
        where = cache_dir()
        data = json.loads((where / f"{key}.json").read_text(encoding="utf-8"))
        data.update(kernels={k: asdict(v) for k, v in kernels.items()}, mix=MIX_FORMAT)
        _write_atomic(where, f"{key}.json", json.dumps(data).encode())
    except (OSError, ValueError, TypeError):
        pass
