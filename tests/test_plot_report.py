"""`occupancy plot` and `occupancy report`: terminal, PNG/SVG, JSON, Markdown and HTML."""

from __future__ import annotations

import builtins
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from occupancy import load_device
from occupancy.cli import main
from occupancy.core.whatif import Config, sweeps

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
MEASURED = GOLDEN / "measure_h200.json"  # a fixed copy of an H200 record (bench/results)


def run(*args: str, cwd: Path | None = None) -> Any:
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(main, list(args), env={"COLUMNS": "80"})
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), env={"COLUMNS": "80"})
    finally:
        os.chdir(old)


def test_sweeps_match_the_solver_and_mark_the_current_point() -> None:
    dev = load_device("a100")
    t, r, s = sweeps(dev, Config(256, 40, 0))
    assert (t.current.x, r.current.x, s.current.x) == (256, 40, 0)
    assert t.current.occupancy == r.current.occupancy == s.current.occupancy == 0.75
    assert [p.x for p in t.points][:3] == [32, 64, 96] and t.points[-1].x == 1024
    assert len(r.points) == 256 and r.points[32].occupancy == 1.0  # <= 32 registers: 100%
    assert s.points[-1].x == dev.shared_memory_per_block_optin_bytes
    assert all(a.occupancy >= b.occupancy for a, b in zip(r.points, r.points[1:], strict=False))


def test_plot_terminal_fits_80_columns_and_spells_the_limiter() -> None:
    res = run("plot", "--device", "a100", "--threads", "256", "--regs", "40")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(x) for x in lines) <= 80
    assert sum("now " in x for x in lines) == 3
    assert "limited by registers" in lines[0] + lines[1]
    assert any(set(x.strip()) <= set("WRSBX-") and "R" in x for x in lines)
    assert "limiter: W warps, R registers" in res.stdout and "- none" in res.stdout


def test_plot_png_svg_and_json(tmp_path: Path) -> None:
    png = tmp_path / "a100.png"
    res = run("plot", "--device", "a100", "--threads", "256", "--regs", "40", "-o", str(png))
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    svg = tmp_path / "a100.svg"
    assert run("plot", "-d", "a100", "-o", str(svg)).exit_code == 0
    # written with the umask's mode, as any file the user asks for (not mkstemp's 0600)
    umask = os.umask(0)
    os.umask(umask)
    assert png.stat().st_mode & 0o777 == svg.stat().st_mode & 0o777 == 0o666 & ~umask
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f".//{ns}circle")) == 3  # the current point, in each graph
    assert len(root.findall(f".//{ns}path")) == 3
    data = json.loads(run("plot", "-d", "a100", "-t", "256", "-r", "40", "--json").stdout)
    assert [c["name"] for c in data["curves"]] == [
        "threads_per_block", "registers_per_thread", "shared_memory_per_block"]
    assert data["curves"][1]["current"] == {"x": 40, "occupancy": 0.75,
                                            "active_blocks_per_sm": 6, "limiters": ["registers"]}


