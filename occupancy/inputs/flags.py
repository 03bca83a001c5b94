"""Compiler flags a manifest may give: a whitelist (flags that choose the arch, write files or
run programs are refused), with each flag's NVRTC spelling; -D/-U become typed defines."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import check_define_name, check_flag_token, define_value, inert

# nvcc flags a manifest may give, with their NVRTC spelling (None: nvcc only, dropped there).
FLAG_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]]] = [
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
    (re.compile(r"--?(?:expt-relaxed-constexpr)"), lambda m: "--expt-relaxed-constexpr"),
    (re.compile(r"--?(?:expt-extended-lambda|extended-lambda)"), lambda m: "--extended-lambda"),
    (re.compile(r"--?extra-device-vectorization"), lambda m: "--extra-device-vectorization"),
    (re.compile(r"--?restrict"), lambda m: "--restrict"),
    (re.compile(r"-O[0-3]"), lambda m: None),  # host optimisation: no effect on device code
    (re.compile(r"(?:-w|--disable-warnings)"), lambda m: "-w"),
    (re.compile(r"(?:-Xptxas=|--ptxas-options=)(-O[0-3]|-dlcm=(?:ca|cg)|-dscm=(?:cg|cs|wt)|"
                r"--allow-expensive-optimizations=(?:true|false)|-warn-spills|-warn-lmem-usage)"),
     lambda m: None),
]
FLAG_HELP = ("-std=c++17, --use_fast_math, -maxrregcount=N, -rdc=true, -dc, -G, -lineinfo, "
             "--ftz/--prec-div/--prec-sqrt/--fmad=true|false, --expt-relaxed-constexpr, "
             "--extended-lambda, --restrict, -O0..3, -Xptxas=-O0..3|-dlcm=ca|cg, -DNAME=VALUE, "
             "-UNAME (include folders go in include_dirs)")


def check_flags(flags: Sequence[object], where: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """Validate manifest flags against the whitelist; -D/-U become defines (typed)."""
    out: list[str] = []
    defines: dict[str, str] = {}
    for f in flags:
        if not isinstance(f, str):
            raise OccupancyError(f"{where}: each flag is a string like '-std=c++17', got {f!r}")
        check_flag_token(f, where)
        m = re.fullmatch(r"-D([^=]*)(?:=(.*))?", f)
        if m:
            name = check_define_name(m.group(1), where)
            defines[name] = define_value(m.group(2) if m.group(2) is not None else "1", where)
            continue
        if re.fullmatch(r"-U[A-Za-z_]\w*", f) or any(rx.fullmatch(f) for rx, _ in FLAG_RULES):
            out.append(f)
            continue
        raise OccupancyError(f"{where}: flag {inert(f)} is not accepted (flags that choose the "
                             f"arch, write files or run programs are refused); accepted: {FLAG_HELP}")
    return tuple(out), defines
