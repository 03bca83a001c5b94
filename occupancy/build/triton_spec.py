"""How a launch of a @triton.jit function specializes on its arguments, without Triton.

A mirror of Triton 3.6's launcher: `create_function_from_signature` (the generated
binder), `native_specialize_impl` (C++: types and the divisibility key of one value) and
`JITFunction._pack_args` (signature, constexprs, attrs). Integers equal to 1 become
constants; pointers whose address and integers whose value are divisible by 16 get
`tt.divisibility = 16`; `do_not_specialize` / `do_not_specialize_on_alignment` and
annotations turn parts of it off. tests/test_triton.py checks it against Triton's own
functions on sample arguments. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occupancy.core.errors import OccupancyError

# str(dtype).split(".")[-1] -> Triton's name (triton/_utils.py type_canonicalisation_dict)
_DTYPES = {
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15",
    "float8_e4m3fn": "fp8e4nv", "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2": "fp8e5", "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16",
    "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32",
    "double": "fp64", "float64": "fp64", "int8": "i8", "int16": "i16", "int": "i32",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
    "uint64": "u64", "void": "void",
}
_DTYPES.update({v: v for v in list(_DTYPES.values())})


def canonical_dtype(dtype: object) -> str:
    """'float16', 'torch.float16', tl.float16 or 'fp16' -> 'fp16' (Triton's names)."""
    name = str(dtype).split(".")[-1]
    if name not in _DTYPES:
        raise OccupancyError(f"unknown Triton dtype {dtype!r}; use one of: "
                             + ", ".join(sorted(set(_DTYPES.values()))))
    return _DTYPES[name]


# --- describing a call --------------------------------------------------------------------


@dataclass(frozen=True)
class Pointer:
    """A tensor argument: its element type and whether its address is 16-byte aligned
    (every fresh PyTorch allocation is; a slice at an odd offset may not be)."""

    dtype: str
    aligned: bool = True

    def data_ptr(self) -> int:  # what the launcher reads; lets Triton's own code run on it
        return 0 if self.aligned else 8


@dataclass(frozen=True)
class IntArg:
    """An integer argument known by its properties, not its value: a multiple of 16, or
    equal to 1 (a unit stride: the launch makes it a constant), and its width."""

    multiple_of_16: bool = False
    one: bool = False
    type: str = "i32"  # i32, i64 or u64, as Triton picks from the value's range

    def __post_init__(self) -> None:
        if self.type not in ("i32", "i64", "u64"):
            raise OccupancyError(f"an integer argument is i32, i64 or u64, got {self.type!r}")
        if self.one and self.multiple_of_16:
            raise OccupancyError("an integer argument cannot be both 1 and a multiple of 16")


def _int_type(v: int) -> str:
    if -2**31 <= v < 2**31:
        return "i32"
    if -2**63 <= v < 2**63:
        return "i64"
    if 0 <= v < 2**64:
        return "u64"
    raise OccupancyError(f"integer argument {v} is too large for a Triton launch")


def specialize_value(value: Any, is_const: bool = False, specialize: bool = True,
                     align: bool = True) -> tuple[str, Any]:
    """(type, key) for one runtime argument, as triton 3.6's native_specialize_impl gives:
    key 'D' (divisible by 16), '' (not), None (not specialized), or the constant value of
    a ('constexpr', value) pair. Values: int, float, bool, None, Pointer, IntArg, or any
    object with `dtype` and `data_ptr()` (a tensor)."""
    if value is None:
        return ("constexpr", None)
    if isinstance(value, bool):
        return ("u1", None)
    if isinstance(value, IntArg):
        if value.one and specialize:
            return ("constexpr", 1)
        if not specialize:
            return (value.type, None)
        return (value.type, "D" if value.multiple_of_16 and align else "")
    if isinstance(value, int):
        if specialize and value == 1:
            return ("constexpr", 1)
        kind = _int_type(value)
        if not specialize:
            return (kind, None)
        return (kind, "D" if value % 16 == 0 and align else "")
    if isinstance(value, float):
        return ("fp32", None)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        kind = ("*k" if is_const else "*") + canonical_dtype(value.dtype)
        if not specialize:
            return (kind, None)
        return (kind, "D" if value.data_ptr() % 16 == 0 and align else "")
    raise OccupancyError(f"cannot describe a Triton argument of type {type(value).__name__}: "
                         "give an int, float, bool, None, Pointer(dtype) or IntArg(...)")


@dataclass(frozen=True)
class Specialization:
    """What `triton.compile(ASTSource(fn, signature, constexprs, attrs))` needs."""

    signature: dict[str, str]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], list[list[Any]]]

    def key(self) -> str:
        """A stable text for cache keys (constant values by their str, as Triton's hash)."""
        return json.dumps([sorted(self.signature.items()),
                           sorted((list(k), _text(v)) for k, v in self.constexprs.items()),
                           sorted((list(k), v) for k, v in self.attrs.items())])