def test_plot_without_matplotlib_is_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def fake(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    res = run("plot", "-d", "a100", "-o", str(tmp_path / "x.png"))
    assert res.exit_code == 2
    assert res.stderr.strip() == ("Error: PNG and PDF charts need matplotlib: pip install "
                                  "'occupancy[plot]' (or write .svg)")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["plot", "-d", "a100", "-o", "x.gif"], "use a .png, .svg or .pdf"),
    (["plot", "-d", "a100", "-r", "300"], "--regs"),
    (["report", "-d", "a100", "-o", "r.txt"], "use a .html or .md"),
    (["report", "-d", "a100", "-o", "/no/such/dir/r.html"], "does not exist"),
    (["report", "-d", "a100", "--measured", "/no/such.json", "-o", "r.html"], "--measured"),
])
def test_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    res = run(*args, cwd=tmp_path)
    assert res.exit_code == 2 and message in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_markdown_report_golden(tmp_path: Path) -> None:
    shutil.copy(MEASURED, tmp_path / "measure.json")
    res = run("report", "-d", "v100", "-d", "h200", "-t", "16x16", "-r", "40", "--smem", "8K",
              "--measured", "measure.json", "-o", "report.md", cwd=tmp_path)
    assert res.exit_code == 0, res.output
    text = (tmp_path / "report.md").read_text()
    assert text == (GOLDEN / "report_v100_h200.md").read_text()
    charts = sorted(p.name for p in (tmp_path / "report-charts").iterdir())
    assert len(charts) == 6 and all(c.endswith(".svg") for c in charts)
    for c in charts:  # every linked chart exists and parses
        assert f"report-charts/{c}" in text
        ET.parse(tmp_path / "report-charts" / c)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    chrome = _chromium()
    if chrome is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium")
        pytest.skip("headless Chromium not installed (apt-get install chromium)")
    manifest = tmp_path / "m.yaml"
    manifest.write_text("devices: [v100]\nkernels:\n  - name: k\n    block: 1024\n    registers: 72\n")
    html = tmp_path / "report.html"
    res = run("report", "-d", "v100", "-d", "h200", "--tile", "matmul", "-n", "2048",
              "--check", str(manifest), "--measured", str(MEASURED), "-o", str(html))
    assert res.exit_code == 0, res.output
    source = html.read_text()
    assert "http://" not in source.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in source  # self-contained: nothing to fetch
    profile = tmp_path / "profile"
    dom = subprocess.run([chrome, *CHROME_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                          html.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert dom.count("<table") >= 6  # devices, 2 limits, 2 tiles, check, measured
    assert dom.count("<svg") == 6 and dom.count('class="curve"') == 6
    assert "Recommended: regblock128 8x8 k16" in dom
    assert "1 passed" not in dom and "0 passed, 1 failed" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([chrome, *CHROME_FLAGS, f"--user-data-dir={profile}", "--window-size=1300,1800",
                    f"--screenshot={shot}", html.as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_chart_axes_and_labels_read_cleanly(tmp_path: Path) -> None:
    """Ticks at round values (KB for bytes), the current point's label clear of the band
    labels, a narrow band still named (its letter), and the text chart's marks in the legend."""
    from occupancy.output.charts import LEGEND, ticks

    assert ticks(528, 83456, "shared memory per block (bytes)") == [
        (16384.0, "16 KB"), (32768.0, "32 KB"), (49152.0, "48 KB"), (65536.0, "64 KB"),
        (81920.0, "80 KB")]
    assert [t for _, t in ticks(32, 1024, "threads per block")] == ["256", "512", "768", "1,024"]
    svg = tmp_path / "c.svg"
    assert run("plot", "-d", "a100", "-t", "256", "-r", "40", "--smem", "8K", "-o",
               str(svg)).exit_code == 0
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(svg).getroot()
    charts = root.findall(f"{ns}svg")
    assert len(charts) == 3
    for chart in charts:
        texts = chart.findall(f"{ns}text")
        tick_text = [t.text for t in texts if t.get("class") == "tick"]
        assert tick_text and all(t is not None and re.fullmatch(r"[\d,]+( KB)?", t)
                                 for t in tick_text)
        now = next(t for t in texts if t.get("class") == "now")
        bands = [t for t in texts if t.get("class") == "band-label"]
        assert bands
        for b in bands:  # 11-px text: baselines 12 px apart never overlap
            assert abs(float(now.get("y", 0)) - float(b.get("y", 0))) >= 12
    smem = charts[2]
    assert "now: 8 KB" in ET.tostring(smem, encoding="unicode")
    letters = [t.text for t in smem.findall(f"{ns}text") if t.get("class") == "band-label"]
    assert "R" in letters and "shared memory" in letters  # the narrow registers band
    assert ". within half a row" in LEGEND


@pytest.mark.slow
def test_report_tiles_a_manifest_entry(tmp_path: Path) -> None:
    """`report --tile MANIFEST --kernel NAME`: a user's tuning entry ranked per device, as
    `tile` ranks it (issue 18 item 5); --kernel without a manifest is one error line."""
    manifest = Path(__file__).resolve().parent.parent / "examples" / "transpose" / "tune.yaml"
    res = run("report", "-d", "h200", "-d", "a100", "--tile", str(manifest), "--kernel",
              "transpose", "-o", "r.md", cwd=tmp_path)
    assert res.exit_code == 0, res.output
    text = (tmp_path / "r.md").read_text()
    for dev in ("NVIDIA H200", "NVIDIA A100"):
        assert f"## Tile sizes: transpose, N = 8,192, on {dev}" in text
    from occupancy import load_device
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.spaces import points, rank

    spec = load_tuning(manifest, "transpose")
    pick = rank(spec, load_device("h200"), points(spec)[0]).recommended
    assert pick is not None and pick.label in text
    bad = run("report", "-d", "h200", "--kernel", "transpose", "-o", "x.md", cwd=tmp_path)
    assert bad.exit_code == 2 and bad.output.startswith("Error: --kernel NAME goes with --tile")


def test_every_regs_option_has_one_default_and_says_what_0_means() -> None:
    """-r defaults to the same count in every command (calc and best had 0, plot and report
    32), the one the core's solve defaults to, and --help says what 0 means."""
    import inspect

    import click

    from occupancy.core.limits import DEFAULT_REGISTERS_PER_THREAD
    from occupancy.core.solver import solve

    assert inspect.signature(solve).parameters["registers_per_thread"].default == 0
    assert DEFAULT_REGISTERS_PER_THREAD == 0
    with_regs = {}
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        assert cmd is not None
        for p in cmd.params:
            if isinstance(p, click.Option) and "-r" in p.opts:
                with_regs[name] = p
    assert {"calc", "best", "plot", "report"} <= set(with_regs)
    for name, p in with_regs.items():
        assert p.name == "regs" and p.default == DEFAULT_REGISTERS_PER_THREAD, name
        assert "0: not counted" in (p.help or ""), name


def test_report_without_regs_agrees_with_calc_and_its_own_check_table(tmp_path: Path) -> None:
    """No -r: the report's launch is the one calc answers for (not 32 registers of its own)
    and the check table's row for the same launch says the same; its launch line says the
    registers were not counted. On Fermi 32 registers would cut 6 blocks to 4."""
    (tmp_path / "m.yaml").write_text(
        "devices: [m2050]\nkernels:\n  - {name: same, block: 256, registers: 0}\n")
    res = run("report", "-d", "m2050", "-t", "256", "--check", "m.yaml", "-o", "r.md",
              cwd=tmp_path)
    assert res.exit_code == 0, res.output
    text = (tmp_path / "r.md").read_text()
    calc = json.loads(run("calc", "-d", "m2050", "-t", "256", "--json").stdout)
    assert calc["active_blocks_per_sm"] == 6
    device_row = next(line for line in text.splitlines() if line.startswith("| NVIDIA Tesla M2050"))
    check_row = next(line for line in text.splitlines() if line.startswith("| same |"))
    assert device_row.split(" | ")[2] == "6" and "| 100% |" in device_row
    assert check_row.split(" | ")[4] == "6" and "| 100% |" in check_row
    assert "registers not counted (-r 0)" in text
