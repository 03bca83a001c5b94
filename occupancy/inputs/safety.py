"""What keeps hostile input inert: compiler arguments, output paths, and text in renderers.

Manifests arrive in pull requests and profiles are shared, so nothing read from a file may
reach a shell or an option slot (nvcc hands -D values and file names to the host
preprocessor through a shell), land outside the folder it was asked for, or print a
terminal escape or a CI workflow command.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO, TypeGuard

from occupancy.core.errors import OccupancyError
from occupancy.core.limits import INT32_MAX as INT32_MAX  # re-exported for tune/spaces

MAX_DEFINE = 4096  # characters of one define value (a macro, not a data file)
# The patterns here are strings, compiled (and cached by re) where first used: every
# start-up imports this module, and most never check a name.

# The one rule for a name a manifest gives (a define, a space or problem size, a Triton
# argument or parameter): a C identifier, so it can be a macro, an expression's symbol and a
# Python argument alike; ASCII only and at most 64 characters (C99 guarantees 63
# significant characters of a macro name; 64 leaves the tuning spaces' old limit).
C_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]{0,63}"


def is_name(text: object) -> TypeGuard[str]:
    """A name as every manifest key takes it: see C_IDENTIFIER."""
    return isinstance(text, str) and re.fullmatch(C_IDENTIFIER, text) is not None
# What a define value, flag or path may not hold: the characters a shell acts on inside
# the double quotes nvcc puts around them ($ ` " \\), the ones that end or chain a command
# (; | & < > newline), quotes, and every control character (NUL included).
_SHELL = set("$`\"'\\;|&<>!")


def _shell_safe(text: str, spaces: bool = True) -> bool:
    return all(ch not in _SHELL and _printable(ch) and (spaces or not ch.isspace())
               for ch in text)


def check_define_name(name: object, where: str) -> str:
    if not is_name(name):
        raise OccupancyError(f"{where}: define name {inert(str(name)[:80])} is not a C identifier "
                             "(letters, digits and _, not starting with a digit, at most 64)")
    return name


def define_value(value: object, where: str) -> str:
    """YAML true/false -> 1/0 (`#if True` would silently be 0), numbers and plain strings
    verbatim; anything else, or a character a shell would act on, is an error."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise OccupancyError(f"{where}: {value} is not a finite number")
        return repr(value)
    if isinstance(value, str):
        if len(value) > MAX_DEFINE:
            raise OccupancyError(f"{where}: a define value of {len(value):,} characters, over "
                                 f"{MAX_DEFINE:,}")
        if not _shell_safe(value):
            raise OccupancyError(f"{where}: {inert(value)} holds a character that is not allowed "
                                 "in a define (quotes, $, `, ;, |, &, <, >, !, \\ or a control "
                                 "character): use letters, digits, spaces and operators")
        return value
    raise OccupancyError(f"{where}: a define value must be true/false, a number or a string, "
                         f"got {type(value).__name__}")


def safe_path(path: str | os.PathLike[str], where: str) -> str:
    """An absolute path whose characters no shell acts on, so it can never be an option."""
    text = os.fspath(path)
    if "\x00" in text:
        raise OccupancyError(f"{where}: the path contains a NUL byte")
    absolute = os.path.abspath(text)
    if not _shell_safe(absolute):
        raise OccupancyError(f"{where}: {inert(absolute)} has characters a compiler's shell "
                             "would interpret (quotes, $, `, ;, |, &, <, >, !, \\, control "
                             "characters): "
                             "rename or move the file")
    return absolute


_ID_PATH = r"(:: *)?[A-Za-z_]\w*( *:: *[A-Za-z_]\w*)*"
# What template arguments may hold: names, numbers, :: and operators; never what ends a
# declaration or starts a directive, comment, string or block (; # / " ' { } \ newline).
_TEMPLATE_ARGS = r"[\w :<>,()*&+\-.\[\]|!~^%?=]*"


def check_function(text: object, where: str) -> str:
    """A kernel name as C++ spells it (ns::k, k<64, float>, a mangled _Z name): it is
    written into generated source, so anything else is an error."""
    if not isinstance(text, str) or not text or len(text) > 500:
        raise OccupancyError(f"{where}: function must be the kernel's name (plain, "
                             "ns::qualified, a template instance like k<32>, or mangled)")
    m = re.match(_ID_PATH, text)
    rest = text[m.end():] if m else text
    ok = m is not None and (not rest or (rest.startswith("<") and rest.rstrip().endswith(">")
                                         and re.fullmatch(_TEMPLATE_ARGS, rest) is not None
                                         and rest.count("(") == rest.count(")")))
    if not ok:
        raise OccupancyError(f"{where}: function {inert(text[:80])} is not a C++ name: use "
                             "letters, digits, _, :: and template arguments <...> (no ;, #, "
                             "/, quotes, braces or newlines)")
    return text


def check_flag_token(flag: str, where: str) -> str:
    if not flag or not _shell_safe(flag, spaces=False):
        raise OccupancyError(f"{where}: flag {inert(flag)} holds a character that is not allowed "
                             "(no spaces, quotes, $, `, ;, |, &, <, >, !, \\)")
    return flag


# --- text that is shown ------------------------------------------------------------------


def _printable(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return not (cat.startswith("C") or cat in ("Zl", "Zp"))


def inert(text: str) -> str:
    """Text as one printable line: a name with a control, bidi or line-separator character,
    a lone surrogate, or a leading `::` (a CI workflow command once it starts a line) is
    shown quoted, the way Python writes it (`'x\\n::error'`), else unchanged."""
    if all(_printable(ch) for ch in text) and not text.lstrip().startswith("::"):
        return text
    out = []
    for ch in text:
        if ch in "\\'":
            out.append("\\" + ch)
        elif _printable(ch):
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])
    return "'" + "".join(out) + "'"


