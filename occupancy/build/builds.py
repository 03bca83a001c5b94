"""Building a kernel source for one architecture with nvcc or NVRTC (+ ptxas), in place, with
the manifest's include dirs, flags and defines; results through the build cache."""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from occupancy.build.binaries import parse_cubin, ptx_entries, static_shared_from_cubin
from occupancy.build.blockers import nvcc_blocker, nvrtc_blocker
from occupancy.build.cache import (
    _cache_add_mix,
    _cache_load,
    _cache_store,
    _cache_store_failure,
    _key,
    cache_dir,
)
from occupancy.build.compilers import (
    COMPILER_HINT,
    TIMEOUT_S,
    Build,
    Compiler,
    compiler_for,
    demangle,
    make_build,
    nvcc_at,
    nvdisasm_path,
    nvrtc_include_dirs,
)
from occupancy.build.link import device_link
from occupancy.build.resources import (
    CompileError,
    CompilerUnavailable,
    CompileTimeout,
    KernelResources,
    device_function_spills,
    parse_ptxas_log,
    with_callee_spills,
)
from occupancy.build.run import COMPILER_MEMORY, ReadsDevice, run_tool
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.inputs.flags import nvcc_flags, nvrtc_flags, ptxas_flags
from occupancy.inputs.safety import check_function, inert, note_input, safe_path

_ERROR_LINES = 3

# --- compiling -------------------------------------------------------------------------------


def _first_errors(text: str, build: Build, tmp: str | None = None,
                  also: Mapping[str, str] | None = None) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if re.search(r"\berror\b|fatal", ln, re.IGNORECASE)] or lines
    msg = " | ".join(ln.strip() for ln in errs[:_ERROR_LINES])[:600]
    for path, shown in (also or {}).items():
        msg = msg.replace(path, shown)
    if build.source:  # an empty source (a PTX JIT) would put the name between every character
        msg = msg.replace(build.source, build.shown)
    if tmp:
        msg = msg.replace(tmp + os.sep, "")
    return inert(msg) if msg else "failed without a message"


