"""Kernel names as people write them (`vectorAdd`, `ns::k`, `reduce7<int, 256, true>`)
matched against what compilers emit (mangled, and demangled by a real demangler)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert

_INT_SUFFIX = re.compile(r"\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b")
# cu++filt writes non-type template arguments with a cast: k<(int)128, (bool)1>.
_CAST = re.compile(r"\((?:(?:un)?signed\s*)?(?:int|long|long long|short|char|bool|unsigned|"
                   r"size_t|std::size_t)\)(?=[-\w])")


def split_top(text: str, opens: str = "<([{", closes: str = ">)]}") -> list[str]:
    """Split at the commas outside brackets: 'int, A<b, c>, float*' -> 3 parts; empty parts
    (a trailing comma, blank text) are left out."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in opens:
            depth += 1
        elif ch in closes:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def param_start(demangled: str) -> int:
    """Index of the parameter list's '(' in a demangled name (template arguments may hold
    parentheses), or len(name) if it has none."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return i
    return len(demangled)


def qualified_name(demangled: str) -> str:
    """'void ns::k<64>(float*)' -> 'ns::k<64>' (drops the return type and parameters)."""
    text = demangled.strip()
    head = text[:param_start(text)].strip()
    # The return type (only templates carry one) is before the last top-level space.
    depth, start = 0, 0
    for i, ch in enumerate(head):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0:
            start = i + 1
    return head[start:]


def normalize(name: str) -> str:
    """Spaces out, integer suffixes off: 'reduce7<int, 256u, true>' == 'reduce7<int,256,true>'."""
    flat = re.sub(r"\s+", "", name)
    flat = re.sub(r"\(bool\)1(?=[,>])", "true", re.sub(r"\(bool\)0(?=[,>])", "false", flat))
    return _INT_SUFFIX.sub(r"\1", _CAST.sub("", flat))


def _base(qualified: str) -> str:
    """'ns::k<64>' -> 'k<64>' (the last component outside template arguments)."""
    depth, start = 0, 0
    for i, ch in enumerate(qualified):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == ":" and depth == 0 and qualified[i + 1:i + 2] == ":":
            start = i + 2
    return qualified[start:]


def _strip_args(name: str) -> str:
    i = name.find("<")
    return name if i < 0 else name[:i]


def match_kernel(wanted: str, demangled: Mapping[str, str], where: str) -> str:
    """The mangled name of the one kernel `wanted` names; none or several is an error that
    lists the candidates, demangled."""
    if wanted in demangled:
        return wanted
    w = normalize(wanted)
    quals = {m: normalize(qualified_name(d)) for m, d in demangled.items()}
    tiers = [
        [m for m, q in quals.items() if q == w],  # ns::k<64>
        [m for m, q in quals.items() if "::" not in w and _base(q) == w],  # k<64>
        [m for m, q in quals.items() if "<" not in w and _strip_args(q) == w],  # ns::k (one)
        [m for m, q in quals.items() if "<" not in w and "::" not in w
         and _strip_args(_base(q)) == w],  # k (one)
    ]
    for hits in tiers:
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            listed = "; ".join(inert(demangled[m]) for m in sorted(hits))
            raise OccupancyError(f"{where}: '{inert(wanted)}' matches {len(hits)} kernels: "
                                 f"{listed}; name one, e.g. with its template arguments")
    known = "; ".join(inert(q) for q in sorted(qualified_name(d) for d in demangled.values())) or "none"
    raise OccupancyError(f"{where}: no kernel '{inert(wanted)}' (found: {known}); set "
                         "'function:' to one of them")