class InertLines:
    """A text stream for the terminal renderers: whatever reaches it, no line starts with
    a CI workflow command (`::x` becomes `:\\:x`), and control, bidi and line-separator
    characters other than newline (and colour escapes on a terminal) become escapes."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.at_start = True

    def _char(self, ch: str) -> str:
        if ch in "\n\t" or _printable(ch) or (ch == "\x1b" and self.tty):
            return ch
        return ascii(ch)[1:-1]

    def write(self, text: str) -> int:
        out = []
        for line in text.splitlines(keepends=True):
            end = len(line) - 1 if line.endswith("\n") else len(line)
            # str.isprintable() refuses every character _printable does (and more): a line
            # it passes has nothing to escape, and is not looked at character by character.
            body = line if line[:end].isprintable() else "".join(self._char(ch) for ch in line)
            if self.at_start and body.lstrip().startswith("::"):
                i = body.index("::")
                body = body[:i] + ":\\" + body[i + 1:]
            out.append(body)
            self.at_start = line.endswith("\n")
        return self.stream.write("".join(out))

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.tty

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", "utf-8")


EXCERPT = 16  # characters of a bad key an error may quote (the file may be /etc/shadow)


def excerpt(text: object) -> str:
    """A short, quoted piece of text from a file that may not be ours to show: its first
    characters up to the first that is not a letter, digit, _, ., - or space."""
    t = str(text)
    head = re.match(rf"[A-Za-z0-9_.\- ]{{0,{EXCERPT}}}", t)
    part = head.group(0) if head else ""
    return f"'{part}" + ("...'" if len(part) < len(t) else "'")


_SLUG = r"[^A-Za-z0-9_.-]+"


def slug(text: str, limit: int = 64) -> str:
    """A file-name part from user text: safe characters only, no dots at the ends."""
    s = re.sub(_SLUG, "-", text).strip(".-")[:limit] or "x"
    return s


_XML_ILLEGAL = "[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]"


def xml_text(text: str) -> str:
    """Drop the characters XML 1.0 cannot carry at all (escaping cannot save them)."""
    return re.sub(_XML_ILLEGAL, "\ufffd", text)


# --- outputs -----------------------------------------------------------------------------

# (device, inode) of every regular file this run has read as input: the files read here,
# and the sources and headers the builds read (a header of a source is an input too).
_READ: set[tuple[int, int]] = set()


def note_input(path: str | os.PathLike[str] | os.stat_result) -> None:
    """Remember a file this run reads (its stat, where the caller has one): -o may not
    replace it."""
    try:
        st = path if isinstance(path, os.stat_result) else os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        _READ.add((st.st_dev, st.st_ino))


def forget_inputs() -> None:
    """A new run (the CLI's start): no file read yet."""
    _READ.clear()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: str, inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Where -o may write: a regular file (or a new one) in an existing folder, never one of
    this run's inputs. Device nodes, FIFOs, folders and symbolic links are refused (the
    rename that writes the whole file would replace the link itself: -o /dev/stdout, a
    link to /proc/self/fd/1, would become a file)."""
    if "\x00" in path:
        raise OccupancyError("-o: the path contains a NUL byte")
    target = Path(path)
    shown = inert(path)
    try:
        if stat.S_ISLNK(os.lstat(target).st_mode):
            raise OccupancyError(f"-o {shown}: a symbolic link; give the file itself, or leave "
                                 "-o out to print")
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OccupancyError(f"-o {shown}: {exc.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise OccupancyError(f"-o {shown}: {kind}; give a file path (or - for stdout)")
    for inp in inputs:
        if st is not None and _same_file(target, Path(inp)):
            raise OccupancyError(f"-o {shown}: that is an input of this run "
                                 f"({inert(os.fspath(inp))}); write the output elsewhere")
    if st is not None and (st.st_dev, st.st_ino) in _READ:
        raise OccupancyError(f"-o {shown}: this run read that file (a source, header, profile "
                             "or record); write the output elsewhere")
    parent = target.parent  # Path("x").parent is Path("."), never empty
    if not parent.is_dir():
        raise OccupancyError(f"-o {shown}: the directory {inert(str(parent))} does not exist")
    return target


def write_atomically(path: str, text: str, inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
    """The whole file or nothing (temp file + rename), after check_output's rules."""
    import tempfile

    target = check_output(path, inputs)
    try:  # in the target's folder: the rename is then atomic (one filesystem)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".occupancy-", suffix=".tmp")
    except OSError as exc:
        raise OccupancyError(f"-o {inert(path)}: cannot write there: {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make reports unreadable to others
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OccupancyError(f"-o {inert(path)}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def one_line(text: str) -> str:
    """A message as one line: control characters written as escapes, in place."""
    if all(_printable(ch) for ch in text):
        return text
    return "".join(ch if _printable(ch) else ascii(ch)[1:-1] for ch in text)


_MD_SPECIAL = r"([\\`*_\[\]{}#!|~])"


def md(text: str) -> str:
    """User text for Markdown: one line, HTML escaped, Markdown specials escaped, and no
    link syntax or bare URL survives (a name can never become a link or a tag)."""
    from html import escape

    t = escape(one_line(text), quote=False)
    t = re.sub(_MD_SPECIAL, r"\\\1", t)
    return t.replace("://", "&#58;//").replace("www.", "www&#46;")