def _run(cmd: list[str], build: Build, what: str, cwd: str | None = None,
         also: Mapping[str, str] | None = None, stdin: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    try:
        # TMPDIR too: whatever nvcc writes besides -keep's files stays in this build's folder
        env = {**os.environ, "TMPDIR": cwd} if cwd else None
        r = run_tool(cmd, timeout=TIMEOUT_S, memory=COMPILER_MEMORY, cwd=cwd, env=env,
                     stdin=stdin)
    except subprocess.TimeoutExpired:
        raise CompileTimeout(f"{inert(build.shown)}: {what} did not finish in {TIMEOUT_S} s") from None
    except ReadsDevice as exc:  # an #include the scan could not follow (a macro's); like a
        # timeout never cached: the next run may find a file there
        raise CompileTimeout(f"{inert(build.shown)} for {build.arch}: {what} stopped: it opened "
                             f"{inert(exc.strerror or 'a FIFO')}, which no compile ends on (an "
                             "#include names it, perhaps through a macro)") from None
    except OSError as exc:
        raise CompilerUnavailable(f"{what} cannot run: {exc.strerror}") from None
    if r.returncode != 0:
        log = r.stderr + r.stdout
        raise CompileError(f"{inert(build.shown)} for {build.arch}: {what}: "
                           f"{_first_errors(log, build, cwd, also)}"
                           f"{nvcc_blocker(log, build.rdc) if what.startswith('nvcc') else ''}")
    return r


def _instantiating_wrapper(build: Build) -> str:
    """A .cu that includes the source and takes the address of every name expression, which
    makes nvcc instantiate those template kernels (as NVRTC's name expressions do). Kept in
    the cache folder under a name made from its content, so its path is stable."""
    for e in build.name_expressions:  # the last gate before a file: a C++ name, nothing else
        check_function(e, f"{inert(build.shown)}: a template instance")
    lines = [f'#include "{build.source}"',
             "static void* const occupancy_instances_[] = {",
             *[f"    (void*)&{e}," for e in build.name_expressions], "};"]
    text = "\n".join(lines) + "\n"
    d = cache_dir().parent / "wrappers"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.cu"
    if not path.is_file() or path.read_text() != text:
        # a temporary name of its own: threads of one process share a pid, and a shared
        # name let one thread publish another's half-written wrapper (nvcc then failed)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    return safe_path(path, "the compile cache folder")


BuildOutput = tuple[dict[str, KernelResources], list[str], bytes, str]  # +deps, cubin, PTX


def _nvcc_build(build: Build, c: Compiler, probe: dict[str, object] | None = None
                ) -> BuildOutput:
    """nvcc -cubin with ptxas -v; with -rdc the relocatable cubin (and those of the `link:`
    sources) are device-linked, and the linked image gives what the driver loads."""
    source = build.source
    if build.name_expressions:
        source = _instantiating_wrapper(build)
    log, data, deps, ptx = _nvcc_one(build, c, source, None if build.rdc else probe)
    if not build.rdc:
        # the PTX gives __launch_bounds__' second argument (.minnctapersm)
        return (_combine(log, data, build, f"{c.label} {build.arch}", ptx, mix=False), deps,
                data, ptx)
    objects, every_ptx = [data], ptx
    for other in build.link:
        more_log, more, more_deps, more_ptx = _nvcc_one(build, c, other)
        log, deps = log + "\n" + more_log, deps + [other, *more_deps]
        objects.append(more)
        every_ptx += "\n" + more_ptx  # the linked files' kernels' launch bounds too
    linked = device_link(objects, build.arch, f"{inert(build.shown)} for {build.arch}",
                         beside=c.path, sources=True)
    label = f"{c.label} -rdc device-linked {build.arch}"
    return (_combine(log, linked, build, label, every_ptx, linked=True, mix=False), deps,
            linked, ptx)


def _nvcc_one(build: Build, c: Compiler, source: str, probe: dict[str, object] | None = None
              ) -> tuple[str, bytes, list[str], str]:
    """One nvcc -cubin: (ptxas log, cubin, files read, PTX). Every compile has its own
    folder for -keep (the intermediate files of two compiles never meet). The files read are
    those of the device preprocessing (the line markers of the .cpp1.ii cicc compiles): no
    -MD, which costs a second, host-side preprocessing that cannot change device code.
    `probe["tu"]` receives the SHA-256 of that translation unit (batch.py shares identical
    ones)."""
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        # -keep leaves the PTX of this very compile in tmp (ptxsim reads its addresses)
        cmd = [c.path, "-cubin", f"-arch={build.arch}", "-keep", "-keep-dir", tmp,
               "-Xptxas", "-v", *[x for f in ptxas_flags(build.flags) for x in ("-Xptxas", f)],
               *_nvcc_source_args(build, source), "-o", cubin]
        r = _run(cmd, build, c.label, cwd=tmp,
                 also={source: "the instantiation of " + ", ".join(build.name_expressions)}
                 if source not in (build.source, *build.link) else None)
        data = Path(cubin).read_bytes()
        units = sorted(Path(tmp).glob("*.cpp1.ii"))
        text = units[0].read_bytes() if len(units) == 1 else None
        ptx = "\n".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("*.ptx")))
    if text is None:  # not the pipeline this was written for: the user's files, over-approximated
        files = scan_includes(source, [os.path.dirname(source), *build.include_dirs])
    else:
        files = preprocessed_files(text, tmp)
        if probe is not None:
            probe["tu"] = hashlib.sha256(text).hexdigest()
    return r.stderr + r.stdout, data, files, ptx


def _nvcc_source_args(build: Build, source: str) -> list[str]:
    """What shapes the translation unit on an nvcc command line: flags, include folders,
    defines, the source (nvcc -cubin and nvcc -E preprocess alike with these)."""
    return [*nvcc_flags(build.flags), *[f"-I{d}" for d in build.include_dirs],
            *[f"-D{k}={_nvcc_list_item(v)}" for k, v in build.defines],
            # nvcc knows a source by its suffix: a header of kernels (.cuh, .h) is CUDA too
            *([] if source.endswith(".cu") else ["-x", "cu"]), source]


_MARKER = re.compile(rb'^# \d+ "((?:[^"\\\n]|\\.)*)"', re.MULTILINE)
_ESCAPE = re.compile(rb"\\([0-7]{1,3}|.)")


def preprocessed_files(text: bytes, cwd: str) -> list[str]:
    """Every file a preprocessed translation unit came from (its line markers: GCC names
    each file it enters, even an empty one), absolute (a relative one is in `cwd`)."""
    seen: dict[str, None] = {}
    for raw in dict.fromkeys(m.group(1) for m in _MARKER.finditer(text)):
        name = os.fsdecode(_ESCAPE.sub(_unescape, raw))
        if name.startswith("<") or name.endswith("//"):  # <built-in>, <command-line>, cwd
            continue
        seen[os.path.join(cwd, name)] = None  # as the compiler opened it (no .. folded)
    return list(seen)


