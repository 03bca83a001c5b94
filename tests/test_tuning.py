"""Tile sizes for the user's own kernel: a tuning space in the manifest, ranked by `tile`."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy import load_device
from occupancy.build.compilers import nvcc_path, nvrtc_compiler
from occupancy.cli import main
from occupancy.core.errors import OccupancyError
from occupancy.inputs.expr import ExprError, parse
from occupancy.inputs.manifest.tuning import load_tuning
from occupancy.tune.spaces import points, rank
from tests.needs import need, need_nvcc

ROOT = Path(__file__).resolve().parent.parent
SGEMM = ROOT / "examples" / "sgemm" / "tune.yaml"
# "Used 96 registers, used 1 barriers, 16 bytes cumulative stack size, 8192 bytes smem":
# the smem figure may come after other fields.
_USED = re.compile(r"Function properties for (\S+)\n.*\n.*Used (\d+) registers(?:[^\n]*?(\d+) bytes smem)?")


def run(*args: str) -> object:
    return CliRunner().invoke(main, list(args))


@pytest.mark.slow
def test_sgemm_space_registers_equal_ptxas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """The SGEMM space's 16 points with BK = 8 (every BM, BN, TM, TN) on sm_90 (nvcc) and
    sm_70 (NVRTC): the registers and shared memory `tile` ranks with equal what ptxas
    prints for explicit instantiations. (Resources only: the time model, tested
    elsewhere, is left out.)"""
    import dataclasses

    need_nvcc()
    from occupancy.tune import spaces

    monkeypatch.setattr(spaces, "_predicted", lambda spec, dev, ranked: ranked)
    spec = load_tuning(SGEMM, "sgemm2d")
    spec = dataclasses.replace(spec, space={**spec.space, "BK": [8]})
    pts, removed = points(spec)
    assert removed == 0 and len(pts) == 16
    inst = tmp_path / "inst.cu"
    inst.write_text(f'#include "{ROOT / "examples" / "sgemm" / "sgemm.cuh"}"\n' + "".join(
        f"template __global__ void {p.function}(int, int, int, float, const float*, "
        "const float*, float, float*);\n" for p in pts))
    for dev_name, arch in (("h200", "sm_90"), ("v100", "sm_70")):
        rep = rank(spec, load_device(dev_name), pts, removed)
        if arch == "sm_90":
            r = subprocess.run([nvcc_path() or "nvcc", "-cubin", f"-arch={arch}", "-Xptxas", "-v",
                                str(inst), "-o", os.devnull], capture_output=True, text=True,
                               check=True)
            log = r.stderr + r.stdout
        else:
            c = nvrtc_compiler()
            if c is None:
                pytest.skip("NVRTC 12.9 not installed (the compiler extra)")
            from occupancy.build.builds import _nvrtc_ptx
            from occupancy.build.compilers import make_build

            b = make_build(inst, arch)
            ptx, _ = _nvrtc_ptx(c, b, inst.read_text())
            (tmp_path / "inst.ptx").write_text(ptx)
            p = subprocess.run([c.ptxas, f"-arch={arch}", "-v", str(tmp_path / "inst.ptx"), "-o",
                                os.devnull], capture_output=True, text=True, check=True)
            log = p.stderr + p.stdout
        truth = {m.group(1): (int(m.group(2)), int(m.group(3) or 0)) for m in _USED.finditer(log)}
        assert len(truth) == 16
        for x in rep.ranked:
            assert x.resources is not None, x.reasons
            assert truth[x.resources.function] == (x.resources.registers_per_thread,
                                                   x.resources.static_shared_memory), x.point.params


@pytest.mark.slow
def test_tile_json_ranks_prunes_and_explains() -> None:
    need_nvcc()
    r = run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    c0 = d["candidates"][0]
    for key in ("params", "threads_per_block", "grid", "registers_per_thread",
                "static_shared_memory", "spill_bytes", "can_launch", "reasons",
                "active_blocks_per_sm", "occupancy", "predicted_ms"):
        assert key in c0, key
    assert d["recommended"]["params"] == c0["params"]
    assert d["pruned"] >= 1 and d["restricted_out"] == 0
    spilled = [c for c in d["candidates"] if c["pruned"]]
    assert all(c["reasons"] for c in spilled)
    times = [c["predicted_ms"] for c in d["candidates"] if not c["pruned"]]
    assert times == sorted(times)
    kt = json.loads(run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "--format",
                        "kernel_tuner").stdout)  # type: ignore[attr-defined]
    assert kt["tune_params"]["BM"] == [64, 128]
    assert kt["restrictions"][0] == "BM * BN / (TM * TN) >= BN"
    assert any(x.startswith("not (BM == ") for x in kt["restrictions"])
    text = run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200").stdout  # type: ignore[attr-defined]
    assert ("Recommended:" in text or "A tie:" in text) and "Pruned" in text


@pytest.mark.slow
def test_set_changes_the_problem() -> None:
    need_nvcc()
    d = json.loads(run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "--set", "M=2048",
                       "--set", "N=1024", "--json").stdout)  # type: ignore[attr-defined]
    assert d["problem"] == {"M": 2048, "N": 1024, "K": 4096}
    c = next(x for x in d["candidates"] if x["params"]["BM"] == 64 and x["params"]["BN"] == 64)
    assert c["grid"] == [16, 32]


@pytest.mark.parametrize("text", ["__import__('os')", "x.__class__", "[1, 2]", "'a'", "lambda: 1",
                                  "open('f')", "A[0]", "2 ** 100", "x if y else z", "f(x)"])
def test_expressions_are_never_evaluated_as_python(text: str) -> None:
    with pytest.raises(ExprError):
        e = parse(text, "k")
        e({"x": 1, "y": 1, "z": 1, "A": 1})


def test_expressions() -> None:
    e = parse("ceil(N / BN) * max(BM, 2) + (K // 3) % 5 - 2 ** 3", "grid")
    assert e({"N": 100, "BN": 64, "BM": 8, "K": 10}) == 2 * 8 + 3 - 8
    assert parse("BM * BN / (TM * TN) >= 128 and not TM > TN", "r")(
        {"BM": 64, "BN": 64, "TM": 4, "TN": 4}) is True
    with pytest.raises(ExprError, match="@ and .T"):
        parse("A @ B", "grid")


def _manifest(tmp_path: Path, **change: str) -> Path:
    text = SGEMM.read_text()
    for old, new in change.items():
        text = text.replace(old.replace("_", " ") if old == "x" else old, new)
    (tmp_path / "sgemm.cuh").write_text((ROOT / "examples" / "sgemm" / "sgemm.cuh").read_text())
    p = tmp_path / "tune.yaml"
    p.write_text(text)
    return p


BAD = [
    ("empty after restrict", {'- "M % BM == 0 and N % BN == 0 and K % BK == 0"': '- "BM > 1000"'},
     "restrict leaves no point"),
    ("unknown symbol", {'block: "BM * BN / (TM * TN)"': 'block: "BM * BX"'}, "unknown name 'BX'"),
    ("template count", {"function: sgemm2DBlocktiling<BM, BN, BK, TM, TN>":
                        "function: sgemm2DBlocktiling<BM, BN>"}, "no point compiles"),
    ("args count", {"      - 0.0\n": ""}, "args: 7 given, the kernel takes 8"),
    ("args kind", {"      - M\n      - N\n": "      - {array: M, shape: [4]}\n      - N\n"},
     "is an array but the kernel's parameter 0 is int"),
    ("python in an expression", {'grid: ["ceil(N / BN)", "ceil(M / BM)"]':
                                 'grid: ["__import__(\'os\').system(\'id\')"]'}, "may be called"),
    ("hostile space value", {"BM: [64, 128]": 'BM: ["$(touch pwned)"]'}, "not allowed in a define"),
    ("unknown key", {"restrict:": "restricts:"}, "unknown key 'restricts'"),
    ("predictor", {"restrict:": "predictor: fast\n    restrict:"}, "predictor: is model or hand_counts"),
    ("hand counts, no family", {"restrict:": "predictor: hand_counts\n    restrict:"},
     "hand_counts needs 'hand_counts: FAMILY' beside it"),
    ("unknown hand counts", {"restrict:": "hand_counts: sgemm\n    restrict:"},
     "no hand-count model 'sgemm' (known: matmul, transpose)"),
    ("not a family's candidate", {"restrict:": "hand_counts: matmul\n    restrict:"},
     "is no candidate of the family"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("change", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_tuning_manifests(tmp_path: Path, change: dict[str, str], message: str) -> None:
    need_nvcc()
    p = _manifest(tmp_path, **change)
    # two points (one compile) say what 32 would: none of these errors depends on the count
    p.write_text(p.read_text().replace('      - "BM * BN / (TM * TN) >= BK"\n',
                                       '      - "BM * BN / (TM * TN) >= BK"\n'
                                       '      - "BM == 64 and BN == 64 and TM == 4 and BK == 8"\n'))
    assert "BM == 64 and BN == 64" in p.read_text()
    r = run("tile", str(p), "--kernel", "sgemm2d", "-d", "h200")
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    err = r.stderr  # type: ignore[attr-defined]
    assert err.startswith("Error: ") and len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "pwned").exists()


# A reference kernel entry for the SGEMM manifest (also tests/test_gpu.py's)
REFERENCE_ENTRY = """
  - name: {name}
    source: sgemm.cuh
    function: sgemm2DBlocktiling<64, 64, 8, 4, 4>
    problem: {{M: 4096, N: 4096, K: 4096}}
    block: 256
    grid: ["ceil(N / 64)", "ceil(M / 64)"]
    args: [M, N, K, {alpha}, {{array: A, dtype: float32, shape: [M, K]}},
           {{array: B, dtype: float32, shape: [K, N]}}, 0.0,
           {{array: C, dtype: float32, shape: [M, N], output: true}}]