def _text(v: Any) -> str:
    return v.cache_key if hasattr(v, "cache_key") else str(v)


def _param_spec(p: Any, value: Any) -> tuple[str, Any]:
    """One parameter as the generated binder of create_function_from_signature does it."""
    if getattr(p, "is_constexpr", False):
        return ("constexpr", value)
    if isinstance(value, str) and value.startswith("*"):
        value = Pointer(value.lstrip("*k") or value)
    specialize = not getattr(p, "do_not_specialize", False)
    align = not getattr(p, "do_not_specialize_on_alignment", False)
    ret = specialize_value(value, bool(getattr(p, "is_const", False)), specialize, align)
    ann = getattr(p, "annotation_type", "")
    if ann:
        if ann == "u1" or ann[:2] in ("fp", "bf"):
            return (ann, None)
        return (ann, ret[1]) if specialize else (ann, None)
    return ret


def specialize_call(fn: Any, args: Mapping[str, Any],
                    meta: Mapping[str, Any] | None = None) -> Specialization:
    """The specialization a launch `fn[grid](**args, **meta)` compiles, without a GPU.

    args: every runtime argument by name (an int value, or IntArg; Pointer(dtype) or the
    string '*fp16' for a tensor; float; bool; None); meta: the constexpr meta-parameters
    (a config's kwargs and fixed constexprs). Parameters with defaults may be left out."""
    values = {**args, **(meta or {})}
    params = fn.params
    known = {p.name for p in params}
    extra = sorted(set(values) - known)
    if extra:
        raise OccupancyError(f"{fn.__name__} has no parameter {', '.join(extra)} "
                             f"(it has: {', '.join(p.name for p in params)})")
    spec: list[tuple[str, Any]] = []
    bound: list[Any] = []
    for p in params:
        if p.name in values:
            v = values[p.name]
        elif getattr(p, "has_default", False):
            v = p.default
        else:
            raise OccupancyError(f"{fn.__name__}: no value for argument {p.name!r}")
        if isinstance(v, tuple):
            raise OccupancyError(f"{fn.__name__}: tuple argument {p.name!r} is not supported")
        bound.append(v)
        spec.append(_param_spec(p, v))
    signature = {p.name: s[0] for p, s in zip(params, spec, strict=True)}
    constexprs: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for i, ((kind, key), v) in enumerate(zip(spec, bound, strict=True)):
        if kind == "constexpr":
            constexprs[(i,)] = 1 if isinstance(v, IntArg) else v
        if isinstance(key, str):
            attrs[(i,)] = [["tt.divisibility", 16]] if "D" in key else []
    return Specialization(signature, constexprs, attrs)


_INT_TYPES = {"i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
_FLOAT_TYPES = {"fp16", "bf16", "fp32", "fp64"}


def call_from_signature(signature: Mapping[str, str], values: Mapping[str, Any],
                        unaligned: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """A manifest's description of a call as specialize_call takes it.

    signature: {name: "*fp16" | "i32" | "fp32" | "constexpr" ...}; values: the integer,
    float or constant value of every non-pointer argument (the problem's sizes and
    strides); unaligned: pointers whose address is not a multiple of 16. An integer's
    declared width is not used: like the launch, its value decides (i32, i64 or u64)."""
    out: dict[str, Any] = {}
    for name, kind in signature.items():
        if not isinstance(kind, str):
            raise OccupancyError(f"signature: {name}: a type is a string like '*fp16' or "
                                 f"'i32', got {kind!r}")
        if kind.startswith("*"):
            out[name] = Pointer(canonical_dtype(kind.lstrip("*k")), name not in unaligned)
            continue
        if name not in values:
            raise OccupancyError(f"signature: {name} ({kind}) needs a value: its "
                                 "specialization depends on it (divisible by 16, or 1)")
        v = values[name]
        if kind in _INT_TYPES and kind != "i1" and (isinstance(v, bool) or not isinstance(v, int)):
            raise OccupancyError(f"signature: {name} is {kind}, its value {v!r} is not an integer")
        if kind in _FLOAT_TYPES and not isinstance(v, (int, float)):
            raise OccupancyError(f"signature: {name} is {kind}, its value {v!r} is not a number")
        out[name] = float(v) if kind in _FLOAT_TYPES else v
    return out
