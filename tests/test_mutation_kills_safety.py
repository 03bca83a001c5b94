"""What keeps hostile input inert, message by message: every refusal of safety.py with its
exact text, the limits on both sides, and the renderers' escapes character by character."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import (
    EXCERPT,
    INT32_MAX,
    MAX_DEFINE,
    InertLines,
    check_define_name,
    check_flag_token,
    check_function,
    check_output,
    define_value,
    excerpt,
    inert,
    is_name,
    md,
    one_line,
    safe_path,
    slug,
    write_atomically,
    xml_text,
)

_DEFINE_CHARS = ("quotes, $, `, ;, |, &, <, >, !, \\ or a control character): use letters, digits, "
                 "spaces and operators")


def refused(fn: object, *args: object) -> str:
    with pytest.raises(OccupancyError) as info:
        fn(*args)  # type: ignore[operator]
    return str(info.value)


def test_constants() -> None:
    assert (INT32_MAX, MAX_DEFINE, EXCERPT) == (2**31 - 1, 4096, 16)


def test_define_name() -> None:
    assert check_define_name("_a9", "d") == "_a9"
    msg = ("d: define name {} is not a C identifier (letters, digits and _, not starting with a digit, "
           "at most 64)")
    assert refused(check_define_name, "9a", "d") == msg.format("9a")
    assert refused(check_define_name, 7, "d") == msg.format("7")
    assert refused(check_define_name, "a\nb", "d") == msg.format("'a\\nb'")
    assert check_define_name("A" * 64, "d") == "A" * 64
    assert refused(check_define_name, "A" * 65, "d") == msg.format("A" * 65)
    assert refused(check_define_name, "A" * 100, "d") == msg.format("A" * 80)


@pytest.mark.parametrize(("text", "ok"), [
    ("a", True), ("_", True), ("A_9", True), ("a" * 64, True), ("a" * 65, False), ("9a", False),
    ("", False), ("a-b", False), ("é", False), ("aé", False), ("a١", False), (3, False), (None, False),
    ("a ", False), ("a\n", False),
])
def test_one_name_rule(text: object, ok: bool) -> None:
    assert is_name(text) is ok


@pytest.mark.parametrize(("value", "want"), [
    (True, "1"), (False, "0"), (0, "0"), (2.5, "2.5"), (1e20, "1e+20"), ("", ""),
    ("a" * MAX_DEFINE, "a" * MAX_DEFINE), ("x y", "x y"),
])
def test_define_value_exact(value: object, want: str) -> None:
    assert define_value(value, "d") == want


def test_define_value_messages() -> None:
    assert refused(define_value, "a" * (MAX_DEFINE + 1), "d") == \
        "d: a define value of 4,097 characters, over 4,096"
    assert refused(define_value, float("nan"), "d") == "d: nan is not a finite number"
    assert refused(define_value, float("-inf"), "d") == "d: -inf is not a finite number"
    assert refused(define_value, float("inf"), "d") == "d: inf is not a finite number"
    assert refused(define_value, "a$b", "d") == \
        "d: a$b holds a character that is not allowed in a define (" + _DEFINE_CHARS
    assert refused(define_value, "a\tb", "d").startswith("d: 'a\\tb' holds a character")
    assert refused(define_value, [1], "d") == \
        "d: a define value must be true/false, a number or a string, got list"
    assert refused(define_value, None, "d").endswith("got NoneType")


@pytest.mark.parametrize("ch", list("$`\"'\\;|&<>!") + ["\x00", "\x07", "\u2028", "\u202e"])
def test_every_shell_character_is_refused(ch: str) -> None:
    refused(define_value, f"a{ch}b", "d")
    refused(check_flag_token, f"-a{ch}b", "f")
    refused(safe_path, f"a{ch}b", "s")


def test_paths_and_flags() -> None:
    assert safe_path("a b", "s") == os.path.abspath("a b")
    assert safe_path(Path("x/../y"), "s") == os.path.abspath("y")
    assert refused(safe_path, "a\x00b", "s") == "s: the path contains a NUL byte"
    bad = os.path.abspath("a;b")
    assert refused(safe_path, "a;b", "s") == (
        f"s: {bad} has characters a compiler's shell would interpret (quotes, $, `, ;, |, &, <, "
        ">, !, \\, control characters): rename or move the file")
    assert check_flag_token("-O3", "f") == "-O3"
    msg = "f: flag {} holds a character that is not allowed (no spaces, quotes, $, `, ;, |, &, <, >, !, \\)"
    assert refused(check_flag_token, "-a b", "f") == msg.format("-a b")
    assert refused(check_flag_token, "-a\tb", "f") == msg.format("'-a\\tb'")
    assert refused(check_flag_token, "", "f") == msg.format("")


@pytest.mark.parametrize("name", [
    "k", "_k9", "ns::k", "::k", "a :: b", "k<32>", "k<32, float>", "k<(int)1, a::b<c>>", "_Z3fooPf",
    "k<f(1)>", "k<a[1]>", "k<1 > ", "k<-1, ~2, !x, a|b, a^b, a%b, a?b:c, a=b, a.b, *p, &r, +1>",
    "x" * 500,
])
def test_check_function_accepts(name: str) -> None:
    assert check_function(name, "f") == name


@pytest.mark.parametrize("name", [
    "", "x" * 501, 3, None, "9k", "k;", "k<1>;", "k<1", "k<(1>", "k<1)>", "k<a{b}>", "k<'a'>",
    'k<"a">', "k<a/b>", "k<#a>", "k<a\nb>", "k<a\\b>", "k x", "k::", "k<1>x", "::",
])
def test_check_function_refuses(name: object) -> None:
    msg = refused(check_function, name, "f")
    if isinstance(name, str) and name and len(name) <= 500:
        assert msg == (f"f: function {inert(name[:80])} is not a C++ name: use letters, digits, _, "
                       ":: and template arguments <...> (no ;, #, /, quotes, braces or newlines)")
    else:
        assert msg == ("f: function must be the kernel's name (plain, ns::qualified, a template "
                       "instance like k<32>, or mangled)")


@pytest.mark.parametrize(("text", "want"), [
    ("", ""), ("a b", "a b"), ("::x", "'::x'"), ("  ::x", "'  ::x'"), ("a::x", "a::x"),
    (":x", ":x"), ("a\u2028b", "'a\\u2028b'"), ("a\u2029b", "'a\\u2029b'"), ("a\u202eb", "'a\\u202eb'"),
    ("it's", "it's"), ("\\", "\\"), ("x\n'", "'x\\n\\''"), ("\x7f", "'\\x7f'"),
])
def test_inert_exact(text: str, want: str) -> None:
    assert inert(text) == want


def test_inert_lines_on_a_pipe() -> None:
    buf = io.StringIO()
    out = InertLines(buf)
    assert out.tty is False and out.isatty() is False and out.at_start is True
    out.write("::error x\n  ::warn\nok ::no\n")
    out.write("a\x1b[1mb\x07\tc")
    assert out.at_start is False
    out.write("::mid-line\n::start")
    assert buf.getvalue() == (":\\:error x\n  :\\:warn\nok ::no\na\\x1b[1mb\\x07\tc::mid-line\n"
                              ":\\:start")
    assert out.write("x\u2028y") == len("x\\u2028y")
    out.flush()


class _Bare:
    """A stream with no `encoding` attribute."""

    def __init__(self) -> None:
        self.flushed = False

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        self.flushed = True


def test_inert_lines_defaults_to_utf8() -> None:
    bare = _Bare()
    out = InertLines(bare)  # type: ignore[arg-type]
    assert out.encoding == "utf-8"
    out.flush()
    assert bare.flushed


class _Tty(io.StringIO):
    encoding = "latin-1"  # type: ignore[assignment]

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return 42


def test_inert_lines_on_a_terminal() -> None:
    buf = _Tty()
    out = InertLines(buf)
    out.write("a\x1b[1mb\x07\n")
    assert buf.getvalue() == "a\x1b[1mb\\x07\n"
    assert out.isatty() is True and out.fileno() == 42 and out.encoding == "latin-1"


@pytest.mark.parametrize(("text", "want"), [
    ("abc", "'abc'"), ("a" * 16, "'" + "a" * 16 + "'"), ("a" * 17, "'" + "a" * 16 + "...'"),
    ("a.b-c_d 9", "'a.b-c_d 9'"), ("ab/etc", "'ab...'"), ("/etc/shadow", "'...'"), (12, "'12'"),
    ("", "''"),
])
def test_excerpt(text: object, want: str) -> None:
    assert excerpt(text) == want


@pytest.mark.parametrize(("text", "limit", "want"), [
    ("a.b_c-d", 64, "a.b_c-d"), ("-a-", 64, "a"), ("abcdef", 3, "abc"), ("a$$b", 64, "a-b"),
    ("", 64, "x"), ("-", 64, "x"), (".a.", 64, "a"),
])
def test_slug_exact(text: str, limit: int, want: str) -> None:
    assert slug(text, limit) == want


def test_xml_one_line_md() -> None:
    assert xml_text("\x08\x0b\x0c\x0e\x1f\n\r\t\ufffe\uffff ok") == "\ufffd" * 5 + "\n\r\t" + \
        "\ufffd" * 2 + " ok"
    assert one_line("a\x1bb\u2028") == "a\\x1bb\\u2028"
    assert one_line("plain é") == "plain é"
    assert md("a\\b") == "a\\\\b"
    assert md("x'y\"z") == "x'y\"z"
    assert md("a]b[c}d{e") == "a\\]b\\[c\\}d\\{e"


def test_check_output_messages(tmp_path: Path) -> None:
    inp = tmp_path / "in.yaml"
    inp.write_text("x")
    assert refused(check_output, "a\x00b") == "-o: the path contains a NUL byte"
    assert refused(check_output, str(tmp_path)) == \
        f"-o {tmp_path}: a directory; give a file path (or - for stdout)"
    assert refused(check_output, "/dev/null") == \
        "-o /dev/null: not a regular file; give a file path (or - for stdout)"
    assert refused(check_output, str(inp), [str(tmp_path / "other"), inp]) == \
        f"-o {inp}: that is an input of this run ({inp}); write the output elsewhere"
    assert refused(check_output, str(tmp_path / "no" / "x")) == \
        f"-o {tmp_path / 'no' / 'x'}: the directory {tmp_path / 'no'} does not exist"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert refused(check_output, str(loop)) == \
        f"-o {loop}: a symbolic link; give the file itself, or leave -o out to print"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")  # os.replace would put a file where the link is
    assert refused(check_output, str(dangling)).endswith(": a symbolic link; give the file "
                                                         "itself, or leave -o out to print")
    assert refused(check_output, "x" * 5000).endswith(": File name too long")
    new = tmp_path / "new.txt"
    assert check_output(str(new), [inp]) == new
    assert check_output(str(inp), [tmp_path / "missing"]) == inp  # not the same file
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert check_output("bare.txt") == Path("bare.txt")
        write_atomically("bare.txt", "é\udc80")
        assert (tmp_path / "bare.txt").read_bytes() == "é\\udc80".encode()
    finally:
        os.chdir(cwd)


def test_write_atomically_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    write_atomically(str(target), "one")
    write_atomically(str(target), "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]
    (tmp_path / "d").mkdir()
    msg = refused(write_atomically, str(tmp_path / "d"), "x")
    assert msg.endswith("a directory; give a file path (or - for stdout)")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a read-only folder is still writable")
        assert refused(write_atomically, str(ro / "x"), "x") == \
            f"-o {ro / 'x'}: cannot write there: Permission denied"
    finally:
        ro.chmod(0o700)
    assert [p.name for p in ro.iterdir()] == []


def test_more_exact_escapes() -> None:
    assert inert("X\n") == "'X\\n'"
    assert slug("aX") == "aX"
    assert one_line("é\n") == "é\\n"
    buf = io.StringIO()
    InertLines(buf).write("::a ::b\n")
    assert buf.getvalue() == ":\\:a ::b\n"
    long = "k;" + "x" * 100
    with pytest.raises(OccupancyError) as info:
        check_function(long, "f")
    assert str(info.value).startswith(f"f: function {long[:80]} is not a C++ name")


def test_the_temp_file_is_hidden_beside_the_target(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = os.replace

    def spy(src: str, dst: object) -> None:
        seen.append(src)
        assert Path(src).read_bytes() == "é\\udc80".encode()  # written as UTF-8
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", spy)
    write_atomically(str(tmp_path / "t.txt"), "é\udc80")
    tmp = Path(seen[0])
    assert tmp.parent == tmp_path and tmp.name.startswith(".occupancy-") and tmp.name.endswith(".tmp")


def test_write_failures_leave_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import tempfile

    target = str(tmp_path / "t.txt")

    def fail_replace(src: str, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "replace", fail_replace)
    assert refused(write_atomically, target, "x") == f"-o {target}: cannot write: Invalid cross-device link"
    assert list(tmp_path.iterdir()) == []

    def fail_without_strerror(src: str, dst: object) -> None:
        raise OSError("no reason")

    monkeypatch.setattr(os, "replace", fail_without_strerror)
    assert refused(write_atomically, target, "x") == f"-o {target}: cannot write: no reason"
    assert list(tmp_path.iterdir()) == []

    def interrupted(src: str, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, "x")
    assert list(tmp_path.iterdir()) == []

    def no_temp(**kw: object) -> tuple[int, str]:
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", no_temp)
    assert refused(write_atomically, target, "x") == f"-o {target}: cannot write there: Permission denied"


def test_write_atomically_never_writes_over_an_input(tmp_path: Path) -> None:
    inp = tmp_path / "in.yaml"
    inp.write_text("keep")
    assert refused(write_atomically, str(inp), "x", [inp]).endswith(
        "that is an input of this run (" + str(inp) + "); write the output elsewhere")
    assert inp.read_text() == "keep"
