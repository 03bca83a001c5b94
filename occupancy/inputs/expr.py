"""A small, safe expression language for tuning manifests (never Python's eval).

Numbers, names from the tuning space / problem / arrays, `+ - * / // % **`, comparisons,
`and or not`, `min max ceil floor`, and for array references `@` and `.T`. Parsed with
`ast.parse` into a tree that is checked node by node against that whitelist, then
walked by this module's own evaluator. Sizes are bounded: a result over 2^62 or an
exponent over 64 is an error, never a long computation.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert

MAX_LENGTH = 500
MAX_MAGNITUDE = 2**62
MAX_EXPONENT = 64

_BIN: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.MatMult: operator.matmul,
}
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_FUNCS: dict[str, Callable[..., Any]] = {
    "min": min, "max": max, "ceil": lambda x: math.ceil(x), "floor": lambda x: math.floor(x),
}


class ExprError(OccupancyError):
    """An expression outside the grammar, or naming an unknown symbol."""


@dataclass(frozen=True)
class Expr:
    """A parsed expression: its text, its tree and the names it reads."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    arrays: bool  # uses @ or .T (only `reference` may)

    def __call__(self, env: Mapping[str, Any]) -> Any:
        return _eval(self.tree.body, env, self.text)


def parse(text: object, where: str, *, arrays: bool = False) -> Expr:
    """Parse and check an expression; numbers come back as constant expressions."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ExprError(f"{where}: an expression must be a number or a string, got "
                        f"{type(text).__name__}")
    src = str(text)
    if len(src) > MAX_LENGTH:
        raise ExprError(f"{where}: the expression is over {MAX_LENGTH} characters")
    try:
        tree = ast.parse(src.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExprError(f"{where}: {src!r} is not an expression: use numbers, names, "
                        "+ - * / // % **, comparisons, and/or/not, min max ceil floor") from None
    names: set[str] = set()
    uses_arrays = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.cmpop, ast.unaryop,
                             ast.boolop)):
            if isinstance(node, ast.operator) and type(node) not in _BIN:
                raise ExprError(f"{where}: operator {type(node).__name__} is not allowed")
            if isinstance(node, ast.MatMult):
                uses_arrays = True
            continue
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                if not isinstance(node.value, bool):
                    raise ExprError(f"{where}: only numbers are allowed as constants, got "
                                    f"{inert(repr(node.value)[:40])}")
            elif not math.isfinite(node.value) or abs(node.value) > MAX_MAGNITUDE:
                raise ExprError(f"{where}: the number {inert(repr(node.value)[:40])} is "
                                "infinite or over 2^62")
            continue
        if isinstance(node, ast.Name):
            if node.id in _FUNCS:
                continue
            names.add(node.id)
            continue
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare)):
            if isinstance(node, ast.UnaryOp) and not isinstance(node.op, (ast.USub, ast.UAdd,
                                                                          ast.Not)):
                raise ExprError(f"{where}: operator {type(node.op).__name__} is not allowed")
            continue
        if isinstance(node, ast.Call):
            if (not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS
                    or node.keywords or not node.args or len(node.args) > 8):
                raise ExprError(f"{where}: only min(), max(), ceil() and floor() may be called")
            one = node.func.id in ("ceil", "floor")
            if one != (len(node.args) == 1) or any(isinstance(a, ast.Starred) for a in node.args):
                raise ExprError(f"{where}: {node.func.id}() takes "
                                + ("one number" if one else "two or more numbers"))
            continue
        if isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.value,
                                                                                ast.Name):
            uses_arrays = True
            continue
        raise ExprError(f"{where}: {type(node).__name__} is not allowed in an expression "
                        f"({src!r})")
    if uses_arrays and not arrays:
        raise ExprError(f"{where}: @ and .T are allowed in 'reference' only")
    return Expr(src, tree, frozenset(names), uses_arrays)


def array_operands(e: Expr) -> set[str]:
    """The names that `.T` and `@` act on (each must be an array), and "" for a number or
    a function's result in that place."""
    out: set[str] = set()
    for node in ast.walk(e.tree):
        ops: list[ast.AST] = []
        if isinstance(node, ast.Attribute):
            ops = [node.value]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            ops = [node.left, node.right]
        for op in ops:
            if isinstance(op, ast.Name):
                out.add(op.id)
            elif isinstance(op, (ast.Constant, ast.Call, ast.UnaryOp)):
                out.add("")
    return out