"""
_NAIVE = REFERENCE_ENTRY.format(name="naive", alpha="1.0")


def test_reference_by_another_kernel(tmp_path: Path) -> None:
    """`reference: NAME` names another entry: it is loaded with this entry's problem (and
    its --set), may have no space, and must write one of the same outputs; check leaves
    both entries to tile. Clashes and a reference writing other arrays are refused."""
    p = _manifest(tmp_path, **{'reference: "A @ B"': "reference: naive"})
    p.write_text(p.read_text() + _NAIVE)
    spec = load_tuning(p, "sgemm2d", {"M": 2048})
    ref = spec.reference_kernel
    assert spec.reference is None and ref is not None and ref.name == "naive"
    assert ref.problem == {"M": 2048, "N": 4096, "K": 4096}
    assert ref.reference_kernel is None and len(ref.space) == 1
    pts, _ = points(ref)
    assert len(pts) == 1 and pts[0].block == (256,) and pts[0].grid == (64, 32)
    r = run("check", str(p))
    assert r.exit_code == 2 and "every kernel here is a tuning entry" in r.stderr  # type: ignore[attr-defined]
    r = run("tile", str(p), "--kernel", "naive", "-d", "h200")
    assert r.exit_code == 2 and "needs 'space:'" in r.stderr  # type: ignore[attr-defined]

    other = _NAIVE.replace("{array: C,", "{array: D,")
    p.write_text(p.read_text().replace(_NAIVE, other))
    with pytest.raises(OccupancyError, match="writes none of this kernel's outputs"):
        load_tuning(p, "sgemm2d")
    p.write_text(p.read_text().replace(other, _NAIVE.replace("name: naive", "name: A")
                                       ).replace("reference: naive", "reference: A"))
    with pytest.raises(OccupancyError, match="names both another kernel and an array"):
        load_tuning(p, "sgemm2d")
    p.write_text(p.read_text().replace("reference: A", "reference: nobody"))
    with pytest.raises(OccupancyError, match="unknown name 'nobody'"):
        load_tuning(p, "sgemm2d")
    # a broken reference entry is reported at its own key and line, one line, exit 2; one
    # that names this kernel back is not followed
    p = _manifest(tmp_path, **{'reference: "A @ B"': "reference: naive"})
    p.write_text(p.read_text() + _NAIVE.replace("block: 256", "block: \"__import__('os')\""))
    r = run("tile", str(p), "--kernel", "sgemm2d", "-d", "h200")
    assert r.exit_code == 2 and "kernel 'naive': block" in r.stderr  # type: ignore[attr-defined]
    assert len(r.stderr.strip().splitlines()) == 1  # type: ignore[attr-defined]


def _top_level_manifest(tmp_path: Path) -> Path:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.h").write_text("#define SCALE_BY 2.0f\n")
    (tmp_path / "k.cu").write_text(
        '#include "scale.h"\n__global__ void k(float* x, int n) {\n'
        "  int i = blockIdx.x * BS + threadIdx.x;\n"
        "  if (i < n) x[i] *= SCALE_BY * EXTRA;\n}\n")
    p = tmp_path / "tune.yaml"
    p.write_text("devices: [h200]\ninclude_dirs: [inc]\nflags: [-std=c++17]\n"
                 "defines: {EXTRA: 3.0f}\nkernels:\n  - name: k\n    source: k.cu\n"
                 "    defines: {BS: BS}\n    flags: [-lineinfo]\n"
                 "    space: {BS: [128, 256]}\n    problem: {n: 1048576}\n    block: BS\n"
                 "    grid: ceil(n / BS)\n"
                 "    args: [{array: x, dtype: float32, shape: [n], output: true}, n]\n")
    return p


def test_top_level_include_dirs_flags_and_defines_reach_a_tuning_entry(tmp_path: Path) -> None:
    """A manifest's top-level include_dirs / flags / defines are every entry's defaults, in
    `tile` as in `check` (README): llm.c's kernels need the cuBLAS stub folder, and given
    once at the top it was dropped ("cublas_v2.h: No such file"). The entry's own come
    first and its defines win; a top-level define that would fix a name the space varies
    (or a problem size) is refused."""
    p = _top_level_manifest(tmp_path)
    spec = load_tuning(p, "k")
    assert spec.include_dirs == (str(tmp_path / "inc"),)
    assert spec.flags == ("-std=c++17", "-lineinfo") and spec.defines["EXTRA"] == "3.0f"
    p.write_text(p.read_text().replace("defines: {EXTRA: 3.0f}", "defines: {EXTRA: 3.0f, n: 7}"))
    with pytest.raises(OccupancyError, match="the top-level defines set n, a name of this kernel"):
        load_tuning(p, "k")
    p.write_text(p.read_text().replace("include_dirs: [inc]", "include_dirs: [nowhere]"))
    r = run("tile", str(p), "--kernel", "k", "-d", "h200")
    assert r.exit_code == 2 and "include_dirs: no such folder" in r.stderr  # type: ignore[attr-defined]


def test_paths_beside_a_linked_manifest_are_checked_as_they_are_used(tmp_path: Path) -> None:
    """A manifest reached through a linked folder (a corpus linked into a checkout) names
    `../inc`: the folder checked is the one the compiler is given, the `..` taken from the
    folder as the user reached it. The reader had checked it as the system resolves it
    (the link target's parent) and passed nvcc the other: one folder existing was enough to
    pass, and the build read the other or none. (Sources, link files, constants and Triton
    paths are read through the same inputs.files.beside.)"""
    real = tmp_path / "real" / "sub"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    p = _top_level_manifest(real)
    (real / "inc").rename(tmp_path / "inc")  # beside the link: ../inc as written
    p.write_text(p.read_text().replace("include_dirs: [inc]", "include_dirs: [../inc]"))
    spec = load_tuning(tmp_path / "link" / "tune.yaml", "k")
    assert spec.include_dirs == (str(tmp_path / "inc"),)
    assert spec.source == str(tmp_path / "link" / "k.cu")
    # only the link target's parent has it: refused, naming the path it would have used
    (tmp_path / "inc").rename(tmp_path / "real" / "inc")
    with pytest.raises(OccupancyError, match="include_dirs: no such folder"):
        load_tuning(tmp_path / "link" / "tune.yaml", "k")
    assert load_tuning(real / "tune.yaml", "k").include_dirs == (str(tmp_path / "real" / "inc"),)


@pytest.mark.slow
def test_a_header_in_a_top_level_include_dir_compiles(tmp_path: Path) -> None:
    need_nvcc()
    r = run("tile", str(_top_level_manifest(tmp_path)), "--kernel", "k", "-d", "h200", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    assert len(json.loads(r.output)["candidates"]) == 2  # type: ignore[attr-defined]


def test_space_over_the_limit_and_max_points(tmp_path: Path) -> None:
    many = "BM: [" + ", ".join(str(64 * i) for i in range(1, 700)) + "]"
    p = _manifest(tmp_path, **{"BM: [64, 128]": many})
    r = run("tile", str(p), "--kernel", "sgemm2d", "-d", "h200")
    assert r.exit_code == 2 and "over 10,000" in r.stderr  # type: ignore[attr-defined]
    r = run("tile", str(p), "--kernel", "sgemm2d", "-d", "h200", "--max-points", "5")
    assert r.exit_code == 2 and "over 5" in r.stderr  # type: ignore[attr-defined]


def test_check_skips_tuning_entries_and_tile_needs_kernel(tmp_path: Path) -> None:
    r = run("check", str(SGEMM))
    assert r.exit_code == 2 and "tuning entry" in r.stderr  # type: ignore[attr-defined]
    r = run("tile", str(SGEMM), "-d", "h200")
    assert r.exit_code == 2 and "--kernel" in r.stderr  # type: ignore[attr-defined]
    r = run("tile", str(SGEMM), "--kernel", "nope", "-d", "h200")
    assert r.exit_code == 2 and "tuning entries: sgemm2d" in r.stderr  # type: ignore[attr-defined]


@pytest.mark.slow
def test_llmc_kernel_tuned_with_registers_from_ptxas() -> None:
    need_nvcc()
    llmc = ROOT.parent / "shared" / "realcode" / "llm.c" / "dev" / "cuda"
    if not llmc.is_dir():
        if os.environ.get("CI"):
            pytest.fail("the llm.c corpus is missing in CI")
        pytest.skip("llm.c corpus not found")
    d = json.loads(run("tile", str(ROOT / "examples" / "llmc" / "tune.yaml"), "--kernel",
                       "matmul_forward_kernel1", "-d", "h200", "--json").stdout)  # type: ignore[attr-defined]
    assert len(d["candidates"]) == 4 and not d["pruned"]
    r = subprocess.run([nvcc_path() or "nvcc", "-cubin", "-arch=sm_90", "-Xptxas", "-v",
                        "-std=c++17", "--use_fast_math", f"-I{ROOT / 'tests/fixtures/cublas_stub'}",
                        str(llmc / "matmul_forward.cu"), "-o", os.devnull],
                       capture_output=True, text=True, check=True)
    truth = {m.group(1): int(m.group(2)) for m in _USED.finditer(r.stderr + r.stdout)}
    regs = {k: v for k, v in truth.items() if "matmul_forward_kernel1" in k}
    assert {c["registers_per_thread"] for c in d["candidates"]} == set(regs.values())


def test_the_h200_records_meet_what_they_claim() -> None:
    """The committed H200 measurements: every point verified and occupancy-exact."""
    res = ROOT / "bench" / "results"
    files = (sorted(res.glob("h200-tuning/*-*.json")) + sorted(res.glob("h200-validate/*-*.json"))
             + sorted(res.glob("h200-final/*-*.json"))
             + sorted(res.glob("h200-transpose-smem/*.json"))
             + sorted(res.glob("h200-transpose-check/*.json"))
             + sorted(res.glob("h200-layernorm*/*.json"))
             + sorted(res.glob("h200-final-2/*-*.json")))
    files = [f for f in files if f.name != "lds-wavefronts.json"]
    assert len(files) >= 39
    for f in files:
        data = json.loads(f.read_text())
        assert data["results"] and all(r["verified"] and r["occupancy_match"]
                                       for r in data["results"]), f.name


@pytest.mark.slow
@pytest.mark.parametrize("record, kernel, problem, within", [
    ("h200-validate/transpose-6144.json", "transpose", {"N": 6144}, 0.01),
    ("h200-validate/transpose-5000.json", "transpose", {"N": 5000}, 0.01),
    ("h200-layernorm/layernorm-4-1024-1600.json", "layernorm_forward_kernel3",
     {"B": 4, "T": 1024, "C": 1600}, 0.0),
    ("h200-validate/llmc-4096-1024-1024.json", "matmul_forward_kernel1",
     {"BT": 4096, "C": 1024, "OC": 1024}, 0.0)])
def test_model_against_the_h200_out_of_sample(record: str, kernel: str,
                                              problem: dict[str, int], within: float) -> None:
    """Sizes the model was not calibrated on, re-predicted now: median |error| within 15%
    and timing the model's top 3 finds the fastest measured point (bench/tuning_model_check.py
    does every record); on the transposes, to within 1%. Their leaders lie within a percent
    of each other, and docs/model.md item 51 (a block reading a short run of each row waits
    longer for DRAM, measured on this project's copies) moved the fastest of four of
    tuning_model_check's nine transpose records up to #1, of three down one place (0.0-0.7%
    behind) and of one from #4 to #6 (2.3% behind, as before); here, 6,144 #2 -> #1 and
    5,000 #3 -> #4 (0.6% behind)."""
    need_nvcc()
    manifest = {"transpose": ROOT / "examples/transpose/tune.yaml",
                "matmul_forward_kernel1": ROOT / "examples/llmc/tune.yaml",
                "layernorm_forward_kernel3": ROOT / "examples/llmc/tune.yaml"}[kernel]
    if kernel != "transpose" and not (ROOT.parent / "shared" / "realcode").is_dir():
        pytest.skip("../shared/realcode not beside the checkout")
    data = json.loads((ROOT / "bench" / "results" / record).read_text())
    measured = {json.dumps(r["params"], sort_keys=True): r["measured"]["median_ms"]
                for r in data["results"]}
    spec = load_tuning(manifest, kernel, problem)
    pts, removed = points(spec)
    rep = rank(spec, load_device("h200"), pts, removed)
    pairs = [(r.prediction.predicted_ms, measured[json.dumps(r.point.params, sort_keys=True)])
             for r in rep.ranked if not r.pruned and r.prediction]
    assert len(pairs) == len(measured)
    errors = sorted(abs(p / m - 1) for p, m in pairs)
    assert errors[len(errors) // 2] <= 0.15
    fastest = min(m for _, m in pairs)
    assert min(m for _, m in pairs[:3]) <= fastest * (1 + within), (fastest, pairs[:3])


@pytest.mark.slow
def test_model_sees_the_l1_left_beside_shared_memory() -> None:
    """bench/results/h200-transpose-smem: the same transpose with unused dynamic shared
    memory X. X = 8192 moves every block shape to the 228 KB shared-memory size (28 KB of
    L1) without changing the code or, for ROWS 4, the resident warps. At n = 5000 (rows
    misaligned to lines) the model's slowdown for each shape is within 8 points of the
    measured one (11-17%, or 2% for 64 x 2, already at 228 KB with X = 0)."""
    need_nvcc()
    data = json.loads((ROOT / "bench/results/h200-transpose-smem/smem-5000.json").read_text())
    measured = {tuple(r["params"].values()): r["measured"]["median_ms"] for r in data["results"]}
    spec = load_tuning(ROOT / "bench/transpose_smem/tune.yaml", "transpose", {"N": 5000})
    pts, removed = points(spec)
    rep = rank(spec, load_device("h200"), pts, removed)
    predicted = {tuple(r.point.params.values()): r.prediction.predicted_ms
                 for r in rep.ranked if r.prediction}
    for tile, rows in ((32, 2), (32, 4), (64, 2), (64, 4)):
        small, large = (tile, rows, 1, 8192), (tile, rows, 1, 0)
        seen = measured[small] / measured[large]
        model = predicted[small] / predicted[large]
        assert abs(model - seen) <= 0.08, (tile, rows, model, seen)
        assert (model > 1.08) == (seen > 1.08), (tile, rows, model, seen)


@pytest.mark.slow
def test_store_lookup_marks_measured_or_model_pick() -> None:
    need_nvcc()
    store = str(ROOT / "bench" / "results" / "h200-tuning" / "store.json")
    on = json.loads(run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "--store", store,
                        "--json").stdout)  # type: ignore[attr-defined]
    assert on["pick"]["source"] == "measured" and on["stored"]["params"]["BN"] == 128
    off = json.loads(run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h100", "--store", store,
                         "--json").stdout)  # type: ignore[attr-defined]
    assert off["stored"] is None and off["pick"]["source"].startswith("model")
    assert off["pick"]["params"] == off["recommended"]["params"]
    assert "restrictions" in off and "tune_params" in off


