"""Hostile input, as an attacker would write it: nothing runs, nothing outside the output is
written or replaced, nothing hangs, and every failure is one `Error:` line with exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import cli_runner
from tests.cli_runner import ENV, ROOT  # ENV: this checkout's CLI, whatever the cwd

SRC = ROOT / "tests" / "fixtures" / "project" / "src" / "kernels.cu"
WALL_S = 10.0  # generous for a 2-core CI machine; the cases themselves take well under 1 s


def run(args: list[str], cwd: Path, timeout: float = WALL_S, env: dict[str, str] | None = None,
        ) -> tuple[subprocess.CompletedProcess[str], float]:
    """The real CLI, `python -m occupancy ARGS`, in a process of its own: its own cwd,
    environment (os.environ + ENV + env), stdin /dev/null, stdout and stderr pipes, exit status,
    atexit and flush at exit; a hang past timeout is killed and raises TimeoutExpired, a failure
    rather than a stuck test run. Only the interpreter's start-up and the package's imports are
    shared: the process is forked from a zygote that made them once (tests/cli_runner.py).
    The wall time returned counts from the request, not from the zygote's start."""
    cli_runner.start()
    t0 = time.monotonic()
    r = cli_runner.run_cli(args, cwd, {**os.environ, **ENV, **(env or {})}, timeout)
    return r, time.monotonic() - t0


def snapshot(d: Path) -> dict[str, tuple[int, bytes]]:
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(d))] = (p.stat().st_mtime_ns, p.read_bytes())
    return out


def one_error_line(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-500:])
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), r.stderr


def manifest(body: str, devices: str = "[a100]") -> str:
    return f"devices: {devices}\nkernels:\n{body}"


def entry(**keys: str) -> str:
    base = {"name": "k", "block": "256", "source": "k.cu"}
    base.update(keys)
    return "  - " + "\n    ".join(f"{k}: {v}" for k, v in base.items()) + "\n"


# (id, manifest text, expected text in the output) -- error verdicts, exit 2, nothing runs.
SHELL_CASES = [
    ("define value $()", manifest(entry(defines='{X: "$(touch pwned)"}')), "not allowed in a define"),
    ("define value backticks", manifest(entry(defines='{X: "`touch pwned`"}')), "not allowed"),
    ("define value ;", manifest(entry(defines='{X: "1; touch pwned"}')), "not allowed"),
    ("define name $()", manifest(entry(defines='{"X$(touch pwned)": 1}')), "not a C identifier"),
    ("define name not a string", manifest(entry(defines="{1: 2}")), "not a C identifier"),
    ("define value a list", manifest(entry(defines="{X: [1, 2]}")), "must be true/false"),
    ("flag -D$()", manifest(entry(flags='["-DX=$(touch pwned)"]')), "not allowed"),
    ("flag -o", manifest(entry(flags='["-o", "pwned"]')), "not accepted"),
    ("flag -ccbin", manifest(entry(flags='["-ccbin=/bin/sh"]')), "not accepted"),
    ("flag -Xcompiler", manifest(entry(flags='["-Xcompiler=-fplugin=x"]')), "not accepted"),
    ("flag --run", manifest(entry(flags='["--run"]')), "not accepted"),
    ("file named $()", manifest(entry(source="'k$(touch pwned).cu'")), "a compiler's shell"),
    ("cubin named --help", manifest(entry(source="null", cubin="--help").replace(
        "    source: null\n", "")), "no such file"),
]


@pytest.mark.parametrize(("text", "expect"), [c[1:] for c in SHELL_CASES],
                         ids=[c[0] for c in SHELL_CASES])
