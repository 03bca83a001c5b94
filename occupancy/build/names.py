"""Kernel names as people write them (`vectorAdd`, `ns::k`, `reduce7<int, 256, true>`)
matched against what compilers emit (mangled, and demangled by a real demangler)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert

_INT_SUFFIX = re.compile(r"\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b")
# cu++filt writes non-type template arguments with a cast: k<(int)128, (bool)1>.
_CAST = re.compile(r"\((?:(?:un)?signed\s*)?(?:int|long|long\s*long|short|char|bool|unsigned|"
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


_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_ARITH = re.compile(r"[\d\s+\-*/%()<>]+")
# the value ends at a // or /* */ comment (`#define TILE 32 /* per block */` is 32)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n/]+?)[ \t]*"
                     r"(?://.*|/\*.*?\*/[ \t]*)?$", re.MULTILINE)


def source_macros(texts: list[str]) -> dict[str, str]:
    """Object-like `#define NAME VALUE` of the sources (the first definition of each name;
    function-like macros left out)."""
    out: dict[str, str] = {}
    for text in texts:
        for name, value in _DEFINE.findall(text):
            out.setdefault(name, value.strip())
    return out


def _fold(arg: str) -> str:
    """Integer arithmetic of a template argument folded ('(32) / 2' -> '16'); anything else,
    redundant parentheses off."""
    text = arg.strip()
    if _ARITH.fullmatch(text) and re.search(r"\d", text) and "<" not in text and ">" not in text:
        from occupancy.inputs.expr import integer, parse

        try:  # the tuning manifests' safe evaluator; C's integer division is //
            return str(integer(parse(text.replace("/", "//"), "template argument"), {},
                               "template argument"))
        except OccupancyError:
            pass
    while text.startswith("(") and _closing(text) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _closing(text: str) -> int:
    """Index of the ')' that closes the '(' at index 0."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i
    return -1


def expand_macros(wanted: str, macros: Mapping[str, str]) -> str:
    """A name as the launch writes it, its template arguments' macros replaced by their
    values: 'norm_f32<WARP_SIZE>' with WARP_SIZE=32 -> 'norm_f32<32>'."""
    i, j = wanted.find("<"), wanted.rfind(">")
    if i < 0 or j < i or not macros:
        return wanted
    args = wanted[i + 1:j]
    for _ in range(8):  # a macro may name another; a cycle stops here
        new = _IDENT.sub(lambda m: f"({macros[m.group(0)]})" if m.group(0) in macros
                         else m.group(0), args)
        if new == args or len(new) > 2000:
            break
        args = new
    return wanted[:i] + "<" + ", ".join(_fold(a) for a in split_top(args)) + ">" + wanted[j + 1:]


def _template_args(name: str) -> tuple[str, list[str]] | None:
    """'ns::k<1,true>' -> ('ns::k', ['1', 'true']) (normalized); None without arguments."""
    i, j = name.find("<"), name.rfind(">")
    if i < 0 or j < i:
        return None
    return name[:i], split_top(name[i + 1:j])


def _completions(w: str, quals: Mapping[str, str]) -> list[str]:
    """Kernels whose template arguments start with the ones written: the rest defaulted
    (rms_norm_f32<1024, false> is rms_norm_f32<1024, false, false>) or deduced from the
    launch's arguments (soft_max_f32<true, 0, 0> is soft_max_f32<true, 0, 0, float>)."""
    want = _template_args(w)
    if want is None:
        return []
    head, args = want
    hits = []
    for m, q in quals.items():
        got = _template_args(q)
        if got is None or len(got[1]) <= len(args) or got[1][:len(args)] != args:
            continue
        if got[0] == head or ("::" not in head and _base(got[0]) == head):
            hits.append(m)
    return hits


def match_kernel(wanted: str, demangled: Mapping[str, str], where: str,
                 macros: Mapping[str, str] | None = None) -> str:
    """The mangled name of the one kernel `wanted` names; none or several is an error that
    lists the candidates, demangled. As a launch writes it: its macros resolved with
    `macros` (the entry's defines, the source's #defines), and template arguments left to
    defaults or deduction matched to the one instantiation that completes them."""
    if wanted in demangled:
        return wanted
    quals = {m: normalize(qualified_name(d)) for m, d in demangled.items()}
    forms = [normalize(wanted)]
    expanded = normalize(expand_macros(wanted, macros or {}))
    if expanded not in forms:
        forms.append(expanded)
    for w in forms:
        tiers = [
            [m for m, q in quals.items() if q == w],  # ns::k<64>
            [m for m, q in quals.items() if "::" not in w and _base(q) == w],  # k<64>
            [m for m, q in quals.items() if "<" not in w and _strip_args(q) == w],  # ns::k (one)
            [m for m, q in quals.items() if "<" not in w and "::" not in w
             and _strip_args(_base(q)) == w],  # k (one)
            _completions(w, quals),  # k<64> of k<64, float> (defaulted or deduced)
        ]
        for hits in tiers:
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                listed = "; ".join(inert(demangled[m]) for m in sorted(hits))
                raise OccupancyError(f"{where}: '{inert(wanted)}' matches {len(hits)} kernels: "
                                     f"{listed}; name one, e.g. with its template arguments")
    known = "; ".join(inert(q) for q in sorted(qualified_name(d) for d in demangled.values())) or "none"
    shown = f" ('{inert(expanded)}' with its macros)" if expanded != forms[0] else ""
    raise OccupancyError(f"{where}: no kernel '{inert(wanted)}'{shown} (found: {known}); set "
                         "'function:' to one of them")
