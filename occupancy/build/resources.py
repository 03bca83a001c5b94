"""A kernel's resources (registers, smem, stack, spills, barriers, launch bound), and the
pure parsers that read them from ptxas logs. Compilers live in toolchain.py, binary
formats in binaries.py and the SASS in sass_loops.py; nothing here runs a program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert


class CompilerUnavailable(OccupancyError):
    """No compiler for this architecture: callers estimate, or report the hint."""


class CompileError(OccupancyError):
    """The source did not compile: the message carries the compiler's first errors."""


class CompileTimeout(CompileError):
    """A compiler or linker ran past its limit: never cached (the next run may finish)."""


@dataclass(frozen=True)
class KernelResources:
    """What the compiler assigned one kernel on one architecture."""

    function: str  # the mangled name (the symbol the driver loads)
    registers_per_thread: int
    static_shared_memory: int
    barriers: int
    stack_frame_bytes: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    max_threads_per_block: int | None  # __launch_bounds__ max threads, None if unbounded
    source: str  # "nvcc 13.0 sm_90", "ptxas log build.log sm_61", "cubin k.cubin sm_80", ...
    min_blocks_per_sm: int | None = None  # __launch_bounds__' second argument, if known
    demangled: str = ""
    # True where only the stack frame is known (a binary): local arrays and spills both
    # live there, so a non-zero frame may be spills.
    spills_unknown: bool = False
    cluster_dims: tuple[int, int, int] | None = None  # __cluster_dims__ from the binary
    # Static instruction mix of the hottest loop in the SASS (sass_loops.sass_loop_mix):
    # (("total", n), ("ffma", n), ...); None where no disassembler was at hand.
    loop_mix: tuple[tuple[str, int], ...] | None = None
    # from a device-linked image or nvlink's report: final under -rdc (a ptxas log of a
    # relocatable compile is not)
    linked: bool = False
    # the device functions it calls that spill (their spills are in the counts above: a
    # kernel spills where what it calls does)
    spilling_callees: tuple[str, ...] = ()
    # device functions that spill in a log whose functions were compiled on their own (-G,
    # -rdc) and which does not say who calls them: the kernel may (not in the counts above)
    unattributed_spills: tuple[str, ...] = ()
    # read from a log that seems a relocatable compile's (functions compiled on their own, no
    # kernel's cumulative stack, no nvlink report): registers, stack and shared memory are
    # final only after the device link (a -G log whose kernels call nothing looks the same)
    before_link: bool = False

    @property
    def spills(self) -> bool:
        return self.spill_stores_bytes > 0 or self.spill_loads_bytes > 0

    @property
    def spill_bytes(self) -> int:
        """Spill traffic per thread; where only the frame is known, the frame."""
        if self.spills_unknown:
            return self.stack_frame_bytes
        return self.spill_stores_bytes + self.spill_loads_bytes

    @property
    def estimated(self) -> bool:
        return self.source.startswith("estimate")

    def with_source(self, source: str) -> KernelResources:
        return replace(self, source=source)


# --- ptxas logs ------------------------------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^'\s]+)' for '(sm_\w+)'")
_PROPS = re.compile(r"Function properties for '?([^'\s]+)'?")
_USED = re.compile(r"Used (\d{1,6}) registers(.*)")
_SPILL = re.compile(r"(\d{1,12}) bytes stack frame, (\d{1,12}) bytes spill stores, "
                    r"(\d{1,12}) bytes spill loads")
_SMEM = re.compile(r"(\d{1,12}) bytes smem")
_BARS = re.compile(r"used (\d{1,6}) barriers")
# the frames of the kernel and of what it calls (ptxas -v; cuobjdump's STACK): the stack
_CUMULATIVE = re.compile(r"(\d{1,12}) bytes cumulative stack size")
_GMEM = re.compile(r"ptxas info\s*:\s*\d{1,12} bytes gmem")
_COMPILE_TIME = re.compile(r"ptxas info\s*:\s*Compile time")
_COMPILING_ARCH = re.compile(r"for '(sm_\w+)'")
# a count over the 12 digits the patterns above read, where ptxas writes a count (a
# compiler warning that quotes a source line with a long number is no count)
_TOO_LONG = re.compile(r"^\s*(?:(?:(?:ptxas|nvlink) info\s*:|\d+ bytes stack frame\b).*?\b|)"
                       r"\d{13,} (?:bytes|registers|barriers|stack)\b")
