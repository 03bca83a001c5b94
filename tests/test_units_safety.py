"""Unit tests of the small pure helpers every renderer and parser relies on: escaping,
slugs, safe compiler arguments, kernel names, units. Each asserts exact outputs, so a
changed character or dropped branch fails here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from occupancy.build.names import match_kernel, normalize, qualified_name
from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import (
    check_define_name,
    check_flag_token,
    check_output,
    define_value,
    inert,
    md,
    one_line,
    safe_path,
    slug,
    write_atomically,
    xml_text,
)
from occupancy.inputs.units import parse_block, parse_bytes
from occupancy.output.ci_formats import _gh_escape


@pytest.mark.parametrize(("text", "want"), [
    ("plain name", "plain name"),
    ("x\n::error", "'x\\n::error'"),
    ("a\x1bb", "'a\\x1bb'"),
    ("it's\x00", "'it\\'s\\x00'"),
    ("back\\slash\t", "'back\\\\slash\\t'"),
    ("\udc80", "'\\udc80'"),
    ("é ü 漢", "é ü 漢"),
])
def test_inert(text: str, want: str) -> None:
    assert inert(text) == want


def test_one_line_and_xml() -> None:
    assert one_line("a\nb\rc") == "a\\nb\\rc"
    assert one_line("same") == "same"
    assert xml_text("a\x00b\x1fc\x09d\ud800") == "a\ufffdb\ufffdc\x09d\ufffd"


@pytest.mark.parametrize(("text", "want"), [
    ("h200", "h200"), ("../../../tmp/x", "tmp-x"), ("a b/c", "a-b-c"), ("...", "x"),
    (".hidden", "hidden"), ("x" * 100, "x" * 64),
])
def test_slug(text: str, want: str) -> None:
    assert slug(text) == want


def test_md_escapes_html_markdown_and_links() -> None:
    assert md("<b>&") == "&lt;b&gt;&amp;"
    assert md("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert md("*a* _b_ `c` #d |e| !f ~g {h}") == \
        "\\*a\\* \\_b\\_ \\`c\\` \\#d \\|e\\| \\!f \\~g \\{h\\}"
    assert md("see https://evil.example and www.evil.example") == \
        "see https&#58;//evil.example and www&#46;evil.example"
    assert md("two\nlines") == "two\\\\nlines"  # the escape, its backslash escaped


def test_gh_escape() -> None:
    assert _gh_escape("50% a\nb\rc") == "50%25 a%0Ab%0Dc"
    assert _gh_escape("k: a, b", prop=True) == "k%3A a%2C b"
    assert _gh_escape("k: a, b") == "k: a, b"


@pytest.mark.parametrize(("value", "want"), [
    (True, "1"), (False, "0"), (32, "32"), (-1, "-1"), (1.5, "1.5"), ("unsigned int", "unsigned int"),
    ("a+b*(c-1)", "a+b*(c-1)"),
])
def test_define_value(value: object, want: str) -> None:
    assert define_value(value, "d") == want


@pytest.mark.parametrize("value", ["$(id)", "`id`", "a;b", "a|b", "a&b", "a<b", "a>b", '"q"',
                                   "'q'", "a\\b", "a\nb", "a\x00b", "!x", [1], None, float("nan"),
                                   float("inf")])
def test_define_value_refuses(value: object) -> None:
    with pytest.raises(OccupancyError):
        define_value(value, "defines.X")


def test_define_names_flags_paths(tmp_path: Path) -> None:
    assert check_define_name("TILE_2", "d") == "TILE_2"
    for bad in ("2X", "A-B", "", "X Y", 3, None):
        with pytest.raises(OccupancyError):
            check_define_name(bad, "d")
    assert check_flag_token("-std=c++17", "f") == "-std=c++17"
    for bad in ("", "-a b", "-D$x"):
        with pytest.raises(OccupancyError):
            check_flag_token(bad, "f")
    assert safe_path("rel/a b.cu", "s") == os.path.abspath("rel/a b.cu")
    assert safe_path("-x.cu", "s").startswith("/")
    for bad in ("k$(id).cu", "a`b", "a;b", "a\x00b"):
        with pytest.raises(OccupancyError):
            safe_path(bad, "s")


def test_outputs(tmp_path: Path) -> None:
    inp = tmp_path / "in.yaml"
    inp.write_text("x")
    with pytest.raises(OccupancyError, match="an input of this run"):
        check_output(str(inp), [inp])
    with pytest.raises(OccupancyError, match="a directory"):
        check_output(str(tmp_path), [])
    with pytest.raises(OccupancyError, match="does not exist"):
        check_output(str(tmp_path / "no" / "x"), [])
    out = tmp_path / "out.txt"
    write_atomically(str(out), "hello", [inp])
    assert out.read_text() == "hello" and sorted(p.name for p in tmp_path.iterdir()) == ["in.yaml",
                                                                                       "out.txt"]
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask  # readable as any new file, not 0600


def test_names() -> None:
    assert qualified_name("void ns::k<64, (a)(1)>(float*, int)") == "ns::k<64, (a)(1)>"
    assert qualified_name("plain(float*)") == "plain"
    assert qualified_name("unsigned int f<int>(int)") == "f<int>"
    assert normalize("r<int, 256u, true>") == "r<int,256,true>"
    assert normalize("r<(int)128, (bool)1, (bool)0, 7UL>") == "r<128,true,false,7>"
    d = {"_Za": "void k<32>(float*)", "_Zb": "void k<64>(float*)", "_Zc": "ns::m(int)",
         "plain": "plain"}
    assert match_kernel("k<32>", d, "w") == "_Za"
    assert match_kernel("m", d, "w") == "_Zc"
    assert match_kernel("ns::m", d, "w") == "_Zc"
    assert match_kernel("plain", d, "w") == "plain"
    with pytest.raises(OccupancyError, match="matches 2 kernels: void k<32>"):
        match_kernel("k", d, "w")
    with pytest.raises(OccupancyError, match=r"no kernel 'z' \(found: k<32>; k<64>; ns::m; plain\)"):
        match_kernel("z", d, "w")


@pytest.mark.parametrize(("text", "want"), [
    ("8192", 8192), ("8K", 8192), ("8k", 8192), ("8KiB", 8192), ("8KB", 8192), ("1M", 1 << 20),
    ("1.5K", 1536), (" 16 b ", 16), ("0", 0), ("2147483647", 2**31 - 1),
])
def test_parse_bytes(text: str, want: int) -> None:
    assert parse_bytes(text) == want


@pytest.mark.parametrize("text", ["8Q", "-1", "1.3", "2147483648", "9" * 41, "", "1e3"])
def test_parse_bytes_refuses(text: str) -> None:
    with pytest.raises(OccupancyError):
        parse_bytes(text)


def test_parse_block() -> None:
    assert parse_block("256") == (256,)
    assert parse_block("16x16") == (16, 16)
    assert parse_block("32 x 8 x 2") == (32, 8, 2)
    assert parse_block("4,4") == (4, 4)
    for bad in ("0", "1x2x3x4", "-4", "²", "65536x65536", "a", ""):
        with pytest.raises(OccupancyError):
            parse_block(bad)


def test_rough_edges() -> None:
    from click.testing import CliRunner

    from occupancy import load_device
    from occupancy.cli import main
    from occupancy.core.solver import cliffs, solve
    from occupancy.output.terminal import cliff_lines
    from occupancy.tune.family import candidates
    from occupancy.tune.shipped import counts

    r = CliRunner().invoke(main, ["banks", "--words", "1,2", "-e", "8"])
    assert r.exit_code == 2 and "multiple of 2 words" in r.stderr
    assert CliRunner().invoke(main, ["banks", "--words", "0,2", "-e", "8"]).exit_code == 0
    v100 = load_device("v100")
    res = solve(v100, 1024, 64)
    lines = " ".join(cliff_lines(c, res)[0] for c in cliffs(v100, res))
    assert "drops to 0 blocks" in lines or "fits 2 blocks (" in lines
    assert " 1 blocks" not in lines and "registers fewer" in lines
    padded = next(c for c in candidates("transpose") if c.variant == "tiled")
    assert counts(padded, 1024, 16).bank_conflict_ways != counts(padded, 1024, 32).bank_conflict_ways


def test_check_takes_json_like_every_command(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from occupancy.cli import main

    m = tmp_path / "m.yaml"
    m.write_text("devices: [v100]\nkernels:\n  - {name: k, block: 256, registers: 32}\n")
    a = CliRunner().invoke(main, ["check", str(m), "--json"]).stdout
    b = CliRunner().invoke(main, ["check", str(m), "--format", "json"]).stdout
    assert a == b and json.loads(a)["passed"] == 1


def test_candidates_know_their_own_facts() -> None:
    from occupancy.tune.family import candidates

    by = {c.label: c for k in ("matmul", "transpose") for c in candidates(k)}
    assert by["tiled 16"].static_shared_memory == 2 * 16 * 16 * 4
    assert by["regblock128 8x8 k16"].static_shared_memory == 2 * 16 * (128 + 128) * 4
    assert by["padded 32x8"].static_shared_memory == 32 * 33 * 4
    assert by["tiled 32x8"].static_shared_memory == 32 * 32 * 4
    assert by["tall 16x16"].static_shared_memory == 128 * 65 * 4
    assert by["naive"].static_shared_memory == 0
    assert by["regblock128 8x8"].grid(4096) == (32, 32) and by["tiled 8"].grid(100) == (13, 13)
    assert by["tall 16x16"].grid(4096) == (64, 32)
    assert by["vec 16x16 persist"].grid(8192, 264) == (264,)
    assert by["vec 16x16 swap"].grid(8192) == (128, 128)
