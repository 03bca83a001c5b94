"""The command line: results on stdout, one-line errors on stderr, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from occupancy.cli import main
from occupancy.inputs.profiles import shipped_dir

GOLDEN = Path(__file__).parent / "golden"


def run(*args: str, env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "80", **(env or {})})


def test_done_when_v100_json() -> None:
    r = run("calc", "--device", "v100", "--threads", "256", "--regs", "32", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["active_blocks_per_sm"] == 8 and data["occupancy"] == 1.0
    assert data["limiters"] == ["warps", "registers"]
    assert data["block_limits"] == {"warps": 8, "registers": 8, "shared_memory": None,
                                    "blocks": 32, "barriers": None, "virtual_resources": None}
    assert data["cliffs"]["registers"]["lose_at"] == 33


def test_devices_lists_gtx1080_and_v100() -> None:
    r = run("devices")
    assert r.exit_code == 0
    assert "GeForce GTX 1080" in r.stdout and "Tesla V100" in r.stdout
    keys = {d["device"] for d in json.loads(run("devices", "--json").stdout)}
    assert {"gtx1080", "v100", "h200"} <= keys


def test_calc_text_golden() -> None:
    r = run("calc", "-d", "v100", "-t", "16x16", "-r", "40", "--smem", "8K")
    assert r.exit_code == 0
    assert r.stdout == (GOLDEN / "calc_v100_16x16_r40_smem8k.txt").read_text()


def test_calc_cannot_launch_says_why() -> None:
    r = run("calc", "-d", "gtx980", "-t", "416", "-r", "72")
    assert r.exit_code == 0
    assert "Cannot launch" in r.stdout and "use <= 64 registers or 384 threads" in r.stdout


def test_calc_opt_in_note_and_no_opt_in() -> None:
    r = run("calc", "-d", "h200", "-t", "128", "-r", "32", "--dyn-smem", "64K", "--json")
    data = json.loads(r.stdout)
    assert data["requires_opt_in"] and data["active_blocks_per_sm"] == 3
    assert any("MaxDynamicSharedMemorySize, 65536" in n for n in data["notes"])
    r = run("calc", "-d", "h200", "-t", "128", "--dyn-smem", "50000", "--no-opt-in", "--json")
    data = json.loads(r.stdout)
    assert data["active_blocks_per_sm"] == 0 and not data["launchable"]


def test_calc_with_a_profile_path() -> None:
    r = run("calc", "-d", str(shipped_dir() / "t4.yaml"), "-t", "256", "--json")
    assert json.loads(r.stdout)["device"] == "t4"


def test_best_json_and_text() -> None:
    r = run("best", "-d", "h200", "-r", "32", "--dyn-smem", "48K", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["block_size"] == 1024 and data["active_threads_per_sm"] == 2048
    assert data["min_grid_size"] == 2 * 132
    avail = {a["blocks"]: a for a in data["available_dynamic_shared_memory"]}
    assert avail[2]["bytes"] == 115_712 and avail[2]["driver_bytes"] == 116_736
    text = run("best", "-d", "h200", "-r", "32")
    assert "forgets the 1,024 B reserved" in text.stdout


def test_best_with_smem_per_thread() -> None:
    r = run("best", "-d", "a100", "-r", "32", "--smem-per-thread", "64", "--json")
    data = json.loads(r.stdout)
    # 64 B per thread: 2,048 threads x 64 B = 128 KB + reserved fits 164 KB, so 100%.
    assert data["occupancy"] == 1.0


def test_devices_show() -> None:
    r = run("devices", "show", "H200")
    assert r.exit_code == 0 and "233472" in r.stdout and "Sources" in r.stdout
    data = json.loads(run("devices", "show", "h200", "--json").stdout)
    assert data["shared_memory_per_block_optin_bytes"] == 232448


def test_devices_detect_without_gpu_is_a_hint() -> None:
    try:
        import cupy  # noqa: F401
        has_cupy = True
    except ImportError:
        has_cupy = False
    r = run("devices", "detect")
    if has_cupy and r.exit_code == 0:
        pytest.skip("a GPU is present")
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: ") and len(r.stderr.strip().splitlines()) == 1
    assert "occupancy[gpu]" in r.stderr or "GPU" in r.stderr


BAD_INPUTS = [
    (["calc", "-d", "v10", "-t", "256"], "unknown device 'v10': did you mean"),
    (["calc", "-d", "v100", "-t", "0"], "'0' is not a block shape"),
    (["calc", "-d", "v100", "-t", "16y16"], "not a block shape"),
    (["calc", "-d", "v100", "-t", "²"], "not a block shape"),  # found by the fuzz test
    (["calc", "-d", "/\x00", "-t", "256"], "cannot read the profile: embedded null byte"),  # and this
    (["check", "a\x00b.yaml"], "a file name contains a NUL byte"),
    (["plot", "-d", "t4", "-o", "/tmp/a\x00.svg"], "a file name contains a NUL byte"),
    (["calc", "-d", "v100", "-t", "256", "--smem", "8Q"], "'8Q' is not a size"),
    (["calc", "-d", "v100", "-t", "256", "--carveout", "150"], "--carveout"),
    (["calc", "-d", "v100", "-t", "256", "-r", "-1"], "--regs"),
    (["calc", "-d", "v100"], "Missing option '--threads'"),
    (["calc", "-t", "256"], "Missing option '--device'"),
    (["calc", "-d", "/no/such/gpu.yaml", "-t", "256"], "/no/such/gpu.yaml: no such file"),
    (["calc", "-d", "v100", "-t", "256", "--frobnicate"], "No such option '--frobnicate'"),
    (["devices", "show", "nope"], "unknown device 'nope'"),
    (["best", "-d", "v100", "--blocks", "0"], "--blocks"),
    (["nosuchcommand"], "No such command"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.output
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("Error: ")


def test_malformed_profile_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "gpu.yaml"
    p.write_text((shipped_dir() / "v100.yaml").read_text().replace("sub_partitions: 4",
                                                                    "sub_partition: 4"))
    r = run("calc", "-d", str(p), "-t", "256")
    assert r.exit_code == 2
    # Every problem at once, on one line: the misspelt key and the one it leaves missing.
    assert len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith(f"Error: {p}: 2 problems: missing key 'sub_partitions'")
    assert "line 18: unknown key 'sub_partition'; did you mean 'sub_partitions'?" in r.stderr


def _commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        out.append([*prefix, name])
        if isinstance(cmd, click.Group):
            out += _commands(cmd, [*prefix, name])
    return out


@pytest.mark.parametrize("path", _commands(main, []), ids=lambda p: " ".join(p))
def test_every_command_has_help(path: list[str]) -> None:
    r = run(*path, "--help")
    assert r.exit_code == 0 and "Usage:" in r.stdout
    assert len(r.stdout.splitlines()) > 3


def test_command_modules_name_every_command_and_its_module() -> None:
    """The group imports a command's module when the command is looked up: COMMAND_MODULES
    names every command with the module that registers it, and every module of commands."""
    import importlib

    from occupancy.cli.common import COMMAND_MODULES

    here = Path(__file__).resolve().parent.parent / "occupancy" / "cli"
    modules = {p.stem for p in here.glob("*.py")} - {"__init__", "common"}
    assert set(COMMAND_MODULES.values()) == modules
    for module in modules:
        importlib.import_module(f"occupancy.cli.{module}")
    assert sorted(main.commands) == sorted(COMMAND_MODULES)
    for name, cmd in main.commands.items():
        assert cmd.callback is not None
        assert cmd.callback.__module__ == f"occupancy.cli.{COMMAND_MODULES[name]}", name


def test_detect_refuses_to_overwrite(tmp_path: Path) -> None:
    from occupancy.cli import InputError, write_output

    target = tmp_path / "x.yaml"
    target.write_text("keep me")
    with pytest.raises(InputError, match="exists"):
        write_output(str(target), "new", force=False)
    assert target.read_text() == "keep me"
    write_output(str(target), "new", force=True)
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["x.yaml"]


def test_python_m_occupancy_and_console_script() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    r = subprocess.run([sys.executable, "-m", "occupancy", "calc", "-d", "h200", "-t", "224",
                        "-r", "92", "--json"], capture_output=True, text=True, env=env, check=True)
    assert json.loads(r.stdout)["active_blocks_per_sm"] == 2


def test_measure_without_a_gpu_is_a_hint() -> None:
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here: the hint path is for machines without it")
    except ImportError:
        pass
    r = run("measure", "matmul", "-n", "256")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip() == ("Error: measure needs CuPy and an NVIDIA GPU: "
                                "pip install 'occupancy[gpu]'")


# Names as they come: llm.c's kernels and C++ templates (the last longer than a terminal line).
_LONG_NAMES = ["fused_classifier_kernel5", "matmul_backward_bias_kernel7",
               "layernorm_forward_kernel6", "softmax_autoregressive_backward_kernel8",
               "cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<float, int>, "
               "false>",
               "flash::flash_fwd_splitkv_kernel<flash::Flash_fwd_kernel_traits<128, 64, 128, 4, "
               "false, cutlass::half_t>, true, false>"]


def _listed() -> list:  # type: ignore[type-arg]
    from occupancy.build.resolve import ListedKernel
    from occupancy.build.resources import KernelResources

    path = "/home/someone/src/llm.c/dev/cuda/" + "a_rather_long_folder_name/" * 2 + "train.cu"
    return [ListedKernel(path, arch, KernelResources(
                f"_Z{i}k", 40 + i, 49152, 1, 16, 0, 0, 256 if i % 2 else None, "nvcc 13.0",
                demangled=f"void {name}(float*, int)"))
            for i, name in enumerate(_LONG_NAMES) for arch in ("sm_90a", "sm_80")]


def test_resources_keeps_kernel_names_whole_at_80_columns() -> None:
    """`resources` at 80 columns: every kernel name whole on a line of its own (a table
    column cut them to 'layernorm…'); the numbers per arch under it; nothing wider than 80.
    A name longer than the line is still all there, wrapped."""
    from occupancy.output.answers import Listing
    from occupancy.output.emit import render_text, to_view

    text = render_text(to_view(Listing(_listed())), width=80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    assert "…" not in text
    for name in _LONG_NAMES:
        if len(name) < 79:
            assert name in [line.strip() for line in lines], (name, text)
        else:
            assert "".join(name.split()) in "".join(text.split()), (name, text)
    first = [line.strip() for line in lines].index(_LONG_NAMES[1])
    assert lines[first + 1].split() == ["sm_90a", "41", "49,152", "16", "0", "256"]
    assert lines[first + 2].split()[:2] == ["sm_80", "41"]


def test_resources_cli_names_whole_at_80_columns(tmp_path: Path) -> None:
    """The command end to end (a ptxas log, COLUMNS=80): each name the JSON lists is on a
    line of the text output whole."""
    log = tmp_path / "build.log"
    log.write_text("".join(
        f"ptxas info    : Compiling entry function '{m}' for 'sm_80'\n"
        f"ptxas info    : Function properties for {m}\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 30 registers, used 0 barriers, 360 bytes cmem[0]\n"
        for m in ("_Z58fused_classifier_kernel5_with_a_rather_long_name_from_llmcPf",
                  "_ZN5flash24flash_fwd_combine_kernelINS_6TraitsILi128ELi64ELb1EEELb0EEEvPf")))
    from occupancy.build.names import qualified_name

    rows = json.loads(run("resources", str(log), "--arch", "sm_80", "--json").stdout)
    r = run("resources", str(log), "--arch", "sm_80", env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = [line.strip() for line in r.stdout.splitlines()]
    assert all(len(line) <= 80 for line in r.stdout.splitlines())
    assert len(rows) == 2
    for row in rows:
        assert qualified_name(row["function"]) in lines, r.stdout