_NVLINK_USED_ANY = re.compile(r"nvlink info\s*:\s*used\b")
# what a verdict names of the spilling functions a log cannot attribute (one shared tuple:
# a log of thousands of functions and kernels is no product of the two)
UNATTRIBUTED_SHOWN = 8

_NVLINK_PROPS = re.compile(r"nvlink info\s*:\s*Function properties for '([^'\s]+)'")
# older nvlinks (CUDA 10/11) write no barriers: the compile step's then
_NVLINK_USED = re.compile(r"nvlink info\s*:\s*used (\d{1,6}) registers, (?:used (\d{1,6}) barriers, )?"
                          r"(\d{1,12}) stack, (\d{1,12}) bytes smem(?:.*\(target: (sm_\w+)\))?")

LogSections = dict[str, dict[str, KernelResources]]


def parse_ptxas_log(text: str, label: str = "ptxas log", relocatable: bool = False
                    ) -> LogSections:
    """Resources per architecture, then per function, from `ptxas -v` output (or
    `nvcc -Xptxas -v`, several -gencode targets included: each entry line names its arch).
    A log whose lines name no arch lands under the key ''. `relocatable`: the log of an -rdc
    build, whose device functions' spills it does not attribute (_Callees)."""
    found: dict[tuple[str, str], dict[str, int]] = {}
    current: tuple[str, str] | None = None
    arch = ""
    entry: dict[str, str] = {}  # arch -> the kernel whose compile ptxas is reporting
    callees = _Callees(relocatable or bool(_NVLINK_PROPS.search(text)))
    compiles = _Compiles(relocatable)
    for number, line in enumerate(text.splitlines(), 1):
        if _TOO_LONG.search(line):
            raise OccupancyError(f"{label or 'ptxas output'}: line {number}: a number of over 12 "
                                 "digits where ptxas writes a resource count: not a ptxas log")
        if _GMEM.search(line):
            entry.clear()  # a compile of its own begins: no kernel reported in it yet
            compiles.begin(callees.alone)
        if _COMPILE_TIME.search(line):
            callees.compiled()
        m = _ENTRY.search(line)
        if m:
            arch = m.group(2)
            current = (arch, m.group(1))
            entry[arch] = m.group(1)
            compiles.holds(current)
            callees.restart(arch, m.group(1))
            found.setdefault(current, {})
            continue
        a = _COMPILING_ARCH.search(line)
        if a and "Compiling" in line:
            arch = a.group(1)
        m = _PROPS.search(line)
        if m:
            current = (arch, m.group(1))
            callees.open(arch, entry.get(arch), m.group(1))
            found.setdefault(current, {})
            continue
        if current is None:
            continue
        m = _SPILL.search(line)
        if m:
            callees.spill(int(m.group(2)), int(m.group(3)))
            found[current].update(stack=int(m.group(1)), stores=int(m.group(2)),
                                  loads=int(m.group(3)))
        m = _USED.search(line)
        if m:
            rest = m.group(2)
            smem = _SMEM.search(rest)
            bars = _BARS.search(rest)
            found[current].update(regs=int(m.group(1)), smem=int(smem.group(1)) if smem else 0,
                                  bars=int(bars.group(1)) if bars else 0)
            if cumulative := _CUMULATIVE.search(rest):
                found[current]["total_stack"] = int(cumulative.group(1))
                compiles.cumulative()
    sections: LogSections = {}
    # functions compiled on their own that spill: which kernels call them, the log does not say
    # per arch, with a compile that names none (device functions only) in each
    by_arch = spills_by_arch(text) if callees.relocatable else {}
    loose = {a: tuple(dict.fromkeys([*by_arch.get(a, {}), *by_arch.get("", {})]))[:UNATTRIBUTED_SHOWN]
             for a in {a for a, _ in found}}
    compiles.begin(callees.alone)  # the last compile ends
    linked = bool(_NVLINK_PROPS.search(text))
    for (arch, name), v in found.items():
        if "regs" not in v:
            continue
        called = callees.of(arch, name)
        sections.setdefault(arch, {})[name] = KernelResources(
            name, v["regs"], v.get("smem", 0), v.get("bars", 0),
            max(v.get("stack", 0), v.get("total_stack", 0)),
            v.get("stores", 0) + sum(c[1] for c in called),
            v.get("loads", 0) + sum(c[2] for c in called), None, f"{label} {arch}".strip(),
            spilling_callees=tuple(dict.fromkeys(c[0] for c in called)),
            # a -G log's kernel without a cumulative stack calls no function with a frame, and
            # one that spills has a frame; an -rdc compile prints no cumulative stack at all
            unattributed_spills=loose[arch] if not compiles.has_cumulative((arch, name))
            or "total_stack" in v else (),
            before_link=not linked and compiles.before_link((arch, name)))
    return _with_nvlink(text, sections, label)