def check_names(e: Expr, known: set[str], where: str) -> None:
    unknown = sorted(e.names - known)
    if unknown:
        raise ExprError(f"{where}: unknown name {unknown[0]!r} in {e.text!r} (known: "
                        f"{', '.join(sorted(known)) or 'none'})")


def _num(v: Any, src: str) -> Any:
    """A result, checked: finite, at most 2^62, never complex or a word."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if isinstance(v, float) and not math.isfinite(v):
            raise ExprError(f"{_q(src)} is not finite")
        if abs(v) > MAX_MAGNITUDE:
            raise ExprError(f"{_q(src)} is over 2^62")
    elif isinstance(v, (complex, str, bytes)):
        raise ExprError(f"{_q(src)} gives {type(v).__name__} {inert(repr(v)[:40])}, not a number")
    return v


def _q(src: str) -> str:
    return inert(repr(src))


def _operand(v: Any, src: str) -> Any:
    """Arithmetic takes numbers (and, in `reference`, arrays): a word from the space is an
    error here, never `W * 3000000000` (a 6 GB string) or `'%999999999d' % 1`."""
    if isinstance(v, (str, bytes, complex)) or v is None:
        raise ExprError(f"{_q(src)}: the word {inert(repr(v)[:40])} is used as a number")
    return v


def _eval(node: ast.AST, env: Mapping[str, Any], src: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"unknown name {node.id!r} in {src!r}")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        a = _operand(_eval(node.left, env, src), src)
        b = _operand(_eval(node.right, env, src), src)
        if isinstance(node.op, ast.Pow) and isinstance(b, (int, float)) and abs(b) > MAX_EXPONENT:
            raise ExprError(f"{_q(src)}: an exponent over {MAX_EXPONENT}")
        try:
            return _num(_BIN[type(node.op)](a, b), src)
        except ZeroDivisionError:
            raise ExprError(f"{_q(src)} divides by zero") from None
        except (OverflowError, ValueError, TypeError) as exc:
            raise ExprError(f"{_q(src)} cannot be computed: {inert(str(exc)[:80])}") from None
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env, src)
        if isinstance(node.op, ast.Not):
            return not v
        v = _operand(v, src)
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BoolOp):
        # Short-circuit as Python does, so a guard protects what follows it:
        # `BK > 0 and K % BK == 0` is False for BK = 0, not a division by zero.
        vals = (_eval(v, env, src) for v in node.values)
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, src)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, env, src)
            try:
                if not _CMP[type(op)](left, right):
                    return False
            except TypeError:
                raise ExprError(f"{_q(src)} compares a word with a number") from None
            left = right
        return True
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [_operand(_eval(a, env, src), src) for a in node.args]
        try:
            return _num(_FUNCS[node.func.id](*args), src)
        except (OverflowError, ValueError, TypeError) as exc:
            raise ExprError(f"{_q(src)} cannot be computed: {inert(str(exc)[:80])}") from None
    if isinstance(node, ast.Attribute):
        return _eval(node.value, env, src).T
    raise ExprError(f"{src!r}: cannot evaluate {type(node).__name__}")


def integer(e: Expr, env: Mapping[str, Any], where: str) -> int:
    """An expression that must give a whole number (sizes, blocks, grids)."""
    v = e(env)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            (isinstance(v, float) and not (math.isfinite(v) and v.is_integer())):
        raise ExprError(f"{where}: {_q(e.text)} gives {inert(repr(v)[:40])}, not a whole number")
    return int(v)
