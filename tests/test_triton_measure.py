"""`occupancy measure` for `triton:` entries, everything but the launch: the manifest's
measure keys, the one problem point a run measures, the arguments' shapes and values, the
grid, the reference and the comparison (NumPy standing in for PyTorch), which configs are
timed (all, top K, the budgeted search), the record, and the one-line errors without a
GPU, CuPy, PyTorch or Triton. The launch itself is in tests/test_gpu.py (skipped here)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from occupancy.cli import main
from occupancy.core.errors import OccupancyError
from occupancy.gpu.triton_measure import (
    call_args,
    compare,
    expected,
    launch_grid,
    one_size,
    ranked_configs,
    run_plan,
)
from occupancy.inputs.manifest import ManifestError
from occupancy.inputs.manifest.triton import load_triton
from occupancy.tune.records import timing, tuning_failures
from occupancy.tune.triton_space import ConfigResult, DeviceTile, SizeResult
from tests.test_schema import _validate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "triton"
MANIFEST = EXAMPLES / "manifest.yaml"
ENV = {"date": "d", "device": "NVIDIA H200", "compute_capability": "9.0",
       "driver_version": "13.0", "runtime_version": 13000, "cupy_version": "14.2",
       "python": "3.12"}


def _np_make(name: str, shape: tuple[int, ...], elem: str, output: bool) -> Any:
    dtype = {"fp16": np.float16, "fp32": np.float32, "i32": np.int32}[elem]
    if output:
        return np.full(shape, 1e4, dtype=dtype)
    rng = np.random.default_rng(len(name))
    return rng.standard_normal(shape).astype(dtype)


def _entry(tmp_path: Path, extra: str) -> Path:
    (tmp_path / "k.py").write_text("# a @triton.jit module (never imported while parsing)\n")
    (tmp_path / "ref.py").write_text("def ref(a):\n    return a['x_ptr']\n")
    m = tmp_path / "m.yaml"
    m.write_text("devices: [h200]\nkernels:\n  - name: k\n    triton: k.py:kern\n"
                 "    signature: {x_ptr: '*fp32', y_ptr: '*fp32', n: i32}\n"
                 "    problem: {n: [64, 4096]}\n    space: {BLOCK: [64, 128], num_warps: [4]}\n"
                 + extra)
    return m


# --- the manifest's measure keys --------------------------------------------------------------


def test_the_examples_carry_what_measure_needs() -> None:
    mm = load_triton(MANIFEST, "matmul")
    assert set(mm.arrays) == {"a_ptr", "b_ptr", "c_ptr"} and mm.outputs == ("c_ptr",)
    assert mm.reference is not None and mm.reference.text == "a_ptr @ b_ptr"
    assert mm.tolerance == 1e-2 and mm.inputs is None
    moe = load_triton(MANIFEST, "fused_moe")
    assert moe.inputs is not None and moe.inputs.name == "moe_inputs"
    assert moe.reference_function is not None and moe.reference_function.name == "moe"
    soft = load_triton(MANIFEST, "softmax")
    assert soft.grid and soft.reference_function is not None


def test_measure_keys_parse(tmp_path: Path) -> None:
    m = _entry(tmp_path, "    arrays: {x_ptr: [n], y_ptr: 'n'}\n    outputs: y_ptr\n"
                         "    reference: ref.py:ref\n    tolerance: 1e-5\n    grid: ceil(n / BLOCK)\n"
                         "    inputs: ref.py:ref\n")
    s = load_triton(m, "k")
    assert [e.text for e in s.arrays["x_ptr"]] == ["n"] and s.outputs == ("y_ptr",)
    assert s.reference_function is not None and s.reference_function.path == str(tmp_path / "ref.py")
    assert s.tolerance == 1e-5 and s.inputs is not None


@pytest.mark.parametrize(("extra", "message"), [
    ("    arrays: {n: [4]}\n", "arrays: 'n' is not a pointer argument of the signature"),
    ("    arrays: {x_ptr: [1, 2, 3, 4, 5]}\n", "arrays: x_ptr: a shape is a list of 1-4 sizes"),
    ("    arrays: {x_ptr: [m]}\n", "unknown name 'm'"),
    ("    outputs: [n]\n", "outputs: must list the pointer arguments the kernel writes"),
    ("    reference: x_ptr @ x_ptr\n", "reference: checks the kernel's outputs: list them"),
    ("    outputs: [y_ptr]\n    reference: x_ptr @ q\n", "unknown name 'q'"),
    ("    outputs: [y_ptr]\n    reference: n @ x_ptr\n", "n is not an array"),
    ("    outputs: [y_ptr]\n    reference: nope.py:ref\n", "reference: no such file"),
    ("    tolerance: 2\n", "tolerance: is a relative error between 0 and 1"),
    ("    inputs: ref.py:not-a-name\n", "inputs: 'ref.py:not-a-name' is not 'path/to/module.py"),
])
def test_bad_measure_keys(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ManifestError, match=None) as e:
        load_triton(_entry(tmp_path, extra), "k")
    assert message in str(e.value) and "m.yaml: line" in str(e.value)


# --- one problem point ----------------------------------------------------------------------


def test_one_size_refuses_a_sweep_and_takes_set() -> None:
    spec = load_triton(MANIFEST, "matmul")
    with pytest.raises(OccupancyError, match=r"sweeps M over 16, 4096: measure one size at a "
                                             r"time, e.g. --set M=4096"):
        one_size(spec, {})
    s = one_size(spec, {"M": 512})
    assert s.points() == [{"M": 512, "N": 4096, "K": 4096}] and s.sweep is None
    with pytest.raises(OccupancyError, match="has no problem size Q"):
        one_size(spec, {"Q": 1})
    with pytest.raises(OccupancyError, match="a size is 1.."):
        one_size(spec, {"M": 0})
    soft = load_triton(MANIFEST, "softmax")
    assert one_size(soft, {}).points() == [{"n_rows": 4096, "n_cols": 1000}]


# --- one call: arguments, grid, reference, comparison ----------------------------------------


MM_CFG = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
          "num_warps": 4, "num_stages": 3}


def test_call_args_shapes_values_and_grid() -> None:
    spec = one_size(load_triton(MANIFEST, "matmul"), {"M": 96, "N": 80, "K": 48})
    point = spec.points()[0]
    args = call_args(spec, MM_CFG, point, _np_make)
    assert list(args) == list(spec.signature)  # the signature's order
    assert args["a_ptr"].shape == (96, 48) and args["b_ptr"].shape == (48, 80)
    assert args["c_ptr"].shape == (96, 80) and (args["c_ptr"] == 1e4).all()  # poisoned
    assert (args["M"], args["stride_am"], args["stride_bk"], args["stride_cn"]) == (96, 48, 80, 1)
    assert launch_grid(spec, MM_CFG, point, args) == (2 * 2,)
    # the reference in float64, the kernel's result compared with it
    want = expected(spec, MM_CFG, point, args, lambda x: x.astype(np.float64))
    assert set(want) == {"c_ptr"} and want["c_ptr"].dtype == np.float64
    err, ok = compare(args, want, spec.tolerance, spec.name)
    assert not ok and err > 1  # still the poison
    args["c_ptr"][:] = (args["a_ptr"].astype(np.float32) @ args["b_ptr"].astype(np.float32))
    err, ok = compare(args, want, spec.tolerance, spec.name)
    assert ok and 0 < err < 1e-3
    args["c_ptr"][0, 0] = np.nan
    err, ok = compare(args, want, spec.tolerance, spec.name)
    assert not ok and math.isinf(err)


@pytest.mark.slow
def test_inputs_function_values_override_and_set_the_grid() -> None:
    spec = one_size(load_triton(MANIFEST, "fused_moe"), {"M": 64})
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
           "num_warps": 4, "num_stages": 3}
    point = spec.points()[0]
    routing = {"sorted_token_ids_ptr": np.zeros(144, np.int32), "expert_ids_ptr":
               np.zeros(9, np.int32), "num_tokens_post_padded_ptr": np.array([144], np.int32),
               "EM": 144}
    args = call_args(spec, cfg, point, _np_make, routing)
    assert args["EM"] == 144 and args["sorted_token_ids_ptr"] is routing["sorted_token_ids_ptr"]
    assert args["b_ptr"].shape == (8, 4096, 2048) or args["b_ptr"].shape[0] == 8
    assert args["c_ptr"].shape == (128, 4096) and args["num_valid_tokens"] == 128
    assert launch_grid(spec, cfg, point, args) == (9 * 64,)  # EM from the function
    with pytest.raises(OccupancyError, match="inputs: gave bogus, which is not an argument"):
        call_args(spec, cfg, point, _np_make, {"bogus": 1})
    # the function's reference gets sizes, constexprs, config and arguments in one dict
    seen: dict[str, Any] = {}

    def ref(a: dict[str, Any]) -> Any:
        seen.update(a)
        return {"c_ptr": np.zeros((128, 4096))}

    assert set(expected(spec, cfg, point, args, np.asarray, ref)) == {"c_ptr"}
    assert seen["top_k"] == 2 and seen["M"] == 64 and seen["BLOCK_SIZE_M"] == 16
    assert seen["EM"] == 144 and seen["a_ptr"] is args["a_ptr"]
    with pytest.raises(OccupancyError, match="reference gave a_ptr, which is not in 'outputs:'"):
        expected(spec, cfg, point, args, np.asarray, lambda a: {"a_ptr": a["a_ptr"]})


def test_what_measure_cannot_do_is_one_error(tmp_path: Path) -> None:
    m = _entry(tmp_path, "    arrays: {x_ptr: [n]}\n")
    spec = one_size(load_triton(m, "k"), {"n": 64})
    cfg = {"BLOCK": 64, "num_warps": 4}
    with pytest.raises(OccupancyError, match="measure needs the shape of y_ptr: add it to "
                                             "'arrays:'"):
        call_args(spec, cfg, spec.points()[0], _np_make)
    with pytest.raises(OccupancyError, match="measure needs the launch grid: add 'grid:'"):
        launch_grid(spec, cfg, spec.points()[0], {})
    m = _entry(tmp_path, "    arrays: {x_ptr: [n * 1000000000], y_ptr: [n]}\n    grid: 0\n")
    spec = one_size(load_triton(m, "k"), {"n": 64})
    with pytest.raises(OccupancyError, match="does not fit"):
        call_args(spec, cfg, spec.points()[0], _np_make)
    with pytest.raises(OccupancyError, match=r"grid \(0,\) cannot launch"):
        launch_grid(spec, cfg, spec.points()[0], {})
    with pytest.raises(OccupancyError, match="has shape"):
        compare({"y": np.zeros(3)}, {"y": np.zeros(4)}, 1e-3, "k")


# --- which configs are timed, and the record --------------------------------------------------


def _tile(times: list[float | None], fits: list[bool] | None = None) -> DeviceTile:
    """A device tile of configs with made-up predicted times (None: no time), at size 64."""
    from occupancy import load_device

    fits = fits or [True] * len(times)
    configs = []
    for i, (t, f) in enumerate(zip(times, fits, strict=True)):
        cfg = {"BLOCK": 16 << i, "num_warps": 4, "num_stages": 3}
        s = SizeResult(f, None if f else "out of resource: shared memory, Required: 1, "
                       "Hardware limit: 0.", 1024 * (i + 1), 64, 0, 2, 0.25, t)
        configs.append(ConfigResult(i + 1, cfg, f"BLOCK={16 << i}", True, "", {64: s}))
    ranked = sorted((c for c in configs if c.fits and c.by_size[64].predicted_ms is not None),
                    key=lambda c: c.by_size[64].predicted_ms or 0.0)
    for place, c in enumerate(ranked, 1):
        c.by_size[64].rank = place
    return DeviceTile(load_device("h200"), configs, [64], "gemm", "")


def _timer(truth: dict[int, float | None], log: list[int]) -> Any:
    from occupancy.gpu.results import triton_result

    def time_one(c: ConfigResult) -> Any:
        log.append(c.index)
        ms = truth[c.index]
        if ms is None:
            return None  # Triton refused to launch it
        return triton_result(c, 64, "kern", timing([ms] * 5), True, 1e-6, 2,
                             {"shared": c.by_size[64].shared, "n_regs": 64, "n_spills": 0}, (8,))

    return time_one


def test_run_plan_all_top_and_budget() -> None:
    tile = _tile([0.5, 0.2, None, 0.3, 0.9, 0.4], [True, True, True, True, True, False])
    ranked = ranked_configs(tile, 64)
    assert [c.index for c in ranked] == [2, 4, 1, 5]  # no time, or no fit: not ranked
    truth: dict[int, float | None] = {1: 0.25, 2: 0.3, 4: 0.35, 5: 0.2}
    log: list[int] = []
    res, search = run_plan(ranked, 64, None, None, _timer(truth, log))
    assert log == [2, 4, 1, 5] and search is None and len(res) == 4
    log.clear()
    res, _ = run_plan(ranked, 64, 2, None, _timer(truth, log))
    assert log == [2, 4] and [r["predicted_rank"] for r in res] == [1, 2]
    log.clear()
    seen: list[tuple[int, int, str]] = []
    res, search = run_plan(ranked, 64, None, 2, _timer(truth, log),
                           lambda i, n, what: seen.append((i, n, what)))
    assert log[:1] == [2] and len(log) <= 2 and search is not None
    assert search["budget"] == 2 and search["runs"] == len(log) and search["stopped"]
    assert seen[-1][2] == "done"
    # a config Triton refuses is no result and never the search's best
    log.clear()
    res, search = run_plan(ranked, 64, None, 4, _timer({**truth, 2: None}, log))
    assert 2 in log and all(r["config_index"] != 2 for r in res)
    # the search learns about each config's neighbours from its parameters
    from occupancy.tune import budget

    made: list[Any] = []
    real = budget.Search
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(budget, "Search", lambda c, b: made.append(c) or real(c, b))
        run_plan(ranked, 64, None, 2, _timer(truth, []))
    assert [c.params for c in made[0]] == [c.config for c in ranked] and made[0][0].params


def test_record_shape_pass_rule_and_store() -> None:
    from occupancy.gpu.results import triton_record, triton_result
    from occupancy.tune.store import store_entry

    m = load_triton(MANIFEST, "matmul")
    spec = one_size(m, {"M": 64})
    tile = _tile([0.5, 0.2, 0.3], [True, True, False])
    ranked = ranked_configs(tile, 64)
    launched = {"shared": ranked[0].by_size[64].shared, "n_regs": 64, "n_spills": 0}
    good = triton_result(ranked[0], 64, "matmul_kernel", timing([0.25, 0.3, 0.2]), True, 1e-4,
                         2, launched, (64,))
    assert good["error"] == pytest.approx(0.2 / 0.25 - 1) and good["occupancy_match"]
    assert good["resources_match"] and good["offline"] == launched
    assert good["predicted_active_blocks_per_sm"] == 2 and good["config_index"] == 2
    other = triton_result(ranked[1], 64, "matmul_kernel", timing([0.1]), False, 0.5, 3,
                          {**launched, "n_regs": 90}, (64,))
    assert not other["occupancy_match"] and not other["resources_match"]
    refused = [{"params": tile.configs[0].config, "config_index": 1, "error": "OutOfResources"}]
    rec = triton_record(ENV, spec, tile, 64, 5, [good, other],  # type: ignore[arg-type]
                        {"triton": "3.6.0", "torch": "2.9"}, refused)
    _validate(rec, "measure_tuning")
    assert rec["problem"] == {"M": 64, "N": 4096, "K": 4096} and rec["kernel"] == "matmul"
    assert rec["fastest"] == {"params": good["params"], "median_ms": 0.25, "predicted_rank": 1}
    assert rec["pruned"] == [{"params": tile.configs[2].config,
                              "reasons": [tile.configs[2].by_size[64].reason]}]
    assert rec["triton_version"] == "3.6.0" and rec["model"] == "gemm"
    label = " ".join(f"{k}={v}" for k, v in tile.configs[0].config.items())
    assert tuning_failures(rec) == [" ".join(f"{k}={v}" for k, v in other["params"].items()),
                                    label]
    key, entry = next(iter(store_entry(rec).items()))
    assert key == "matmul|K=4096,M=64,N=4096|NVIDIA H200|9.0"
    assert entry["params"] == good["params"] and entry["median_ms"] == 0.25
    json.dumps(rec, allow_nan=False)  # no NaN or Infinity in the record


# --- without a GPU, CuPy, PyTorch or Triton: one line, exit 2 ---------------------------------


def _measure(*args: str) -> Any:
    return CliRunner().invoke(main, ["measure", str(MANIFEST), *args])


def _one_error_line(r: Any, text: str) -> None:
    """(rich's transient progress bar, stopped, leaves a blank line where stderr is not a
    terminal: the CUDA path's errors inside it have it too)"""
    assert r.exit_code == 2, r.output
    out = r.output.lstrip("\n")
    assert out.startswith("Error: ") and text in out, r.output
    assert out.count("\n") == 1 and "Traceback" not in out


def test_no_cupy_or_gpu_is_one_line() -> None:
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    _one_error_line(_measure("--kernel", "matmul", "--set", "M=4096"), "needs CuPy")


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """CuPy and a GPU that answer (nothing is launched in these tests)."""
    import occupancy.gpu.measure as gm

    monkeypatch.setattr(gm, "cupy_module", lambda what: object())


def test_a_sweep_without_set_is_one_line(fake_gpu: None) -> None:
    _one_error_line(_measure("--kernel", "matmul"), "sweeps M over 16, 4096")
    _one_error_line(_measure("--kernel", "matmul", "--set", "Q=3"), "has no problem size Q")


def test_no_triton_is_one_line(fake_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import occupancy.build.triton as bt
    from occupancy.build.resources import CompilerUnavailable

    def missing() -> Any:
        raise CompilerUnavailable(bt.INSTALL_HINT)

    monkeypatch.setattr(bt, "_triton", missing)
    _one_error_line(_measure("--kernel", "softmax"), "Triton is not installed")


def test_no_torch_is_one_line(fake_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    pytest.importorskip("triton")
    real = builtins.__import__

    def no_torch(name: str, *a: Any, **k: Any) -> Any:
        if name == "torch" or name.startswith("torch."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    _one_error_line(_measure("--kernel", "softmax"), "needs PyTorch: Triton's launcher uses it")


def test_budget_needs_no_top(fake_gpu: None) -> None:
    r = _measure("--kernel", "softmax", "--budget", "2", "--top", "1")
    _one_error_line(r, "--budget chooses the points")


# --- the offline half of a real run: compiled and ranked for the H200 --------------------------


def test_plan_of_the_example_matmul_for_the_h200() -> None:
    """rank_entry compiles the matmul's configs for sm_90 at M=4096 (as measure does for the
    live GPU); the plan times them best predicted first and the record is the schema's."""
    pytest.importorskip("triton", reason="Triton is not installed")
    from occupancy import load_device
    from occupancy.gpu.results import triton_record
    from occupancy.tune.triton_space import rank_entry

    spec = one_size(load_triton(MANIFEST, "matmul"), {"M": 4096})
    tile = rank_entry(spec, [load_device("h200")], jobs=1).devices[0]
    ranked = ranked_configs(tile, 4096)
    assert len(ranked) == 3 and all(c.by_size[4096].predicted_ms for c in ranked)
    truth = {c.index: 1.0 + c.index for c in ranked}
    results, search = run_plan(ranked, 4096, None, 2, _timer_at(truth, 4096))
    assert search is not None and 1 <= search["runs"] <= 2
    rec = triton_record(ENV, spec, tile, 4096, 5, results,  # type: ignore[arg-type]
                        {"triton": "3.6.0", "torch": "x"})
    _validate(rec, "measure_tuning")
    assert rec["results"][0]["offline"]["shared"] == ranked[0].by_size[4096].shared > 0


def _timer_at(truth: dict[int, float], size: int) -> Any:
    from occupancy.gpu.results import triton_result

    def time_one(c: ConfigResult) -> Any:
        s = c.by_size[size]
        return triton_result(c, size, "matmul_kernel", timing([truth[c.index]]), True, 0.0,
                             s.programs_per_sm, {"shared": s.shared, "n_regs": s.registers,
                                                 "n_spills": s.spills}, (1,))

    return time_one


# --- the runner's glue, with NumPy standing in for PyTorch and a fake launcher -----------------


class _Arr(np.ndarray):
    """A NumPy array with the two PyTorch methods the runner calls."""

    def to(self, dtype: Any) -> Any:
        return self.astype(dtype)

    def double(self) -> Any:
        return self.astype(np.float64)


class _FakeTorch:
    float16, float32, float64, int32 = np.float16, np.float32, np.float64, np.int32
    __version__ = "fake"

    class cuda:  # noqa: N801 - PyTorch's name
        @staticmethod
        def synchronize() -> None:
            pass

    class Generator:
        def __init__(self, device: str) -> None:
            self.rng = np.random.default_rng(0)

        def manual_seed(self, seed: int) -> Any:
            self.rng = np.random.default_rng(seed)
            return self

    @staticmethod
    def full(shape: Any, value: float, dtype: Any, device: str) -> Any:
        return np.full(shape, value, dtype=dtype).view(_Arr)

    @staticmethod
    def randn(shape: Any, generator: Any, device: str) -> Any:
        return generator.rng.standard_normal(shape).astype(np.float32).view(_Arr)

    @staticmethod
    def randint(lo: int, hi: int, shape: Any, generator: Any, device: str) -> Any:
        return generator.rng.integers(lo, hi, shape).view(_Arr)


class _FakeKernel:
    class metadata:  # noqa: N801 - Triton's name
        shared, num_warps = 32768, 4

    n_regs, n_spills, function = 96, 0, 1234


class _FakeJit:
    """fn[grid](**args, **config): a matmul into c_ptr; refuses BLOCK_SIZE_N=256."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, ...], dict[str, Any]]] = []

    def __getitem__(self, grid: tuple[int, ...]) -> Any:
        def launch(**kw: Any) -> Any:
            self.calls.append((grid, kw))
            if kw["BLOCK_SIZE_N"] == 256:
                raise RuntimeError("out of resource: shared memory, Required: 1\nmore")
            kw["c_ptr"][:] = kw["a_ptr"].astype(np.float32) @ kw["b_ptr"].astype(np.float32)
            return _FakeKernel()

        return launch


def test_runner_glue_with_a_fake_launch() -> None:
    from types import SimpleNamespace

    from occupancy import load_device
    from occupancy.gpu.triton_measure import _Runner

    pytest.importorskip("triton")  # the runner loads the @triton.jit module
    spec = one_size(load_triton(MANIFEST, "matmul"), {"M": 64, "N": 64, "K": 32})
    tile = _tile([0.1, 0.2])
    for c, n in zip(tile.configs, (64, 256), strict=True):
        c.config = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": 32,
                    "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 3}
    driver = SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=lambda f, t, s: 2)
    cp = SimpleNamespace(cuda=SimpleNamespace(driver=driver))
    timer = SimpleNamespace(time=lambda fn, reps: [fn() and 0.05] * reps)
    runner = _Runner(cp, _FakeTorch, spec, load_device("h200"), timer, 5, 64)
    runner.jit = _FakeJit()
    ok = runner.time_one(tile.configs[0])
    assert ok is not None and ok["verified"] is True and ok["relative_error"] < 1e-3
    assert ok["measured"]["median_ms"] == 0.05 and ok["measured"]["runs"] == 5
    assert ok["driver_active_blocks_per_sm"] == 2 and ok["grid"] == [2 * 1]
    assert ok["launched"] == {"shared": 32768, "n_regs": 96, "n_spills": 0}
    grid, kw = runner.jit.calls[0]
    assert kw["num_warps"] == 4 and kw["BLOCK_SIZE_M"] == 32 and kw["stride_ak"] == 1
    assert runner.time_one(tile.configs[1]) is None
    assert runner.failures == [{"params": tile.configs[1].config, "config_index": 2,
                                "error": "RuntimeError: out of resource: shared memory, "
                                         "Required: 1"}]


def test_bench_summary_compares_budget_with_full(tmp_path: Path) -> None:
    """bench/triton_measure_summary.py on a run's records: counts per record, each budget's
    best over the whole space's best, and the records with problems."""
    import runpy
    import sys

    from occupancy.gpu.results import triton_record

    spec = one_size(load_triton(MANIFEST, "matmul"), {"M": 64})
    tile = _tile([0.1, 0.2, 0.3])
    ranked = ranked_configs(tile, 64)
    full, _ = run_plan(ranked, 64, None, None, _timer({1: 0.3, 2: 0.2, 3: 0.1}, []))
    some, search = run_plan(ranked, 64, None, 1, _timer({1: 0.3, 2: 0.2, 3: 0.1}, []))
    versions = {"triton": "3.6.0", "torch": "x"}
    for name, res, s in (("mm-full", full, None), ("mm-budget4", some, search)):
        rec = triton_record(ENV, spec, tile, 64, 5, res, versions)  # type: ignore[arg-type]
        if s:
            rec["search"] = s  # type: ignore[typeddict-item]
        (tmp_path / f"{name}.json").write_text(json.dumps(rec))
    (tmp_path / "broken.json").write_text("[]")
    argv = sys.argv
    try:
        sys.argv = ["summary", str(tmp_path)]
        runpy.run_path(str(ROOT / "bench" / "triton_measure_summary.py"), run_name="__main__")
    finally:
        sys.argv = argv
    out = json.loads((tmp_path / "summary.json").read_text())
    assert out["records"]["mm-full"]["timed"] == 3 and out["records"]["mm-full"]["verified"] == 3
    assert out["budget_vs_full"]["mm-budget4"]["best_over_full_best"] == pytest.approx(3.0)
    assert out["records_with_problems"] == ["broken"]


@pytest.mark.slow
def test_measure_cli_end_to_end_with_a_fake_launch(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """`occupancy measure MANIFEST --kernel matmul --set ... --json --store`: the real
    compile and ranking for the H200, Triton's launch replaced by NumPy (everything else
    the GPU run does: the plan, the record, the store, the exit code)."""
    from types import SimpleNamespace

    import occupancy.core.device as cd
    import occupancy.gpu.measure as gm
    import occupancy.gpu.triton_measure as tm
    from occupancy import load_device

    pytest.importorskip("triton", reason="Triton is not installed")
    runtime = SimpleNamespace(driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000)
    driver = SimpleNamespace(occupancyMaxActiveBlocksPerMultiprocessor=lambda f, t, s: 1)
    cp = SimpleNamespace(cuda=SimpleNamespace(driver=driver, runtime=runtime), __version__="14")
    monkeypatch.setattr(gm, "cupy_module", lambda what: cp)
    monkeypatch.setattr(gm, "device_properties", lambda i: {})
    monkeypatch.setattr(cd, "from_cuda_properties", lambda props: load_device("h200"))
    monkeypatch.setattr(gm, "Timer", lambda cp, l2: SimpleNamespace(
        time=lambda fn, reps: [fn() and 0.5] * reps))
    monkeypatch.setattr(tm, "torch_module", lambda: _FakeTorch)

    class Runner(tm._Runner):
        def __init__(self, *a: Any) -> None:
            super().__init__(*a)
            self.jit = _FakeJit()

    monkeypatch.setattr(tm, "_Runner", Runner)
    store = tmp_path / "best.json"
    r = CliRunner().invoke(main, ["measure", str(MANIFEST), "--kernel", "matmul", "--set", "M=64",
                                  "--set", "N=64", "--set", "K=64", "--json", "--store",
                                  str(store)])
    # the fake kernel reports 32,768 B and 96 registers, not the compile's: exit 1, and why
    assert r.exit_code == 1, r.output
    assert "failed verification or occupancy" in r.stderr
    rec = json.loads(r.stdout)
    _validate(rec, "measure_tuning")
    assert rec["problem"] == {"M": 64, "N": 64, "K": 64} and rec["model"] == "gemm"
    assert len(rec["results"]) == 2 and all(x["verified"] for x in rec["results"])
    assert [f["config_index"] for f in rec["launch_failures"]] == [3]  # BLOCK_SIZE_N=256
    assert rec["fastest"]["median_ms"] == 0.5 and rec["triton_version"]
    entries = json.loads(store.read_text())["entries"]
    assert list(entries) == ["matmul|K=64,M=64,N=64|NVIDIA H200|9.0"]