def callees_note(res: KernelResources) -> str:
    """Where a kernel's spills are partly its callees': which functions, for a message."""
    if not res.spilling_callees:
        return ""
    names = ", ".join(inert(n) for n in res.spilling_callees[:3])
    more = f" and {len(res.spilling_callees) - 3} more" if len(res.spilling_callees) > 3 else ""
    return f", with those of {names}{more}, which it calls"


def device_function_spills(text: str) -> dict[str, tuple[int, int]]:
    """Spill stores and loads, in bytes per thread, of each function a ptxas log reports
    that is no kernel (an -rdc build's device functions; the largest where one is reported
    twice), whatever its arch (builds.py reads a one-arch build's)."""
    out: dict[str, tuple[int, int]] = {}
    for per_arch in spills_by_arch(text).values():
        for k, (s, ld) in per_arch.items():
            old = out.get(k, (0, 0))
            out[k] = (max(old[0], s), max(old[1], ld))
    return out


def spills_by_arch(text: str) -> dict[str, dict[str, tuple[int, int]]]:
    """device_function_spills per arch: ptxas reports each compile after its `N bytes gmem`
    line, and the compile's arch is the one its kernels' entry lines name ('' for a compile
    of device functions only, which names none)."""
    kernels = {m.group(1) for m in map(_ENTRY.search, text.splitlines()) if m}
    out: dict[str, dict[str, tuple[int, int]]] = {}
    part: dict[str, tuple[int, int]] = {}
    arch, name = "", None
    split = bool(_GMEM.search(text))  # without those lines (a log cut by hand) no compile
    # is told from another: every spill counts for every arch ('')
    for line in [*text.splitlines(), "ptxas info    : 0 bytes gmem"]:  # the last one closes
        if _GMEM.search(line):
            into = out.setdefault(arch, {})
            for k, (s, ld) in part.items():
                old = into.get(k, (0, 0))
                into[k] = (max(old[0], s), max(old[1], ld))
            part, arch, name = {}, "", None
            continue
        m = _ENTRY.search(line)
        if m and split:
            arch = arch or m.group(2)
        m = _PROPS.search(line)
        if m:
            name = m.group(1)
            continue
        m = _SPILL.search(line)
        if m and name is not None and name not in kernels and (int(m.group(2)) or int(m.group(3))):
            part[name] = (int(m.group(2)), int(m.group(3)))
            name = None
    return {a: v for a, v in out.items() if v}


def with_callee_spills(res: KernelResources, calls: dict[str, tuple[str, ...]],
                       spills: dict[str, tuple[int, int]]) -> KernelResources:
    """`res` with the spills of every function it reaches through `calls` (an -rdc build's
    call graph, binaries.reachable) added: a log of such a build attributes none itself."""
    from occupancy.build.binaries import reachable

    called = [(fn, spills[fn]) for fn in reachable(calls, res.function) if fn in spills]
    if not called:
        return res
    return replace(res, spill_stores_bytes=res.spill_stores_bytes + sum(s for _, (s, _l) in called),
                   spill_loads_bytes=res.spill_loads_bytes + sum(ld for _, (_s, ld) in called),
                   spilling_callees=tuple(fn for fn, _ in called))


