"""Tuning entries of a manifest (what `tile` ranks and `measure` times): the space, the
problem, the launch shape, the arguments and the reference, validated with the line of
every key. The same file holds `check`'s launch entries (launch.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from occupancy.core.errors import OccupancyError
from occupancy.core.limits import INT32_MAX
from occupancy.inputs.expr import Expr, ExprError, array_operands, check_names, parse
from occupancy.inputs.files import YamlDoc, beside, read_yaml, regular_file
from occupancy.inputs.manifest.keys import (
    TOLERANCE_HINT,
    TUNE,
    Defaults,
    ManifestError,
    keys_of,
    parse_defines_raw,
    parse_flags,
    parse_folders,
    relative_tolerance,
    unknown_key,
)
from occupancy.inputs.safety import check_function, define_value, inert, is_name

MAX_POINTS = 10_000
MAX_ARRAY_BYTES = 64 << 30  # one argument of `measure`: more than any GPU here holds
MAX_VALUES = 1_000
DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8,
          "int8": 1, "uint8": 1}
TUNE_KEYS = keys_of(TUNE)
CONSTANT_FILE_BYTES = 65536 + 4096  # the constant bank and a .npy header


@dataclass(frozen=True)
class ArrayArg:
    name: str
    dtype: str
    shape: tuple[Expr, ...]
    output: bool


@dataclass(frozen=True)
class TuneSpec:
    """One tuning entry of a manifest, validated."""

    name: str
    manifest: str
    line: int
    source: str
    shown_source: str
    function: str
    defines: Mapping[str, Expr | str]
    include_dirs: tuple[str, ...]
    flags: tuple[str, ...]
    space: dict[str, tuple[Any, ...]]
    restrict: tuple[Expr, ...]
    problem: dict[str, int]
    block: tuple[Expr, ...]
    grid: tuple[Expr, ...]
    dynamic_shared_memory: Expr
    work: dict[str, Expr]
    args: tuple[Expr | ArrayArg, ...]
    reference: Expr | None
    tolerance: float
    carveout: int | None = None
    # `reference: NAME` naming another entry of the manifest: that kernel, run once per
    # point on the same inputs (its first point if it has a space), writes the expected
    # values of every output the two share by name.
    reference_kernel: TuneSpec | None = None
    # `hand_counts: FAMILY`: the points are candidates of a shipped family, whose hand counts
    # (tune/shipped.py) give their traffic and stand in for the model where no build exists;
    # `predictor: hand_counts`: they predict the time even where a build exists.
    hand_counts: str | None = None
    predictor: str = "model"
    # `constants: {d_vertices: polygon.npy}`: module symbols (__constant__ or __device__)
    # that measure fills from a NumPy .npy file before it launches (kernel_tuner's
    # cmem_args); absolute paths, each file at most CONSTANT_FILE_BYTES
    constants: Mapping[str, str] = field(default_factory=dict)


def load_tuning(manifest: str | os.PathLike[str], kernel: str,
                overrides: Mapping[str, int] | None = None, *, _as_reference: bool = False
                ) -> TuneSpec:
    """The tuning entry `kernel` of a manifest; `overrides` replace problem sizes (--set).
    `reference: NAME` naming another entry loads that entry too (the reference kernel; it
    may have no space: it runs as given)."""
    p = Path(manifest)
    doc = read_yaml(p, ManifestError, "give the path of a manifest with a tuning 'space:'",
                    what="manifest")
    return _TuneEntry(doc, p, kernel, overrides, _as_reference).spec()


class _TuneEntry:
    """Reads one tuning entry; every error names the manifest line of the offending key."""

    def __init__(self, doc: YamlDoc, path: Path, kernel: str, overrides: Mapping[str, int] | None,
                 as_reference: bool) -> None:
        self.doc, self.path, self.spath, self.kernel = doc, path, str(path), kernel
        self.overrides, self.as_reference = overrides or {}, as_reference
        data = doc.data
        if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
            raise ManifestError("a manifest is a mapping with 'kernels:'", self.spath, 1)
        self.entries = [(i, e) for i, e in enumerate(data["kernels"]) if isinstance(e, dict)]
        found = [(i, e) for i, e in self.entries if e.get("name") == kernel]
        if not found:
            tunable = sorted(str(e.get("name")) for _, e in self.entries if "space" in e)
            raise ManifestError(f"no kernel '{inert(kernel)}' (tuning entries: "
                                f"{', '.join(map(inert, tunable)) or 'none'}); --kernel names one",
                                self.spath, doc.line("kernels"))
        self.index, self.e = found[0]
        if "triton" in self.e:
            raise ManifestError(f"kernel '{inert(kernel)}' is a triton entry: read it with "
                                "load_triton (occupancy tile, check and measure take it)",
                                self.spath, self.line())
        self.known: set[str] = set()

    def line(self, *key: Any) -> int | None:
        return self.doc.line("kernels", self.index, *key)

    def fail(self, key: str, msg: str) -> ManifestError:
        return ManifestError(f"kernel '{inert(self.kernel)}': {key}: {msg}", self.spath, self.line(key))

    def fail_at(self, line: int | None, msg: str) -> ManifestError:
        return ManifestError(f"kernel '{inert(self.kernel)}': {msg}", self.spath, line)

    def expr(self, key: str, v: Any, *, arrays: bool = False, extra: set[str] | None = None) -> Expr:
        try:
            x = parse(v, f"kernel '{inert(self.kernel)}': {key}", arrays=arrays)
            check_names(x, self.known | (extra or set()), f"kernel '{inert(self.kernel)}': {key}")
        except ExprError as exc:
            raise ManifestError(str(exc), self.spath, self.line(key.split(".")[0].split("[")[0])) \
                from None
        return x

    def exprs(self, key: str) -> tuple[Expr, ...]:
        v = self.e.get(key)
        items = v if isinstance(v, list) else [v]
        if not 1 <= len(items) <= 3:
            raise self.fail(key, "give an expression or a list of 1-3")
        return tuple(self.expr(f"{key}[{j}]", x) for j, x in enumerate(items))

    def check_keys(self) -> None:
        for key in self.e:
            if key not in TUNE_KEYS:
                raise self.fail_at(self.line(str(key)), unknown_key(key, TUNE_KEYS))
        needed = ("source", "block", "grid") if self.as_reference else ("source", "space", "block",
                                                                            "grid")
        for key in needed:
            if key not in self.e:
                raise self.fail_at(self.line(), f"a tuning entry needs '{key}:'")

    def source(self) -> tuple[str, str]:
        src = self.e["source"]
        if not isinstance(src, str) or not src or "\x00" in src:
            raise self.fail("source", "must be a file path")
        q = beside(self.path.parent, src)
        if not regular_file(q):
            raise self.fail("source", f"no such file {inert(str(q))}")
        return str(q), src

    def space(self) -> dict[str, tuple[Any, ...]]:
        raw = self.e.get("space", {"_": [0]}) if self.as_reference else self.e["space"]
        if not isinstance(raw, dict) or not raw:
            raise self.fail("space", "must map names to lists of values, e.g. {TILE: [16, 32]}")
        space: dict[str, tuple[Any, ...]] = {}
        for name, values in raw.items():
            if not is_name(name):
                raise self.fail("space", f"{inert(str(name))!r} is not a name (letters, digits, _)")
            if (not isinstance(values, list) or not values or len(values) > MAX_VALUES
                    or not all(isinstance(v, (int, float, str)) for v in values)):
                raise self.fail("space", f"{name} must be a list of 1-{MAX_VALUES} numbers or words")
            try:
                for v in values:
                    define_value(v, f"space.{name}")  # shell-safe, as any define
            except OccupancyError as exc:  # with the file and line, as every other key
                raise self.fail_at(self.line("space"), str(exc)) from None
            space[name] = tuple(values)
        return space

    def problem(self, space: Mapping[str, Any]) -> dict[str, int]:
        raw = self.e.get("problem", {})
        if not isinstance(raw, dict):
            raise self.fail("problem", "must map sizes to numbers, e.g. {M: 4096}")
        unknown = sorted(set(self.overrides) - set(raw)) if not self.as_reference else []
        if unknown:
            raise self.fail("problem", f"--set {inert(unknown[0])}: no such problem size; "
                            f"the problem has {', '.join(map(inert, raw)) or 'none'}")
        problem: dict[str, int] = {}
        for k, v in {**raw, **self.overrides}.items():
            if not is_name(k):
                raise self.fail("problem", f"{inert(str(k))!r} is not a name")
            if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= INT32_MAX:
                raise self.fail("problem", f"{k} must be an integer 1..{INT32_MAX:,}, got {inert(repr(v))}")
            problem[k] = v
        clash = set(space) & set(problem)
        if clash:
            raise self.fail("problem", f"{sorted(clash)[0]} is both a space and a problem name")
        return problem

    def restrict(self) -> tuple[Expr, ...]:
        raw = self.e.get("restrict", [])
        if not isinstance(raw, list) or len(raw) > 64:
            raise self.fail("restrict", "must be a list of conditions")
        return tuple(self.expr(f"restrict[{j}]", r) for j, r in enumerate(raw))

    def function(self) -> str:
        function = self.e.get("function") or self.kernel
        try:
            return check_function(function, "function")
        except OccupancyError as exc:
            raise self.fail("function", str(exc).removeprefix("function: ")) from None

    def defines(self) -> dict[str, Expr | str]:
        """A string naming space or problem sizes is an expression ({TILE: TILE}); anything
        else is a literal define (true -> 1, numbers and words verbatim)."""
        try:
            raw = parse_defines_raw(self.e.get("defines", {}), self.line("defines"))
        except OccupancyError as exc:
            raise self.fail_at(self.line("defines"), str(exc)) from None
        top = self.top.defines
        clash = sorted(k for k in top if k in self.known and k not in raw)
        if clash:  # a top-level -D would fix a parameter the space varies, silently
            raise self.fail("defines", f"the top-level defines set {clash[0]}, a name of this "
                            f"kernel's space or problem: define it here ({clash[0]}: "
                            f"{clash[0]}) or rename the top-level one")
        defines: dict[str, Expr | str] = dict(top)  # the entry's own win
        for k, v in raw.items():
            x = None
            if isinstance(v, str):
                try:
                    x = parse(v, "")
                except ExprError:
                    x = None
            if x is not None and x.names and x.names <= self.known:
                defines[k] = x
                continue
            try:
                defines[k] = define_value(v, f"defines.{k}")
            except OccupancyError as exc:
                raise self.fail_at(self.line("defines"), str(exc)) from None
        return defines

    @cached_property
    def top(self) -> Defaults:
        """The manifest's top-level include_dirs / flags / defines, for every entry (as a
        `check` manifest's), read once."""
        try:
            return Defaults(self.doc, self.path.parent)
        except OccupancyError as exc:
            raise ManifestError(str(exc), self.spath, getattr(exc, "line", None)) from None

    def compile_options(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        top = self.top
        try:
            include_dirs = (*parse_folders(self.e.get("include_dirs", []), self.path.parent,
                                           self.line("include_dirs")), *top.include_dirs)
            flags = (*top.flags, *parse_flags(self.e.get("flags", []), self.line("flags")))
        except OccupancyError as exc:
            raise self.fail_at(getattr(exc, "line", None), str(exc)) from None
        return include_dirs, flags

    def work(self) -> dict[str, Expr]:
        raw = self.e.get("work", {})
        if not isinstance(raw, dict) or not set(raw) <= {"flops", "dram_bytes"}:
            raise self.fail("work", "is {flops: EXPR, dram_bytes: EXPR}")
        return {k: self.expr(f"work.{k}", v) for k, v in raw.items()}

    def reference(self, args: tuple[Expr | ArrayArg, ...], arrays: set[str],
                  problem: dict[str, int]) -> tuple[Expr | None, TuneSpec | None]:
        """`reference:` as an expression of the inputs, or the name of another entry."""
        raw = self.e.get("reference")
        if raw is None or self.as_reference:
            return None, None
        names = {str(x.get("name")) for _, x in self.entries} - {self.kernel}
        if not (isinstance(raw, str) and raw in names):
            reference = self.expr("reference", raw, arrays=True, extra=set(arrays))
            scalars = sorted(array_operands(reference) - arrays)
            if scalars:
                raise self.fail("reference", f"{inert(scalars[0]) or 'a number'} is not an array: "
                                ".T and @ act on arrays (args given as {array: NAME, ...})")
            return reference, None
        if raw in arrays or raw in self.known:
            raise self.fail("reference", f"'{inert(raw)}' names both another kernel and an "
                            "array or size of this one: rename one")
        # its own problems are reported at its own keys and lines
        ref = _TuneEntry(self.doc, self.path, raw, problem, True).spec()
        ours = {a.name for a in args if isinstance(a, ArrayArg) and a.output}
        theirs = {a.name for a in ref.args if isinstance(a, ArrayArg) and a.output}
        if not ours & theirs:
            raise self.fail("reference", f"kernel '{inert(raw)}' writes none of this kernel's "
                            f"outputs ({', '.join(sorted(ours)) or 'none'}): name its output arrays "
                            "the same")
        return None, ref

    def tolerance(self) -> float:
        tol = relative_tolerance(self.e.get("tolerance", 1e-3))
        if tol is None:
            raise self.fail("tolerance", TOLERANCE_HINT)
        return tol

    def carveout(self) -> int | None:
        carveout = self.e.get("carveout")
        if carveout is not None and (isinstance(carveout, bool) or not isinstance(carveout, int)
                                     or not 0 <= carveout <= 100):
            raise self.fail("carveout", "is a percentage 0-100")
        return carveout

    def predictor(self) -> tuple[str | None, str]:
        family, predictor = self.e.get("hand_counts"), self.e.get("predictor", "model")
        if family is not None and not (isinstance(family, str) and is_name(family)):
            raise self.fail("hand_counts", "names a shipped family, e.g. matmul")
        if predictor not in ("model", "hand_counts"):
            raise self.fail("predictor", "is model or hand_counts")
        if predictor == "hand_counts" and family is None:
            raise self.fail("predictor", "hand_counts needs 'hand_counts: FAMILY' beside it")
        return family, predictor

    def spec(self) -> TuneSpec:
        self.check_keys()
        source, shown = self.source()
        space = self.space()
        problem = self.problem(space)
        self.known = set(space) | set(problem)
        restrict = self.restrict()
        function = self.function()
        defines = self.defines()
        include_dirs, flags = self.compile_options()
        work = self.work()
        args, arrays = _args(self.e.get("args", []), self.expr, self.fail)
        reference, reference_kernel = self.reference(args, arrays, problem)
        tolerance, carveout = self.tolerance(), self.carveout()
        dyn = self.expr("dynamic_shared_memory", self.e.get("dynamic_shared_memory", 0))
        family, predictor = self.predictor()
        constants = self.constants()
        return TuneSpec(self.kernel, self.spath, self.line() or 1, source, shown, function, defines,
                        include_dirs, flags, space, restrict, problem, self.exprs("block"),
                        self.exprs("grid"), dyn, work, args, reference, tolerance, carveout,
                        reference_kernel, family, predictor, constants)

    def constants(self) -> dict[str, str]:
        raw = self.e.get("constants", {})
        if not isinstance(raw, dict) or len(raw) > 16:
            raise self.fail("constants", "maps up to 16 symbols to .npy files, e.g. "
                            "{d_table: table.npy}")
        out = {}
        for name, f in raw.items():
            if not is_name(name):
                raise self.fail("constants", f"{inert(str(name))!r} is not a symbol name")
            if not isinstance(f, str) or not f.endswith(".npy") or "\x00" in f:
                raise self.fail("constants", f"{name}: give a .npy file (numpy.save), relative "
                                "to the manifest")
            q = beside(self.path.parent, f)
            if not regular_file(q):
                raise self.fail("constants", f"{name}: no such file {inert(str(q))}")
            if q.stat().st_size > CONSTANT_FILE_BYTES:
                raise self.fail("constants", f"{name}: {inert(f)} is over 64 KB, the constant "
                                "bank: a __constant__ table cannot hold it")
            out[name] = str(q)
        return out


def _args(raw: Any, expr: Any, fail: Any) -> tuple[tuple[Expr | ArrayArg, ...], set[str]]:
    if not isinstance(raw, list) or len(raw) > 64:
        raise fail("args", "must be the kernel's arguments in launch order")
    out: list[Expr | ArrayArg] = []
    names: set[str] = set()
    for j, a in enumerate(raw):
        if isinstance(a, dict):
            if not set(a) <= {"array", "dtype", "shape", "output"} or "array" not in a:
                raise fail("args", f"[{j}] is {{array: NAME, dtype: float32, shape: [..], "
                           "output: true}")
            name, dtype, shape = a["array"], a.get("dtype", "float32"), a.get("shape")
            if not is_name(name):
                raise fail("args", f"[{j}] array name must be a name")
            if dtype not in DTYPES:
                raise fail("args", f"[{j}] dtype must be one of {', '.join(DTYPES)}")
            if not isinstance(shape, list) or not 1 <= len(shape) <= 4:
                raise fail("args", f"[{j}] shape must be a list of 1-4 sizes")
            output = a.get("output", False)
            if not isinstance(output, bool):
                raise fail("args", f"[{j}] output must be true or false")
            out.append(ArrayArg(name, dtype, tuple(expr(f"args[{j}].shape", s) for s in shape),
                                output))
            names.add(name)
        else:
            out.append(expr(f"args[{j}]", a))
    return tuple(out), names
