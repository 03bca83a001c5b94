"""The round-2 attacks of issue 21 for bench/hostile.py: each case writes its files into a
fresh folder and returns the command line; signal runs compile a slow kernel and are
interrupted mid-compile."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
A100 = (ROOT / "profiles" / "a100.yaml").read_text()
FATBIN = (ROOT / "tests" / "fixtures" / "small.fatbin").read_bytes()
SECRET = "root:$6$saltsalt$SECRETHASH:20228:0:99999:7:::\nalice:$6$x$ANOTHERSECRET:1:0:9:7:::\n"
EVIL = "x\n::error file=evil,line=1::PWNED\x1b]0;title\x07\u202e\u2066\u2028y"
STOP = "::stop-commands::tok"
TUNE_CU = "template <int T> __global__ void k(float* a, int n) { a[threadIdx.x] *= T + n; }\n"
SLOW_CU = """#define A x = x * a[(x > 1.0f) ? 3 : 5] + 1.0f;
#define B A A A A A A A A A A
#define C B B B B B B B B B B
#define D C C C C C C C C C C
#define E D D D D D D D D D D
__global__ void slow(float* a) { float x = a[threadIdx.x]; E E E E E a[threadIdx.x] = x; }
"""

Case = tuple[str, Callable[[Path], list[str]]]


def _profile(d: Path, name: str, fname: str = "evil.yaml") -> str:
    text = A100.replace('name: "NVIDIA A100 SXM4 40GB"', f"name: {json.dumps(name)}")
    (d / fname).write_text(text.replace("aliases: [a100, a100-sxm4, ga100]", "aliases: []"))
    return fname


def _bomb(d: Path) -> None:
    data = bytearray(FATBIN)
    struct.pack_into("<Q", data, 16 + 0x38, 6 << 30)
    (d / "bomb.fatbin").write_bytes(bytes(data))


def _tune(d: Path, **keys: str) -> str:
    base = {"name": "k", "source": "k.cu", "function": "k<T>", "space": "{T: [1, 2]}",
            "problem": "{N: 64}", "block": "[32]", "grid": "[1]",
            "args": "[{array: A, dtype: float32, shape: [N], output: true}, N]"}
    base.update(keys)
    (d / "k.cu").write_text(TUNE_CU)
    body = "  - " + "\n    ".join(f"{k}: {v}" for k, v in base.items())
    (d / "t.yaml").write_text(f"devices: [a100]\nkernels:\n{body}\n")
    return "t.yaml"


def _tile(**keys: str) -> Callable[[Path], list[str]]:
    return lambda d: ["tile", _tune(d, **keys), "--kernel", "k", "-d", "a100", "--json"]


def _store(entry: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        key = "k|N=64|NVIDIA A100 SXM4 40GB|8.0"
        (d / "s.json").write_text(f'{{"entries": {{"{key}": {entry}}}}}')
        return ["tile", _tune(d), "--kernel", "k", "-d", "a100", "--store", "s.json", "--json"]
    return make


def _names(cmd: list[str], name: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        f = _profile(d, name)
        return [*cmd, f] if cmd[0] == "devices" else [cmd[0], "-d", f, *cmd[1:]]
    return make


def _check_names(fmt: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        _profile(d, STOP, "stop.yaml")
        (d / "m.yaml").write_text(
            "devices: [stop.yaml]\nkernels:\n"
            f"  - {{name: {json.dumps(STOP)}, block: 256, registers: 300}}\n"
            f"  - {{name: {json.dumps(EVIL)}, block: 256, registers: 300}}\n")
        return ["check", "m.yaml", "--format", fmt]
    return make


def _shadow(how: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        (d / "shadow").write_text(SECRET)
        if how == "calc":
            return ["calc", "-d", str(d / "shadow"), "-t", "256"]
        if how == "extends":
            (d / "p.yaml").write_text(f"extends: {d / 'shadow'}\n")
            return ["calc", "-d", "p.yaml", "-t", "256"]
        if how == "devices":
            (d / "m.yaml").write_text(f"devices: [{d / 'shadow'}]\nkernels:\n"
                                      "  - {name: k, block: 256, registers: 32}\n")
            return ["check", "m.yaml"]
        return ["check", str(d / "shadow")]
    return make


def _manifest_cubin(d: Path) -> list[str]:
    _bomb(d)
    (d / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                              "  - {name: k, block: 256, cubin: bomb.fatbin}\n")
    return ["check", "m.yaml"]


def _include(target: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        if target == "fifo":
            os.mkfifo(d / "fifo")
        (d / "k.cu").write_text(f'#include "{target}"\n__global__ void k() {{}}\n')
        (d / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                                  "  - {name: k, block: 256, source: k.cu}\n")
        return ["check", "m.yaml"]
    return make


def _ptx(d: Path) -> list[str]:
    (d / "many.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n" + "".join(
        f".visible .entry k{i}(.param .u64 p)\n{{\n  ret;\n}}\n" for i in range(20_000)))
    return ["resources", "many.ptx", "--arch", "sm_80"]


def _chain(cycle: bool) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        (d / "profs").mkdir()
        (d / "profs" / "a.yaml").write_text('extends: b\nname: "GPU A"\nsm_count: 50\n')
        (d / "profs" / "b.yaml").write_text('extends: a\nname: "GPU B"\n' if cycle else
                                            'extends: a100\nname: "GPU B"\n')
        return ["calc", "-d", "a", "-t", "256"]
    return make


def _comma(d: Path) -> list[str]:
    (d / "k.cu").write_text("template <int A, int B> struct P { enum { v = A + B }; };\n"
                            "__global__ void k(int* a) { a[0] = P<X>::v; }\n")
    (d / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                              "  - {name: k, block: 256, source: k.cu, defines: {X: '1,2'}}\n")
    return ["check", "m.yaml", "--format", "json"]


def _seq(n: int) -> str:
    return ", ".join(str(i) for i in range(1, n + 1))


CASES: list[Case] = [
    ("fatbin bomb: resources", lambda d: (_bomb(d), ["resources", "bomb.fatbin"])[1]),
    ("fatbin bomb: manifest cubin", _manifest_cubin),
    *[(f"name {label}: {' '.join(cmd)}", _names(cmd, name))
      for label, name in (("newline/ANSI/bidi", EVIL), ("stop-commands", STOP))
      for cmd in (["calc", "-t", "256"], ["best"], ["plot"], ["tile", "matmul"],
                  ["devices", "show"], ["report", "-o", "r.md"])],
    *[(f"check names --format {f}", _check_names(f))
      for f in ("text", "junit", "json", "sarif", "github")],
    *[(f"not a profile: {h}", _shadow(h)) for h in ("calc", "extends", "devices", "check")],
    ("100 compiles", _tile(space=f"{{T: [1], V: [{_seq(100)}]}}", defines="{X: V}")),
    # 1,000 template instances are 42 compiles of 24: over a limit of 20, refused unbuilt
    ("1,000 instances", lambda d: [*_tile(space=f"{{T: [{_seq(1000)}]}}")(d), "--max-compiles", "20"]),
    ("word * 3e9", _tile(space="{T: [1], W: [abc]}", defines="{X: W * 3000000000}")),
    ("'%999999999d' % 1", _tile(space="{T: [1], W: ['%999999999d']}", defines="{X: W % 1}")),
    ("word < 3", _tile(space="{T: [1], W: [abc]}", restrict="['W < 3']")),
    ("1e999", _tile(block='["1e999"]')),
    ("ceil(1e308)", _tile(grid='["ceil(1e308)"]')),
    ("floor(N / 0.0)", _tile(grid='["floor(N / 0.0)"]')),
    ("max(T)", _tile(block='["max(T)"]')),
    ("(-8) ** 0.5", _tile(block='["(-8) ** 0.5"]')),
    ("work 1e18 * 1e18", _tile(work='{flops: "1e18 * 1e18"}')),
    ("reference N.T", _tile(reference='"N.T"')),
    *[(f"function {f}", _tile(function=f)) for f in (
        '"k<T>\\n#include \\"/dev/zero\\""', '"k<T>; int x"', '"k<T> // c"', '"#define k"')],
    ("space word /*", _tile(space="{T: [1, '2 /* x']}")),
    *[(f"store {e}", _store(e)) for e in (
        '{"params": {"T": 1}, "median_ms": "x"}', '{"params": {"T": 1}, "median_ms": null}',
        '{"params": {"T": 1}, "median_ms": [1]}', '{"params": {"T": 1}, "median_ms": NaN}',
        '{"params": {"T": 1}, "median_ms": Infinity}')],
    ("profile cycle", _chain(True)),
    ("profile chain", _chain(False)),
    ("20,000-entry PTX", _ptx),
    ("#include /dev/zero", _include("/dev/zero")),
    ("#include a FIFO", _include("fifo")),
    ("define with a comma", _comma),
    # constants: (measure fills __constant__ symbols from .npy files): what tile reads of them
    ("constants: 17 symbols", _tile(constants="{" + ", ".join(f"t{i}: a.npy" for i in range(17))
                                    + "}")),
    ("constants: a name with a shell", _tile(constants="{'a;touch PWNED': a.npy}")),
    ("constants: a FIFO", lambda d: (os.mkfifo(d / "f.npy"), _tile(constants="{t: f.npy}")(d))[1]),
    ("constants: a link to /dev/zero",
     lambda d: (os.symlink("/dev/zero", d / "z.npy"), _tile(constants="{t: z.npy}")(d))[1]),
    ("constants: a 300-character name", _tile(constants="{t: " + "x" * 300 + ".npy}")),
]
STDOUT = {"/dev/full": ["calc", "-d", "a100", "-t", "256", "--json"], "closed": ["devices"]}


def injected(text: str) -> bool:
    """A workflow command at a line start, or a raw escape, bidi or line-separator char."""
    return any(ch in text for ch in "\x1b\x07\u202e\u2066\u2028\u2029") or any(
        ln.lstrip().startswith("::") for ln in text.splitlines())


def _procs_mentioning(text: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if text.encode() in (d / "cmdline").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def _as_in_a_terminal() -> None:
    """A foreground command: a bench started in the background (nohup, &) has SIGINT
    ignored, and the CLI keeps a signal it inherits ignored, as Python does."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def signal_run(d: Path, sig: int, env: dict[str, str]) -> dict[str, object]:
    """Compile a slow kernel, send `sig` once a compiler child runs; what is left after."""
    (d / "slow.cu").write_text(SLOW_CU)
    (d / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                              "  - {name: slow, block: 256, source: slow.cu}\n")
    tmp = d / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([sys.executable, "-m", "occupancy", "check", "m.yaml"], cwd=d,
                         env={**env, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_a_terminal)
    deadline = time.monotonic() + 60
    while not _procs_mentioning(str(tmp)) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    time.sleep(0.5)
    left = _procs_mentioning(str(tmp))
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return {"signal": signal.Signals(sig).name, "exit": p.returncode, "children_left": len(left),
            "temp_dirs_left": len(list(tmp.glob("occupancy-*"))),
            "traceback": "Traceback" in err, "stderr": err.strip()[-200:]}
