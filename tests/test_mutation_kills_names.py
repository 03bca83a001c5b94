"""Kernel names, tier by tier: each of match_kernel's five tiers decides a case of its own
(and an ambiguous one), and the helpers under it give exact strings."""

from __future__ import annotations

import pytest

from occupancy.build.names import (
    expand_macros,
    match_kernel,
    normalize,
    param_start,
    qualified_name,
    source_macros,
    split_top,
)
from occupancy.core.errors import OccupancyError


@pytest.mark.parametrize(("text", "want"), [
    ("int, A<b, c>, float*", ["int", "A<b, c>", "float*"]),
    ("f(a, b), x[1, 2], {c, d}", ["f(a, b)", "x[1, 2]", "{c, d}"]),
    ("a,,b, ", ["a", "b"]), ("", []), ("a>, b", ["a>, b"]),
])
def test_split_top(text: str, want: list[str]) -> None:
    assert split_top(text) == want


def test_split_top_with_other_brackets() -> None:
    assert split_top("a(b, c), d", opens="<", closes=">") == ["a(b", "c)", "d"]


@pytest.mark.parametrize(("text", "want"), [
    ("k(int)", 1), ("k<(1)>(int)", 6), ("k", 1), ("k<a>>(x)", 8), ("a<b<c>>(x)", 7),
])
def test_param_start(text: str, want: int) -> None:
    assert param_start(text) == want


@pytest.mark.parametrize(("text", "want"), [
    ("void ns::k<64>(float*)", "ns::k<64>"), ("  k(int)  ", "k"),
    ("void k<a b, (c d)>(x)", "k<a b, (c d)>"), ("std::pair<int, int> f<int>(int)", "f<int>"),
    ("unsigned long long k2()", "k2"), ("k", "k"),
])
def test_qualified_name(text: str, want: str) -> None:
    assert qualified_name(text) == want


@pytest.mark.parametrize(("text", "want"), [
    ("k< 1 ,\t2 >", "k<1,2>"), ("k<1u,2U,3l,4L,5ul,6UL,7ll,8LLU,9lu>", "k<1,2,3,4,5,6,7,8,9>"),
    ("k<(unsigned int)3, (long)4, (signed char)5, (size_t)6, (std::size_t)7>", "k<3,4,5,6,7>"),
    ("k<(long long)1, (short)-2, (unsignedint)3, (unsigned long long)4>", "k<1,-2,3,4>"),
    ("k<(bool)1>", "k<true>"), ("k<(bool)0,(bool)1>", "k<false,true>"), ("k<(bool)10>", "k<10>"),
    ("k<u1, 1x>", "k<u1,1x>"), ("k<(float)1>", "k<(float)1>"), ("k<(int)a>", "k<a>"),
])
def test_normalize(text: str, want: str) -> None:
    assert normalize(text) == want


def test_source_macros() -> None:
    texts = ["#define A 32\n  #  define B (A * 2) // doubled\n#define F(x) x\n#define A 7\n",
             "\t#define\tC\t1\t\n#define D 4 /* c */\n#define G 6 /* c */ 7\nint x; #define E 5\n"]
    assert source_macros(texts) == {"A": "32", "B": "(A * 2)", "C": "1", "D": "4"}


@pytest.mark.parametrize(("wanted", "macros", "want"), [
    ("k<W>", {"W": "32"}, "k<32>"),
    ("k<W / 2, T>", {"W": "32"}, "k<16, T>"),
    ("k<(W) - 1>", {"W": "((32))"}, "k<31>"),
    ("k<N>", {"N": "M * 2", "M": "8"}, "k<16>"),
    ("k<A>", {"A": "B", "B": "A"}, "k<A>"),  # a cycle stops
    ("k<W>", {}, "k<W>"), ("k", {"W": "1"}, "k"), ("k>W<", {"W": "1"}, "k>W<"),
    ("k<W>(x)", {"W": "4"}, "k<4>(x)"),
    ("k<W, float>", {"W": "7 / 2"}, "k<3, float>"),
    ("k<((float))>", {"Z": "1"}, "k<float>"),
    ("k<(a)(b)>", {"Z": "1"}, "k<(a)(b)>"),
    ("k<1 / 0>", {"Z": "1"}, "k<1 / 0>"),
    ("k<a<1>>", {"a": "b"}, "k<(b)<1>>"),
])
def test_expand_macros(wanted: str, macros: dict[str, str], want: str) -> None:
    assert expand_macros(wanted, macros) == want