def test_nothing_from_a_manifest_reaches_a_shell(tmp_path: Path, text: str, expect: str) -> None:
    (tmp_path / "k.cu").write_text(SRC.read_text())
    (tmp_path / "k$(touch pwned).cu").write_text(SRC.read_text())
    (tmp_path / "m.yaml").write_text(text)
    before = snapshot(tmp_path)
    r, wall = run(["check", "m.yaml"], tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert expect in " ".join((r.stdout + r.stderr).split()), r.stdout + r.stderr
    assert not (tmp_path / "pwned").exists() and snapshot(tmp_path) == before
    assert wall < WALL_S


def test_a_dash_file_name_is_a_path_never_an_option(tmp_path: Path) -> None:
    (tmp_path / "--help").write_bytes(b"not a cubin")
    (tmp_path / "m.yaml").write_text(manifest("  - {name: k, block: 256, cubin: --help}\n"))
    r, _ = run(["check", "m.yaml", "--format", "json"], tmp_path)
    assert r.returncode == 2 and "not a cubin, fatbin" in r.stdout


def _names_manifest(name: str) -> str:
    import json

    return manifest(f"  - {{name: {json.dumps(name)}, block: 256, registers: 300}}\n")


INJECT = "x\n::error file=evil.yaml,line=1::pwned\x1b[2J"


@pytest.mark.parametrize("fmt", ["text", "github", "junit", "json", "sarif"])
def test_names_are_inert_in_every_format(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "m.yaml").write_text(_names_manifest(INJECT))
    r, _ = run(["check", "m.yaml", "--format", fmt], tmp_path)
    assert r.returncode == 1
    assert "\x1b" not in r.stdout
    assert not any(line.startswith("::error file=evil") for line in r.stdout.splitlines())
    if fmt == "junit":
        import xml.etree.ElementTree as ET

        ET.fromstring(r.stdout)


def test_markdown_and_html_reports_escape_names(tmp_path: Path) -> None:
    from occupancy.inputs.profiles import shipped_dir

    prof = (shipped_dir() / "v100.yaml").read_text().replace(
        'name: "Tesla V100-SXM2-16GB"', 'name: "<script>alert(1)</script>[x](javascript:alert(1))"')
    prof = prof.replace("aliases: [", "aliases: ['../../../tmp/x', ")
    (tmp_path / "evil.yaml").write_text(prof)
    (tmp_path / "rep").mkdir()
    r, _ = run(["report", "-d", "evil.yaml", "-o", "rep/r.md"], tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "rep" / "r.md").read_text()
    assert "<script>" not in text and "](javascript" not in text
    charts = list((tmp_path / "rep" / "r-charts").iterdir())
    assert charts and all(p.parent == tmp_path / "rep" / "r-charts" for p in charts)
    assert not list(Path("/tmp").glob("x-*.svg"))
    r, _ = run(["report", "-d", "evil.yaml", "-o", "rep/r.html"], tmp_path)
    html = (tmp_path / "rep" / "r.html").read_text()
    assert "<script>alert" not in html and "src=\"http" not in html


OUTPUT_CASES = [
    ("-o the manifest", ["check", "m.yaml", "-o", "m.yaml"], "an input of this run"),
    ("-o the manifest via ./", ["check", "m.yaml", "-o", "./m.yaml"], "an input of this run"),
    ("-o a directory", ["check", "m.yaml", "-o", "sub"], "a directory"),
    ("-o a FIFO", ["check", "m.yaml", "-o", "fifo"], "not a regular file"),
    ("-o /dev/full", ["check", "m.yaml", "-o", "/dev/full"], "not a regular file"),
    ("-o in a missing folder", ["check", "m.yaml", "-o", "nope/x.txt"], "does not exist"),
    ("-o too long", ["check", "m.yaml", "-o", "x" * 5000], "Error"),
    ("report over its profile", ["report", "-d", "p.yaml", "-o", "p.yaml"], "use a .html or .md"),
    ("report over the manifest", ["report", "-d", "v100", "--check", "m.yaml", "-o", "m.md"], ""),
]


@pytest.mark.parametrize(("args", "expect"), [c[1:] for c in OUTPUT_CASES],
                         ids=[c[0] for c in OUTPUT_CASES])
def test_outputs_stay_where_they_are_put(tmp_path: Path, args: list[str], expect: str) -> None:
    from occupancy.inputs.profiles import shipped_dir

    (tmp_path / "m.yaml").write_text(_names_manifest("k"))
    (tmp_path / "m.md").write_text("keep")
    (tmp_path / "p.yaml").write_text((shipped_dir() / "t4.yaml").read_text())
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "fifo")
    if args[-1] == "m.md":
        args = [*args[:-1], "m.md"]
        (tmp_path / "m.md").unlink()
        os.symlink("m.yaml", tmp_path / "m.md")  # -o names a link to the manifest
    before = snapshot(tmp_path)
    r, wall = run(args, tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert expect in r.stderr
    assert snapshot(tmp_path) == before and wall < WALL_S
    assert (tmp_path / "fifo").is_fifo()


def test_dash_is_stdout(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(_names_manifest("k"))
    r, _ = run(["check", "m.yaml", "--format", "json", "-o", "-"], tmp_path)
    assert r.stdout.startswith("{") and not (tmp_path / "-").exists()


BOUNDED = [
    ("huge block", ["calc", "-d", "v100", "-t", "1000000x1000000x1000000", "-r", "32"]),
    ("best 2**64", ["best", "-d", "v100", "--threads", str(2**64)]),
    ("400-digit smem", ["calc", "-d", "v100", "-t", "256", "--smem", "9" * 400]),
    ("5000-digit block", ["calc", "-d", "v100", "-t", "9" * 5000]),
    ("regs 10**9", ["calc", "-d", "v100", "-t", "256", "-r", str(10**9)]),
    ("profile /dev/zero", ["calc", "-d", "/dev/zero", "-t", "256"]),
    ("profile /dev/urandom", ["calc", "-d", "/dev/urandom", "-t", "256"]),
    ("profile a FIFO", ["calc", "-d", "fifo.yaml", "-t", "256"]),
    ("manifest a FIFO", ["check", "fifo.yaml"]),
    ("manifest /dev/zero", ["check", "/dev/zero"]),
    ("alias bomb", ["check", "bomb.yaml"]),
    ("45 MB profile", ["calc", "-d", "big.yaml", "-t", "256"]),
    ("huge profile numbers", ["plot", "-d", "huge.yaml"]),
    ("infinite profile numbers", ["calc", "-d", "inf.yaml", "-t", "256", "--json"]),
    ("NaN profile numbers", ["calc", "-d", "nan.yaml", "-t", "256", "--json"]),
    ("malformed record", ["report", "-d", "v100", "--measured", "rec.json", "-o", "r.md"]),
    ("record NaN", ["report", "-d", "v100", "--measured", "nan.json", "-o", "r.md"]),
    ("corrupt record list", ["report", "-d", "v100", "--measured", "list.json", "-o", "r.md"]),
    ("surrogate name", ["calc", "-d", "v100\udc80", "-t", "256"]),
]


def _hostile_files(d: Path) -> None:
    from occupancy.inputs.profiles import shipped_dir

    os.mkfifo(d / "fifo.yaml")
    (d / "bomb.yaml").write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
        "kernels: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n")
    (d / "big.yaml").write_text("# " + "x" * (45 << 20) + "\n")
    t4 = (shipped_dir() / "t4.yaml").read_text()
    (d / "huge.yaml").write_text(t4.replace("max_threads_per_sm: 1024", "max_threads_per_sm: 1000000000000"))
    (d / "inf.yaml").write_text(t4.replace("fp32_gflops: 8100.0", "fp32_gflops: .inf"))
    (d / "nan.yaml").write_text(t4.replace("dram_bandwidth_gb_s: 320.0", "dram_bandwidth_gb_s: .nan"))
    (d / "rec.json").write_text('{"results": [{"kernel": 1}], "ceilings": {}}')
    (d / "nan.json").write_text('{"device": "x", "date": "d", "driver_version": 1, "cupy_version": "c",'
                                ' "ceilings": {"copy_gb_s": NaN, "sgemm_tflops": 1}, "results": []}')
    (d / "list.json").write_text("[1, 2, 3]")


@pytest.mark.parametrize("args", [c[1] for c in BOUNDED], ids=[c[0] for c in BOUNDED])
def test_bounded_work_and_one_line_errors(tmp_path: Path, args: list[str]) -> None:
    _hostile_files(tmp_path)
    before = snapshot(tmp_path)
    r, wall = run(args, tmp_path)
    one_error_line(r)
    assert wall < WALL_S, wall
    assert snapshot(tmp_path) == before


def test_quadratic_line_finder_is_gone(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("\n" * 200_000 + "devices: [v100]\nkernels:\n  - name: k\n"
                                     "    block: 0\n    registers: 1\n")
    r, wall = run(["check", "m.yaml"], tmp_path)
    assert r.returncode == 2 and ":200004:" in " ".join(r.stdout.split()).replace(" ", ""), r.stdout
    assert wall < WALL_S


def test_dangling_profile_link_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "profs").mkdir()
    os.symlink("/nonexistent/x.yaml", tmp_path / "profs" / "gone.yaml")
    r, _ = run(["devices"], tmp_path, env={"OCCUPANCY_PROFILES": str(tmp_path / "profs")})
    assert r.returncode == 0 and "warning: skipping" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_corrupt_cache_entry_is_recompiled(tmp_path: Path) -> None:
    from occupancy.build.builds import compile_resources
    from occupancy.build.compilers import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    os.environ["OCCUPANCY_CACHE_DIR"], old = str(tmp_path), os.environ.get("OCCUPANCY_CACHE_DIR", "")
    try:
        first = compile_resources(SRC, "sm_80", include_dirs=[str(SRC.parent.parent / "include")])
        for f in (tmp_path / "builds").glob("*.json"):
            f.write_text('{"kernels": [1, 2], "deps": "x"}')
        again = compile_resources(SRC, "sm_80", include_dirs=[str(SRC.parent.parent / "include")])
    finally:
        os.environ["OCCUPANCY_CACHE_DIR"] = old
    assert again == first


def test_exit_codes_for_interrupts_pipes_and_bare_invocation(tmp_path: Path) -> None:
    r, _ = run([], tmp_path)
    assert r.returncode == 0 and "Usage:" in r.stdout and "Error" not in r.stderr
    p = subprocess.Popen([sys.executable, "-c", "import sys, occupancy.cli as c; sys.argv=['occupancy',"
                          "'devices']; c.main()"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None
    p.stdout.close()  # the reader goes away before the table is written
    err = p.stderr.read().decode() if p.stderr else ""
    p.wait(timeout=WALL_S)
    assert "Traceback" not in err and "BrokenPipe" not in err
    code = ("import sys, occupancy.cli as c\n"
            "import occupancy.inputs.profiles as p\n"
            "def boom(*a, **k): raise KeyboardInterrupt\n"
            "p.load_device = boom\n"
            "sys.argv = ['occupancy', 'calc', '-d', 'v100', '-t', '256']\nc.main()\n")
    r2 = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WALL_S)
    assert r2.returncode == 130 and r2.stderr.strip() == "Interrupted." and "Traceback" not in r2.stderr


RECORDS = [
    "{}", "[]", "null", '"x"', "1", '{"results": []}', '{"results": [], "ceilings": {}}',
    '{"device": 1, "date": "d", "driver_version": "1", "cupy_version": "c", "ceilings": {}, "results": []}',
    '{"device": "x", "date": "d", "driver_version": "1", "cupy_version": "c", '
    '"ceilings": {"copy_gb_s": "fast", "sgemm_tflops": 1}, "results": []}',
    '{"device": "x", "date": "d", "driver_version": "1", "cupy_version": "c", '
    '"ceilings": {"copy_gb_s": 1, "sgemm_tflops": 1}, "results": "many"}',
    '{"device": "x", "date": "d", "driver_version": "1", "cupy_version": "c", '
    '"ceilings": {"copy_gb_s": 1, "sgemm_tflops": 1}, "results": [{}]}',
    '{"device": "x", "date": "d", "driver_version": "1", "cupy_version": "c", '
    '"ceilings": {"copy_gb_s": 1, "sgemm_tflops": 1}, "results": [{"kernel": "k", "label": "l", '
    '"verified": "yes"}]}',
    '{"device": "x", "date": "d", "driver_version": "1", "cupy_version": "c", '
    '"ceilings": {"copy_gb_s": Infinity, "sgemm_tflops": 1}, "results": []}',
    "[" * 100000, '{"a": ' * 5000, "\xff\xfe",
]


@pytest.mark.parametrize("text", RECORDS, ids=[f"record{i}" for i in range(len(RECORDS))])
def test_malformed_measure_records(tmp_path: Path, text: str) -> None:
    (tmp_path / "rec.json").write_text(text, errors="surrogateescape")
    r, wall = run(["report", "-d", "v100", "--measured", "rec.json", "-o", "r.md"], tmp_path)
    one_error_line(r)
    assert "--measured" in r.stderr and not (tmp_path / "r.md").exists() and wall < WALL_S


def test_report_check_with_a_hostile_manifest(tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text(SRC.read_text())
    (tmp_path / "m.yaml").write_text(manifest(entry(defines='{X: "$(touch pwned)"}')))
    r, _ = run(["report", "-d", "v100", "--check", "m.yaml", "-o", "r.html"], tmp_path)
    assert "Traceback" not in r.stderr and not (tmp_path / "pwned").exists()
    html = (tmp_path / "r.html").read_text()
    assert "not allowed in a define" in html and "$(touch pwned)" in html  # shown, escaped, inert


def test_unwritable_output_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        out = "/proc/version"  # root may write anywhere ordinary: use a file nobody can replace
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        out = str(ro / "x.json")
    (tmp_path / "m.yaml").write_text(_names_manifest("k"))
    r, _ = run(["check", "m.yaml", "--format", "json", "-o", out], tmp_path)
    one_error_line(r)


@pytest.mark.slow
def test_surrogate_and_escape_in_a_kernel_name(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text('devices: [v100]\nkernels:\n  - {name: "k\\udc80\\x1b[31m",'
                                     " block: 256, registers: 300}\n")
    for fmt in ("text", "json", "junit", "github", "sarif"):
        r, _ = run(["check", "m.yaml", "--format", fmt], tmp_path)
        assert r.returncode == 1 and "Traceback" not in r.stderr and "\x1b" not in r.stdout, fmt