def test_shapes_that_overflow(tmp_path: Path) -> None:
    p = _manifest(tmp_path, **{"problem: {M: 4096, N: 4096, K: 4096}":
                               "problem: {M: 2000000000, N: 4096, K: 4096}",
                               '"M % BM == 0 and N % BN == 0 and K % BK == 0"': '"M > 0"'})
    r = run("tile", str(p), "--kernel", "sgemm2d", "-d", "h200")
    assert r.exit_code == 2 and "args[4]: array A" in r.stderr and "GiB" in r.stderr  # type: ignore[attr-defined]


@pytest.mark.slow
def test_tile_explains_conflicts_and_coalescing() -> None:
    """`tile` says what one warp of each point did: the transpose's unpadded 32-wide tiles
    pass 16.5x the conflict-free shared wavefronts (4 stores + 4 column reads of 32 ways,
    against 8), the padded ones none; the text names the worst."""
    need_nvcc()
    r = run("tile", str(ROOT / "examples/transpose/tune.yaml"), "--kernel", "transpose",
            "-d", "h200", "--json")
    cands = {json.dumps(c["params"], sort_keys=True): c for c in json.loads(r.stdout)["candidates"]}
    key = json.dumps({"PAD": 0, "ROWS": 8, "TILE": 32}, sort_keys=True)
    assert cands[key]["bank_conflict_factor"] == 16.5
    assert cands[key.replace('"PAD": 0', '"PAD": 1')]["bank_conflict_factor"] == 1.0
    assert cands[key]["lines_per_global_load"] == 1.0
    text = run("tile", str(ROOT / "examples/transpose/tune.yaml"), "--kernel", "transpose",
               "-d", "h200").stdout
    assert "Bank conflicts in 15 of 24 points: up to 16.5x" in " ".join(text.split())


def test_a_misspelt_set_is_refused() -> None:
    """--set names a problem size of the entry; a misspelt one is an error naming the
    sizes there are, not silently a new unused name."""
    r = run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "--set", "nx=1024")
    assert r.exit_code == 2, r.output  # type: ignore[attr-defined]
    err = r.stderr  # type: ignore[attr-defined]
    assert "--set nx: no such problem size; the problem has M, N, K" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_tile_answers_for_every_device_in_order() -> None:
    """Several -d: one answer per device, in the order given (JSON: a list)."""
    need_nvcc()
    # two devices of one architecture: one compile serves both
    r = run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "-d", "h100", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    d = json.loads(r.stdout)  # type: ignore[attr-defined]
    assert [x["device"] for x in d] == ["h200", "h100"]
    assert d[0]["candidates"] != d[1]["candidates"]  # each device's own ranking
    r = run("tile", "matmul", "-d", "v100", "-d", "h200", "-n", "1024", "--json")
    assert r.exit_code == 0  # type: ignore[attr-defined]
    assert [x["device"] for x in json.loads(r.stdout)] == ["v100", "h200"]  # type: ignore[attr-defined]
    text = run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "-d", "h100").stdout  # type: ignore[attr-defined]
    assert text.index("H200") < text.index("H100")