KERNELS = {
    "_Z1": "void ns::k<64>(float*)",
    "_Z2": "void other::k<64>(float*)",
    "_Z3": "void ns::solo<1, float>(int)",
    "_Z4": "void top<2>(int)",
    "_Z5": "void ns::plain(int)",
    "_Z6": "void deep::ns::plain(int)",
    "_Z7": "void uniq::only(int)",
    "_Z8": "void rms<1024, false, false>(float*)",
    "_Z9": "void rms<512, true, false>(float*)",
    "_ZA": "void m::soft<true, 0, float>(float*)",
}


@pytest.mark.parametrize(("wanted", "want"), [
    ("ns::k<64>", "_Z1"),  # tier 1: exactly as qualified
    ("solo<1, float>", "_Z3"),  # tier 2: the last component, namespace left out
    ("ns::solo", "_Z3"),  # tier 3: qualified, template arguments left out
    ("top", "_Z4"),  # tier 4: neither namespace nor arguments
    ("only", "_Z7"),
    ("rms<1024>", "_Z8"),  # tier 5: the rest defaulted
    ("rms<512, true>", "_Z9"),
    ("soft<true, 0>", "_ZA"),  # tier 5: a namespace left out
    ("m::soft<true>", "_ZA"),
    ("_Z4", "_Z4"),  # a mangled name as is
    ("ns::k<64u>", "_Z1"),  # normalized
])
def test_each_tier_decides(wanted: str, want: str) -> None:
    assert match_kernel(wanted, KERNELS, "w") == want


@pytest.mark.parametrize(("wanted", "hits"), [
    ("k<64>", "void ns::k<64>(float*); void other::k<64>(float*)"),  # tier 2, two
    ("plain", "void ns::plain(int); void deep::ns::plain(int)"),  # tier 4, two (by mangled name)
    ("rms", "void rms<1024, false, false>(float*); void rms<512, true, false>(float*)"),
])
def test_ambiguous(wanted: str, hits: str) -> None:
    with pytest.raises(OccupancyError) as info:
        match_kernel(wanted, KERNELS, "w")
    n = hits.count(";") + 1
    assert str(info.value) == (f"w: '{wanted}' matches {n} kernels: {hits}; name one, e.g. with "
                               "its template arguments")


def test_the_first_tier_that_decides_wins() -> None:
    d = {"_Za": "void ns::k(int)", "_Zb": "void k(int)", "_Zc": "void x::ns::k(int)"}
    assert match_kernel("k", d, "w") == "_Zb"  # tier 1 before the two of tier 2
    assert match_kernel("ns::k", d, "w") == "_Za"  # tier 1; tier 3 would be two
    d2 = {"_Za": "void ns::k<1>(int)", "_Zb": "void ns::k<1, 2>(int)"}
    assert match_kernel("ns::k<1>", d2, "w") == "_Za"  # tier 1 before a completion
    assert match_kernel("k<1>", d2, "w") == "_Za"  # tier 2 before a completion
    d3 = {"_Za": "void a::k<1, 2>(int)", "_Zb": "void b::k<1, 3>(int)"}
    with pytest.raises(OccupancyError, match="matches 2 kernels"):
        match_kernel("k<1>", d3, "w")
    assert match_kernel("a::k<1>", d3, "w") == "_Za"
    d4 = {"_Za": "void a::k<1, 2>(int)", "_Zb": "void b::a::k<1, 3>(int)"}
    assert match_kernel("a::k<1>", d4, "w") == "_Za"  # a qualified name is not a base


