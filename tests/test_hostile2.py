"""Hostile input, round 2 (issue 21): binaries, expressions, signals, leaks and stores."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from occupancy.core.errors import OccupancyError
from tests.test_hostile import ENV, ROOT, WALL_S, one_error_line, run

# A kernel that keeps nvcc's children (cicc, ptxas) busy for minutes: 50,000 dependent FMAs.
SLOW_CU = """#define A x = x * a[(x > 1.0f) ? 3 : 5] + 1.0f;
#define B A A A A A A A A A A
#define C B B B B B B B B B B
#define D C C C C C C C C C C
#define E D D D D D D D D D D
__global__ void slow(float* a) { float x = a[threadIdx.x]; E E E E E a[threadIdx.x] = x; }
"""


def _nvcc() -> None:
    from occupancy.build.compilers import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")


def _as_in_a_terminal() -> None:
    """The CLI as a foreground command: a test runner started in the background has SIGINT
    ignored, and the CLI (as Python) keeps a signal it inherits ignored."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def _procs_mentioning(text: str) -> list[str]:
    """Processes (not this one) whose command line names `text`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append(f"{d.name}: {cmd[:200]}")
    return found


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                           (signal.SIGHUP, 129)])
def test_a_signal_mid_compile_ends_the_compiler_and_its_temp_folders(
        tmp_path: Path, sig: int, code: int) -> None:
    _nvcc()
    (tmp_path / "slow.cu").write_text(SLOW_CU)
    (tmp_path / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                                     "  - {name: slow, block: 256, source: slow.cu}\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, **ENV, "TMPDIR": str(tmp), "OCCUPANCY_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.Popen([sys.executable, "-m", "occupancy", "check", "m.yaml"], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_as_in_a_terminal)
    left: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any("cicc" in c or "ptxas" in c or "cudafe" in c
                      for c in _procs_mentioning(str(tmp))):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.1)
        time.sleep(0.3)
        p.send_signal(sig)
        out, err = p.communicate(timeout=WALL_S)
        time.sleep(0.5)
        left = _procs_mentioning(str(tmp))
    finally:
        p.kill()
        time.sleep(0.2)
        for line in _procs_mentioning(str(tmp)):  # never leave them running, pass or fail
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert p.returncode == code, (p.returncode, err[-500:])
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not left, left
    assert not list(tmp.glob("occupancy-*"))


# --- 1. decompression bombs and tool limits ------------------------------------------------

FATBIN = ROOT / "tests" / "fixtures" / "small.fatbin"  # nvcc -fatbin -Xfatbin -compress-all


def _bomb(declared: int) -> bytes:
    """The small compressed fatbin, its first entry declaring `declared` bytes unpacked."""
    data = bytearray(FATBIN.read_bytes())
    struct.pack_into("<Q", data, 16 + 0x38, declared)
    return bytes(data)


def test_fatbin_sizes_are_read_from_its_headers() -> None:
    from occupancy.build.binaries import fatbin_declared_sizes

    assert fatbin_declared_sizes(FATBIN.read_bytes())[0] == 3616
    host = b"\x7fELF" + b"\0" * 100 + _bomb(6 << 30) + b"\0" * 10 + FATBIN.read_bytes()
    assert fatbin_declared_sizes(host)[0] == 6 << 30 and 3616 in fatbin_declared_sizes(host)[1:]


@pytest.mark.parametrize("where", ["resources", "manifest"])
def test_a_decompression_bomb_is_refused_before_any_tool_runs(tmp_path: Path, where: str) -> None:
    (tmp_path / "bomb.fatbin").write_bytes(_bomb(6 << 30))
    if where == "resources":
        r, wall = run(["resources", "bomb.fatbin", "--arch", "sm_80"], tmp_path)
        one_error_line(r)
        text = r.stderr
    else:
        (tmp_path / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                                         "  - {name: k, block: 256, cubin: bomb.fatbin}\n")
        r, wall = run(["check", "m.yaml"], tmp_path)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        text = r.stdout + r.stderr
    assert "declares 6,442,450,944 bytes" in " ".join(text.split()) and wall < WALL_S


def test_tools_run_under_a_memory_limit_in_their_own_group() -> None:
    from occupancy.build.run import run_tool

    r = run_tool([sys.executable, "-c", "x = bytearray(3 << 30); print(len(x))"], timeout=30,
                 memory=1 << 30)
    assert r.returncode != 0 and "MemoryError" in r.stderr
    r = run_tool([sys.executable, "-c", "import os; print(os.getpgid(0) == os.getpid())"],
                 timeout=30)
    assert r.stdout.strip() == "True"
    with pytest.raises(subprocess.TimeoutExpired):
        run_tool([sys.executable, "-c", "while True: pass"], timeout=1)


# --- 2. output injection in every renderer --------------------------------------------------

EVIL = "x\n::error file=evil,line=1::pwned\x1b]0;title\x07\u202e\u2066\u2028y"
STOP = "::stop-commands::tok"


def _profile(tmp_path: Path, name: str, fname: str = "evil.yaml") -> str:
    from occupancy.inputs.profiles import shipped_dir

    # the H200's: `tile matmul` then reads the builds the session's other tests compiled
    text = (shipped_dir() / "h200.yaml").read_text()
    text = text.replace('name: "NVIDIA H200"', f"name: {json.dumps(name)}")
    (tmp_path / fname).write_text(text.replace("aliases: [h200, h200-sxm, gh100-h200]", "aliases: []"))
    return fname


def _no_injection(text: str) -> None:
    for ch in "\x1b\x07\u202e\u2066\u2028\u2029":
        assert ch not in text, (ch, text[:300])
    assert not any(ln.lstrip().startswith("::") for ln in text.splitlines()), text[:600]


@pytest.mark.slow
@pytest.mark.parametrize("name", [EVIL, STOP], ids=["newline-ansi-bidi", "stop-commands"])
@pytest.mark.parametrize("cmd", [["calc", "-t", "256"], ["best"], ["plot"], ["tile", "matmul"],
                                 ["devices", "show"]])
def test_profile_names_are_inert_in_text_output(tmp_path: Path, name: str, cmd: list[str]) -> None:
    f = _profile(tmp_path, name)
    args = [*cmd, f] if cmd[0] == "devices" else [cmd[0], "-d", f, *cmd[1:]]
    r, _ = run(args, tmp_path, timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-500:]
    _no_injection(r.stdout)


@pytest.mark.parametrize("fmt", ["text", "junit"])
def test_kernel_and_device_names_are_inert_in_check(tmp_path: Path, fmt: str) -> None:
    _profile(tmp_path, STOP, "stop.yaml")
    (tmp_path / "m.yaml").write_text(
        "devices: [stop.yaml]\nkernels:\n"
        f"  - {{name: {json.dumps(STOP)}, block: 256, registers: 300}}\n"
        f"  - {{name: {json.dumps(EVIL)}, block: 256, registers: 300}}\n")
    r, _ = run(["check", "m.yaml", "--format", fmt], tmp_path)
    assert r.returncode == 1, r.stderr
    _no_injection(r.stdout)
    r, _ = run(["check", "m.yaml", "--format", fmt, "-o", "out.txt"], tmp_path)
    _no_injection((tmp_path / "out.txt").read_text())


def test_the_terminal_stream_neutralises_what_renderers_miss() -> None:
    from io import StringIO

    from occupancy.inputs.safety import InertLines

    buf = StringIO()
    s = InertLines(buf)
    s.write("ok\n  ::error::x\u202e\n")
    s.write("::warn")
    s.write("ing::y ::mid\n")
    _no_injection(buf.getvalue())
    assert "::mid" in buf.getvalue()


# --- 3. a file that is not a profile is not echoed ------------------------------------------

SECRET = "root:$6$saltsalt$0123456789abcdefSECRETHASH:20228:0:99999:7:::\n" \
         "daemon:*:20228:0:99999:7:::\nalice:$6$x$ANOTHERSECRET:1:0:99999:7:::\n"


@pytest.mark.parametrize("how", ["calc -d", "devices: [...]", "extends:", "check"])
def test_a_file_that_is_not_a_profile_is_not_echoed(tmp_path: Path, how: str) -> None:
    (tmp_path / "shadow").write_text(SECRET)
    secret = str(tmp_path / "shadow")
    if how == "calc -d":
        args = ["calc", "-d", secret, "-t", "256"]
    elif how == "extends:":
        (tmp_path / "p.yaml").write_text(f"extends: {secret}\n")
        args = ["calc", "-d", "p.yaml", "-t", "256"]
    else:
        (tmp_path / "m.yaml").write_text(f"devices: [{secret}]\nkernels:\n"
                                         "  - {name: k, block: 256, registers: 32}\n")
        args = ["check", secret if how == "check" else "m.yaml"]
    r, _ = run(args, tmp_path)
    text = r.stdout + r.stderr
    assert r.returncode == 2 and "Traceback" not in text, text
    assert "SECRET" not in text and "daemon" not in text and "alice" not in text, text
    assert "saltsalt" not in text, text


# --- 8. user profiles extending user profiles -----------------------------------------------


def test_a_chain_of_user_profiles_works(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text('extends: b\nname: "GPU A"\nsm_count: 50\n')
    (tmp_path / "b.yaml").write_text('extends: a100\nname: "GPU B"\nsm_count: 60\n')
    env = {"OCCUPANCY_PROFILES": str(tmp_path)}
    r, _ = run(["calc", "-d", "a", "-t", "256", "--json"], tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["device_name"] == "GPU A"
    r, _ = run(["devices"], tmp_path, env=env)
    assert r.returncode == 0 and "GPU A" in r.stdout and "GPU B" in r.stdout, r.stderr


def test_a_cycle_of_user_profiles_is_one_error_and_devices_still_works(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text('extends: b\nname: "GPU A"\n')
    (tmp_path / "b.yaml").write_text('extends: a\nname: "GPU B"\n')
    env = {"OCCUPANCY_PROFILES": str(tmp_path)}
    for args in (["calc", "-d", "a", "-t", "256"], ["calc", "-d", "b.yaml", "-t", "256"]):
        r, _ = run(args, tmp_path, env=env)
        one_error_line(r)
        assert "cycle" in r.stderr and "recursion" not in r.stderr
    r, _ = run(["devices"], tmp_path, env=env)
    assert r.returncode == 0 and "a100" in r.stdout and "Traceback" not in r.stderr
    r, _ = run(["calc", "-d", "v100", "-t", "256"], tmp_path, env=env)
    assert r.returncode == 0 and r.stderr == ""


# --- 4, 5, 6, 11: tuning manifests: bounded work, function names, expressions ---------------

TUNE_CU = "template <int T> __global__ void k(float* a, int n) { a[threadIdx.x] *= T + n; }\n"


def _tune(tmp_path: Path, **keys: str) -> str:
    base = {"name": "k", "source": "k.cu", "function": "k<T>", "space": "{T: [1, 2]}",
            "problem": "{N: 64}", "block": "[32]", "grid": "[1]",
            "args": "[{array: A, dtype: float32, shape: [N], output: true}, N]"}
    base.update(keys)
    (tmp_path / "k.cu").write_text(TUNE_CU)
    body = "  - " + "\n    ".join(f"{k}: {v}" for k, v in base.items() if v is not None)
    (tmp_path / "t.yaml").write_text(f"devices: [a100]\nkernels:\n{body}\n")
    return "t.yaml"


def _tile_error(tmp_path: Path, expect: str, *extra: str, **keys: str) -> str:
    r, wall = run(["tile", _tune(tmp_path, **keys), "--kernel", "k", "-d", "a100", *extra],
                  tmp_path)
    one_error_line(r)
    assert expect in r.stderr, r.stderr
    assert wall < WALL_S
    return r.stderr


def test_distinct_compiles_are_bounded(tmp_path: Path) -> None:
    vals = ", ".join(str(i) for i in range(1, 101))
    err = _tile_error(tmp_path, "--max-compiles", space=f"{{T: [1], V: [{vals}]}}",
                      defines="{X: V}")
    assert "100 separate compiles" in err and "over 64" in err


def test_instances_per_compile_are_bounded(tmp_path: Path) -> None:
    """Template instances are built 24 to a compile: 1,000 of them are 42 compiles, over a
    limit of 20, refused before any compiler runs."""
    vals = ", ".join(str(i) for i in range(1, 1001))
    err = _tile_error(tmp_path, "--max-compiles", "--max-compiles", "20", space=f"{{T: [{vals}]}}")
    assert "42 separate compiles" in err and "24 template instances" in err and "over 20" in err


def test_the_work_limits_can_be_raised(tmp_path: Path) -> None:
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.bounds import WorkLimits
    from occupancy.tune.spaces import points

    vals = ", ".join(str(i) for i in range(1, 301))
    spec = load_tuning(str(tmp_path / _tune(tmp_path, space=f"{{T: [{vals}]}}")), "k")
    assert len(points(spec)[0]) == 300  # 13 compiles of 24 instances
    with pytest.raises(OccupancyError, match="30 separate compiles"):
        points(spec, limits=WorkLimits(compiles=20, instances=10))
    assert len(points(spec, limits=WorkLimits(compiles=30, instances=10))[0]) == 300


@pytest.mark.parametrize(("keys", "expect"), [
    ({"space": "{T: [1], W: [abc]}", "defines": "{X: W * 3000000000}"}, "used as a number"),
    ({"space": "{T: [1], W: ['%999999999d']}", "defines": "{X: W % 1}"}, "used as a number"),
    ({"space": "{T: [1], W: [abc]}", "restrict": "['W < 3']"}, "compares a word"),
    ({"block": '["1e999"]'}, "infinite"),
    ({"grid": '["ceil(1e308)"]'}, "infinite or over 2^62"),
    ({"grid": '["ceil(1e18 * 1e18)"]'}, "over 2^62"),
    ({"grid": '["floor(N / 0.0)"]'}, "divides by zero"),
    ({"block": '["max(T)"]'}, "two or more numbers"),
    ({"block": '["(-8) ** 0.5"]'}, "complex"),
    ({"block": '["2 ** 0.5"]'}, "not a whole number"),
    ({"work": '{flops: "1e18 * 1e18"}'}, "over 2^62"),
], ids=["word*huge", "word%", "word<3", "1e999", "ceil-huge", "ceil-product", "div0", "max1", "complex",
        "not-whole", "work-huge"])
def test_expression_values_are_checked(tmp_path: Path, keys: dict[str, str], expect: str) -> None:
    _tile_error(tmp_path, expect, **keys)


def test_reference_transpose_of_a_scalar_is_refused(tmp_path: Path) -> None:
    _tile_error(tmp_path, "not an array", reference='"N.T"')


@pytest.mark.parametrize("function", [
    '"k<T>\\n#include \\"/dev/zero\\""', '"k<T>; int x"', '"k<T> // c"', '"k<T>{}"',
    '"#define k"', '"k<T>\\u2028"', '"k<T)>"', '"ns::\\nk<T>"'])
def test_function_is_a_cpp_name_before_it_reaches_a_file(tmp_path: Path, function: str) -> None:
    _tile_error(tmp_path, "not a C++ name", function=function)
    (tmp_path / "m.yaml").write_text("devices: [a100]\nkernels:\n  - {name: k, block: 256, "
                                     f"source: k.cu, function: {function}}}\n")
    r, _ = run(["check", "m.yaml"], tmp_path)
    assert r.returncode == 2 and "not a C++ name" in " ".join((r.stdout + r.stderr).split())


def test_a_word_of_the_space_cannot_break_out_of_the_template_arguments(tmp_path: Path) -> None:
    _tile_error(tmp_path, "not a C++ name", space="{T: [1, '2 /* x']}")


def test_cpp_names_that_are_fine() -> None:
    from occupancy.inputs.safety import check_function

    for ok in ("k", "ns::k", "::ns::k<64, float>", "k<(T > 4), unsigned int, 2 * T>",
               "_Z3fooPf", "k<T, ns::Tag<3>>"):
        assert check_function(ok, "f") == ok


# --- 9. stores are inputs -------------------------------------------------------------------

_KEY = "k|N=64|NVIDIA A100 SXM4 40GB|8.0"


@pytest.mark.parametrize("entry", [
    '{"params": {"T": 1}, "median_ms": "x"}', '{"params": {"T": 1}, "median_ms": null}',
    '{"params": {"T": 1}, "median_ms": [1]}', '{"params": {"T": 1}, "median_ms": NaN}',
    '{"params": {"T": 1}, "median_ms": Infinity}', '{"params": {"T": NaN}, "median_ms": 1}',
    '{"params": {"T": [1]}, "median_ms": 1}', '{"params": 3, "median_ms": 1}', '[]',
    '{"params": {"T": 1}, "median_ms": 1, "p90_ms": -Infinity}',
], ids=["str", "null", "list", "nan", "inf", "param-nan", "param-list", "params-int", "list",
        "p90-inf"])
def test_a_store_is_validated_like_any_input(tmp_path: Path, entry: str) -> None:
    (tmp_path / "s.json").write_text(f'{{"entries": {{"{_KEY}": {entry}}}}}')
    for extra in ([], ["--json"]):
        r, _ = run(["tile", _tune(tmp_path), "--kernel", "k", "-d", "a100", "--store", "s.json",
                    *extra], tmp_path, timeout=60)
        one_error_line(r)
        assert "--store" in r.stderr and "NaN" not in r.stdout and "Infinity" not in r.stdout


# --- 10. output streams that cannot take the output ------------------------------------------


@pytest.mark.parametrize("how", ["/dev/full", "closed"])
@pytest.mark.parametrize("args", [["calc", "-d", "a100", "-t", "256"],
                                  ["calc", "-d", "a100", "-t", "256", "--json"], ["devices"],
                                  ["check", "m.yaml", "--format", "junit"], ["check", "m.yaml"]],
                         ids=["calc", "calc-json", "devices", "check-junit", "check-text"])
def test_a_full_or_closed_stdout_is_one_error(tmp_path: Path, how: str, args: list[str]) -> None:
    (tmp_path / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                                     "  - {name: k, block: 256, registers: 32}\n")
    cmd = [sys.executable, "-m", "occupancy", *args]
    env = {**os.environ, **ENV}
    if how == "/dev/full":
        with open("/dev/full", "w") as full:
            r = subprocess.run(cmd, cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True,
                               timeout=WALL_S, env=env)
    else:
        r = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *cmd], cwd=tmp_path,
                           stderr=subprocess.PIPE, text=True, timeout=WALL_S, env=env)
    assert r.returncode == 2, (r.returncode, r.stderr[-600:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot write"), r.stderr[-600:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yaml"]


# --- 11. smaller ones ------------------------------------------------------------------------


def test_a_ptx_jit_error_names_the_file_once(tmp_path: Path) -> None:
    _nvcc()
    (tmp_path / "bad.ptx").write_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                                      ".visible .entry k()\n{\n  bogus_instruction;\n  ret;\n}\n")
    r, _ = run(["resources", "bad.ptx", "--arch", "sm_80"], tmp_path, timeout=60)
    one_error_line(r)
    assert r.stderr.count("bad.ptx") <= 2 and "bbad" not in r.stderr, r.stderr
    assert "bogus_instruction" in r.stderr or "ptxas" in r.stderr, r.stderr


def test_nvcc_keeps_a_comma_in_a_define_value(tmp_path: Path) -> None:
    _nvcc()
    from occupancy.build.builds import compile_resources

    (tmp_path / "k.cu").write_text(
        "template <int A, int B> struct P { enum { v = A + B }; };\n"
        "__global__ void k(int* a) { a[0] = P<X>::v; }\n")
    os.environ["OCCUPANCY_CACHE_DIR"], old = str(tmp_path / "c"), os.environ.get(
        "OCCUPANCY_CACHE_DIR", "")
    try:
        found = compile_resources(tmp_path / "k.cu", "sm_80", defines={"X": "1,2"})
    finally:
        os.environ["OCCUPANCY_CACHE_DIR"] = old
    assert any("k" in name for name in found)


def _many_entries(n: int) -> str:
    return ".version 8.0\n.target sm_80\n.address_size 64\n" + "".join(
        f".visible .entry k{i}(.param .u64 p)\n{{\n  ret;\n}}\n" for i in range(n))


def test_ptx_entries_are_bounded_before_ptxas_runs(tmp_path: Path) -> None:
    (tmp_path / "many.ptx").write_text(_many_entries(20_000))
    r, wall = run(["resources", "many.ptx", "--arch", "sm_80"], tmp_path)
    one_error_line(r)
    assert "20,000 .entry kernels, over 1,000" in r.stderr and "OCCUPANCY_MAX_PTX_ENTRIES" in r.stderr
    assert wall < WALL_S


def test_the_ptx_entry_limit_can_be_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from occupancy.build.binaries import check_ptx_size
    from occupancy.core.errors import OccupancyError

    with pytest.raises(OccupancyError):
        check_ptx_size(_many_entries(1_001))
    monkeypatch.setenv("OCCUPANCY_MAX_PTX_ENTRIES", "2000")
    check_ptx_size(_many_entries(1_001))


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_an_include_of_a_device_is_refused_before_compiling(tmp_path: Path, target: str) -> None:
    _nvcc()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "k.cu").write_text(f'#include "{target}"\n__global__ void k() {{}}\n')
    (tmp_path / "m.yaml").write_text("devices: [a100]\nkernels:\n"
                                     "  - {name: k, block: 256, source: k.cu}\n")
    r, wall = run(["check", "m.yaml"], tmp_path, env={"OCCUPANCY_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 2 and "a device, FIFO or socket" in " ".join(r.stdout.split())
    assert wall < WALL_S