class _Compiles:
    """Which compile of a log (each begins with its `N bytes gmem` line: a file for an arch)
    reports each kernel, and per compile whether a function was compiled on its own in it
    and whether a kernel printed its cumulative stack: a log of several builds appended
    holds relocatable and whole-program compiles side by side. A log cut without those
    lines is one compile. -G compiles each function on its own too, but there a kernel that
    calls one reports the cumulative stack; an -rdc compile never does (its callees may be
    in other files)."""

    def __init__(self, relocatable: bool) -> None:
        self.relocatable = relocatable  # said so by the caller: every compile is
        self.index = 0
        self.started_at = 0  # _Callees.alone when this compile began
        self.alone: set[int] = set()  # compiles with a function compiled on its own
        self.with_cumulative: set[int] = set()
        self.of: dict[tuple[str, str], int] = {}  # (arch, kernel) -> its (last) compile

    def begin(self, alone_so_far: int) -> None:
        """The compile so far ends (also called at the log's end)."""
        if alone_so_far > self.started_at:
            self.alone.add(self.index)
        self.index += 1
        self.started_at = alone_so_far

    def holds(self, kernel: tuple[str, str]) -> None:
        self.of[kernel] = self.index

    def cumulative(self) -> None:
        self.with_cumulative.add(self.index)

    def has_cumulative(self, kernel: tuple[str, str]) -> bool:
        return self.of.get(kernel, -1) in self.with_cumulative

    def before_link(self, kernel: tuple[str, str]) -> bool:
        """Its compile reads as relocatable: functions compiled on their own in it (or the
        caller said so) and no kernel's cumulative stack. A compile that says neither (its
        kernels call nothing, or only another file's functions: one file of an -rdc build of
        several) takes the log's word: relocatable where another compile of it is."""
        i = self.of.get(kernel, -1)
        if i in self.with_cumulative:
            return False
        return self.relocatable or i in self.alone or bool(self.alone - self.with_cumulative)


class _Callees:
    """The device functions whose spills a kernel's own line leaves out. A whole-program
    build clones each function a kernel calls into that kernel, and ptxas reports the
    clones right after the kernel's own report, each as `Function properties for NAME`
    with no `Used ... registers` line and no `Compile time` line of their own: those blocks
    are the kernel's. A build that compiles each function once (-rdc, or -G) reports each
    with its own `Compile time`, some before any kernel, others after the last one whether
    it calls them or not: its log does not say who calls what (builds.py reads the cubin's
    call graph), and nothing is attributed."""

    def __init__(self, relocatable: bool) -> None:
        # (arch, kernel) -> the blocks reported after it: [function, spill stores, loads]
        self.blocks: dict[tuple[str, str], list[list[Any]]] = {}
        # functions compiled on their own (-rdc, -G): said so, or a function reported
        # before any kernel of its compile or with its own `Compile time`
        self.relocatable = relocatable
        self.alone = 0  # the functions seen compiled on their own so far (per compile: _Compiles)
        self.own: set[tuple[str, str]] = set()  # kernels whose own report was read
        self.last: list[Any] | None = None
        self.in_function = False  # the block being read is a device function's

    def restart(self, arch: str, kernel: str) -> None:
        """ptxas compiles `kernel` (again: a log with two -gencode targets of one arch, or
        two logs appended, reports it twice; the last report counts, as for its own line)."""
        self.blocks.pop((arch, kernel), None)
        self.own.discard((arch, kernel))
        self.in_function = False

    def compiled(self) -> None:
        """A `Compile time` line: after a device function's block, it was compiled on its
        own (-rdc, -G), not cloned into the kernel before it."""
        if self.in_function:
            self.relocatable = True
            self.alone += 1

    def open(self, arch: str, kernel: str | None, name: str) -> None:
        """A `Function properties for NAME` block while ptxas reports `kernel`."""
        self.last = None
        self.in_function = kernel is None or name != kernel or (arch, kernel) in self.own
        if kernel is None:
            self.relocatable = True
            self.alone += 1
        elif not self.in_function:
            self.own.add((arch, kernel))
        else:
            self.last = [name, 0, 0]
            self.blocks.setdefault((arch, kernel), []).append(self.last)

    def spill(self, stores: int, loads: int) -> None:
        if self.last is not None:
            self.last[1:] = [stores, loads]

    def of(self, arch: str, kernel: str) -> list[tuple[str, int, int]]:
        if self.relocatable:
            return []
        return [(n, s, ld) for n, s, ld in self.blocks.get((arch, kernel), []) if s or ld]


