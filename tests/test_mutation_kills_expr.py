"""The tuning manifests' expression language, value by value and edge by edge: each case
asserts an exact result or message, on both sides of every limit (length, magnitude,
exponent, argument counts), so a changed operator, bound or branch fails here."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from occupancy.inputs.expr import (
    MAX_EXPONENT,
    MAX_LENGTH,
    MAX_MAGNITUDE,
    ExprError,
    array_operands,
    check_names,
    integer,
    parse,
)


def ev(text: str, **env: Any) -> Any:
    return parse(text, "w", arrays=True)(env)


def test_limits_are_what_the_docstring_says() -> None:
    assert (MAX_LENGTH, MAX_MAGNITUDE, MAX_EXPONENT) == (500, 2**62, 64)


@pytest.mark.parametrize(("text", "env", "want"), [
    ("1 and 0", {}, False), ("1 and 1", {}, True), ("0 and 1", {}, False),
    ("0 or 1", {}, True), ("0 or 0", {}, False), ("1 or 0", {}, True),
    ("a and b or c", {"a": 1, "b": 0, "c": 0}, False),
    ("not x", {"x": 0}, True), ("not x", {"x": 3}, False),
    ("-x", {"x": 3}, -3), ("+x", {"x": 3}, 3), ("- -x", {"x": 3}, 3), ("-x + 1", {"x": 3}, -2),
    ("7 - 2", {}, 5), ("7 * 2", {}, 14), ("7 / 2", {}, 3.5), ("7 // 2", {}, 3), ("7 % 4", {}, 3),
    ("2 ** 10", {}, 1024), ("2 ** -1", {}, 0.5), ("7 + 2", {}, 9),
    ("1 == 1", {}, True), ("1 == 2", {}, False), ("1 != 2", {}, True), ("1 != 1", {}, False),
    ("1 < 2", {}, True), ("2 < 2", {}, False), ("2 <= 2", {}, True), ("3 <= 2", {}, False),
    ("3 > 2", {}, True), ("2 > 2", {}, False), ("2 >= 2", {}, True), ("1 >= 2", {}, False),
    ("3 < 5 < 4", {}, False), ("1 < 2 < 3", {}, True), ("4 > 5 < 9", {}, False),
    ("w == 3", {"w": "abc"}, False),
    ("ceil(2.5)", {}, 3), ("ceil(-2.5)", {}, -2), ("floor(2.5)", {}, 2), ("floor(-2.5)", {}, -3),
    ("min(3, 1, 2)", {}, 1), ("max(3, 1, 2)", {}, 3), ("max(1, 2, 3, 4, 5, 6, 7, 8)", {}, 8),
    ("True", {}, True), ("2 ** 62", {}, 2**62), ("-(2 ** 62)", {}, -(2**62)),
    ("1 ** 64", {}, 1), ("2 ** -64", {}, 2.0**-64), ("1 ** 64.0", {}, 1.0),
    ("4611686018427387904", {}, 2**62), ("x", {"x": 2**62}, 2**62),
])
def test_values(text: str, env: dict[str, Any], want: Any) -> None:
    got = ev(text, **env)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize(("text", "env", "message"), [
    ("1 ** 65", {}, "'1 ** 65': an exponent over 64"),
    ("2 ** -65", {}, "'2 ** -65': an exponent over 64"),
    ("1 ** 64.5", {}, "'1 ** 64.5': an exponent over 64"),
    ("2 ** 62 + 1", {}, "'2 ** 62 + 1' is over 2^62"),
    ("-(2 ** 62) - 1", {}, "'-(2 ** 62) - 1' is over 2^62"),
    ("x * 1", {"x": 2**62 + 1}, "'x * 1' is over 2^62"),
    ("max(x, 1)", {"x": 2**62 + 1}, "'max(x, 1)' is over 2^62"),
    ("x * 10", {"x": 1e308}, "'x * 10' is not finite"),
    ("(-1) ** 0.5", {}, "'(-1) ** 0.5' gives complex"),
    ("1 / 0", {}, "'1 / 0' divides by zero"),
    ("1 // 0", {}, "'1 // 0' divides by zero"),
    ("1 % 0", {}, "'1 % 0' divides by zero"),
    ("x ** 2", {"x": 1e300}, "'x ** 2' cannot be computed: (34, 'Numerical result out of range')"),
    ("a @ b", {"a": 1, "b": 2}, "'a @ b' cannot be computed: unsupported operand type(s) for @"),
    ("ceil(x)", {"x": float("inf")}, "'ceil(x)' cannot be computed: cannot convert float infinity"),
    ("floor(x)", {"x": float("nan")}, "'floor(x)' cannot be computed: cannot convert float NaN"),
    ("w * 3", {"w": "abc"}, "'w * 3': the word 'abc' is used as a number"),
    ("3 * w", {"w": b"ab"}, "'3 * w': the word b'ab' is used as a number"),
    ("w + 1", {"w": None}, "'w + 1': the word None is used as a number"),
    ("w + 1", {"w": 1j}, "'w + 1': the word 1j is used as a number"),
    ("-w", {"w": "abc"}, "'-w': the word 'abc' is used as a number"),
    ("min(w, 1)", {"w": "abc"}, "'min(w, 1)': the word 'abc' is used as a number"),
    ("w < 3", {"w": "abc"}, "'w < 3' compares a word with a number"),
    ("1 < 2 < w", {"w": "abc"}, "'1 < 2 < w' compares a word with a number"),
    ("x + 1", {}, "unknown name 'x' in 'x + 1'"),
])
def test_evaluation_errors(text: str, env: dict[str, Any], message: str) -> None:
    with pytest.raises(ExprError) as info:
        ev(text, **env)
    assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    (True, "w: an expression must be a number or a string, got bool"),
    (None, "w: an expression must be a number or a string, got NoneType"),
    ([1], "w: an expression must be a number or a string, got list"),
    ("1" + " " * MAX_LENGTH, "w: the expression is over 500 characters"),
    ("1 +", "w: '1 +' is not an expression: use numbers, names, + - * / // % **, comparisons, "
            "and/or/not, min max ceil floor"),
    ("a << 2", "w: operator LShift is not allowed"),
    ("a | 2", "w: operator BitOr is not allowed"),
    ("~a", "w: operator Invert is not allowed"),
    ("'a'", "w: only numbers are allowed as constants, got 'a'"),
    ("None", "w: only numbers are allowed as constants, got None"),
    ("4611686018427387905", "w: the number 4611686018427387905 is infinite or over 2^62"),
    ("-4611686018427387905", "w: the number 4611686018427387905 is infinite or over 2^62"),
    ("1e309", "w: the number inf is infinite or over 2^62"),
    ("f(1)", "w: only min(), max(), ceil() and floor() may be called"),
    ("a.b(1)", "w: only min(), max(), ceil() and floor() may be called"),
    ("min()", "w: only min(), max(), ceil() and floor() may be called"),
    ("min(a, b=1)", "w: only min(), max(), ceil() and floor() may be called"),
    ("max(1, 2, 3, 4, 5, 6, 7, 8, 9)", "w: only min(), max(), ceil() and floor() may be called"),
    ("ceil(1, 2)", "w: ceil() takes one number"),
    ("floor(1, 2)", "w: floor() takes one number"),
    ("min(1)", "w: min() takes two or more numbers"),
    ("max(*a, 1)", "w: max() takes two or more numbers"),
    ("ceil(*a)", "w: ceil() takes one number"),
    ("a.b", "w: Attribute is not allowed in an expression ('a.b')"),
    ("(a + 1).T", "w: Attribute is not allowed in an expression ('(a + 1).T')"),
    ("[1, 2]", "w: List is not allowed in an expression ('[1, 2]')"),
    ("a if b else c", "w: IfExp is not allowed in an expression ('a if b else c')"),
    ("A @ B", "w: @ and .T are allowed in 'reference' only"),
    ("A.T", "w: @ and .T are allowed in 'reference' only"),
])
def test_parse_errors(text: object, message: str) -> None:
    with pytest.raises(ExprError) as info:
        parse(text, "w")
    assert str(info.value) == message


def test_parse_keeps_text_names_and_array_use() -> None:
    e = parse(" a + min(b, c) * ceil(d) ", "w")
    assert (e.text, e.names, e.arrays) == (" a + min(b, c) * ceil(d) ", frozenset("abcd"), False)
    assert isinstance(e.tree, ast.Expression)
    assert parse("1" + " " * (MAX_LENGTH - 1), "w")({}) == 1  # 500 characters: allowed
    n = parse(12, "w")
    assert (n.text, n.names, n({})) == ("12", frozenset(), 12)
    assert parse(2.5, "w")({}) == 2.5
    assert parse("A.T @ B", "w", arrays=True).arrays is True
    assert parse("A @ B", "w", arrays=True).arrays is True
    assert parse("A.T", "w", arrays=True).arrays is True
    assert parse("A + B", "w", arrays=True).arrays is False


class _Arr:
    def __init__(self, v: int) -> None:
        self.v = v

    @property
    def T(self) -> _Arr:  # noqa: N802
        return _Arr(-self.v)

    def __matmul__(self, other: _Arr) -> int:
        return self.v * 10 + other.v


def test_arrays_evaluate() -> None:
    assert ev("A.T @ B", A=_Arr(2), B=_Arr(3)) == -17
    assert ev("A @ B", A=_Arr(2), B=_Arr(3)) == 23


@pytest.mark.parametrize(("text", "want"), [
    ("A.T @ B", {"A", "B"}), ("2 @ B", {"", "B"}), ("min(a, b) @ B", {"", "B"}),
    ("-A @ B", {"", "B"}), ("(A + B) @ C", {"C"}), ("A + B", set()), ("A.T", {"A"}),
])
def test_array_operands(text: str, want: set[str]) -> None:
    assert array_operands(parse(text, "w", arrays=True)) == want


def test_check_names() -> None:
    check_names(parse("a + b", "w"), {"a", "b", "c"}, "w")
    with pytest.raises(ExprError) as info:
        check_names(parse("z + b + a", "w"), {"y", "x"}, "k")
    assert str(info.value) == "k: unknown name 'a' in 'z + b + a' (known: x, y)"
    with pytest.raises(ExprError) as info:
        check_names(parse("a", "w"), set(), "k")
    assert str(info.value) == "k: unknown name 'a' in 'a' (known: none)"


@pytest.mark.parametrize(("text", "want"), [("6 / 2", 3), ("7 // 2", 3), ("-4", -4), ("x", 5)])
def test_integer(text: str, want: int) -> None:
    got = integer(parse(text, "w"), {"x": 5.0}, "g")
    assert got == want and type(got) is int


@pytest.mark.parametrize(("text", "env", "message"), [
    ("7 / 2", {}, "g: '7 / 2' gives 3.5, not a whole number"),
    ("1 < 2", {}, "g: '1 < 2' gives True, not a whole number"),
    ("x", {"x": float("inf")}, "g: 'x' gives inf, not a whole number"),
    ("x", {"x": float("nan")}, "g: 'x' gives nan, not a whole number"),
    ("x", {"x": "ab"}, "g: 'x' gives 'ab', not a whole number"),
])
def test_integer_refuses(text: str, env: dict[str, Any], message: str) -> None:
    with pytest.raises(ExprError) as info:
        integer(parse(text, "w"), env, "g")
    assert str(info.value) == message


@pytest.mark.parametrize(("text", "env", "want"), [
    ("BK > 0 and K % BK == 0", {"BK": 0, "K": 8}, False),  # the guard protects the division
    ("BK == 0 or K % BK == 0", {"BK": 0, "K": 8}, True),
    ("BK > 0 and K % BK == 0", {"BK": 4, "K": 8}, True),
])
def test_and_or_short_circuit(text: str, env: dict[str, Any], want: bool) -> None:
    assert ev(text, **env) is want


@pytest.mark.parametrize(("text", "message"), [
    ("1 + 1 / 0", "'1 + 1 / 0' divides by zero"),
    ("-(1 / 0)", "'-(1 / 0)' divides by zero"),
    ("not 1 / 0", "'not 1 / 0' divides by zero"),
    ("1 and 1 / 0", "'1 and 1 / 0' divides by zero"),
    ("1 / 0 < 1", "'1 / 0 < 1' divides by zero"),
    ("1 < 1 / 0", "'1 < 1 / 0' divides by zero"),
    ("min(1 / 0, 1)", "'min(1 / 0, 1)' divides by zero"),
    ("A.T", "unknown name 'A' in 'A.T'"),
    ("1 + [2]", "w: List is not allowed in an expression ('1 + [2]')"),
    ("min(1, 2) + [3]", "w: List is not allowed in an expression ('min(1, 2) + [3]')"),
])
def test_errors_deep_in_the_tree_name_the_whole_expression(text: str, message: str) -> None:
    with pytest.raises(ExprError) as info:
        ev(text)
    assert str(info.value) == message


def test_long_values_are_cut_at_40_characters() -> None:
    word = "w" * 60
    with pytest.raises(ExprError) as info:
        parse(repr(word), "k")
    assert str(info.value) == f"k: only numbers are allowed as constants, got '{'w' * 39}"
    with pytest.raises(ExprError) as info:
        parse("1" * 60, "k")
    assert str(info.value) == f"k: the number {'1' * 40} is infinite or over 2^62"
    with pytest.raises(ExprError) as info:
        ev("x + 1", x=word)
    assert str(info.value) == f"'x + 1': the word '{'w' * 39} is used as a number"
    with pytest.raises(ExprError) as info:
        integer(parse("x", "k"), {"x": word}, "g")
    assert str(info.value) == f"g: 'x' gives '{'w' * 39}, not a whole number"
    with pytest.raises(ExprError) as info:
        ev("(-1) ** 0.5")
    assert str(info.value) == "'(-1) ** 0.5' gives complex (6.123233995736766e-17+1j), not a number"


class _Long:
    """An operand whose errors carry a long text."""

    def __add__(self, other: object) -> int:
        raise ValueError("e" * 100)

    def __lt__(self, other: object) -> bool:
        raise ValueError("f" * 100)


def test_long_computation_errors_are_cut_at_80_characters() -> None:
    with pytest.raises(ExprError) as info:
        ev("x + 1", x=_Long())
    assert str(info.value) == f"'x + 1' cannot be computed: {'e' * 80}"
    with pytest.raises(ExprError) as info:
        ev("min(x, y)", x=_Long(), y=_Long())
    assert str(info.value) == f"'min(x, y)' cannot be computed: {'f' * 80}"
