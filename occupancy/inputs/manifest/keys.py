"""The manifest's keys, in one table: which entry kinds take each key, and what it holds.

A manifest (YAML) lists kernels. An entry is one of these kinds:
- `launch`: a launch config `check` judges (numbers, a source to compile, a log or a binary);
- `tune`: a tuning space `tile` ranks and `measure` times (it has `space:` or `args:`);
- `triton`: a @triton.jit kernel and its configs (it has `triton:`): `tile` compiles and
  ranks the configs per device, `check` gates each config on each device.
Every reader (gate/check, tune/spaces) takes its keys and value parsers from here, so a new
key is one row below and one parser.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from occupancy.core.errors import FileError, OccupancyError
from occupancy.core.limits import INT32_MAX
from occupancy.inputs.files import YamlDoc, beside, regular_file
from occupancy.inputs.flags import check_flags
from occupancy.inputs.safety import check_define_name, define_value, excerpt, inert

MAX_KERNELS = 10_000
MAX_DEVICES = 64
LAUNCH, TUNE, TRITON = "launch", "tune", "triton"
BOTH = frozenset({LAUNCH, TUNE})
ALL = frozenset({LAUNCH, TUNE, TRITON})
_TT = frozenset({TUNE, TRITON})


@dataclass(frozen=True)
class Key:
    kinds: frozenset[str]  # the entry kinds that take it
    holds: str  # what it holds, for help and errors


# every key an entry may have (the top level's are TOP_KEYS)
KEYS: dict[str, Key] = {
    "name": Key(ALL, "the entry's name (check's label, tile's --kernel)"),
    "source": Key(BOTH, "the .cu/.cuh file to compile, relative to the manifest"),
    "function": Key(BOTH, "the kernel's name in the source: plain, ns::qualified, k<32>, mangled"),
    "defines": Key(BOTH, "macros: {TILE: 32, FAST: true}; in a space, expressions of its names"),
    "include_dirs": Key(BOTH, "folders for #include, relative to the manifest"),
    "flags": Key(BOTH, "compiler flags from the accepted list"),
    "devices": Key(ALL, "device names or profile paths (else the top-level devices)"),
    "min_occupancy": Key(ALL, "the occupancy floor, a fraction 0-1"),
    "no_spills": Key(BOTH, "true: any spill is a failure"),
    "carveout": Key(BOTH, "the preferred shared-memory carveout, percent 0-100"),
    "block": Key(BOTH, "threads per block: 256 or [x, y, z] (in a space: expressions)"),
    "grid": Key(ALL, "blocks in the grid: n or [x, y, z] (in a space or triton: expressions)"),
    "dynamic_shared_memory": Key(BOTH, "dynamic shared memory per block: 48K (in a space: an expression)"),
    "registers": Key(frozenset({LAUNCH}), "registers per thread, from ptxas -v"),
    "static_shared_memory": Key(frozenset({LAUNCH}), "static shared memory per block: 8K"),
    "opt_in_shared_memory": Key(frozenset({LAUNCH}), "true: the kernel raises its dynamic smem limit"),
    "max_threads_per_block": Key(frozenset({LAUNCH}), "the kernel's __launch_bounds__"),
    "max_registers": Key(frozenset({LAUNCH}), "a ceiling on registers per thread"),
    "ptxas_log": Key(frozenset({LAUNCH}), "a ptxas -v log to read resources from"),
    "cubin": Key(frozenset({LAUNCH}), "a cubin, fatbin or executable to read resources from"),
    "barriers": Key(frozenset({LAUNCH}), "named barriers per block"),
    "spill_stores_bytes": Key(frozenset({LAUNCH}), "spill stores, bytes per thread"),
    "spill_loads_bytes": Key(frozenset({LAUNCH}), "spill loads, bytes per thread"),
    "cluster": Key(frozenset({LAUNCH}), "thread-block cluster: n or [x, y, z]"),
    "virtual_resources": Key(frozenset({LAUNCH}), "Blackwell: the block's virtual resources"),
    "link": Key(frozenset({LAUNCH}), "other sources device-linked with 'source:' (-rdc builds; at most 64)"),
    "space": Key(_TT, "tuning parameters: {TILE: [16, 32]} (triton: also num_warps, num_stages)"),
    "restrict": Key(_TT, "conditions a point must meet"),
    "problem": Key(_TT, "problem sizes: {M: 4096} (triton: one may be a list, M: [1, 16, 64])"),
    "work": Key(frozenset({TUNE}), "{flops: EXPR, dram_bytes: EXPR}"),
    "args": Key(frozenset({TUNE}), "the kernel's arguments in launch order"),
    "constants": Key(frozenset({TUNE}), "measure: __constant__/__device__ symbols filled "
                                        "before a launch: {d_table: table.npy}"),
    "reference": Key(_TT, "a NumPy expression of the inputs, or another entry's name (triton: "
                     "also path/to/module.py:function)"),
    "tolerance": Key(_TT, "the relative error a result may have, 0-1"),
    "hand_counts": Key(frozenset({TUNE}), "a shipped family whose hand counts (tune/shipped.py) "
                                          "describe the entry's points: matmul, transpose"),
    "predictor": Key(frozenset({TUNE}), "model (the build's SASS and PTX; the default) or "
                                        "hand_counts (the family's counts predict)"),
    "triton": Key(frozenset({TRITON}), "the @triton.jit function: path/to/module.py:name"),
    "signature": Key(frozenset({TRITON}), "runtime arguments' types: {a_ptr: '*fp16', M: i32}"),
    "constexprs": Key(frozenset({TRITON}), "constexpr arguments every config shares"),
    "configs": Key(frozenset({TRITON}), "a vLLM/SGLang config JSON file, or a list of configs"),
    "values": Key(frozenset({TRITON}), "integer arguments as expressions: {EM: 'M * 2'}"),
    "unaligned": Key(frozenset({TRITON}), "pointer arguments not 16-byte aligned"),
    "arrays": Key(frozenset({TRITON}), "measure: pointer arguments' shapes: {a_ptr: [M, K]}"),
    "outputs": Key(frozenset({TRITON}), "measure: the pointer arguments the kernel writes"),
    "inputs": Key(frozenset({TRITON}), "measure: path/to/module.py:function making arguments "
                  "random ones cannot be (routing tables)"),
}
DEFAULT_KEYS = {"include_dirs", "flags", "defines"}  # top-level defaults for every entry
TOP_KEYS = {"devices", "min_occupancy", "kernels", "compilers", *DEFAULT_KEYS}


def keys_of(kind: str) -> set[str]:
    """The keys an entry of this kind takes."""
    return {k for k, key in KEYS.items() if kind in key.kinds}


def entry_kind(entry: object) -> str:
    """`triton` for an entry naming a @triton.jit function; `tune` for an entry with a
    tuning space or launch arguments (a reference kernel that another entry's `reference:`
    names); `launch` for everything else."""
    if isinstance(entry, dict) and "triton" in entry:
        return TRITON
    return TUNE if isinstance(entry, dict) and ("space" in entry or "args" in entry) else LAUNCH


def tuning_entry(entry: object) -> bool:
    return entry_kind(entry) == TUNE


class ManifestError(FileError):
    """A manifest that cannot be read: the message names file, line and key."""


class EntryError(OccupancyError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def integer(v: Any, what: str, line: int | None, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= INT32_MAX:
        raise EntryError(f"{what} must be an integer {minimum}..{INT32_MAX:,}, got "
                          f"{inert(repr(v)[:40])}", line)
    return v


def fraction(v: Any, what: str, line: int | None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise EntryError(f"{what} must be a fraction 0-1 (0.5 = 50%), got {inert(repr(v)[:40])}",
                          line)
    return float(v)


def relative_tolerance(v: Any) -> float | None:
    """A `tolerance:` value as a relative error in (0, 1), or None where it is not one. YAML
    1.1 reads 1e-4 (no dot) as a string: that string is taken as the number it spells."""
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        return None
    return float(v)


TOLERANCE_HINT = "is a relative error between 0 and 1, e.g. 1e-3"


def device_names(v: Any, line: int | None) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [v]
    if (not isinstance(v, list) or not v or len(v) > MAX_DEVICES
            or not all(isinstance(d, str) and d for d in v)):
        raise EntryError(f"devices must be a list of 1-{MAX_DEVICES} device names or profile "
                          f"paths, got {inert(repr(v)[:60])}", line)
    return tuple(v)


def unknown_key(key: object, allowed: set[str]) -> str:
    near = difflib.get_close_matches(str(key), allowed, n=1)
    return f"unknown key {excerpt(key)}" + (f"; did you mean '{near[0]}'?" if near else
                                                  f"; allowed: {', '.join(sorted(allowed))}")


class Defaults:
    """Top-level include_dirs / flags / defines, applied to every kernel."""

    def __init__(self, doc: YamlDoc, base: Path) -> None:
        self.include_dirs = parse_folders(doc.data.get("include_dirs", []), base, doc.line("include_dirs"))
        self.flags = parse_flags(doc.data.get("flags", []), doc.line("flags"))
        self.defines = parse_defines(doc.data.get("defines", {}), doc.line("defines"))
        self.compilers = parse_compilers(doc.data.get("compilers", {}), base, doc.line("compilers"))


# A manifest is written by whoever wrote the repository, so `compilers:` may name the nvcc of
# a CUDA install only (one the system put there, or the user's own): never a program of the
# repository's. The user's leave (this variable set to 1) lifts that, for a toolkit elsewhere.
TRUST_COMPILERS = "OCCUPANCY_TRUST_COMPILERS"
_INSTALLED = re.compile(r"/(usr/local|opt)/cuda(-[0-9][0-9.]*)?/bin/nvcc")


def system_owned(path: str) -> bool:
    """Whether `path` and every folder above it belong to root and are writable by no one
    else (a system install), so that no user but root could have put a program there: a
    repository cloned to /opt/cuda-1 is its cloner's, and anything under /tmp sits in a
    folder everyone may write to."""
    import os

    here = path
    while True:
        try:
            st = os.stat(here)
        except OSError:
            return False
        if st.st_uid != 0 or st.st_mode & 0o022:
            return False
        parent = os.path.dirname(here)
        if parent == here:
            return True
        here = parent


def _installed_nvcc(q: Path) -> str | None:
    """The path to run where `q` is a CUDA install's nvcc: /usr/local/cuda[-X.Y]/bin/nvcc,
    /opt/cuda... where the system put it (root's, writable by no one else: system_owned),
    $CUDA_HOME's or $CUDA_PATH's, or the nvcc on PATH (links followed); None where it is
    not. nvcc reads nvcc.profile (which names the programs it runs) from the folder it was
    started from, and ptxas and nvlink are looked for there: `q` as named where it is the
    user's own choice ($CUDA_HOME's, $CUDA_PATH's, PATH's nvcc), else the install's own
    path, links resolved (a repository's link to the system nvcc must not bring a profile,
    ptxas or nvlink of its own, even where root owns the repository's folders)."""
    import os
    import shutil

    real = os.path.realpath(q)
    on_path = shutil.which("nvcc")
    mine = [os.path.join(os.environ[v], "bin", "nvcc") for v in ("CUDA_HOME", "CUDA_PATH")
            if os.environ.get(v)] + ([on_path] if on_path else [])
    if any(os.path.abspath(x) == os.path.abspath(q) for x in mine):
        return str(q)
    if (_INSTALLED.fullmatch(real) and system_owned(real)) or \
            any(os.path.realpath(x) == real for x in mine):
        # the install's own path: a link elsewhere (a repository's, whose folder root may own
        # in a CI job run as root) would bring that folder's profile, ptxas and nvlink
        return real
    return None


def parse_compilers(v: Any, base: Path, line: int | None) -> dict[str, str]:
    """`compilers: {sm_61: /usr/local/cuda-12.4/bin/nvcc}`: the nvcc that builds an arch (a
    CUDA install's, or anywhere with the user's leave: TRUST_COMPILERS)."""
    import os

    if not isinstance(v, dict) or not all(isinstance(k, str) and re.fullmatch(r"sm_\d{2,3}[af]?", k)
                                          and isinstance(p, str) and p and "\x00" not in p
                                          for k, p in v.items()):
        raise EntryError("compilers maps an arch to an nvcc, e.g. {sm_61: "
                         "/usr/local/cuda-12.4/bin/nvcc}", line)
    out = {}
    for arch, path in v.items():
        q = beside(base, path)
        if not regular_file(q):
            raise EntryError(f"compilers.{arch}: no such file {inert(str(q))}", line)
        installed = _installed_nvcc(q)
        if installed is None and os.environ.get(TRUST_COMPILERS) != "1":
            raise EntryError(f"compilers.{arch}: {inert(str(q))} is not the nvcc of a CUDA "
                             "install (/usr/local/cuda-X.Y/bin/nvcc, $CUDA_HOME's, the one on "
                             "PATH; one under /usr/local or /opt must be root's and writable by no one "
                             "else), and a manifest may not pick another program to run: set "
                             f"{TRUST_COMPILERS}=1 if you trust it", line)
        out[arch] = installed or str(q)
    return out


def parse_folders(v: Any, base: Path, line: int | None) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(d, str) and d for d in v) or len(v) > 256:
        raise EntryError("include_dirs must be a list of folders (relative to the manifest)", line)
    out = []
    for d in v:
        if "\x00" in d:
            raise EntryError("include_dirs: a path contains a NUL byte", line)
        p = beside(base, d)
        if not p.is_dir():
            raise EntryError(f"include_dirs: no such folder {inert(str(p))}", line)
        out.append(str(p))
    return tuple(out)


