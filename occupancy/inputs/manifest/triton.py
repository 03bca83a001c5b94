"""Triton entries of a manifest (`triton: path/to/module.py:fn`): the @triton.jit function,
the call's signature and constexprs, the configs (a vLLM/SGLang config file, a list, or a
space with restrictions), the problem sizes, the grid and the arguments' values, validated
with the line of every key. `tile` compiles and ranks the configs, `check` gates them.

Nothing read here reaches a shell: the module is a path to an existing .py file and the
function a Python identifier; the module is imported (by build/triton.py, in worker
processes) only when configs are compiled, never while the manifest is read.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from occupancy.core.errors import OccupancyError
from occupancy.core.limits import INT32_MAX
from occupancy.inputs.expr import Expr, ExprError, array_operands, check_names, parse
from occupancy.inputs.files import YamlDoc, beside, read_yaml, regular_file
from occupancy.inputs.manifest.keys import (
    TOLERANCE_HINT,
    TRITON,
    EntryError,
    ManifestError,
    device_names,
    entry_kind,
    fraction,
    keys_of,
    relative_tolerance,
    unknown_key,
)
from occupancy.inputs.safety import inert, is_name
from occupancy.inputs.triton_configs import WARPS, ConfigFileError, read_config_file

TRITON_KEYS = keys_of(TRITON)
MAX_CONFIGS = 10_000
MAX_SPACE = 1_000_000
MAX_SIZES = 64
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
# Triton's element types (the names its signatures use; '*fp16' is a pointer to fp16)
DTYPES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16", "fp16", "bf16", "fp32", "fp64",
          "i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64")
SCALARS = ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp16", "bf16", "fp32",
           "fp64")


@dataclass(frozen=True)
class PyFunction:
    """A Python function a manifest names as 'path/to/module.py:function' (checked to be a
    file and an identifier; imported only by `measure`, like the @triton.jit module)."""

    path: str  # absolute
    shown: str  # as written
    name: str


@dataclass(frozen=True)
class TritonSpec:
    """One `triton:` entry of a manifest, validated. `configs` are vLLM-style dicts
    (meta-parameters plus num_warps / num_stages), in the order given."""

    name: str
    manifest: str
    line: int
    module: str  # absolute path of the .py file
    shown_module: str  # as written
    function: str
    signature: dict[str, str]
    constexprs: dict[str, Any]
    configs: tuple[dict[str, int], ...]
    config_lines: tuple[int, ...]  # the manifest line of each config (its list item, or the key)
    problem: dict[str, tuple[int, ...]]  # one name may hold several sizes (the sweep)
    values: dict[str, Expr] = field(default_factory=dict)
    grid: tuple[Expr, ...] = ()
    unaligned: frozenset[str] = frozenset()
    devices: tuple[str, ...] = ()
    min_occupancy: float = 0.0
    config_file: str | None = None  # absolute path, when configs came from a file
    # what `measure` needs beyond tile and check: pointer arguments' shapes, the ones the
    # kernel writes, the reference (an expression of the arrays, or a Python function),
    # the relative error allowed, and a Python function for arguments random values
    # cannot stand for (a MoE routing table)
    arrays: dict[str, tuple[Expr, ...]] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    reference: Expr | None = None
    reference_function: PyFunction | None = None
    tolerance: float = 1e-3
    inputs: PyFunction | None = None

    @property
    def sweep(self) -> str | None:
        """The problem size given as a list (M: [1, 16, 64]), if any."""
        return next((k for k, v in self.problem.items() if len(v) > 1), None)

    @property
    def ref(self) -> str:
        """What build/triton.py loads: 'path/to/module.py:function'."""
        return f"{self.module}:{self.function}"

    def points(self) -> list[dict[str, int]]:
        """Every problem point (one per size of the sweep)."""
        key = self.sweep
        base = {k: v[0] for k, v in self.problem.items()}
        if key is None:
            return [base]
        return [{**base, key: m} for m in self.problem[key]]

    def env(self, config: Mapping[str, Any], point: Mapping[str, int]) -> dict[str, Any]:
        """The names an expression (values, grid) may read."""
        consts = {k: v for k, v in self.constexprs.items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return {**consts, **point, **config}

    def call_values(self, config: Mapping[str, Any], point: Mapping[str, int]) -> dict[str, Any]:
        """The value of every non-pointer argument of the signature at this point."""
        env = self.env(config, point)
        out: dict[str, Any] = {}
        for name, kind in self.signature.items():
            if kind.startswith("*"):
                continue
            v = self.values[name](env) if name in self.values else point[name]
            if kind[:2] not in ("fp", "bf") and isinstance(v, float) and v.is_integer():
                v = int(v)  # ceil(M / 16) * 16 is a whole number
            out[name] = v
        return out

    def grid_size(self, config: Mapping[str, Any], point: Mapping[str, int]) -> int | None:
        """Programs in the grid (x * y * z), or None without a `grid:` (its expressions read
        the problem, constexprs, the config and the arguments' values)."""
        if not self.grid:
            return None
        env = {**self.env(config, point), **self.call_values(config, point)}
        n = 1
        for g in self.grid:
            n *= max(int(g(env)), 1)
        return n


def load_triton(manifest: str | os.PathLike[str], kernel: str) -> TritonSpec:
    """The triton entry `kernel` of a manifest (for `tile`)."""
    p = Path(manifest)
    doc = read_yaml(p, ManifestError, "give the path of a manifest with a 'triton:' entry",
                    what="manifest")
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        raise ManifestError("a manifest is a mapping with 'kernels:'", str(p), 1)
    for i, e in enumerate(data["kernels"]):
        if isinstance(e, dict) and e.get("name") == kernel and entry_kind(e) == TRITON:
            top = data.get("devices")
            floor = data.get("min_occupancy", 0.0)
            try:  # a bad top-level key is named with the file and line, as an entry's is
                defaults = device_names(top, doc.line("devices")) if top is not None else ()
                kfloor = fraction(floor, "min_occupancy", doc.line("min_occupancy"))
            except EntryError as exc:
                raise ManifestError(str(exc), str(p), exc.line) from None
            try:
                return read_entry(doc, p, i, defaults, kfloor)
            except EntryError as exc:
                raise ManifestError(f"kernel '{inert(kernel)}': {exc}", str(p), exc.line) from None
    names = sorted(str(e.get("name")) for e in data["kernels"]
                   if isinstance(e, dict) and entry_kind(e) == TRITON)
    raise ManifestError(f"no triton kernel '{inert(kernel)}' (triton entries: "
                        f"{', '.join(map(inert, names)) or 'none'})", str(p), doc.line("kernels"))


def find_kind(manifest: str | os.PathLike[str], kernel: str) -> str | None:
    """The kind of the entry named `kernel` (launch, tune, triton), None if there is none
    or the file is not a manifest (the reader of that kind then says why)."""
    try:
        doc = read_yaml(Path(manifest), ManifestError, "", what="manifest")
    except OccupancyError:
        return None
    kernels = doc.data.get("kernels") if isinstance(doc.data, dict) else None
    for e in kernels if isinstance(kernels, list) else []:
        if isinstance(e, dict) and e.get("name") == kernel:
            return entry_kind(e)
    return None


def read_entry(doc: YamlDoc, path: Path, index: int, default_devices: tuple[str, ...],
               floor: float) -> TritonSpec:
    """One triton entry; EntryError (with the line of the offending key) if it is wrong."""
    return _Entry(doc, path, index).spec(default_devices, floor)


class _Entry:
    def __init__(self, doc: YamlDoc, path: Path, index: int) -> None:
        self.doc, self.path, self.index = doc, path, index
        self.e: dict[str, Any] = doc.data["kernels"][index]
        self.start = doc.line("kernels", index) or 1

    def line(self, *key: Any) -> int:
        return self.doc.line("kernels", self.index, *key) or self.start

    def fail(self, key: str, msg: str, *sub: Any) -> EntryError:
        return EntryError(f"{key}: {msg}", self.line(key, *sub))

    def module(self, key: str = "triton") -> tuple[str, str, str]:
        v = self.e[key]
        if not isinstance(v, str) or "\x00" in v or len(v) > 4096:
            raise self.fail(key, "must be 'path/to/module.py:function'")
        where, sep, fn = v.rpartition(":")
        if not sep or not where.endswith(".py") or not is_name(fn):
            raise self.fail(key, f"{inert(v[:80])!r} is not 'path/to/module.py:function' "
                            "(a .py file, relative to the manifest, and a Python identifier)")
        q = beside(self.path.parent, where)
        if not regular_file(q):
            raise self.fail(key, f"no such file {inert(str(q))}")
        return str(q), where, fn

    def function_key(self, key: str) -> PyFunction | None:
        if key not in self.e:
            return None
        return PyFunction(*self.module(key))

    def arrays(self, signature: dict[str, str], known: set[str]) -> dict[str, tuple[Expr, ...]]:
        raw = self.e.get("arrays", {})
        if not isinstance(raw, dict) or len(raw) > 256:
            raise self.fail("arrays", "must map pointer arguments to shapes, e.g. "
                            "{a_ptr: [M, K], c_ptr: [M, N]}")
        out = {}
        for k, v in raw.items():
            if not isinstance(k, str) or not signature.get(k, "").startswith("*"):
                raise self.fail("arrays", f"{inert(str(k))!r} is not a pointer argument of the "
                                "signature", str(k))
            shape = v if isinstance(v, list) else [v]
            if not 1 <= len(shape) <= 4:
                raise self.fail("arrays", f"{k}: a shape is a list of 1-4 sizes", k)
            out[k] = tuple(self.expr("arrays", s, known, k, j) for j, s in enumerate(shape))
        return out

    def outputs(self, signature: dict[str, str]) -> tuple[str, ...]:
        raw = self.e.get("outputs", [])
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not all(
                isinstance(a, str) and signature.get(a, "").startswith("*") for a in raw):
            raise self.fail("outputs", "must list the pointer arguments the kernel writes, "
                            "e.g. [c_ptr]")
        return tuple(dict.fromkeys(raw))

    def reference(self, signature: dict[str, str], known: set[str], outputs: tuple[str, ...]
                  ) -> tuple[Expr | None, PyFunction | None]:
        """`reference:` as an expression of the arrays ('a_ptr @ b_ptr') or a Python
        function ('check.py:softmax_ref'); either gives the first output's expected values."""
        raw = self.e.get("reference")
        if raw is None:
            return None, None
        if not outputs:
            raise self.fail("reference", "checks the kernel's outputs: list them in "
                            "'outputs:' (e.g. [c_ptr])")
        if isinstance(raw, str) and raw.rpartition(":")[0].endswith(".py"):
            return None, PyFunction(*self.module("reference"))
        arrays = {k for k, v in signature.items() if v.startswith("*")}
        try:
            x = parse(raw, "reference", arrays=True)
            check_names(x, known | arrays, "reference")
        except ExprError as exc:
            raise EntryError(f"{exc} (or give a Python function: "
                             "'path/to/module.py:function')", self.line("reference")) from None
        scalars = sorted(array_operands(x) - arrays)
        if scalars:
            raise self.fail("reference", f"{inert(scalars[0]) or 'a number'} is not an array: "
                            ".T and @ act on pointer arguments")
        return x, None

    def tolerance(self) -> float:
        tol = relative_tolerance(self.e.get("tolerance", 1e-3))
        if tol is None:
            raise self.fail("tolerance", TOLERANCE_HINT)
        return tol

    def signature(self) -> dict[str, str]:
        raw = self.e.get("signature")
        if not isinstance(raw, dict) or not raw or len(raw) > 256:
            raise self.fail("signature", "must map every runtime argument to its type, e.g. "
                            "{a_ptr: '*fp16', M: i32, scale: fp32}")
        out: dict[str, str] = {}
        for name, kind in raw.items():
            if not is_name(name):
                raise self.fail("signature", f"{inert(str(name))!r} is not an argument name",
                                str(name))
            elem = kind[1:].removeprefix("k") if isinstance(kind, str) and kind[:1] == "*" \
                else None
            if not isinstance(kind, str) or (elem is None and kind not in SCALARS) or (
                    elem is not None and elem not in DTYPES):
                raise self.fail("signature", f"{name}: {inert(repr(kind)[:40])} is not a Triton "
                                f"type: a pointer '*fp16' ('*' + one of {', '.join(DTYPES)}) "
                                f"or a scalar ({', '.join(SCALARS)})", name)
            out[name] = kind
        return out

    def constexprs(self) -> dict[str, Any]:
        raw = self.e.get("constexprs", {})
        if not isinstance(raw, dict) or len(raw) > 256:
            raise self.fail("constexprs", "must map names to values, e.g. {top_k: 2, "
                            "MUL_ROUTED_WEIGHT: false, compute_type: fp16}")
        for k, v in raw.items():
            if not is_name(k):
                raise self.fail("constexprs", f"{inert(str(k))!r} is not a name", str(k))
            ok = (isinstance(v, (bool, int, float)) or v is None
                  or is_name(v))
            if not ok:
                raise self.fail("constexprs", f"{k}: a constexpr is a number, true/false, or a "
                                f"word (a dtype name such as fp16), got {inert(repr(v)[:40])}", k)
        return dict(raw)

    def _config(self, c: Any, where: str, line: int) -> dict[str, int]:
        if not isinstance(c, dict) or not c:
            raise EntryError(f"{where} is a mapping of parameters to integers, e.g. "
                             "{BLOCK_SIZE_M: 64, num_warps: 4, num_stages: 3}", line)
        for k, v in c.items():
            if not is_name(k):
                raise EntryError(f"{where}: {inert(str(k))!r} is not a parameter name", line)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 1 << 20:
                raise EntryError(f"{where}: {k} must be an integer 0..1048576, got "
                                 f"{inert(repr(v)[:40])}", line)
        if c.get("num_warps", 4) not in WARPS:
            raise EntryError(f"{where}: num_warps must be one of "
                             f"{', '.join(map(str, WARPS))}, got {c['num_warps']}", line)
        return dict(c)

    def configs(self, known: set[str]) -> tuple[list[dict[str, int]], list[int], str | None]:
        given = [k for k in ("configs", "space") if k in self.e]
        if len(given) != 1:
            raise EntryError("give the configs: 'configs:' (a vLLM/SGLang JSON file or a list) "
                             "or 'space:' (lists of values), one of them", self.start)
        if given[0] == "space":
            return (*self.space(known), None)
        if "restrict" in self.e:  # never silently ignored beside a list or a file
            raise self.fail("restrict", "restricts a 'space:'; this entry has none")
        raw = self.e["configs"]
        if isinstance(raw, str):
            return self.config_file(raw)
        if not isinstance(raw, list) or not raw or len(raw) > MAX_CONFIGS:
            raise self.fail("configs", f"is a config file path or a list of 1-{MAX_CONFIGS:,} "
                            "configs")
        out, lines = [], []
        for j, c in enumerate(raw):
            out.append(self._config(c, f"configs[{j}]", self.line("configs", j)))
            lines.append(self.line("configs", j))
        return (*_unique(out, lines), None)

    def config_file(self, raw: str) -> tuple[list[dict[str, int]], list[int], str]:
        if "\x00" in raw or not raw:
            raise self.fail("configs", "must be a file path")
        q = beside(self.path.parent, raw)
        if not regular_file(q):
            raise self.fail("configs", f"no such file {inert(str(q))}")
        try:
            by_size = read_config_file(q)
        except ConfigFileError as exc:
            raise self.fail("configs", str(exc)) from None
        configs = list(by_size.values())
        out, lines = _unique(configs, [self.line("configs")] * len(configs))
        return out, lines, str(q)

    def space(self, known: set[str]) -> tuple[list[dict[str, int]], list[int]]:
        raw = self.e["space"]
        if not isinstance(raw, dict) or not raw:
            raise self.fail("space", "must map parameters to lists of values, e.g. "
                            "{BLOCK_SIZE_M: [32, 64], num_warps: [4, 8], num_stages: [2, 3]}")
        names, lists = [], []
        total = 1
        for k, v in raw.items():
            if not is_name(k):
                raise self.fail("space", f"{inert(str(k))!r} is not a parameter name", str(k))
            if (not isinstance(v, list) or not v or len(v) > 1000
                    or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 1 << 20
                           for x in v)):
                raise self.fail("space", f"{k} must be a list of integers 0..1048576", k)
            names.append(k)
            lists.append(v)
            total *= len(v)
        if total > MAX_SPACE:
            raise self.fail("space", f"{total:,} points: more than {MAX_SPACE:,}")
        restrict = self.restrict(known | set(names))
        line = self.line("space")
        out = []
        for values in itertools.product(*lists):
            c = dict(zip(names, values, strict=True))
            env = {**self.numbers(), **c}
            if all(r(env) for r in restrict):
                out.append(self._config(c, "space", line))
        if not out:
            raise self.fail("restrict" if restrict else "space", "no config of the space is left")
        if len(out) > MAX_CONFIGS:
            raise self.fail("space", f"{len(out):,} configs after 'restrict:': more than "
                            f"{MAX_CONFIGS:,}")
        return out, [line] * len(out)

    def numbers(self) -> dict[str, Any]:
        """Scalar problem sizes and numeric constexprs, for restrict."""
        consts = {k: v for k, v in self.e.get("constexprs", {}).items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool)}
        prob = {k: v for k, v in self.e.get("problem", {}).items() if isinstance(v, int)}
        return {**consts, **prob}

    def expr(self, key: str, v: Any, known: set[str], *sub: Any) -> Expr:
        where = f"{key}" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in sub)
        try:
            x = parse(v, where)
            check_names(x, known, where)
        except ExprError as exc:
            raise EntryError(str(exc), self.line(key, *sub)) from None
        return x

    def restrict(self, known: set[str]) -> list[Expr]:
        raw = self.e.get("restrict", [])
        if not isinstance(raw, list) or len(raw) > 64:
            raise self.fail("restrict", "must be a list of conditions, e.g. "
                            "['BLOCK_SIZE_M * BLOCK_SIZE_N <= 128 * 128']")
        return [self.expr("restrict", r, known, j) for j, r in enumerate(raw)]

    def problem(self) -> dict[str, tuple[int, ...]]:
        raw = self.e.get("problem", {})
        if not isinstance(raw, dict) or len(raw) > 256:
            raise self.fail("problem", "must map sizes to integers, e.g. {M: [1, 16, 64], "
                            "N: 14336, K: 4096}")
        out: dict[str, tuple[int, ...]] = {}
        for k, v in raw.items():
            if not is_name(k):
                raise self.fail("problem", f"{inert(str(k))!r} is not a name", str(k))
            vals = v if isinstance(v, list) else [v]
            if (not vals or len(vals) > MAX_SIZES
                    or any(isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= INT32_MAX
                           for x in vals)):
                raise self.fail("problem", f"{k} must be an integer 0..{INT32_MAX:,} or a list of "
                                f"1-{MAX_SIZES}", k)
            out[k] = tuple(dict.fromkeys(vals))
        swept = [k for k, v in out.items() if len(v) > 1]
        if len(swept) > 1:
            raise self.fail("problem", f"only one size may be a list ({', '.join(swept)} are)",
                            swept[1])
        return out

    def values(self, signature: dict[str, str], known: set[str]) -> dict[str, Expr]:
        raw = self.e.get("values", {})
        if not isinstance(raw, dict) or len(raw) > 256:
            raise self.fail("values", "must map integer arguments to expressions, e.g. "
                            "{EM: 'ceil(M * top_k / BLOCK_SIZE_M) * BLOCK_SIZE_M'}")
        out = {}
        for k, v in raw.items():
            if not isinstance(k, str) or signature.get(k, "*").startswith("*"):
                raise self.fail("values", f"{inert(str(k))!r} is not a scalar argument of the "
                                "signature", str(k))
            out[k] = self.expr("values", v, known, k)
        return out

    def unaligned(self, signature: dict[str, str]) -> frozenset[str]:
        raw = self.e.get("unaligned", [])
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not all(
                isinstance(a, str) and signature.get(a, "").startswith("*") for a in raw):
            raise self.fail("unaligned", "must list pointer arguments of the signature whose "
                            "address is not a multiple of 16")
        return frozenset(raw)

    def spec(self, default_devices: tuple[str, ...], floor: float) -> TritonSpec:
        for key in self.e:
            if key not in TRITON_KEYS:
                raise EntryError(unknown_key(key, TRITON_KEYS), self.line(str(key)))
        name = self.e.get("name")
        if not isinstance(name, str) or not name or len(name) > 200:
            raise self.fail("name", "needs a 'name:' (a non-empty string)")
        module, shown, function = self.module()
        signature = self.signature()
        constexprs = self.constexprs()
        problem = self.problem()
        clash = set(signature) & set(constexprs)
        if clash:
            raise self.fail("constexprs", f"{sorted(clash)[0]} is also in the signature", )
        configs, lines, config_file = self.configs(set(problem) - {_swept(problem)}
                                                   | set(self.numbers()))
        params = set().union(*configs)
        known = set(problem) | set(constexprs) | params
        values = self.values(signature, known)
        for arg, kind in signature.items():
            if not kind.startswith("*") and arg not in values and arg not in problem:
                raise self.fail("signature", f"{arg} ({kind}) needs a value: add it to "
                                "'problem:' or 'values:' (its specialization depends on it: "
                                "1, or divisible by 16)", arg)
        grid = self.grid(known | set(values))
        sizes = known | set(signature) - {k for k, v in signature.items() if v.startswith("*")}
        arrays = self.arrays(signature, sizes)
        outputs = self.outputs(signature)
        reference, reference_function = self.reference(signature, sizes, outputs)
        devices = (device_names(self.e["devices"], self.line("devices"))
                   if "devices" in self.e else default_devices)
        kfloor = (fraction(self.e["min_occupancy"], "min_occupancy", self.line("min_occupancy"))
                  if "min_occupancy" in self.e else floor)
        return TritonSpec(name, str(self.path), self.start, module, shown, function, signature,
                          constexprs, tuple(configs), tuple(lines), problem, values, grid,
                          self.unaligned(signature), devices, kfloor, config_file, arrays,
                          outputs, reference, reference_function, self.tolerance(),
                          self.function_key("inputs"))

    def grid(self, known: set[str]) -> tuple[Expr, ...]:
        if "grid" not in self.e:
            return ()
        raw = self.e["grid"]
        items = raw if isinstance(raw, list) else [raw]
        if not 1 <= len(items) <= 3:
            raise self.fail("grid", "give an expression or a list of 1-3")
        return tuple(self.expr("grid", g, known, j) for j, g in enumerate(items))


def _swept(problem: Mapping[str, tuple[int, ...]]) -> str | None:
    return next((k for k, v in problem.items() if len(v) > 1), None)


def _unique(configs: list[dict[str, int]], lines: list[int]
            ) -> tuple[list[dict[str, int]], list[int]]:
    """Each config once, in first-seen order and as written (a config file repeats them
    across sizes)."""
    seen: dict[tuple[tuple[str, int], ...], tuple[dict[str, int], int]] = {}
    for c, ln in zip(configs, lines, strict=True):
        seen.setdefault(tuple(sorted(c.items())), (c, ln))
    return [c for c, _ in seen.values()], [ln for _, ln in seen.values()]