def test_macros_are_tried_after_the_name_as_written() -> None:
    d = {"_Za": "void k<32>(float*)", "_Zb": "void k<64>(float*)", "_Zc": "void k<W>(float*)"}
    assert match_kernel("k<W>", d, "w", {"W": "32"}) == "_Zc"
    assert match_kernel("k<W * 2>", d, "w", {"W": "32"}) == "_Zb"
    with pytest.raises(OccupancyError) as info:
        match_kernel("k<V>", d, "w", {"V": "16"})
    assert str(info.value) == ("w: no kernel 'k<V>' ('k<16>' with its macros) (found: k<32>; "
                               "k<64>; k<W>); set 'function:' to one of them")
    with pytest.raises(OccupancyError) as info:
        match_kernel("k<V>", d, "w")
    assert str(info.value) == ("w: no kernel 'k<V>' (found: k<32>; k<64>; k<W>); set "
                               "'function:' to one of them")
    with pytest.raises(OccupancyError) as info:
        match_kernel("k", {}, "w")
    assert str(info.value) == "w: no kernel 'k' (found: none); set 'function:' to one of them"


def test_completions_need_more_arguments_and_the_same_head() -> None:
    d = {"_Za": "void k<1>(int)", "_Zb": "void j<1, 2>(int)"}
    with pytest.raises(OccupancyError, match="no kernel"):
        match_kernel("k<1, 2>", d, "w")  # fewer arguments than written
    with pytest.raises(OccupancyError, match="no kernel"):
        match_kernel("k<1>x", {"_Zb": "void j<1, 2>(int)"}, "w")
    with pytest.raises(OccupancyError, match="no kernel"):
        match_kernel("j<2>", d, "w")  # the written ones differ
    with pytest.raises(OccupancyError, match="no kernel"):
        match_kernel("x::j<1>", d, "w")  # another namespace
    assert match_kernel("j<1>", d, "w") == "_Zb"


def test_tier_four_unqualified_without_arguments() -> None:
    # ns::solo<1, float> named as `solo`: no tier before the fourth decides it
    assert match_kernel("solo", KERNELS, "w") == "_Z3"


@pytest.mark.parametrize(("text", "want"), [
    ("ns::k<a::b>", "k<a::b>"), ("a<b>::c", "c"), ("k<1>", "k<1>"), ("k", "k"), ("x::y::k", "k"),
    ("n::k<a<b>::c>", "k<a<b>::c>"),
])
def test_base(text: str, want: str) -> None:
    from occupancy.build.names import _base

    assert _base(text) == want


def test_strip_and_template_args() -> None:
    from occupancy.build.names import _fold, _strip_args, _template_args

    assert _strip_args("kern") == "kern" and _strip_args("k<a<b>>") == "k"
    assert _template_args("k<a<1>, 2>") == ("k", ["a<1>", "2"])
    assert _template_args("k") is None and _template_args("k>1<") is None
    assert _fold("((") == "(("
    assert _fold("min(2, 3)") == "min(2, 3)"  # only integer arithmetic is folded
    assert _fold(" (4 / 2) ") == "2" and _fold("((x))") == "x"


def test_more_exact_helpers() -> None:
    assert qualified_name("XT k<1>(int)") == "k<1>"
    assert qualified_name("A<B<C> D> k(int)") == "k"
    assert split_top("X, Y") == ["X", "Y"]
    assert split_top("a<b<c>, d>, e") == ["a<b<c>, d>", "e"]
    assert expand_macros("k<a<W>>", {"W": "1"}) == "k<a<(1)>>"


def test_expansion_stops_over_2000_characters() -> None:
    assert expand_macros("k<A>", {"A": "1" * 1998}) == "k<" + "1" * 1998 + ">"  # 2,000: kept
    assert expand_macros("k<A>", {"A": "1" * 1999}) == "k<A>"  # 2,001: stopped before it
    grown = expand_macros("k<A>", {"A": "A + A"})  # a macro naming itself: 8 rounds at most
    assert len(grown) == 1532 and grown.count("A") == 256