def parse_flags(v: Any, line: int | None) -> tuple[str, ...]:
    if not isinstance(v, list) or len(v) > 256:
        raise EntryError("flags must be a list, e.g. [-std=c++17, -rdc=true]", line)

    try:
        fl, defs = check_flags(v, "flags")
    except OccupancyError as exc:
        raise EntryError(str(exc), line) from None
    return (*fl, *[f"-D{k}={val}" for k, val in defs.items()])


def parse_defines_raw(v: Any, line: int | None) -> dict[str, Any]:
    """A defines mapping with C-identifier names; values as written (typed later)."""
    if not isinstance(v, dict) or len(v) > 1024:
        raise EntryError("defines must be a mapping, e.g. {TILE: 32, USE_FAST: true}", line)
    try:
        return {check_define_name(k, "defines"): val for k, val in v.items()}
    except OccupancyError as exc:
        raise EntryError(str(exc), line) from None


def parse_defines(v: Any, line: int | None) -> dict[str, str]:
    """Defines typed as the compiler gets them: true/false -> 1/0, numbers and words as is."""
    try:
        return {k: define_value(val, f"defines.{k}") for k, val in parse_defines_raw(v, line).items()}
    except OccupancyError as exc:  # a bad value; a bad mapping or name is already one
        raise EntryError(str(exc), line) from None
