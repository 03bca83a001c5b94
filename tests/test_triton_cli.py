"""The user-facing side of issue 22: the manifest's `triton:` entries, `occupancy tile` and
`occupancy check` on them. Parsing and the no-Triton paths run everywhere; the tests that
compile skip without Triton, and share one session of compiles (examples/triton/manifest.yaml
for sm_80, sm_90 and sm_120: 10 configs)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from occupancy.cli import main
from occupancy.inputs.manifest import ManifestError, entry_kind, load_manifest
from occupancy.inputs.manifest.triton import load_triton
from tests.test_schema import _validate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "triton"
MANIFEST = EXAMPLES / "manifest.yaml"

SIG = '{a_ptr: "*fp16", M: i32}'


def _needs_triton() -> None:
    pytest.importorskip("triton", reason="Triton is not installed (pip install 'occupancy[triton]')")


def _write(tmp_path: Path, entry: str, top: str = "devices: [h200]\n") -> Path:
    (tmp_path / "k.py").write_text("# a @triton.jit module (never imported while parsing)\n")
    m = tmp_path / "m.yaml"
    m.write_text(top + "kernels:\n" + entry)
    return m


BASE = (f"  - name: k\n    triton: k.py:kern\n    signature: {SIG}\n    problem: {{M: 64}}\n")


# --- the manifest entry (no Triton needed) ----------------------------------------------------


def test_entry_kind_classifies_triton() -> None:
    assert entry_kind({"name": "k", "triton": "k.py:f", "space": {}}) == "triton"
    assert entry_kind({"name": "k", "space": {}}) == "tune"
    assert entry_kind({"name": "k", "block": 1}) == "launch"


def test_entry_parses(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps(
        {"1": {"BLOCK_SIZE_M": 16, "num_warps": 4, "num_stages": 2},
         "64": {"BLOCK_SIZE_M": 64, "num_warps": 4, "num_stages": 2},
         "128": {"BLOCK_SIZE_M": 16, "num_warps": 4, "num_stages": 2}}))
    m = _write(tmp_path, "  - name: k\n    triton: k.py:kern\n"
               "    signature: {a_ptr: '*fp16', M: i32, EM: i32}\n"
               "    problem: {M: [1, 16, 64]}\n    configs: c.json\n"
               "    values: {EM: 'ceil(M / BLOCK_SIZE_M) * BLOCK_SIZE_M'}\n"
               "    grid: ['ceil(EM / BLOCK_SIZE_M)']\n")
    s = load_triton(m, "k")
    assert s.ref == f"{tmp_path / 'k.py'}:kern"
    assert len(s.configs) == 2  # the file's configs, each once
    assert s.sweep == "M" and [p["M"] for p in s.points()] == [1, 16, 64]
    assert s.call_values(s.configs[1], {"M": 16}) == {"M": 16, "EM": 64}
    assert s.grid_size(s.configs[0], {"M": 20}) == 2
    assert s.devices == ("h200",) and s.config_file == str(tmp_path / "c.json")


def test_one_problem_size_may_be_a_list(tmp_path: Path) -> None:
    m = _write(tmp_path, f"  - name: k\n    triton: k.py:kern\n    signature: {SIG}\n"
               "    problem: {M: [1, 2], N: [3, 4]}\n    configs: [{num_warps: 4}]\n")
    with pytest.raises(ManifestError, match="only one size may be a list") as e:
        load_triton(m, "k")
    assert e.value.line == 6


def test_space_and_restrict(tmp_path: Path) -> None:
    m = _write(tmp_path, BASE + "    space: {BLOCK_SIZE_M: [16, 32, 64], num_warps: [4, 8]}\n"
               "    restrict: ['BLOCK_SIZE_M * num_warps <= 256', 'BLOCK_SIZE_M < M']\n")
    s = load_triton(m, "k")
    assert s.configs == ({"BLOCK_SIZE_M": 16, "num_warps": 4}, {"BLOCK_SIZE_M": 16, "num_warps": 8},
                         {"BLOCK_SIZE_M": 32, "num_warps": 4}, {"BLOCK_SIZE_M": 32, "num_warps": 8})


BAD = [
    # (the entry's extra lines, the message, the line it names)
    ("    configs: [{num_warps: 4}]\n    blocks: 3\n", "unknown key 'blocks'", 8),
    ("    configs: [{num_warps: 4}]\n    sinature: {}\n", "did you mean 'signature'", 8),
    ("    configs: [{num_warps: 3}]\n", "num_warps must be one of", 7),
    ("    configs: [{num_warps: 4}]\n    devices: []\n", "devices must be a list", 8),
    ("    configs: [{num_warps: 4}]\n    unaligned: [M]\n", "pointer arguments", 8),
    ("    configs: [{num_warps: 4}]\n    values: {M: 'Q + 1'}\n", "unknown name 'Q'", 8),
    ("    space: {BLOCK_SIZE_M: [16]}\n    restrict: ['BLOCK_SIZE_M > 99']\n",
     "no config of the space is left", 8),
    ("", "give the configs", 3),
    ("    configs: missing.json\n", "no such file", 7),
]


@pytest.mark.parametrize(("extra", "message", "line"), BAD, ids=[b[1][:24] for b in BAD])
def test_entry_errors_name_the_line(tmp_path: Path, extra: str, message: str, line: int) -> None:
    m = _write(tmp_path, BASE + extra)
    with pytest.raises(ManifestError, match=message) as e:
        load_triton(m, "k")
    assert e.value.line == line, str(e.value)


@pytest.mark.parametrize(("triton", "message"), [
    ("nothere.py:kern", "no such file"),
    ("k.py", "is not 'path/to/module.py:function'"),
    ("k.py:kern; rm -rf /", "is not 'path/to/module.py:function'"),
    ("k.txt:kern", "is not 'path/to/module.py:function'"),
])
def test_bad_module_path(tmp_path: Path, triton: str, message: str) -> None:
    m = _write(tmp_path, f"  - name: k\n    triton: '{triton}'\n    signature: {SIG}\n"
               "    problem: {M: 64}\n    configs: [{num_warps: 4}]\n")
    with pytest.raises(ManifestError, match=message) as e:
        load_triton(m, "k")
    assert e.value.line == 4


@pytest.mark.parametrize(("sig", "message"), [
    ('{a_ptr: "*fp17", M: i32}', "'\\*fp17' is not a Triton type"),
    ('{a_ptr: "*fp16", M: int}', "'int' is not a Triton type"),
    ('{a_ptr: "*fp16", M: i32, K: i32}', "K \\(i32\\) needs a value"),
    ("[a_ptr]", "must map every runtime argument"),
])
def test_bad_signature(tmp_path: Path, sig: str, message: str) -> None:
    m = _write(tmp_path, f"  - name: k\n    triton: k.py:kern\n    signature: {sig}\n"
               "    problem: {M: 64}\n    configs: [{num_warps: 4}]\n")
    with pytest.raises(ManifestError, match=message) as e:
        load_triton(m, "k")
    assert e.value.line == 5


@pytest.mark.parametrize(("text", "message"), [
    ('{"1": {"BLOCK_SIZE_M": 16, "num_warps": 4}', "not JSON"),
    ('{"1": {"BLOCK_SIZE_M": 16, "num_warps": 4}}', "no num_stages"),
    ('{"x": {"num_warps": 4, "num_stages": 2}}', "is not a batch size"),
])
def test_malformed_config_file(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "c.json").write_text(text)
    m = _write(tmp_path, BASE + "    configs: c.json\n")
    with pytest.raises(ManifestError, match=message) as e:
        load_triton(m, "k")
    assert e.value.line == 7 and "c.json" in str(e.value)


def test_the_tuning_reader_sends_triton_entries_to_theirs() -> None:
    from occupancy.inputs.manifest.tuning import load_tuning

    with pytest.raises(ManifestError, match="is a triton entry: read it with load_triton") as e:
        load_tuning(MANIFEST, "softmax")
    assert e.value.line == MANIFEST.read_text().splitlines().index("  - name: softmax") + 1


def test_load_manifest_keeps_triton_entries_apart(tmp_path: Path) -> None:
    m = _write(tmp_path, "  - {name: cuda, block: 256, registers: 32}\n" + BASE
               + "    configs: [{num_warps: 4}]\n  - name: broken\n    triton: k.py:kern\n"
               "    signature: {a_ptr: '*fp99'}\n    configs: [{num_warps: 4}]\n")
    man = load_manifest(m)
    assert [t.name for t in man.triton] == ["k"]
    assert [k.name for k in man.kernels] == ["cuda", "broken"]
    broken = man.kernels[1]
    assert broken.error and "fp99" in broken.error and broken.line == 11


# --- without Triton: error verdicts, one-line errors -------------------------------------------


@pytest.fixture
def no_triton(monkeypatch: pytest.MonkeyPatch) -> None:
    from occupancy.build import triton_entry
    from occupancy.build.resources import CompilerUnavailable
    from occupancy.build.triton import INSTALL_HINT

    def missing() -> str:
        raise CompilerUnavailable(INSTALL_HINT)

    monkeypatch.setattr(triton_entry, "triton_version", missing)


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "github", "sarif"])
def test_check_without_triton_judges_the_rest(tmp_path: Path, no_triton: None, fmt: str) -> None:
    m = _write(tmp_path, "  - {name: cuda, block: 256, registers: 32}\n" + BASE
               + "    configs: [{num_warps: 4}]\n")
    r = CliRunner().invoke(main, ["check", str(m), "--format", fmt])
    assert r.exit_code == 2, r.output
    assert "needs pip install 'occupancy[triton]'" in r.output
    if fmt == "json":
        data = json.loads(r.stdout)
        _validate(data, "check")
        assert [(v["kernel"], v["status"]) for v in data["results"]] == [("cuda", "pass"),
                                                                          ("k", "error")]


def test_tile_without_triton_is_one_line(tmp_path: Path, no_triton: None) -> None:
    m = _write(tmp_path, BASE + "    configs: [{num_warps: 4}]\n")
    r = CliRunner().invoke(main, ["tile", str(m), "--kernel", "k", "-d", "h200"])
    assert r.exit_code == 2
    assert r.output.startswith("Error: ") and r.output.count("\n") == 1
    assert "pip install 'occupancy[triton]'" in r.output


def test_tile_triton_format_errors(tmp_path: Path) -> None:
    m = _write(tmp_path, BASE + "    configs: [{num_warps: 4}]\n")
    r = CliRunner().invoke(main, ["tile", str(m), "--kernel", "k", "-d", "h200", "--format",
                                  "vllm"])
    assert r.exit_code == 2 and "give -o DIR" in r.output
    r = CliRunner().invoke(main, ["tile", str(m), "--kernel", "k", "-d", "h200", "--format",
                                  "kernel_tuner"])
    assert r.exit_code == 2 and "kernel_tuner is for tuning entries" in r.output


def test_tile_options_only_for_triton() -> None:
    r = CliRunner().invoke(main, ["tile", "matmul", "-d", "h200", "--table", "t.json"])
    assert r.exit_code == 2 and "for a triton entry" in r.output


# --- compiled offline (Triton) ----------------------------------------------------------------


@pytest.fixture(scope="module")
def checked() -> dict[str, Any]:
    """One check of the examples (compiles every config for sm_80, sm_90, sm_120; the
    session cache serves every later tile)."""
    _needs_triton()
    r = CliRunner().invoke(main, ["check", str(MANIFEST), "--json"])
    assert r.exit_code == 1, r.output
    return dict(json.loads(r.stdout))


@pytest.mark.slow
def test_check_examples(checked: dict[str, Any]) -> None:
    _validate(checked, "check")
    results = checked["results"]
    assert len(results) == 10 * 3  # every config x device
    failed = [(v["kernel"], v["device"]) for v in results if v["status"] != "pass"]
    assert failed == [("fused_moe config 3", "rtx5090")]
    bad = next(v for v in results if v["status"] == "fail")
    assert bad["problems"][0].startswith(
        "config 3 needs 147,456 B of shared memory; sm_120 allows 101,376 B (Triton: out of "
        "resource: shared memory, Required: 147456, Hardware limit: 101376")
    lines = MANIFEST.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines, 1) if ln.startswith('    configs: "E=8'))
    assert bad["config"]["BLOCK_SIZE_N"] == 256 and bad["line"] == at
    h200 = next(v for v in results if v["kernel"] == "matmul config 3" and v["device"] == "h200")
    assert h200["dynamic_shared_memory"] == 147456 and h200["active_blocks_per_sm"] == 1
    assert h200["resources_source"].startswith("triton ")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "junit", "github", "sarif"])
def test_check_examples_every_format(checked: dict[str, Any], fmt: str) -> None:
    r = CliRunner().invoke(main, ["check", str(MANIFEST), "--format", fmt])
    assert r.exit_code == 1
    assert "config 3 needs 147,456 B" in r.output.replace("\n", " ").replace("  ", " ") or \
        "config 3 needs 147%2C456 B" in r.output


def _tile(*args: str) -> Any:
    return CliRunner().invoke(main, ["tile", str(MANIFEST), *args])


@pytest.mark.slow
def test_tile_json_per_device(checked: dict[str, Any]) -> None:
    import triton

    r = _tile("--kernel", "fused_moe", "-d", "a100", "-d", "rtx5090", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [d["device"] for d in data] == ["a100", "rtx5090"]
    for d in data:
        _validate(d, "triton_tile")
        assert d["triton_version"] == triton.__version__ and d["model"] == "gemm"
        assert d["sizes"] == [1, 64, 256]
    a100, rtx = ({c["index"]: c for c in d["configs"]} for d in data)
    assert a100[3]["fits"] and a100[3]["sizes"]["256"]["shared"] == 147456
    assert not rtx[3]["fits"] and "Hardware limit: 101376" in rtx[3]["reason"]
    assert rtx[3]["sizes"]["256"]["rank"] is None
    assert sorted(c["sizes"]["64"]["rank"] for c in rtx.values() if c["fits"]) == [1, 2]


@pytest.mark.slow  # Triton compiles the examples (the `checked` fixture)
def test_tile_text_ranks_by_occupancy_where_the_model_does_not_apply(
        checked: dict[str, Any]) -> None:
    r = _tile("--kernel", "softmax", "-d", "h200")
    assert r.exit_code == 0, r.output
    assert "ranked by occupancy" in r.output and "best at n_rows=4096: config 1" in r.output


@pytest.mark.slow  # Triton compiles the examples (the `checked` fixture)
def test_vllm_files_and_the_table(checked: dict[str, Any], tmp_path: Path) -> None:
    from occupancy.tune.triton_prune import make_prune_hook, read_config_file

    out, table = tmp_path / "out", tmp_path / "table.json"
    r = _tile("--kernel", "fused_moe", "-d", "a100", "-d", "rtx5090", "--format", "vllm",
              "-o", str(out), "--table", str(table))
    assert r.exit_code == 0, r.output
    shipped = read_config_file(EXAMPLES / "E=8,N=4096,device_name=NVIDIA_H200.json")
    a100 = read_config_file(out / "E=8,N=4096,device_name=NVIDIA_A100_SXM4_40GB.json")
    rtx = read_config_file(out / "E=8,N=4096,device_name=NVIDIA_GeForce_RTX_5090.json")
    assert a100 == shipped  # everything fits an A100: unchanged
    assert rtx[1] == shipped[1] and rtx[256] != shipped[256]  # the 147,456 B config replaced
    assert "M=256: " in r.output and "replaced" in r.output
    hook = make_prune_hook(str(table), device="rtx5090", top_k=None)
    kept = hook([shipped[256], shipped[64]], {"M": 256})
    assert kept == [shipped[64]]
    # never over an input: the shipped file's own folder and name
    r = _tile("--kernel", "fused_moe", "-d", "h200", "--format", "vllm", "-o", str(EXAMPLES))
    assert r.exit_code == 2 and "that is an input of this run" in r.output
    assert read_config_file(EXAMPLES / "E=8,N=4096,device_name=NVIDIA_H200.json") == shipped


@pytest.mark.slow  # Triton compiles the examples (the `checked` fixture)
def test_hostile_names_are_escaped(checked: dict[str, Any], tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "matmul.py", tmp_path / "matmul.py")
    text = MANIFEST.read_text()
    entry = text[text.index("  - name: matmul"):text.index("  - name: softmax")]
    evil = "evil\x1b[31m\u202e"  # YAML's escapes below spell it
    (tmp_path / "m.yaml").write_text("devices: [h200]\nkernels:\n" + entry.replace(
        "name: matmul", 'name: "evil\\e[31m\\u202e"'))
    r = CliRunner().invoke(main, ["tile", str(tmp_path / "m.yaml"), "--kernel", evil, "-d", "h200"])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\u202e" not in r.output and "evil" in r.output
    r = CliRunner().invoke(main, ["check", str(tmp_path / "m.yaml")])
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\u202e" not in r.output


def test_a_module_that_does_not_import(tmp_path: Path) -> None:
    _needs_triton()
    (tmp_path / "k.py").write_text("import triton\ndef broken(:\n")
    m = tmp_path / "m.yaml"
    m.write_text("devices: [h200]\nkernels:\n" + BASE.replace("kern", "broken")
                 + "    configs: [{num_warps: 4}]\n  - {name: cuda, block: 256, registers: 32}\n")
    r = CliRunner().invoke(main, ["tile", str(m), "--kernel", "k", "-d", "h200"])
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "k.py does not import: SyntaxError" in r.output
    r = CliRunner().invoke(main, ["check", str(m), "--json"])
    assert r.exit_code == 2
    got = {v["kernel"]: v["status"] for v in json.loads(r.stdout)["results"]}
    assert got == {"k": "error", "cuda": "pass"}