def _unescape(m: re.Match[bytes]) -> bytes:
    """GCC writes \\ and \" in a marker's name, and other bytes as octal."""
    esc = m.group(1)
    return bytes([int(esc, 8) & 0xFF]) if esc[:1].isdigit() else esc


def _nvcc_list_item(value: str) -> str:
    """nvcc reads -D as a comma-separated list: `\\,` keeps a comma in the value, so nvcc
    defines the same macro NVRTC does (define values never hold a backslash)."""
    return value.replace(",", "\\,")


def with_loop_mix(found: Mapping[str, KernelResources], cubin: bytes
                  ) -> dict[str, KernelResources]:
    """The kernels with the instruction mix of their hottest loop, from this cubin's SASS."""
    mixes = _loop_mixes(cubin)
    return {k: replace(v, loop_mix=mixes.get(k)) for k, v in found.items()}


def _loop_mixes(cubin: bytes) -> dict[str, tuple[tuple[str, int], ...]]:
    """The hottest loop's instruction mix per kernel, from nvdisasm (empty without it)."""
    from occupancy.build.sass_loops import sass_loop_mix

    exe = nvdisasm_path()
    if exe is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        Path(path).write_bytes(cubin)
        try:
            r = run_tool([exe, "-c", path], timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    mixes = sass_loop_mix(r.stdout) if r.returncode == 0 else {}
    try:  # the module's __constant__ bytes: how large a table its loops may walk
        bank3 = parse_cubin(cubin).constant_bytes
    except OccupancyError:
        bank3 = 0
    return {k: (*m, ("cbank3", bank3)) for k, m in mixes.items()}


def _combine(log: str, cubin: bytes, build: Build, label: str, ptx: str | None,
             linked: bool = False, mix: bool = True) -> dict[str, KernelResources]:
    """ptxas's report (registers, smem, spills) plus the cubin's launch bounds and (`mix`)
    the SASS instruction mix of each kernel's hottest loop. A device-linked image (`linked`)
    overrides what the link fixes: registers, static smem, barriers and stack."""
    binary = parse_cubin(cubin)
    # a call graph in the cubin (-rdc, -G: functions compiled once each) says who calls what
    sections = parse_ptxas_log(log, label="", relocatable=build.rdc or bool(binary.calls))
    found = sections.get(build.arch) or next(iter(sections.values()), {})
    bounds = ptx_entries(ptx) if ptx else {}
    mixes = _loop_mixes(cubin) if mix else {}
    called = device_function_spills(log) if binary.calls else {}
    out = {}
    for name, res in found.items():
        k = binary.kernels.get(name)
        if k is None:
            continue  # a device function compiled with -rdc, not a kernel
        # the cubin's call graph attributes every function's spills
        res = replace(with_callee_spills(res, binary.calls, called), unattributed_spills=(),
                      before_link=False)  # and what the driver loads is read from the cubin
        entry = bounds.get(name)
        if linked:
            res = replace(res, registers_per_thread=k.registers, barriers=k.barriers,
                          static_shared_memory=static_shared_from_cubin(k, binary.arch, 1024),
                          stack_frame_bytes=k.stack_frame_bytes, linked=True)
        out[name] = replace(res, source=label, max_threads_per_block=k.max_threads,
                            min_blocks_per_sm=entry.min_blocks if entry else None,
                            cluster_dims=k.cluster_dims, loop_mix=mixes.get(name))
    return out


_EXTERN_C = re.compile(r'\b(extern\s*"C(?:\+\+)?")(?=[A-Za-z_])')


def _nvrtc_ptx(c: Compiler, build: Build, text: str) -> tuple[str, dict[str, str]]:
    """PTX from NVRTC, and the mangled name of every name expression. NVRTC runs in a child
    process (nvrtc_child.py): under the limits every tool runs with, and in parallel (one
    process's NVRTC compiles one program at a time)."""
    import json
    import sys

    dirs = (os.path.dirname(build.source), *build.include_dirs, *nvrtc_include_dirs())
    # `extern "C"__global__`: NVRTC lexes "C"__global__ as one user-defined literal, nvcc
    # reads the two tokens; the space keeps lines and NVRTC then reads it as nvcc does
    text = _EXTERN_C.sub(r"\1 ", text)
    opts = [f"--gpu-architecture=compute_{build.arch[3:]}", "-std=c++17",
            *[f"-I{d}" for d in dirs], *[f"-D{k}={v}" for k, v in build.defines],
            *nvrtc_flags(build.flags)]
    job = {"lib": c.path, "text": text, "name": build.source,
           "expressions": list(build.name_expressions), "options": opts}
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvrtc_child.py")
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        r = _run([sys.executable, "-I", "-S", child], build, c.label, cwd=tmp,
                 stdin=json.dumps(job))
    try:
        got = json.loads(r.stdout)
    except ValueError:
        raise CompileError(f"{inert(build.shown)} for {build.arch}: {c.label} gave no answer"
                           ) from None
    if "what" in got:
        raise CompileError(f"NVRTC {got['what']} failed: {inert(str(got['error']))}")
    if "log" in got:
        log = str(got["log"])
        hint = nvrtc_blocker(log, build.arch, build.rdc)
        raise CompileError(f"{inert(build.shown)} for {build.arch}: {c.label}: "
                           f"{_first_errors(log, build)}{hint}")
    return str(got["ptx"]), {str(k): str(v) for k, v in got["lowered"].items()}


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_DEP_CAP = 2000


def _not_a_device(path: str, inc: str, cur: str) -> None:
    """An #include of /dev/zero, a FIFO or a socket would feed the compiler without end
    (NVRTC runs in this process): refused before any compiler runs."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise CompileError(f"{inert(cur)}: #include {inert(inc)[:80]} is a device, FIFO "
                           "or socket, not a source file")


_INCLUDE_KIND = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)
_ABSENT_CAP = 4000


def shadow_candidates(build: Build, files: Sequence[str]) -> list[str]:
    """Paths that do not exist now and would change the build if they did: for each
    #include in the user's own files (under the source's folder or an include folder), every
    place the compiler looks before the file it found, or every such place for a header it
    found elsewhere (a header added later in an earlier include folder shadows the recorded
    one; the cache must notice). Over-approximates: both include forms search the includer's
    folder, the source's folder, then the include folders."""
    base = [os.path.dirname(build.source), *build.include_dirs]
    roots = tuple(os.path.join(d, "") for d in (*base, *map(os.path.dirname, build.link)))
    absent: set[str] = set()
    for f in dict.fromkeys(files):
        if not f.startswith(roots):
            continue
        try:
            text = Path(f).read_text(errors="replace")
        except OSError:
            continue
        for _, name in _INCLUDE_KIND.findall(text):
            for d in dict.fromkeys((os.path.dirname(f), *base)):
                p = os.path.abspath(os.path.join(d, name))
                if os.path.isfile(p):
                    break
                absent.add(p)
        if len(absent) > _ABSENT_CAP:
            break
    return sorted(absent)


def scan_includes(source: str, dirs: Sequence[str]) -> list[str]:
    """The user's files a source includes, transitively (for the cache key where the
    compiler gives no dependency output); over-approximates, never under."""
    seen: list[str] = [source]
    todo = [source]
    note_input(source)
    while todo and len(seen) < _DEP_CAP:
        cur = todo.pop()
        try:
            text = Path(cur).read_text(errors="replace")
        except OSError:
            continue
        for inc in _INCLUDE.findall(text):
            for d in (os.path.dirname(cur), *dirs):
                p = os.path.abspath(os.path.join(d, inc))
                _not_a_device(p, inc, cur)
                if os.path.isfile(p):
                    if p not in seen:
                        seen.append(p)
                        todo.append(p)
                        note_input(p)  # -o may not replace a header the build reads
                    break
    return seen


def _nvrtc_build(build: Build, c: Compiler) -> BuildOutput:
    """NVRTC to PTX, then ptxas (-c with -rdc: then device-linked like the nvcc path)."""
    log, data, ptx = _nvrtc_one(build, c)
    deps = scan_includes(build.source, [os.path.dirname(build.source), *build.include_dirs])
    if not build.rdc:
        return _combine(log, data, build, f"{c.label} {build.arch}", ptx, mix=False), deps, data, ptx
    objects = [data]
    for other in build.link:
        part = replace(build, source=other, shown=other, name_expressions=())
        more_log, more, _ = _nvrtc_one(part, c)
        log += "\n" + more_log
        objects.append(more)
        deps += scan_includes(other, [os.path.dirname(other), *build.include_dirs])
    linked = device_link(objects, build.arch, f"{inert(build.shown)} for {build.arch}")
    label = f"{c.label} -rdc device-linked {build.arch}"
    return _combine(log, linked, build, label, ptx, linked=True, mix=False), deps, linked, ptx


def _nvrtc_one(build: Build, c: Compiler) -> tuple[str, bytes, str]:
    """(ptxas log, cubin, PTX) of one source through NVRTC and ptxas."""
    text = Path(build.source).read_text(encoding="utf-8", errors="replace")
    ptx, _ = _nvrtc_ptx(c, build, text)
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        ptx_path, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        Path(ptx_path).write_text(ptx)
        extra = ["-c"] if build.rdc else []
        for f in build.flags:
            m = re.fullmatch(r"--?maxrregcount=(\d+)", f)
            if m:
                extra += ["-maxrregcount", m.group(1)]
        extra += ptxas_flags(build.flags)
        r = _run([c.ptxas, f"-arch={build.arch}", "-v", *extra, ptx_path, "-o", cubin], build,
                 f"ptxas {c.version}", cwd=tmp)
        return r.stderr + r.stdout, Path(cubin).read_bytes(), ptx


def with_names(found: Mapping[str, KernelResources]) -> dict[str, KernelResources]:
    """Kernels with their demangled names, and the functions their verdicts name (the
    callees that spill, the log's unattributed ones) demangled, in one demangler run; ptxas
    names a clone of `f` in an -rdc build `f$1`: demangled as `f`."""
    called = {c: re.sub(r"\$\d+$", "", c) for v in found.values()
              for c in (*v.spilling_callees, *v.unattributed_spills)}
    names = demangle([*(k for k, v in found.items() if not v.demangled), *called.values()])

    def shown(fns: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(names.get(called[c], c) for c in fns))

    return {k: replace(v, demangled=v.demangled or names.get(k, k),
                       spilling_callees=shown(v.spilling_callees),
                       unattributed_spills=shown(v.unattributed_spills))
            for k, v in found.items()}


def compile_build(build: Build, loop_mix: bool = True) -> dict[str, KernelResources]:
    """Every kernel of the build, by mangled name (cached; demangled names filled in).
    `loop_mix=False` leaves out the SASS loop mix (nvdisasm), which only the time model
    reads: `check` needs registers, shared memory and bounds; a later call that wants the
    mix disassembles the cached cubin then."""
    return _compile(build, loop_mix=loop_mix)[0]


def build_cubin(build: Build) -> bytes:
    """The cubin of the very build whose resources compile_build reports (one compile
    serves both: `measure` runs what `tile` ranked)."""
    return _compile(build, want=".cubin")[1] or b""


def build_ptx(build: Build) -> str:
    """The PTX of that same compile (the addresses ptxsim follows). No SASS loop mix: a
    compile made here skips nvdisasm, and one that later wants the mix reads the cached cubin."""
    return (_compile(build, want=".ptx", loop_mix=False)[1] or b"").decode(errors="replace")


def _compile(build: Build, want: str | None = None, loop_mix: bool = True,
             probe: dict[str, object] | None = None
             ) -> tuple[dict[str, KernelResources], bytes | None]:
    """A build; one whose name expressions do not compile (a template argument the launch
    deduces, `k<true, 0>` of `k<bool, int, typename T>`) is built without them: the kernels
    the code instantiates itself are then matched by their leading arguments. A compile (not
    a cache hit) fills `probe`: the translation unit's SHA-256 ("tu", nvcc without -rdc),
    "cubin" and "ptx"."""
    try:
        return _compile_once(build, want, loop_mix, probe)
    except CompileTimeout:
        raise
    except CompileError as exc:
        if not build.name_expressions:
            raise
        first = exc
    if probe is not None:
        probe.clear()  # what the retry compiles is another translation unit
    found, data = _compile_once(replace(build, name_expressions=()), want, loop_mix, probe)
    if not found:  # the code instantiates nothing itself: the instances' own error stands
        raise first
    return found, data


def compiler_of(build: Build) -> Compiler:
    """The compiler that builds this (CompilerUnavailable if none)."""
    c = compiler_for(build.arch, build.nvcc or None)
    if c is None and build.nvcc:
        got = nvcc_at(build.nvcc)
        raise CompilerUnavailable(
            f"compilers.{build.arch}: {inert(build.nvcc)} " + (
                f"is CUDA {got.version}, which does not target {build.arch}" if got else
                "is not an nvcc with ptxas beside it"))
    if c is None:
        raise CompilerUnavailable(f"no compiler targets {build.arch}: {COMPILER_HINT}")
    return c


def _cached(key: str, want: str | None, loop_mix: bool
            ) -> tuple[dict[str, KernelResources], bytes | None] | None:
    """A cache hit (with the binary asked for, and the loop mix if asked for), or None."""
    hit = _cache_load(key, loop_mix)
    if hit is None and loop_mix:  # an entry `check` wrote: disassemble its cubin now
        bare = _cache_load(key)
        try:
            cubin = (cache_dir() / f"{key}.cubin").read_bytes() if bare is not None else None
        except OSError:
            cubin = None
        if bare is None or cubin is None:
            return None
        hit = with_loop_mix(bare, cubin)
        _cache_add_mix(key, hit)
    if hit is None or want is None:
        return None if hit is None else (hit, None)
    try:
        return hit, (cache_dir() / f"{key}{want}").read_bytes()
    except OSError:
        return None  # compile again for the binary


def _compile_once(build: Build, want: str | None = None, loop_mix: bool = True,
                  probe: dict[str, object] | None = None
                  ) -> tuple[dict[str, KernelResources], bytes | None]:
    c = compiler_of(build)
    key = _key(build, c)
    hit = _cached(key, want, loop_mix)
    if hit is not None:
        return hit
    if not os.path.isfile(build.source):
        raise OccupancyError(f"{inert(build.shown)}: no such file")
    scan_includes(build.source, [os.path.dirname(build.source), *build.include_dirs])
    try:
        found, deps, cubin, ptx = (_nvcc_build(build, c, probe) if c.kind == "nvcc" else
                                   _nvrtc_build(build, c))
    except CompileTimeout:
        raise
    except CompileError as exc:  # cached like a success: same inputs, same error
        dirs = [os.path.dirname(build.source), *build.include_dirs]
        read = [f for s in (build.source, *build.link) for f in scan_includes(s, dirs)]
        _cache_store_failure(key, str(exc), read, shadow_candidates(build, read))
        raise
    for f in (*build.link, *deps):
        note_input(f)  # what the compiler read: the linked sources and every header
    found = with_names(found)
    if loop_mix:
        found = with_loop_mix(found, cubin)
    store_build(build, key, found, [build.source, *deps], cubin, ptx, loop_mix)
    if probe is not None:
        probe.update(cubin=cubin, ptx=ptx)
    return found, cubin if want == ".cubin" else ptx.encode() if want == ".ptx" else None


def store_build(build: Build, key: str, found: Mapping[str, KernelResources],
                read: Sequence[str], cubin: bytes, ptx: str, loop_mix: bool) -> None:
    """A compiled build into the cache, stale once a file it read changes or a file appears
    where its include search would now find one first."""
    _cache_store(key, found, read, cubin, ptx, shadow_candidates(build, read), mix=loop_mix)


# --- what tile, measure and check ask for ------------------------------------------------------


def arch_of(dev: Device) -> str:
    return f"sm_{dev.cc_major}{dev.cc_minor}"


def compile_resources(source: str | os.PathLike[str], arch: str,
                      defines: Mapping[str, object] | None = None, **build_args: object
                      ) -> dict[str, KernelResources]:
    """Every kernel of a .cu file compiled for `arch` (e.g. 'sm_61'), by mangled name."""
    return compile_build(make_build(source, arch, defines=defines, **build_args))  # type: ignore[arg-type]


def compile_or_estimate(source: str | os.PathLike[str], dev: Device,
                        defines: Mapping[str, object] | None = None, **build_args: object
                        ) -> dict[str, KernelResources]:
    """Compile for the device; below sm_50, where no compiler here reaches, compile for
    sm_50 and mark every figure as an estimate. No compiler at all: CompilerUnavailable."""
    build = device_build(make_build(source, arch_of(dev), defines=defines, **build_args))  # type: ignore[arg-type]
    return _estimate_label(compile_build(build), arch_of(dev), build)


def device_build(build: Build) -> Build:
    """The build for its arch (a device's), or sm_50 (an estimate) below what compilers reach."""
    if int(re.sub(r"\D", "", build.arch) or 0) >= 50 or compiler_for(build.arch) is not None:
        return build
    return replace(build, arch="sm_50", shown=build.shown)


def _estimate_label(found: dict[str, KernelResources], arch: str, build: Build
                    ) -> dict[str, KernelResources]:
    """The figures of `build` for `arch`: marked as an estimate where the build is sm_50's."""
    if build.arch == arch:
        return found
    return {k: v.with_source(f"estimate ({v.source}; no compiler targets {arch})")
            for k, v in found.items()}
