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
from tests.needs import need_nvcc

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
@pytest.mark.parametrize("record, kernel, problem", [
    ("h200-validate/transpose-6144.json", "transpose", {"N": 6144}),
    ("h200-validate/transpose-5000.json", "transpose", {"N": 5000}),
    ("h200-layernorm/layernorm-4-1024-1600.json", "layernorm_forward_kernel3",
     {"B": 4, "T": 1024, "C": 1600}),
    ("h200-validate/llmc-4096-1024-1024.json", "matmul_forward_kernel1",
     {"BT": 4096, "C": 1024, "OC": 1024})])
def test_model_against_the_h200_out_of_sample(record: str, kernel: str,
                                              problem: dict[str, int]) -> None:
    """Sizes the model was not calibrated on, re-predicted now: median |error| within 15%
    and the fastest measured point in the model's top 3 (bench/tuning_model_check.py does
    every record)."""
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
    assert fastest in [m for _, m in pairs[:3]]


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
    build = device_build(make_build(tmp_path / "k.cu", arch_of(dev)), dev)
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
    from occupancy.build.binaries import sass_loop_mix

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


@pytest.mark.slow
def test_a_division_in_the_loop_does_not_shorten_its_trip_count(tmp_path: Path) -> None:
    """Two loops doing one multiply-add of declared work per element, one of them with an
    IEEE division as well (kernel_tuner's pnpoly computes its slope so). ptxas expands each
    division into five FFMAs; read as work, they made the loop look 6x shorter per FLOP
    than it is. In both, the work FFMAs are the elements a pass of the (unrolled) body
    handles, as the declared FLOPs count them."""
    from occupancy.build.builds import compile_build
    from occupancy.build.compilers import make_build
    from occupancy.tune.model import work_ffma

    need_nvcc()
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


def test_sass_loop_nested_in_the_hottest_counts_apart() -> None:
    """A tile loop (loads, stores, barriers) holding a k loop ptxas kept rolled: the body
    read is the tile loop, and the nested loop's instructions are also given apart
    (`inner_*`), since they run once per k step, not once per tile. A second backward
    branch to the tile loop's own head (a `continue`) is not a nested loop."""
    from occupancy.build.binaries import sass_loop_mix

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