def _with_nvlink(text: str, sections: LogSections, label: str) -> LogSections:
    """A log of an -rdc build that also holds nvlink's report (-Xnvlink -v): the linked
    numbers (registers, barriers, stack, static smem) replace the compile step's. nvlink names
    the target only when it links several; one target is the log's one ptxas arch."""
    archs = [a for a in sections if a]
    name = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _NVLINK_PROPS.search(line)
        if m:
            name = m.group(1)
            continue
        m = _NVLINK_USED.search(line)
        if not m and name is not None and _NVLINK_USED_ANY.search(line):
            raise OccupancyError(f"{label or 'nvlink output'}: line {number}: nvlink's report of "
                                 f"{inert(name)} does not read as nvlink writes it (registers, "
                                 "barriers, stack, bytes smem): not an nvlink report")
        if not m or name is None:
            continue
        arch = m.group(5) or (archs[0] if len(archs) == 1 else "")
        old = sections.get(arch, {}).get(name)
        regs, stack, smem = int(m.group(1)), int(m.group(3)), int(m.group(4))
        bars = int(m.group(2)) if m.group(2) else old.barriers if old else 0
        if _hopper(arch) and smem:
            # nvlink 13 counts the 1 KB the driver reserves in its sm_90 report (3,072 B for
            # 2 KB declared), not in its sm_100 / sm_120 ones (2,048 B): checked on both
            smem = max(smem - 1024, 0)
        # nvlink reports no spills: the compile step's where the log has it, else only the
        # stack frame is known (spills or local arrays)
        sections.setdefault(arch, {})[name] = KernelResources(
            name, regs, smem, bars, stack, old.spill_stores_bytes if old else 0,
            old.spill_loads_bytes if old else 0, None,
            " ".join(p for p in (label, arch, "(nvlink)") if p), spills_unknown=old is None,
            linked=True, unattributed_spills=old.unattributed_spills if old else ())
        name = None
    return sections


def _hopper(arch: str) -> bool:
    """sm_90, sm_90a: the archs whose nvlink 13 report holds the reserved 1 KB."""
    digits = re.sub(r"\D", "", arch)
    return bool(digits) and int(digits) // 10 == 9


def log_section(sections: LogSections, arch: str, where: str) -> dict[str, KernelResources]:
    """The section of one architecture; never another arch's numbers (an arch-specific
    build's, sm_90a, is that arch's: it runs on CC 9.0 only)."""
    if arch in sections:
        return sections[arch]
    if arch + "a" in sections:
        return sections[arch + "a"]
    if list(sections) == [""]:  # a log that never says its arch: the user vouches for it
        # nvlink names no target where it links one; its sm_90 report holds the reserved
        # 1 KB (_with_nvlink), which is taken out once the arch is known
        if _hopper(arch):
            return {k: replace(v, static_shared_memory=max(v.static_shared_memory - 1024, 0))
                    if v.linked and v.static_shared_memory else v for k, v in sections[""].items()}
        return sections[""]
    have = ", ".join(sorted(a for a in sections if a)) or "none"
    raise OccupancyError(f"{where} has no section for {arch} (it has: {have}); build with "
                         f"-gencode arch=compute_{arch[3:]},code={arch} -Xptxas -v")
