"""Which nvcc flags a manifest may give, and how each compiler spells them.

A manifest's flags are copied from real builds (CMake's CMAKE_CUDA_FLAGS, Makefiles), so
they are taken as a build writes them: `-Xcompiler -fopenmp` as two tokens or one,
`-Werror all-warnings`, `-Wno-deprecated-gpu-targets`, `-Xlinker ...`. What is accepted is
a whitelist: flags that shape device code are passed on; flags for the host compiler pass
only where each option is one that neither runs a program nor writes or reads a file the
build did not ask for (no -B, -o, -fplugin, @file, -specs, -wrapper, -Wl,/-Wp,); link-time
host flags are dropped (no host link happens). Nothing reaches a shell.

NVRTC takes fewer flags than nvcc: each rule gives NVRTC's spelling, or None where NVRTC has
no such option and the flag does not change the device code it compiles (dropped there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import check_define_name, check_flag_token, define_value, inert

_Spell = Callable[[re.Match[str]], str | None]

_HOST_OPT = re.compile(
    r"-(?:O[0-3sgz]?|g[0-3]?|pthread|fopenmp|fPIC|fpic|fPIE|fpie|m[A-Za-z0-9_.=+-]+|"
    r"std=[\w+]+|W(?![lap](?:,|$))[A-Za-z0-9_=+-]*|w|pedantic|f[A-Za-z0-9_.=+-]+|D[A-Za-z_]\w*(?:=[\w.+-]*)?|"
    r"U[A-Za-z_]\w*)")
# -f options that load code, write files beside the build, or read a profile
_HOST_F_REFUSED = re.compile(r"-f(?:no-)?(?:plugin|dump|profile|auto-profile|stack-usage|"
                             r"callgraph-info|opt-info|save-optimization-record|test-coverage|"
                             r"coverage|compare-debug|create-profile|cs-profile|record-|"
                             r"debug-prefix|file-prefix|macro-prefix|diagnostics-format|"
                             r"lto|sanitize|instrument|patchable|xray|branch-probabilities|"
                             r"modules|module-|embed|env|save-temps|report-bug|crash)")
_WERROR_KINDS = ("all-warnings|cross-execution-space-call|reorder|default-stream-launch|"
                 "missing-launch-bounds|ext-lambda-captures-this|deprecated-declarations")

# nvcc flags a manifest may give, with their NVRTC spelling (None: nvcc only, dropped there).
FLAG_RULES: list[tuple[re.Pattern[str], _Spell]] = [
    (re.compile(r"--?std=(c\+\+(?:03|11|14|17|20))"), lambda m: f"-std={m.group(1)}"),
    (re.compile(r"--?use_fast_math"), lambda m: "--use_fast_math"),
    (re.compile(r"--?maxrregcount=(\d{1,3})"), lambda m: f"--maxrregcount={m.group(1)}"),
    (re.compile(r"(?:-rdc|--relocatable-device-code)=(true|false)"),
     lambda m: f"-rdc={m.group(1)}"),
    (re.compile(r"-dc"), lambda m: "-rdc=true"),
    (re.compile(r"(?:-G|--device-debug)"), lambda m: "-G"),
    (re.compile(r"(?:-lineinfo|--generate-line-info)"), lambda m: "-lineinfo"),
    (re.compile(r"--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)"),
     lambda m: f"--{m.group(1)}={m.group(2)}"),
    # NVRTC has neither: a relaxed-constexpr call compiles there only as a device function,
    # and a __device__ lambda not at all (the error then names that, not the flag)
    (re.compile(r"--?(?:expt-relaxed-constexpr)"), lambda m: None),
    (re.compile(r"--?(?:expt-extended-lambda|extended-lambda)"), lambda m: None),
    (re.compile(r"--?extra-device-vectorization"), lambda m: "--extra-device-vectorization"),
    (re.compile(r"--?restrict"), lambda m: "--restrict"),
    (re.compile(r"-O[0-3]"), lambda m: None),  # host optimisation: no effect on device code
    (re.compile(r"(?:-w|--disable-warnings)"), lambda m: "-w"),
    (re.compile(r"(?:-Xptxas=|--ptxas-options=)(-O[0-3]|-dlcm=(?:ca|cg)|-dscm=(?:cg|cs|wt)|"
                r"--allow-expensive-optimizations=(?:true|false)|-warn-spills|-warn-lmem-usage|"
                r"-v|--verbose)"),
     lambda m: None),
    # host-side and diagnostics flags: they cannot change the device code's resources
    (re.compile(r"-W(?:no-)?(?:deprecated-gpu-targets|deprecated-declarations|reorder|"
                r"default-stream-launch|missing-launch-bounds|ext-lambda-captures-this)"),
     lambda m: None),
    (re.compile(rf"--?Werror=(?:{_WERROR_KINDS})(?:,(?:{_WERROR_KINDS}))*"), lambda m: None),
    (re.compile(r"(?:-Xcudafe=)?--?diag[_-](?:suppress|warning|error)=\d{1,5}(?:,\d{1,5})*"),
     lambda m: None),
    (re.compile(r"-Xcudafe=--display_error_number"), lambda m: None),
    (re.compile(r"--default-stream=(?:legacy|null|per-thread)"), lambda m: None),
    (re.compile(r"-Xcompiler=(.+)"), lambda m: None),  # items checked by _host_items
    (re.compile(r"-Xlinker=(.+)"), lambda m: None),  # no host link happens: dropped
    (re.compile(r"-l[A-Za-z0-9_.+-]+|-L[^\s]+"), lambda m: None),  # link libraries: dropped
]
FLAG_HELP = ("-std=c++17, --use_fast_math, -maxrregcount=N, -rdc=true, -dc, -G, -lineinfo, "
             "--ftz/--prec-div/--prec-sqrt/--fmad=true|false, --expt-relaxed-constexpr, "
             "--extended-lambda, --restrict, -O0..3, -Xptxas -O0..3|-dlcm=ca|cg, "
             "-Wno-deprecated-gpu-targets, -Werror all-warnings, --diag-suppress=N, "
             "-Xcompiler -fopenmp (host options that run nothing and write nothing), -Xlinker X, "
             "-lLIB, -LDIR, "
             "-DNAME=VALUE, -UNAME")

# Options that take their value as the next token, and the one-token spelling they become.
_PAIRED = {"-Xcompiler": "-Xcompiler=", "--compiler-options": "-Xcompiler=",
           "-Xptxas": "-Xptxas=", "--ptxas-options": "-Xptxas=", "-Xlinker": "-Xlinker=",
           "--linker-options": "-Xlinker=", "-Werror": "-Werror=", "--Werror": "-Werror=",
           "-Xcudafe": "-Xcudafe=", "--default-stream": "--default-stream=",
           "--compiler-options=": "-Xcompiler=", "--linker-options=": "-Xlinker="}


def _tokens(flags: Sequence[object], where: str) -> list[str]:
    """Two-token forms (`-Xcompiler -fopenmp`) joined into one (`-Xcompiler=-fopenmp`)."""
    out: list[str] = []
    items = list(flags)
    i = 0
    while i < len(items):
        f = items[i]
        if not isinstance(f, str):
            raise OccupancyError(f"{where}: each flag is a string like '-std=c++17', got {f!r}")
        check_flag_token(f, where)
        if f in _PAIRED and not f.endswith("="):
            if i + 1 >= len(items) or not isinstance(items[i + 1], str):
                raise OccupancyError(f"{where}: {inert(f)} needs its value as the next flag")
            nxt = check_flag_token(str(items[i + 1]), where)
            out.append(_PAIRED[f] + nxt)
            i += 2
            continue
        for long, short in (("--compiler-options=", "-Xcompiler="), ("--linker-options=", "-Xlinker="),
                            ("--ptxas-options=", "-Xptxas=")):
            if f.startswith(long):
                f = short + f[len(long):]
        out.append(f)
        i += 1
    return out


def _host_items(flag: str, where: str) -> None:
    """Each option of -Xcompiler=a,b is one the host compiler can run without running a
    program or touching a file the build did not name."""
    for item in flag.split("=", 1)[1].split(","):
        if not _HOST_OPT.fullmatch(item) or _HOST_F_REFUSED.match(item):
            raise OccupancyError(
                f"{where}: host compiler option {inert(item)} (in {inert(flag)}) is not accepted: "
                "options that run programs, load plugins or read or write files (-B, -o, "
                "-fplugin, @file, -specs, -wrapper, -Wl,, -save-temps, -fdump-*, ...) are "
                "refused; -O, -g, -f..., -m..., -W..., -std=, -fopenmp, -pthread, -D/-U pass")


def _ptxas_items(flag: str) -> list[str]:
    """-Xptxas=-O3,-v -> ['-Xptxas=-O3', '-Xptxas=-v'] (each checked by the rule)."""
    return [f"-Xptxas={item}" for item in flag.split("=", 1)[1].split(",")]


def check_flags(flags: Sequence[object], where: str, includes: str = "include_dirs"
                ) -> tuple[tuple[str, ...], dict[str, str]]:
    """Validate manifest flags against the whitelist; -D/-U become defines (typed).
    `includes`: where include folders go instead (a manifest's key, or the CLI's -I)."""
    out: list[str] = []
    defines: dict[str, str] = {}
    for tok in _tokens(flags, where):
        for f in _ptxas_items(tok) if tok.startswith("-Xptxas=") else [tok]:
            m = re.fullmatch(r"-D([^=]*)(?:=(.*))?", f)
            if m:
                name = check_define_name(m.group(1), where)
                defines[name] = define_value(m.group(2) if m.group(2) is not None else "1", where)
                continue
            if f.startswith("-Xcompiler="):
                _host_items(f, where)
            if re.fullmatch(r"-U[A-Za-z_]\w*", f) or any(rx.fullmatch(f) for rx, _ in FLAG_RULES):
                out.append(f)
                continue
            raise OccupancyError(f"{where}: flag {inert(f)} is not accepted (flags that choose the "
                                 "arch, write files or run programs are refused); accepted: "
                                 f"{FLAG_HELP} (include folders go in {includes})")
    return tuple(out), defines


_RDC = {"-dc": True, "-rdc=true": True, "--relocatable-device-code=true": True,
        "-rdc=false": False, "--relocatable-device-code=false": False}


def is_rdc(flags: Sequence[str]) -> bool:
    """Relocatable device code: static smem and final registers come from the device link.
    nvcc takes the last of repeated -rdc values (with a warning): `-rdc=true -rdc=false`
    builds whole-program code. -dc is relocatable whatever else is said (nvcc refuses it
    beside -rdc=false)."""
    said = [_RDC[f] for f in flags if f in _RDC]
    return "-dc" in flags or (bool(said) and said[-1])


RDC_LOG_ERROR = ("a ptxas log of a relocatable compile (-rdc=true / -dc) cannot give static "
                 "shared memory or final registers: nvlink fixes them at the device link; give "
                 "the build's log with -Xnvlink -v added, the linked image as 'cubin:' (the "
                 "executable, or nvlink -arch=sm_XX OBJECTS -o linked.cubin), or 'source:'")


def nvcc_flags(flags: Sequence[str]) -> list[str]:
    """The flags as nvcc gets them: -Xptxas go through `ptxas_flags`, -Xlinker, -l and -L
    are dropped (a -cubin compile links nothing)."""
    return [f for f in flags if not f.startswith(("-Xptxas=", "-Xlinker=", "-l", "-L"))]


def ptxas_flags(flags: Sequence[str]) -> list[str]:
    """The -Xptxas options as ptxas itself takes them ('-v' is always given)."""
    return [f.split("=", 1)[1] for f in flags if f.startswith("-Xptxas=")
            and f.split("=", 1)[1] not in ("-v", "--verbose")]


def nvrtc_flags(flags: Sequence[str]) -> list[str]:
    """NVRTC's spelling of each flag; the ones NVRTC has no option for are left out."""
    out = []
    for f in flags:
        for rx, spell in FLAG_RULES:
            m = rx.fullmatch(f)
            if m:
                s = spell(m)
                if s:
                    out.append(s)
                break
        else:
            if f.startswith("-U"):
                out.append(f)
    return out