@pytest.mark.slow
def test_reference_to_an_extern_c_kernel(tmp_path: Path) -> None:
    """An extern "C" kernel has no mangled name to read its signature from: its PTX entry
    gives the parameters (a 64-bit one where args has an array is its pointer)."""
    need_nvcc()
    (tmp_path / "k.cu").write_text(
        'extern "C" __global__ void scale(float *y, const float *x, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\n"
        "template <int B> __global__ void scale_t(float *y, const float *x, int n) {\n"
        "  int i = blockIdx.x * B + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\n")
    (tmp_path / "m.yaml").write_text(
        "kernels:\n"
        "  - name: tuned\n    source: k.cu\n    function: scale_t<B>\n    space: {B: [128, 256]}\n"
        "    problem: {n: 1048576}\n    block: B\n    grid: ['ceil(n / B)']\n"
        "    work: {dram_bytes: 8 * n}\n"
        "    args: [{array: y, dtype: float32, shape: [n], output: true},"
        " {array: x, dtype: float32, shape: [n]}, n]\n    reference: plain\n"
        "  - name: plain\n    source: k.cu\n    function: scale\n    problem: {n: 1048576}\n"
        "    block: 256\n    grid: ['ceil(n / 256)']\n"
        "    args: [{array: y, dtype: float32, shape: [n], output: true},"
        " {array: x, dtype: float32, shape: [n]}, n]\n")
    r = run("tile", str(tmp_path / "m.yaml"), "--kernel", "tuned", "-d", "h200", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    from occupancy.build.builds import arch_of, compile_build, device_build
    from occupancy.build.compilers import make_build
    from occupancy.tune.spaces import check_args, kernel_params

    spec = load_tuning(tmp_path / "m.yaml", "tuned").reference_kernel
    assert spec is not None
    dev = load_device("h200")
    build = device_build(make_build(tmp_path / "k.cu", arch_of(dev)))
    res = compile_build(build)["scale"]
    params = kernel_params(spec, res, build)
    assert params == ["void*", "void*", "unsigned int"] or params == ["void*", "void*", "int"]
    check_args(spec, params, res.demangled)  # 3 given, 3 taken


@pytest.mark.slow
def test_one_instance_that_does_not_compile_spares_the_others(tmp_path: Path) -> None:
    """The instances of a space compile together; one that fails (a static_assert) is
    built again alone, so only it is marked and the others are ranked."""
    need_nvcc()
    (tmp_path / "k.cu").write_text(
        "template <int B> __global__ void k(float *y, int n) {\n"
        "  static_assert(B != 64, \"B = 64 is not supported\");\n"
        "  int i = blockIdx.x * B + threadIdx.x;\n  if (i < n) y[i] = 1.0f;\n}\n")
    (tmp_path / "m.yaml").write_text(
        "kernels:\n  - name: k\n    source: k.cu\n    function: k<B>\n    space: {B: [32, 64, 128]}\n"
        "    problem: {n: 65536}\n    block: B\n    grid: ['ceil(n / B)']\n"
        "    work: {dram_bytes: 4 * n}\n")
    d = json.loads(run("tile", str(tmp_path / "m.yaml"), "--kernel", "k", "-d", "h200",
                       "--json").stdout)  # type: ignore[attr-defined]
    ok = sorted(c["params"]["B"] for c in d["candidates"] if not c["pruned"])
    bad = [c for c in d["candidates"] if c["pruned"]]
    assert ok == [32, 128] and [c["params"]["B"] for c in bad] == [64] and d["pruned"] == 1
    assert "does not compile" in bad[0]["reasons"][0] and "not supported" in bad[0]["reasons"][0]


def test_sass_hottest_loop_skips_out_of_line_fallbacks() -> None:
    """ptxas places a warp-divergent fallback (BRA.DIV's WARPSYNC/SHFL path) after the
    kernel's EXIT and branches back into the main path: that backward branch is no loop.
    Counted as one it was the longest 'loop' of cuda-samples' reduce6 (no FFMA anywhere),
    and the model read a body without loads instead of the grid-stride load loop."""
    from occupancy.build.sass_loops import sass_loop_mix

    sass = """
.text._Z1kPfS_j:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDG.E R3, desc[UR6][R2.64] ;
        /*0020*/                   FADD R8, R3, R8 ;
        /*0030*/              @!P1 BRA `(.L_x_1) ;
        /*0040*/                   BRA.DIV UR4, `(.L_x_3) ;
        /*0050*/                   SHFL.DOWN PT, R3, R4, 0x10, 0x1f ;
.L_x_2:
        /*0060*/                   FADD R7, R8, R7 ;
        /*0070*/               @P0 EXIT ;
        /*0080*/                   STG.E desc[UR6][R2.64], R7 ;
        /*0090*/                   EXIT ;
.L_x_3:
        /*00a0*/                   WARPSYNC.COLLECTIVE R9, `(.L_x_4) ;
        /*00b0*/                   SHFL.DOWN P0, R7, R4, R10, R11 ;
.L_x_4:
        /*00c0*/                   FADD R3, R4, R3 ;
        /*00d0*/                   MOV R4, R3 ;
        /*00e0*/                   MOV R5, R3 ;
        /*00f0*/                   BRA `(.L_x_2) ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPfS_j"])
    assert mix["loop"] == 1 and mix["ldg"] == 1 and mix["total"] == 3 and mix["stg"] == 0
    # a predicated EXIT inside a real loop (a return under a condition) keeps the loop
    looped = sass.replace("/*0020*/                   FADD R8, R3, R8 ;",
                          "/*0020*/               @P2 EXIT ;")
    assert dict(sass_loop_mix(looped)["_Z1kPfS_j"])["total"] == 3


def test_sass_other_passes_count_their_own_waits() -> None:
    """llm.c's online softmax 8 as ptxas builds it (sm_90, bench/results/h200-softmax-ncu):
    the first pass (the hottest loop, with its exp chain) issues four loads and then waits
    once; the second loads, computes and stores each element before the next load (its
    pointers are not __restrict__), four waits for four loads; a rolled loop of one load is
    a remainder, left to the hottest loop's count. Only the second is another pass that
    waits for each load."""
    from occupancy.build.sass_loops import sass_loop_mix

    sass = """
.text._Z1kPfS_j:
.L_x_6:
        /*0000*/                   LDG.E R8, desc[UR4][R10.64] ;
        /*0010*/                   LDG.E R13, desc[UR4][R10.64+0x80] ;
        /*0020*/                   LDG.E R15, desc[UR4][R10.64+0x100] ;
        /*0030*/                   LDG.E R6, desc[UR4][R10.64+0x180] ;
        /*0040*/                   FFMA R9, R8, R13, R9 ;
        /*0050*/                   FFMA R9, R15, R6, R9 ;
        /*0060*/              @!P1 BRA `(.L_x_6) ;
.L_x_10:
        /*0070*/                   LDG.E R8, desc[UR4][R8.64] ;
        /*0080*/                   FADD R13, R8, R6 ;
        /*0090*/               @P1 BRA `(.L_x_10) ;
.L_x_11:
        /*00a0*/                   LDG.E R8, desc[UR4][R4.64] ;
        /*00b0*/                   FMUL R11, R8, R10 ;
        /*00c0*/                   STG.E desc[UR4][R2.64], R11 ;
        /*00d0*/                   LDG.E R12, desc[UR4][R4.64+0x80] ;
        /*00e0*/                   FMUL R13, R12, R10 ;
        /*00f0*/                   STG.E desc[UR4][R2.64+0x80], R13 ;
        /*0100*/                   LDG.E R14, desc[UR4][R4.64+0x100] ;
        /*0110*/                   FMUL R15, R14, R10 ;
        /*0120*/                   STG.E desc[UR4][R2.64+0x100], R15 ;
        /*0130*/                   LDG.E R16, desc[UR4][R4.64+0x180] ;
        /*0140*/                   FMUL R17, R16, R10 ;
        /*0150*/                   STG.E desc[UR4][R2.64+0x180], R17 ;
        /*0160*/              @!P0 BRA `(.L_x_11) ;
        /*0170*/                   EXIT ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPfS_j"])
    assert (mix["ldg"], mix["ldg_batches"]) == (4, 1)  # the hottest: the FFMA loop
    assert mix["pass_loops"] == 1
    # a pass that batches its loads (llm.c's layernorm 3: each pass one wait an iteration)
    # is left to the hottest loop's count
    second = sass[sass.index(".L_x_11:"):sass.index("        /*0170*/")]
    batched = sass.replace(second, """.L_x_11:
        /*00a0*/                   LDG.E R8, desc[UR4][R4.64] ;
        /*00b0*/                   LDG.E R12, desc[UR4][R4.64+0x80] ;
        /*00c0*/                   LDG.E R14, desc[UR4][R4.64+0x100] ;
        /*00d0*/                   LDG.E R16, desc[UR4][R4.64+0x180] ;
        /*00e0*/                   FMUL R11, R8, R10 ;
        /*00f0*/                   FMUL R13, R12, R10 ;
        /*0100*/                   FMUL R15, R14, R10 ;
        /*0110*/                   FMUL R17, R16, R10 ;
        /*0120*/                   STG.E desc[UR4][R2.64], R11 ;
        /*0130*/                   STG.E desc[UR4][R2.64+0x80], R13 ;
        /*0140*/                   STG.E desc[UR4][R2.64+0x100], R15 ;
        /*0150*/                   STG.E desc[UR4][R2.64+0x180], R17 ;
        /*0160*/              @!P0 BRA `(.L_x_11) ;
""")
    assert batched != sass
    assert dict(sass_loop_mix(batched)["_Z1kPfS_j"])["pass_loops"] == 0


def test_other_passes_are_whole_loops_counted_once() -> None:
    """A loop with two backward branches to its head (a `continue`) is one loop, to its last
    branch: its first part waits for each of its 2 loads, its second batches 2 more, and the
    whole (4 loads, 3 waits) is no pass that waits for each load; taken to its first branch
    only, it was. Two loops that overlap without nesting count once."""
    from occupancy.build.sass_loops import sass_loop_mix

    head = """
.text._Z1kPfS_j:
.L_x_0:
        /*0000*/                   FFMA R9, R8, R13, R9 ;
        /*0010*/              @!P1 BRA `(.L_x_0) ;
"""
    cont = head + """.L_x_1:
        /*0020*/                   LDG.E R8, desc[UR4][R4.64] ;
        /*0030*/                   STG.E desc[UR4][R2.64], R8 ;
        /*0040*/                   LDG.E R12, desc[UR4][R4.64+0x80] ;
        /*0050*/                   STG.E desc[UR4][R2.64+0x80], R12 ;
        /*0060*/               @P2 BRA `(.L_x_1) ;
        /*0070*/                   LDG.E R14, desc[UR4][R4.64+0x100] ;
        /*0080*/                   LDG.E R16, desc[UR4][R4.64+0x180] ;
        /*0090*/                   STG.E desc[UR4][R2.64+0x100], R14 ;
        /*00a0*/                   STG.E desc[UR4][R2.64+0x180], R16 ;
        /*00b0*/              @!P0 BRA `(.L_x_1) ;
        /*00c0*/                   EXIT ;
"""
    assert dict(sass_loop_mix(cont)["_Z1kPfS_j"])["pass_loops"] == 0
    waits = head + """.L_x_1:
        /*0020*/                   LDG.E R8, desc[UR4][R4.64] ;
        /*0030*/                   STG.E desc[UR4][R2.64], R8 ;
.L_x_2:
        /*0040*/                   LDG.E R12, desc[UR4][R4.64+0x80] ;
        /*0050*/                   STG.E desc[UR4][R2.64+0x80], R12 ;
        /*0060*/                   LDG.E R14, desc[UR4][R4.64+0x100] ;
        /*0070*/                   STG.E desc[UR4][R2.64+0x100], R14 ;
        /*0080*/               @P2 BRA `(.L_x_1) ;
        /*0090*/                   LDG.E R16, desc[UR4][R4.64+0x180] ;
        /*00a0*/                   STG.E desc[UR4][R2.64+0x180], R16 ;
        /*00b0*/              @!P0 BRA `(.L_x_2) ;
        /*00c0*/                   EXIT ;
"""
    assert dict(sass_loop_mix(waits)["_Z1kPfS_j"])["pass_loops"] == 1


@pytest.mark.slow
def test_a_division_in_the_loop_does_not_shorten_its_trip_count(tmp_path: Path) -> None:
    """Two loops doing one multiply-add of declared work per element, one of them with an
    IEEE division as well (kernel_tuner's pnpoly computes its slope so). ptxas expands each
    division into five FFMAs; read as work, they made the loop look 6x shorter per FLOP
    than it is. In both, the work FFMAs are the elements a pass of the (unrolled) body
    handles, as the declared FLOPs count them."""
    from occupancy.build.builds import compile_build
    from occupancy.build.compilers import make_build, nvdisasm_path
    from occupancy.tune.model import work_ffma

    need_nvcc()
    need(nvdisasm_path(), "nvdisasm")
    body = {"plain": "acc = fmaf(x[j], y[j], acc);",
            "divided": "acc = fmaf(x[j], y[j] / z[j], acc);"}
    mixes = {}
    for name, line in body.items():
        src = tmp_path / f"{name}.cu"
        src.write_text("__global__ void k(const float* x, const float* y, const float* z, "
                       "float* out, int n) {\n  float acc = 0.f;\n"
                       f"  for (int j = threadIdx.x; j < n; j += 32) {{ {line} }}\n"
                       "  out[threadIdx.x] = acc;\n}\n")
        (res,) = compile_build(make_build(src, "sm_90")).values()
        mixes[name] = dict(res.loop_mix or ())
    plain, divided = mixes["plain"], mixes["divided"]
    assert plain["div_ffma"] == 0 and plain["ffma"] >= 1
    assert work_ffma(plain) == plain["ffma"]
    # one division and one multiply-add per element: 6 FFMAs, 1 of them work
    assert divided["div_ffma"] == 5 * work_ffma(divided) > 0
    assert divided["ffma"] == 6 * work_ffma(divided)


def test_division_ffmas_neither_choose_the_hot_loop_nor_go_below_zero() -> None:
    """A setup loop of divisions (5 FFMAs each) holds more FFMAs than the work loop after
    it: the hot loop is the one with the most work FFMAs. A body with an FCHK but fewer
    FFMAs than a division's (a partial sequence) counts no more division FFMAs than it has."""
    from occupancy.build.sass_loops import sass_loop_mix

    sass = """
.text._Z1kPfS_j:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   MUFU.RCP R4, R3 ;
        /*0020*/                   FCHK P0, R2, R3 ;
        /*0030*/                   FFMA R5, -R3, R4, 1 ;
        /*0040*/                   FFMA R4, R4, R5, R4 ;
        /*0050*/                   FFMA R6, R2, R4, RZ ;
        /*0060*/                   FFMA R7, -R3, R6, R2 ;
        /*0070*/                   FFMA R6, R4, R7, R6 ;
        /*0080*/              @!P1 BRA `(.L_x_1) ;
.L_x_2:
        /*0090*/                   FFMA R8, R6, R9, R8 ;
        /*00a0*/                   FFMA R10, R6, R11, R10 ;
        /*00b0*/              @!P2 BRA `(.L_x_2) ;
        /*00c0*/                   EXIT ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPfS_j"])
    assert (mix["total"], mix["ffma"], mix["div_ffma"]) == (3, 2, 0)
    partial = sass.replace("        /*0090*/                   FFMA R8, R6, R9, R8 ;\n", "")
    partial = partial.replace("        /*00a0*/                   FFMA R10, R6, R11, R10 ;\n", "")
    partial = "\n".join(ln for ln in partial.splitlines() if "/*005" not in ln and "/*006" not in ln
                        and "/*007" not in ln)
    one = dict(sass_loop_mix(partial)["_Z1kPfS_j"])
    assert (one["ffma"], one["div_ffma"]) == (2, 2)


@pytest.mark.slow
def test_nvcc_reads_a_walked_constant_table_with_indexed_uldc(tmp_path: Path) -> None:
    """The form the `uldc` count looks for is the one nvcc 13 emits for a loop over a
    __constant__ table (sm_90)."""
    from occupancy.build.builds import compile_build
    from occupancy.build.compilers import make_build, nvdisasm_path

    need_nvcc()
    need(nvdisasm_path(), "nvdisasm")
    src = tmp_path / "walk.cu"
    src.write_text("__constant__ float table[4096];\n"
                   "__global__ void walk(const float* in, int* out) {\n"
                   "  float p = in[threadIdx.x]; int c = 0;\n"
                   "#pragma unroll 8\n"
                   "  for (int j = 0; j < 4096; j++) if (p < table[j]) c = !c;\n"
                   "  out[threadIdx.x] = c + (p < table[7]);\n}\n")
    (res,) = compile_build(make_build(src, "sm_90")).values()
    assert dict(res.loop_mix or ())["uldc"] == 4  # ULDC.64 a pair of entries, 8 a pass


def test_indexed_constant_reads_are_counted_and_named() -> None:
    """A loop that walks a __constant__ table reads it with ULDC through a uniform register
    (`c[0x3][UR4+0x8]`); only those are counted (`uldc`), not an immediate offset into the
    table or the kernel's parameters (bank 0). `tile`'s findings name the points where such
    a loop ran slow on the H200 and the model has not priced it: 8 blocks an SM, 9+ holding
    fewer than 32 warps (11 of 64 threads here), a table of 8 KB or more at fewer, or the
    priced count without a trip count (tune/constwalk.py, tests/test_constwalk.py)."""
    from occupancy.build.resources import KernelResources
    from occupancy.build.sass_loops import sass_loop_mix
    from occupancy.core.solver import solve
    from occupancy.tune.model import Prediction
    from occupancy.tune.ranked import Point, Ranked, findings

    sass = """
.text._Z1kPfS_j:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   ULDC.64 UR6, c[0x3][UR4+0x8] ;
        /*0020*/                   ULDC UR5, c[0x3][0x10] ;
        /*0030*/                   ULDC UR8, c[0x0][0x220] ;
        /*0040*/                   FFMA R8, R3, UR6, R8 ;
        /*0050*/                   UIADD3 UR4, UR4, 0x40, URZ ;
        /*0060*/              @!P1 BRA `(.L_x_1) ;
        /*0070*/                   EXIT ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPfS_j"])
    assert mix["uldc"] == 1 and mix["total"] == 6
    dev = load_device("h200")
    plain = Prediction(1.0, "fp32", {"constant": 0.0}, 1.0, 1.0, 0.0, 0.0, 0.0)
    floor = Prediction(2.0, "constant", {"constant": 2.0}, 1.0, 1.0, 0.0, 0.0, 0.0)

    def point(block: int, loop_mix: tuple[tuple[str, int], ...], grid: int = 4096,
              pred: Prediction = plain) -> Ranked:
        res = KernelResources("k", 32, 0, 1, 0, 0, 0, None, "fake", loop_mix=loop_mix)
        return Ranked(Point({"B": block}, "k", (), (block,), (grid,), 0), res,
                      solve(dev, block, 32), pred, ())

    walk = (*mix.items(), ("cbank3", 4096))  # the module's __constant__ bytes (builds.py)
    held = {b: solve(dev, b, 32).active_blocks_per_sm for b in (64, 256, 288, 512)}
    assert held == {64: 32, 256: 8, 288: 7, 512: 4}
    sms = dev.sm_count
    points = [point(512, walk), point(288, walk), point(64, walk, pred=floor), point(256, walk),
              point(64, (("uldc", 0),)), point(64, walk, grid=7 * sms),
              point(64, walk, grid=11 * sms)]
    said = findings(points, dev)
    assert len(said) == 1 and said[0].startswith(
        "The hot loop reads a __constant__ table through a uniform register (ULDC) in 2 of 7 "
        "points where the model does not price what that may cost (8 blocks an SM, or more "
        "holding fewer than 32 warps, a table of 8 KB or more, or a loop whose trips the "
        "declared FLOPs do not give), the first "
        "B=256: ")
    # 8 blocks an SM from the grid as well: 8 x SMs blocks are named, 7 x SMs are not; 12 x
    # SMs are named only where the prediction holds no floor (no trip count to price it)
    assert len(findings([point(64, walk, grid=8 * sms)], dev)) == 1
    assert findings([point(64, walk, grid=12 * sms, pred=floor), point(64, walk, grid=7 * sms)],
                    dev) == []
    assert len(findings([point(64, walk, grid=12 * sms)], dev)) == 1
    assert findings([point(512, walk), point(288, walk), point(64, (("uldc", 0),))], dev) == []
    # a table of 256 B or less stayed fast (bench/results/h200-uldc-walk round 2); one of
    # 8 KB or more ran slow at 2-6 blocks too (bench/results/h200-cwalk)
    assert findings([point(256, (*mix.items(), ("cbank3", 256)))], dev) == []
    big = (*mix.items(), ("cbank3", 8192))
    assert len(findings([point(512, big)], dev)) == 1


def _loop(body: list[str]) -> str:
    lines = [f"        /*{16 * (i + 1):04x}*/                   {ins} ;" for i, ins in enumerate(body)]
    return ("\n.text._Z1kPf:\n        /*0000*/                   MOV R1, c[0x0][0x28] ;\n.L_x_0:\n"
            + "\n".join(lines) + f"\n        /*{16 * (len(body) + 1):04x}*/               "
            "@P1 BRA `(.L_x_0) ;\n        /*ffff0*/                   EXIT ;\n")


def test_a_lone_warp_waits_for_its_shared_loads_less_what_it_issues_between() -> None:
    """`warp_wait`: one warp issues the loop in order, one instruction a clock, and an
    instruction that reads an LDS's registers waits SHARED_LOAD_CLOCKS after the load (an
    arithmetic result's, ALU_RESULT_CLOCKS after its instruction). A
    step that loads and then uses the data at once (a rolled k loop) waits the latency less
    the one instruction between; 60 independent FFMAs between load and use hide it all; an
    LDS.64 holds two registers, so a use of its second waits too, and of a third does not."""
    from occupancy.build.sass_loops import ALU_RESULT_CLOCKS, SHARED_LOAD_CLOCKS, sass_loop_mix

    rolled = ["LDS.128 R8, [R5]", "IADD3 R5, R5, 0x10, RZ", "FFMA R20, R8, R9, R20",
              "FFMA R21, R10, R11, R21"]
    mix = dict(sass_loop_mix(_loop(rolled))["_Z1kPf"])
    assert (mix["total"], mix["warp_wait"]) == (5, SHARED_LOAD_CLOCKS - 2)
    covered = rolled[:2] + [f"FFMA R{30 + i}, R3, R4, R{30 + i}" for i in range(60)] + rolled[2:]
    assert dict(sass_loop_mix(_loop(covered))["_Z1kPf"])["warp_wait"] == 0
    narrow = ["LDS.64 R8, [R5]", "FFMA R20, R9, R3, R20"]
    assert dict(sass_loop_mix(_loop(narrow))["_Z1kPf"])["warp_wait"] == SHARED_LOAD_CLOCKS - 1
    past = ["LDS.64 R8, [R5]", "FFMA R20, R10, R3, R20", "FFMA R21, R10, R3, R21"]
    assert dict(sass_loop_mix(_loop(past))["_Z1kPf"])["warp_wait"] == 0
    # arithmetic: each FFMA of a chain issues ALU_RESULT_CLOCKS after the one it reads (a
    # pass of 3 links and the branch: 12 clocks for 4 instructions; the clocks its FFMAs
    # wait for the register banks, R4 and R20 in one, pass during that wait and are issue
    # clocks, not waiting: the pass is its instructions, those clocks and the wait)
    chain = ["FFMA R20, R3, R4, R20"] * 3
    mix = dict(sass_loop_mix(_loop(chain))["_Z1kPf"])
    assert mix["reg_reads"] > 0
    assert mix["total"] + mix["reg_reads"] + mix["warp_wait"] == 3 * ALU_RESULT_CLOCKS


@pytest.mark.slow
def test_nvcc_rolled_k_loop_waits_more_than_the_unrolled_one(tmp_path: Path) -> None:
    """On nvcc's own SASS (sm_90): the same outer-product step, rolled (`#pragma unroll 1`)
    and unrolled by 4 (ptxas issues the next step's loads among this step's FFMAs). The
    rolled loop waits a larger share of its pass for its shared loads."""
    from occupancy.build.builds import compile_build
    from occupancy.build.compilers import make_build, nvdisasm_path

    need_nvcc()
    need(nvdisasm_path(), "nvdisasm")
    share = {}
    for unroll in (1, 4):
        src = tmp_path / f"k{unroll}.cu"
        src.write_text("__global__ void k(const float4* in, float* out) {\n"
                       "  __shared__ float4 s[64][32]; int l = threadIdx.x % 32;\n"
                       "  for (int r = threadIdx.x / 32; r < 64; r += blockDim.x / 32)\n"
                       "    s[r][l] = in[r * 32 + l];\n"
                       "  __syncthreads(); float acc[4][4] = {};\n"
                       f"#pragma unroll {unroll}\n"
                       "  for (int k = 0; k < 1024; k++) {\n"
                       "    float4 a = s[(2 * k) % 64][l], b = s[(2 * k + 1) % 64][l];\n"
                       "    float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};\n"
                       "    for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++)\n"
                       "      acc[i][j] = fmaf(av[i], bv[j], acc[i][j]); }\n"
                       "  float t = 0; for (int i = 0; i < 16; i++) t += acc[i / 4][i % 4] * i;\n"
                       "  out[blockIdx.x * blockDim.x + threadIdx.x] = t; }\n")
        (res,) = compile_build(make_build(src, "sm_90")).values()
        mix = dict(res.loop_mix or ())
        assert mix["ffma"] == 16 * unroll and mix["lds_wavefronts"] == 8 * unroll, mix
        share[unroll] = mix["warp_wait"] / (mix["warp_wait"] + mix["total"])
    assert share[1] > 0.3 and share[4] < share[1], share


def test_the_wait_is_shared_among_a_schedulers_warps() -> None:
    """The issue side grows by 1 / (1 - f^w): f the share of a lone warp's pass spent
    waiting, w its warps per scheduler; the FP32 roof of predict_work carries it."""
    from occupancy.core.solver import solve
    from occupancy.tune.model import predict_work
    from occupancy.tune.queueing import warp_wait_factor

    half = {"total": 50, "warp_wait": 50}
    assert warp_wait_factor(half, 4) == pytest.approx(2.0)
    assert warp_wait_factor(half, 8) == pytest.approx(1 / (1 - 0.25))
    assert warp_wait_factor(half, 16) == pytest.approx(1 / (1 - 0.5 ** 4))
    assert warp_wait_factor({"total": 50, "warp_wait": 0}, 4) == 1.0
    dev = load_device("h200")
    occ = solve(dev, 128, 255)  # 2 blocks, 8 warps an SM: 2 a scheduler
    base = {"total": 100, "ffma": 64, "fp32": 64, "lds_wavefronts": 4, "sts_wavefronts": 0,
            "ldg": 0, "stg": 0, "bar": 0, "loop": 1}
    grid = 64 * dev.sm_count
    flops = 2.0 * 32 * 64 * 1000 * grid * 4
    plain = predict_work(dev, occ, grid, flops, 0.0, 255, tuple(base.items()))
    waits = predict_work(dev, occ, grid, flops, 0.0, 255, tuple({**base, "warp_wait": 100}.items()))
    assert occ.active_blocks_per_sm * occ.warps_per_block == 8
    assert waits.roofs_ms["fp32"] / plain.roofs_ms["fp32"] == pytest.approx(1 / (1 - 0.25))


def test_a_thin_second_round_runs_with_the_warps_it_has() -> None:
    """Blocks run in rounds of what the SMs hold. A grid of one full round (3 blocks an SM)
    and a second that gives each SM fewer (1) has the compute side of the two rounds, each
    predicted with its share of the work and its warps: the second round's one block of 4
    warps an SM waits as one warp a scheduler does, so it takes longer than a third of a full
    round, which the spread view (every block at the full round's pace) charged it. The
    memory side stays the whole grid's, so more bytes or more blocks never predict less
    time. Whole rounds, one round, a second round as full as the first, or a third round are
    as before."""
    from occupancy.core.solver import solve
    from occupancy.tune import model

    dev = load_device("h200")
    occ = solve(dev, 128, 160)  # 3 blocks of 4 warps an SM (160 registers a thread)
    assert occ.active_blocks_per_sm == 3
    sms, mix = dev.sm_count, (("total", 100), ("ffma", 64), ("fp32", 64), ("lds_wavefronts", 4),
                              ("sts_wavefronts", 0), ("ldg", 0), ("stg", 0), ("bar", 0),
                              ("loop", 1), ("warp_wait", 40))
    flops_a_block = 2.0 * 128 * 64 * 5000

    def at(blocks: int, dram: float = 0.0, split: bool = True) -> model.Prediction:
        run = model.predict_work if split else model._predict_grid
        return run(dev, occ, blocks, flops_a_block * blocks, dram, 160, mix)

    over = model.LAUNCH_OVERHEAD_MS
    thin = at(4 * sms).predicted_ms - at(3 * sms).predicted_ms  # 3 an SM, then a round of 1
    one_alone = at(sms).predicted_ms - over  # one block an SM, alone
    assert thin == pytest.approx(one_alone, rel=1e-3)  # the block scheduler's floor aside
    assert one_alone > (at(3 * sms).predicted_ms - over) / 3 * 1.2  # its warps wait more
    split, spread = at(4 * sms), at(4 * sms, split=False)
    assert split.predicted_ms > spread.predicted_ms and split.bound == "fp32"
    assert split.wave_efficiency < spread.wave_efficiency == 1.0
    assert split.hiding < spread.hiding
    # whole rounds; one round; a second round of 3 an SM on some SMs (as full as the
    # first); a third round (blocks have drifted apart by then)
    for blocks in (3 * sms, 6 * sms, 2 * sms, 5 * sms + 1, 5 * sms + 7, 6 * sms + 5):
        assert at(blocks) == at(blocks, split=False)
    # the memory side is the whole grid's: its roof as before, and time never falls as the
    # bytes grow through the point where they bound, or as blocks are added
    times = [at(4 * sms, dram).predicted_ms for dram in (0.0, 1e9, 2e9, 2.3e9, 2.4e9, 4e9, 2e10)]
    assert times == sorted(times)
    assert at(4 * sms, 2e10).bound == "dram"
    assert at(4 * sms, 2e9).roofs_ms["dram"] == at(4 * sms, 2e9, split=False).roofs_ms["dram"]
    grid_times = [at(b, 2.2e9 * b / (4 * sms)).predicted_ms for b in range(3 * sms, 6 * sms + 2)]
    assert all(b >= a * 0.999 for a, b in zip(grid_times, grid_times[1:], strict=False))


def test_fewer_warps_than_schedulers_and_the_register_guess_where_the_sass_is_read() -> None:
    """An SM with fewer warps than schedulers issues on that many only, each warp at its
    lone pace (4 / warps x 1 / (1 - f)); with four or more, 1 / (1 - f^(warps / 4)). Where
    the SASS was read (a `warp_wait` key, even 0) the register guess of FMA hiding is not
    applied on top; without the key it is, and the wait factor is 1."""
    from occupancy.core.solver import solve
    from occupancy.tune.model import predict_work
    from occupancy.tune.queueing import warp_wait_factor

    assert warp_wait_factor({"total": 50, "warp_wait": 0}, 1) == pytest.approx(4.0)
    assert warp_wait_factor({"total": 50, "warp_wait": 50}, 2) == pytest.approx(4.0)
    assert warp_wait_factor({"total": 50, "warp_wait": 50}, 4) == pytest.approx(2.0)
    assert warp_wait_factor({"total": 50}, 1) == 1.0
    dev = load_device("h200")
    occ = solve(dev, 128, 32)
    grid = dev.sm_count  # one block of 4 warps an SM: one a scheduler
    base = {"total": 100, "ffma": 64, "fp32": 64, "lds_wavefronts": 0, "sts_wavefronts": 0,
            "ldg": 0, "stg": 0, "bar": 0, "loop": 1}
    flops = 2.0 * 32 * 64 * 1e6

    def fp32(mix: dict[str, int]) -> float:
        return predict_work(dev, occ, grid, flops, 0.0, 32, tuple(mix.items())).roofs_ms["fp32"]

    # 4 warps x 1 FMA in flight (32 registers) over 4 schedulers x 4 clocks: the guess is 4x
    assert fp32(base) / fp32({**base, "warp_wait": 0}) == pytest.approx(4.0)


def test_one_or_two_warps_an_sm_cannot_keep_the_load_store_unit_busy() -> None:
    """A warp pushes its shared wavefronts at most one every LONE_WARP_WAVEFRONT_CLOCKS
    (2.3, bench/results/h200-lsu-conflicts): one warp an SM takes that long a wavefront,
    two warps as long for twice the wavefronts, four the unit's one a clock."""
    from occupancy.core.solver import solve
    from occupancy.tune.model import LONE_WARP_WAVEFRONT_CLOCKS, predict_work

    dev = load_device("h200")
    occ = solve(dev, 32, 32)  # one-warp blocks
    mix = {"total": 100, "ffma": 32, "fp32": 32, "lds_wavefronts": 1056, "sts_wavefronts": 0,
           "ldg": 0, "stg": 0, "bar": 0, "loop": 1, "warp_wait": 0}

    def lsu(per_sm: int) -> float:
        grid = per_sm * dev.sm_count
        flops = 2.0 * 32 * 32 * 1000 * grid  # the same work a warp
        p = predict_work(dev, occ, grid, flops, 0.0, 32, tuple(mix.items()))
        assert p.bound == "lsu"
        return p.roofs_ms["lsu"]

    assert lsu(2) == pytest.approx(lsu(1))
    assert lsu(4) / lsu(1) == pytest.approx(4 / LONE_WARP_WAVEFRONT_CLOCKS)
    assert lsu(8) == pytest.approx(2 * lsu(4))


def test_a_unit_across_phases_waits_once_per_batch_of_its_loads() -> None:
    """A cut run's unit that is the run so far (ptxsim's `phases`) waits once per batch of
    its global loads (the SASS's loads over its batches), at the L2's latency for the share
    of its lines that load again a line L2 holds (l2_reread_share: near re-reads, and far
    ones as far as their footprint fits L2) and DRAM's for the others; one loop's
    iteration keeps one wait, at L2's latency for its panel hits (`again`)."""
    from occupancy.core.solver import solve
    from occupancy.tune.model import DRAM_LATENCY_CLOCKS, L2_LATENCY_CLOCKS, _tiled_loop_stall
    from occupancy.tune.ptxsim import FIELDS, Traffic
    from occupancy.tune.reuse import l2_reread_share

    counts = dict.fromkeys(FIELDS, 0.0) | {"steps": 4000.0, "flops": 1e4, "global_loads": 40.0,
                                           "global_load_lines": 40.0, "barriers": 1.0}
    mix = {"total": 100, "ldg": 8, "ldg_batches": 2, "bar": 1, "loop": 1,
           "lds_wavefronts": 0, "sts_wavefronts": 0}

    def stall(phases: float, again: float = 0.0) -> float:
        t = Traffic(False, 32, **counts, phases=phases)
        return _tiled_loop_stall(mix, t, 1e6, 1, 1, 8 / 2, again)

    one = DRAM_LATENCY_CLOCKS / (1000 + DRAM_LATENCY_CLOCKS)  # a lone block: f^1
    assert stall(0.0) == pytest.approx(1 / (1 - one))
    lone = L2_LATENCY_CLOCKS / (1000 + L2_LATENCY_CLOCKS)  # every tile an L2 hit (item 38)
    assert stall(0.0, again=1.0) == pytest.approx(1 / (1 - lone))
    ten = 10 * DRAM_LATENCY_CLOCKS  # 40 loads, 4 a batch
    assert stall(1.0) == pytest.approx(1 / (1 - ten / (1000 + ten)))
    l2 = 10 * L2_LATENCY_CLOCKS  # every line loaded again from L2
    assert stall(1.0, again=1.0) == pytest.approx(1 / (1 - l2 / (1000 + l2)))
    # 10 near re-reads, 20 far ones 1 KB apart: 132 blocks of 4 warps move 0.5 MB between
    # a line's two loads, within L2; 1 MB apart x 64 warps an SM x 132: 8.9 GB, none held
    # (tune/reuse.py: L2 keeps nothing from L2_KEPT_TO of it)
    dev = load_device("h200")
    occ = solve(dev, 128, 32)
    near = counts | {"near_reread_lines": 10.0, "reread_lines": 30.0}
    held = Traffic(False, 32, **(near | {"reread_distance": 20 * 1024.0,
                                         "far_l2_distance": 20 * 1024.0}))
    assert l2_reread_share(dev, occ, dev.sm_count, held) == pytest.approx(30 / 40)
    lost = Traffic(False, 32, **(near | {"reread_distance": 20 * 2.0 ** 20,
                                         "far_l2_distance": 20 * 2.0 ** 20}))
    grid = 32 * dev.sm_count
    assert l2_reread_share(dev, occ, grid, lost) == pytest.approx(10 / 40)


def test_resident_blocks_share_the_sm_as_a_closed_queue() -> None:
    """busy_share: B blocks cycling between `compute` on the SM (shared) and `wait` for their
    loads (each its own). One block computes compute / (compute + wait) of the time; two,
    1 - 1 / (1 + 2r + 2r^2) with r = compute / wait (the sum's terms B! / (B - k)! r^k);
    more blocks never compute less; no wait, or no block (taken as one), as it must be; a
    sum that overflows (64 blocks, compute 10^10 times the wait) is an SM always busy, and
    a compute far under the wait still computes (no 1 - 1/total rounding to 0). The tiled
    stall is its inverse: 4 blocks of a 334-clock tile (SGEMM_CUDA's 1-D blocktiling at
    2048^3 has that, behind 800 exposed clocks) whose loads are used 20 clocks after them
    stall 1.15x, where independent blocks (f^B, the form before) stalled 1.32x."""
    from occupancy.tune.model import DRAM_LATENCY_CLOCKS, _tiled_loop_stall
    from occupancy.tune.ptxsim import FIELDS, Traffic
    from occupancy.tune.queueing import busy_share

    assert busy_share(1, 300.0, 700.0) == pytest.approx(0.3)
    r = 300.0 / 700.0
    assert busy_share(2, 300.0, 700.0) == pytest.approx(1 - 1 / (1 + 2 * r + 2 * r * r))
    assert busy_share(3, 300.0, 700.0) == pytest.approx(
        1 - 1 / (1 + 3 * r + 6 * r ** 2 + 6 * r ** 3))
    shares = [busy_share(b, 334.0, 780.0) for b in range(1, 33)]
    assert all(a <= b <= 1.0 for a, b in zip(shares, shares[1:], strict=False))
    assert shares[0] < shares[1] < shares[3] < 0.99
    assert busy_share(4, 334.0, 0.0) == 1.0 and busy_share(0, 300.0, 700.0) == pytest.approx(0.3)
    assert busy_share(64, 1e10, 1.0) == 1.0
    assert busy_share(4, 1e-17, 1.0) == pytest.approx(4e-17)
    # the stall of a tile loop: 4 blocks of one warp whose iteration (steps / 4 schedulers)
    # is 334 clocks, its loads' data used 20 clocks after them
    counts = dict.fromkeys(FIELDS, 0.0) | {"steps": 4 * 334.0, "flops": 1e4, "global_loads": 2.0,
                                           "global_load_lines": 2.0, "barriers": 1.0,
                                           "load_cover": 20.0 * 4, "covered_loads": 1.0}
    mix = {"total": 100, "ldg": 2, "bar": 1, "loop": 1, "lds_wavefronts": 0, "sts_wavefronts": 0}
    t = Traffic(False, 32, **counts)
    exposed = DRAM_LATENCY_CLOCKS - 20.0
    stall = _tiled_loop_stall(mix, t, 1e6, 1, 4)
    assert stall == pytest.approx(1 / busy_share(4, 334.0, exposed))
    assert 1.1 < stall < 1.2 < 1 / (1 - (exposed / (334 + exposed)) ** 4)


def test_a_space_whose_sass_has_no_wide_shared_load_is_run_unmerged() -> None:
    """`tile`'s path: the SASS mix's `wide_lds` reaches ptxsim through the point's traffic
    job. bench/lsu/conflicted.cu reads a lane's row by a runtime stride (ptxas keeps scalar
    LDS): at stride 64 each is a 32-way conflict beside a broadcast, 33 wavefronts an FFMA,
    where ptxsim's merge of the aligned rows would count 8.5."""
    need_nvcc()
    spec = load_tuning(ROOT / "bench/lsu/conflicted.yaml", "conflicted")
    pts, _ = points(spec)
    pick = [p for p in pts if p.params == {"blocks": 1, "threads": 32, "stride": 64}]
    r = rank(spec, load_device("h200"), pick).ranked[0]
    mix = dict(r.resources.loop_mix or ())
    if not mix:
        pytest.skip("no nvdisasm: the SASS is not read")
    assert mix["wide_lds"] == 0 and r.traffic is not None
    assert r.traffic.shared_wavefronts == 33 * r.traffic.ffma


def test_a_phases_unit_takes_the_sass_loops_own_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """predict_work hands the stall the SASS's loads a batch before unit_mix scales the
    loop's loads to the unit: 8 loads in 2 waits, 4 a batch, where the scaled mix (its
    nested loop's loads run 9 times) would say 20."""
    from occupancy.core.solver import solve
    from occupancy.tune import model
    from occupancy.tune.ptxsim import FIELDS, Traffic

    seen: list[float] = []
    real = model._tiled_loop_stall

    def spy(*args: object) -> float:
        seen.append(args[5])  # type: ignore[arg-type]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(model, "_tiled_loop_stall", spy)
    dev = load_device("h200")
    mix = {"total": 200, "ffma": 8, "fp32": 8, "lds_wavefronts": 0, "sts_wavefronts": 0,
           "ldg": 8, "stg": 0, "bar": 1, "loop": 1, "ldg_batches": 2, "warp_wait": 0,
           "inner_ffma": 4, "inner_ldg": 4, "inner_total": 50}
    counts = dict.fromkeys(FIELDS, 0.0) | {"steps": 4000.0, "flops": 2560.0, "ffma": 40.0,
                                           "global_loads": 40.0, "global_load_lines": 40.0,
                                           "barriers": 1.0}
    t = Traffic(False, 32, **counts, phases=1.0)
    assert model.unit_mix(mix, t)["ldg"] == 40
    model.predict_work(dev, solve(dev, 32, 32), dev.sm_count, 2560.0 * 1000 * dev.sm_count,
                       0.0, 32, tuple(mix.items()), t)
    assert seen == [4.0]


def test_the_reason_says_what_the_warps_do_not_hide() -> None:
    """Where a point is bound by the memory side the reason speaks of the memory latency;
    bound by the issue side, of the share of the time its schedulers issue (a warp that
    waits for its own results and too few warps to cover it). Within rounding of 100%,
    nothing is said."""
    from occupancy.build.resources import KernelResources
    from occupancy.core.solver import solve
    from occupancy.tune.model import Prediction
    from occupancy.tune.ranked import Point, Ranked, reasons

    dev = load_device("h200")

    def said(bound: str, hiding: float) -> list[str]:
        res = KernelResources("k", 32, 0, 1, 0, 0, 0, None, "fake")
        pred = Prediction(1.0, bound, {}, hiding, 1.0, 0.0, 0.0, 0.0)
        r = Ranked(Point({"B": 128}, "k", (), (128,), (4096,), 0), res, solve(dev, 128, 32), pred,
                   ())
        return [x for x in reasons(r, [r], []) if "hide" in x]

    assert said("fp32", 0.8) == ["the schedulers issue 80% of the time: the resident warps do "
                                 "not hide all of a warp's waits for its own results"]
    assert said("dram", 0.8) == ["the resident warps hide 80% of the memory latency"]
    assert said("fp32", 0.996) == []


def test_an_empty_kernel_has_an_empty_mix() -> None:
    """A kernel with no loop and nothing but EXIT (and the branch-to-self after it) has a
    mix of zeros, not an error (its translation unit's other kernels still get theirs)."""
    from occupancy.build.sass_loops import sass_loop_mix

    sass = """
.text._Z5emptyv:
        /*0000*/                   EXIT ;
.L_x_0:
        /*0010*/                   BRA `(.L_x_0);
        /*0020*/                   NOP;
"""
    mix = dict(sass_loop_mix(sass)["_Z5emptyv"])
    assert mix["total"] == 0 and mix["warp_wait"] == 0 and mix["inner_total"] == 0


def test_a_warp_of_fewer_lanes_issues_its_loop_more_often() -> None:
    """The declared FLOPs run on the lanes a warp has: a block of 8 threads is one warp of
    8 lanes, so the same FLOPs take 4x the loop's warp-wide runs of 32-thread blocks, and
    a block of 48 threads averages 24 lanes a warp (4/3x); the predicted time follows (the
    clock under FFMA load takes a little of it back)."""
    from occupancy.core.solver import solve
    from occupancy.tune.model import _sass_work, predict_work

    dev = load_device("h200")
    mix = {"total": 100, "ffma": 64, "fp32": 64, "lds_wavefronts": 0, "sts_wavefronts": 0,
           "ldg": 0, "stg": 0, "bar": 0, "loop": 1}
    flops = 2.0 * 64 * 32 * 1e6

    def runs(threads: int) -> float:
        return _sass_work(dev, 1000, solve(dev, threads, 32), flops, 0.0, mix)[0]

    assert runs(32) == pytest.approx(1e6) and runs(8) == pytest.approx(4e6)
    assert runs(48) == pytest.approx(4 / 3 * runs(64))

    def ms(threads: int) -> float:
        occ = solve(dev, threads, 32)
        grid = occ.active_blocks_per_sm * dev.sm_count * 8
        return predict_work(dev, occ, grid, flops, 0.0, 32, tuple(mix.items())).predicted_ms

    assert 3.5 < ms(8) / ms(32) < 4.0


def test_sass_loop_nested_in_the_hottest_counts_apart() -> None:
    """A tile loop (loads, stores, barriers) holding a k loop ptxas kept rolled: the body
    read is the tile loop, and the nested loop's instructions are also given apart
    (`inner_*`), since they run once per k step, not once per tile. A second backward
    branch to the tile loop's own head (a `continue`) is not a nested loop."""
    from occupancy.build.sass_loops import sass_loop_mix

    sass = """
.text._Z1kPf:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   LDG.E R3, desc[UR6][R2.64] ;
        /*0020*/                   STS [R4], R3 ;
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
.L_x_1:
        /*0040*/                   LDS.128 R8, [R5] ;
        /*0050*/                   IADD3 R5, R5, 0x10, RZ ;
        /*0060*/                   FFMA R20, R8, R9, R20 ;
        /*0070*/                   FFMA R21, R10, R11, R21 ;
        /*0080*/               @P1 BRA `(.L_x_1) ;
        /*0090*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*00a0*/               @P2 BRA `(.L_x_0) ;
        /*00b0*/               @!P0 BRA `(.L_x_0) ;
        /*00c0*/                   EXIT ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPf"])
    assert (mix["total"], mix["ffma"], mix["ldg"], mix["bar"], mix["lds_wavefronts"]) == (11, 2, 1, 2, 4)
    assert (mix["inner_total"], mix["inner_ffma"], mix["inner_lds_wavefronts"],
            mix["inner_ldg"], mix["inner_bar"]) == (5, 2, 4, 0, 0)
    # the k loop alone (no tile loop around it): nothing is nested
    flat = sass.replace("@P2 BRA `(.L_x_0)", "NOP").replace("@!P0 BRA `(.L_x_0)", "NOP")
    alone = dict(sass_loop_mix(flat)["_Z1kPf"])
    assert alone["total"] == 5 and alone["inner_total"] == 0


def test_a_bad_store_fails_before_anything_compiles(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`tile --store` reads the store first: a malformed one is the error, not the end of a
    space's compiles."""
    import occupancy.build.builds as builds

    def no_compile(*a: object, **k: object) -> None:
        raise AssertionError("compiled before the store was read")

    monkeypatch.setattr(builds, "compile_build", no_compile)
    (tmp_path / "s.json").write_text('{"entries": 3}')
    r = run("tile", str(SGEMM), "--kernel", "sgemm2d", "-d", "h200", "--store",
            str(tmp_path / "s.json"))
    assert r.exit_code == 2  # type: ignore[attr-defined]
    assert r.stderr.startswith("Error: --store") and "compiled" not in r.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize("command,entry", [
    ("check", "  - name: k\n    source: {src}\n    block: 256\n"),
    ("tile", "  - name: k\n    source: {src}\n    space: {{T: [1]}}\n    block: 32\n    grid: 1\n"),
])
def test_a_path_the_system_refuses_is_no_such_file(tmp_path: Path, command: str, entry: str) -> None:
    """A name longer than the file system takes (ENAMETOOLONG, which Path.is_file raises on)
    is "no such file" at the key, exit 2, in every manifest reader (inputs/files.regular_file):
    `check` gives the entry an ERROR verdict, `tile` one line. It was a traceback."""
    p = tmp_path / "m.yaml"
    p.write_text("devices: [h200]\nkernels:\n" + entry.format(src="x" * 300 + ".cu"))
    args = [command, str(p)] + (["--kernel", "k", "-d", "h200"] if command == "tile" else [])
    r = run(*args)
    out = r.output + r.stderr  # type: ignore[attr-defined]
    assert r.exit_code == 2 and "source: no such file" in out, out
    assert "Traceback" not in out and "File name too long" not in out
    if command == "tile":
        assert len(r.stderr.strip().splitlines()) == 1  # type: ignore[attr-defined]
