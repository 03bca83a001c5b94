"""Reading the project's inputs (YAML, logs, records) safely, and finding its data folders.

Every input is treated as written by an attacker: only regular files are read (a FIFO or
/dev/zero would hang or never end), each kind has a size cap, YAML aliases are refused
(an alias bomb expands a few lines into gigabytes), and YAML keys keep their exact line
from the parser's node marks, so error messages point at the right line in linear time.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import note_input

KIB, MIB = 1024, 1024 * 1024
YAML_CAP = 1 * MIB  # profiles and manifests
LOG_CAP = 64 * MIB  # ptxas logs, cubins, fatbins, measure records
NODE_CAP = 200_000  # YAML nodes in one document: far above any real profile or manifest


def display(path: str | os.PathLike[str]) -> str:
    """A path as one printable line (control characters and NULs escaped)."""
    from occupancy.inputs.safety import inert

    return inert(str(path))


def beside(base: Path, written: str) -> Path:
    """The absolute path of a file a manifest names (relative to `base`, its folder), its `..`
    taken as written: the folder as the user reached it, through a linked folder too, so that
    the path checked is the path the compiler and the reader are given (the system resolves
    `link/..` to the link target's parent, another folder)."""
    return Path(os.path.abspath(written if os.path.isabs(written) else base / written))


def regular_file(path: Path) -> bool:
    """Whether `path` names a regular file: False for a folder, a device, a missing file, and
    a path the system refuses (a name too long, a NUL byte), which Path.is_file raises on."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def read_bytes(path: str | os.PathLike[str], error: type[Any], cap: int,
               missing_hint: str, what: str = "file", note: bool = True) -> bytes:
    """The bytes of a regular file of at most `cap` bytes, or `error(message, path)`;
    `note`: an input -o may not replace (False: a file the run updates, the --store)."""
    shown = display(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it right after.
        fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"no such file: {missing_hint}", shown) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise error(f"cannot read the {what}: {reason}", shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise error(f"{kind}: give the path of a regular {what}", shown)
        if st.st_size > cap:
            raise error(f"the {what} is {st.st_size:,} B, over the {cap:,} B limit: "
                        f"give a smaller {what}", shown)
        if note:
            note_input(st)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > cap:  # the file grew while we read it
                raise error(f"the {what} is over the {cap:,} B limit: give a smaller {what}", shown)
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read the {what}: {exc.strerror or exc}", shown) from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], error: type[Any], cap: int, missing_hint: str,
              what: str = "file", note: bool = True) -> str:
    data = read_bytes(path, error, cap, missing_hint, what, note)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8 text (byte {exc.start}): give a text {what}", display(path)) from None


Key = tuple[Any, ...]


class YamlDoc:
    """A parsed YAML document and the line (1-based) of every key and list item in it."""

    __slots__ = ("data", "lines")

    def __init__(self, data: Any, lines: dict[Key, int]) -> None:
        self.data, self.lines = data, lines

    def line(self, *key: Any) -> int | None:
        """The line of a key path, e.g. ("kernels", 0, "block"); the nearest parent's else."""
        k = tuple(key)
        while k:
            if k in self.lines:
                return self.lines[k]
            k = k[:-1]
        return None


class _AliasRefused(yaml.YAMLError):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(what)
        self.line = line
        self.what = what


class _SafeComposer(yaml.SafeLoader):
    """safe_load's loader that refuses aliases and caps the number of nodes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _AliasRefused(event.start_mark.line + 1,
                                "YAML aliases (*name) are not accepted: write the value out")
        self._nodes += 1
        if self._nodes > NODE_CAP:
            event = self.peek_event()
            raise _AliasRefused(event.start_mark.line + 1,
                                f"more than {NODE_CAP:,} YAML nodes: split the file")
        return super().compose_node(parent, index)


def _positions(node: Any, prefix: Key, out: dict[Key, int]) -> None:
    """Walk the node tree once: key path -> line. Linear in the document's size."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else id(k)
            if isinstance(key, str) and k.tag == "tag:yaml.org,2002:int":
                try:
                    key = int(key)
                except ValueError:
                    pass
            path = (*prefix, key)
            out.setdefault(path, k.start_mark.line + 1)
            _positions(v, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = (*prefix, i)
            out.setdefault(path, item.start_mark.line + 1)
            _positions(item, path, out)


JSON_INT_DIGITS = 18  # digits of the longest integer a JSON input may hold


def json_int(text: str) -> int:
    """`json.loads`' parse_int for the files a user hands over (records, stores, configs):
    an integer of up to JSON_INT_DIGITS digits. A longer one is no count, size or time any
    of them holds, and it overflows the float arithmetic that reads it (ValueError: the
    callers' "not JSON")."""
    if len(text.lstrip("-")) > JSON_INT_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {JSON_INT_DIGITS})")
    return int(text)


def parse_yaml(text: str, error: type[Any], shown: str) -> YamlDoc:
    """Parse YAML text as yaml.safe_load would, minus aliases, with key positions."""
    try:
        loader = _SafeComposer(text)  # its reader refuses control characters up front
    except yaml.reader.ReaderError as exc:
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or " ")
        raise error(f"YAML cannot hold the control character #x{code:02x}: remove it", shown,
                    text.count("\n", 0, max(exc.position, 0)) + 1) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDoc(None, {})
        data = loader.construct_document(node)
    except _AliasRefused as exc:
        raise error(exc.what, shown, exc.line) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise error(f"YAML syntax error: {problem}; fix the syntax", shown,
                    mark.line + 1 if mark else None) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. a timestamp out of range
        raise error(f"YAML value cannot be read: {exc}", shown) from None
    finally:
        loader.dispose()
    lines: dict[Key, int] = {}
    _positions(node, (), lines)
    return YamlDoc(data, lines)


def read_yaml(path: str | os.PathLike[str], error: type[Any], missing_hint: str,
              what: str = "file") -> YamlDoc:
    """A YAML file (regular, <= 1 MiB, no aliases) parsed with its key positions.
    Problems raise `error(message, path, line)`."""
    text = read_text(path, error, YAML_CAP, missing_hint, what)
    return parse_yaml(text, error, display(path))


def data_dir(name: str) -> Path:
    """`profiles/` or `kernels/`: inside the installed package, or at the top of a checkout."""
    package = Path(__file__).resolve().parent.parent  # occupancy/
    for candidate in (package / name, package.parent / name):
        if candidate.is_dir():
            return candidate
    raise OccupancyError(f"the shipped {name}/ folder is missing: reinstall occupancy")
