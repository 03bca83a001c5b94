"""The starter manifest `occupancy resources --manifest` writes: every kernel listed, built
with the include folders and flags given, so that `occupancy check` builds it as written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occupancy.build.resolve import ListedKernel


def starter_manifest(listed: Sequence[ListedKernel], devices: Sequence[str],
                     include_dirs: Sequence[str] = (), flags: Sequence[str] = (),
                     link: Sequence[str] = ()) -> str:
    """A manifest for `occupancy check` naming every kernel listed, built with the include
    folders, flags and sources to device-link given (so it compiles as written); each name
    unique. Paths are absolute, so the file may be saved anywhere. The user sets the
    blocks."""
    import json
    import os
    import re

    from occupancy.build.names import qualified_name

    by_name: dict[tuple[str, str], dict[str, None]] = {}
    key = {".cu": "source", ".cuh": "source", ".cpp": "source", ".cc": "source"}
    # what the file was read as (a ptxas log may have any name: ptxas.out), not its name
    kinds = {k.file: next((v for s, v in key.items() if k.file.endswith(s)), None)
             or ("ptxas_log" if k.resources.source.startswith("ptxas log") else "cubin")
             for k in listed}
    for k in listed:
        qual = qualified_name(k.resources.demangled or k.resources.function)
        by_name.setdefault((k.file, qual), {})[k.resources.function] = None
    # one entry a kernel: where two kernels of a file share a name (an extern "C" vectorAdd
    # beside a C++ one, overloads), each is named by its mangled symbol, which check matches
    seen: dict[tuple[str, str, str], None] = {}
    for (file, qual), mangled in by_name.items():
        for fn in (mangled if len(mangled) > 1 else [qual]):
            seen.setdefault((file, fn, qual))
    lines = ["# Starter manifest from `occupancy resources --manifest`: set each kernel's block",
             "# (threads per block at launch) and its dynamic shared memory, then run",
             "#   occupancy check THIS_FILE",
             f"devices: {json.dumps(list(devices) or ['a100', 'h100'])}",
             "min_occupancy: 0.25"]
    if any(f.endswith(tuple(key)) for f, _, _ in seen):
        if include_dirs:
            lines.append(f"include_dirs: {json.dumps([os.path.abspath(d) for d in include_dirs])}")
        if flags:
            lines.append(f"flags: {json.dumps(list(flags))}")
    lines.append("kernels:")
    names: set[str] = set()
    for file, fn, qual in seen:
        kind = kinds[file]
        base = qual.split("::")[-1]
        name = re.sub(r"_+", "_", re.sub(r"\W", "_", base)).strip("_") or "kernel"
        unique, n = name, 2
        while unique in names:
            unique, n = f"{name}_{n}", n + 1
        names.add(unique)
        lines += [f"  - name: {json.dumps(unique)}",
                  f"    {kind}: {json.dumps(os.path.abspath(file))}",
                  f"    function: {json.dumps(fn)}", "    block: 256  # set: threads per block"]
        others = [os.path.abspath(f) for f in link if os.path.realpath(f) != os.path.realpath(file)]
        if others and kind == "source":  # never a file with itself
            lines.append(f"    link: {json.dumps(others)}")
    return "\n".join(lines) + "\n"
