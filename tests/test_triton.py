"""Triton kernels offline (issue 22): the launch's specialization, compiles for sm_80/90/120
on the CPU, resources from the cubin, Triton's fit check, config files, the table and the
pruning hook. Tests that compile skip without Triton; the rest need only the project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from occupancy.build.triton import (
    IntArg,
    Pointer,
    TritonConfig,
    TritonKernel,
    out_of_resources,
    programs_per_sm,
    specialize_value,
)
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import solve
from occupancy.inputs.profiles import load_device
from occupancy.tune.triton_prune import (
    ConfigFileError,
    build_table,
    config_key,
    device_row,
    make_prune_hook,
    prune_config_file,
    rank_of,
    read_config_file,
    write_config_file,
)
from occupancy.tune.triton_rank import GemmProblem, gemm_predictor

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "triton"


def _triton():  # type: ignore[no-untyped-def]
    return pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")


def _example(name: str):  # type: ignore[no-untyped-def]
    _triton()
    from occupancy.build.triton import KernelRef

    return KernelRef.parse(f"{EXAMPLES / name}").load()


class FakeTensor:
    """What the launcher reads of a tensor: dtype and data_ptr()."""

    def __init__(self, dtype: str, ptr: int = 0) -> None:
        self.dtype, self.ptr = dtype, ptr

    def data_ptr(self) -> int:
        return self.ptr


# --- the specialization mirror against Triton's own code -------------------------------------

SAMPLES = [0, 1, 2, 15, 16, 17, 32, 4096, 4000, -16, -1, 2**31 - 1, 2**31, -2**31, -2**31 - 1,
           2**63 - 1, 2**63, 2**64 - 1, True, False, 1.0, 0.5, None]


@pytest.mark.parametrize("specialize", [True, False])
@pytest.mark.parametrize("align", [True, False])
def test_specialize_value_is_tritons(specialize: bool, align: bool) -> None:
    _triton()
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.nvidia.compiler import CUDABackend

    for v in SAMPLES:
        assert specialize_value(v, False, specialize, align) == \
            native_specialize_impl(CUDABackend, v, False, specialize, align), v
    for dtype in ("float16", "bfloat16", "float32", "int8", "float8_e4m3fn", "float8_e5m2",
                  "torch.float16", "uint8", "int64", "bool"):
        for ptr in (0, 8, 16, 2**40 + 16):
            for const in (False, True):
                t = FakeTensor(dtype, ptr)
                assert specialize_value(t, const, specialize, align) == \
                    native_specialize_impl(CUDABackend, t, const, specialize, align), (dtype, ptr)


def _tritons_own(fn, values, options):  # type: ignore[no-untyped-def]
    """signature, constexprs, attrs as JITFunction.run computes them (no GPU needed)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", 90, 32))
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, spec, opts = binder(**values, **options)
    meta = {k: v for k, v in values.items() if k in {p.name for p in fn.params if p.is_constexpr}}
    _, sig, constexprs, attrs = fn._pack_args(backend, {**meta, **options}, bound, spec, opts)
    return sig, constexprs, attrs


def _mine(values):  # type: ignore[no-untyped-def]
    """The same call described without tensors: Pointer(dtype, aligned)."""
    return {k: Pointer(v.dtype, v.ptr % 16 == 0) if isinstance(v, FakeTensor) else v
            for k, v in values.items()}


MATMUL_CALLS = [
    {"M": 4096, "N": 4096, "K": 4096, "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1,
         "stride_cm": 4096, "stride_cn": 1},
    {"M": 1000, "N": 1, "K": 4000, "stride_am": 4000, "stride_ak": 1, "stride_bk": 1, "stride_bn": 4000,
         "stride_cm": 1, "stride_cn": 1000},
    {"M": 2**31, "N": 17, "K": 16, "stride_am": 16, "stride_ak": 1, "stride_bk": 17, "stride_bn": 1,
         "stride_cm": 17, "stride_cn": 1},
]


@pytest.mark.parametrize("call", range(len(MATMUL_CALLS)))
@pytest.mark.parametrize("b_ptr", [0, 8])
def test_specialize_call_is_tritons_matmul(call: int, b_ptr: int) -> None:
    from occupancy.build.triton import specialize_call

    fn = _example("matmul.py:matmul_kernel")
    values = dict(a_ptr=FakeTensor("float16"), b_ptr=FakeTensor("float16", b_ptr),
                  c_ptr=FakeTensor("float16", 64), **MATMUL_CALLS[call],
                  BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8)
    sig, constexprs, attrs = _tritons_own(fn, values, {"num_warps": 4, "num_stages": 3})
    mine = specialize_call(fn, _mine(values))
    assert (mine.signature, mine.constexprs, mine.attrs) == (sig, constexprs, attrs)


def test_specialize_call_is_tritons_moe_and_softmax() -> None:
    tl = _triton().language

    from occupancy.build.triton import specialize_call

    moe = _example("moe.py:fused_moe_kernel")
    t = FakeTensor
    values = {"a_ptr": t("float16"), "b_ptr": t("float16"), "c_ptr": t("float16"),
                  "topk_weights_ptr": t("float32"), "sorted_token_ids_ptr": t("int32"),
                  "expert_ids_ptr": t("int32"), "num_tokens_post_padded_ptr": t("int32"),
                  "N": 14336, "K": 4096, "EM": 1000, "num_valid_tokens": 512, "stride_am": 4096,
                  "stride_ak": 1, "stride_be": 14336 * 4096, "stride_bk": 1, "stride_bn": 4096,
                  "stride_cm": 14336, "stride_cn": 1, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64,
                  "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "MUL_ROUTED_WEIGHT": False, "top_k": 2,
                  "compute_type": tl.float16}
    sig, constexprs, attrs = _tritons_own(moe, values, {"num_warps": 4, "num_stages": 4})
    mine = specialize_call(moe, _mine(values))
    assert (mine.signature, mine.constexprs, mine.attrs) == (sig, constexprs, attrs)
    soft = _example("softmax.py:softmax_kernel")
    values = {"out_ptr": t("float32"), "in_ptr": t("float32", 4), "in_row_stride": 781,
                  "out_row_stride": 784, "n_rows": 4096, "n_cols": 781, "BLOCK_SIZE": 1024, "num_stages": 2}
    sig, constexprs, attrs = _tritons_own(soft, values, {"num_warps": 8})
    mine = specialize_call(soft, _mine(values))
    assert (mine.signature, mine.constexprs, mine.attrs) == (sig, constexprs, attrs)


def test_intarg_describes_a_call_without_values() -> None:
    from occupancy.build.triton import specialize_call

    fn = _example("matmul.py:matmul_kernel")
    described = {"a_ptr": "*fp16", "b_ptr": Pointer("fp16"), "c_ptr": Pointer("fp16"),
                     "M": IntArg(True), "N": IntArg(True), "K": IntArg(True), "stride_am": IntArg(True),
                     "stride_ak": IntArg(one=True), "stride_bk": IntArg(True),
                     "stride_bn": IntArg(one=True), "stride_cm": IntArg(True),
                     "stride_cn": IntArg(one=True)}
    meta = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}
    a = specialize_call(fn, described, meta)
    b = specialize_call(fn, _mine(dict(a_ptr=FakeTensor("float16"), b_ptr=FakeTensor("float16"),
                                       c_ptr=FakeTensor("float16"), **MATMUL_CALLS[0])), meta)
    assert a == b
    with pytest.raises(OccupancyError, match="no value for argument 'K'"):
        specialize_call(fn, {k: v for k, v in described.items() if k != "K"}, meta)
    with pytest.raises(OccupancyError, match="has no parameter nope"):
        specialize_call(fn, {**described, "nope": 1}, meta)


# --- compiling offline ----------------------------------------------------------------------

MATMUL_ARGS = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
                   "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096,
                   "stride_cn": 1}
SOFTMAX_ARGS = {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": 4096, "out_row_stride": 4096,
                    "n_rows": 8192, "n_cols": 4096}


@pytest.mark.slow
def test_compile_matmul_and_softmax_for_three_targets(tmp_path, monkeypatch) -> None:
    from occupancy.build.triton import CompileStats, compile_configs

    monkeypatch.setenv("OCCUPANCY_CACHE_DIR", str(tmp_path))
    mm = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
          "num_warps": 4, "num_stages": 3}
    stats = CompileStats()
    ccs = ["8.0", "9.0", "12.0"]
    kernels = compile_configs(_example("matmul.py:matmul_kernel"), MATMUL_ARGS, [mm], ccs,
                              jobs=2, stats=stats)
    assert [k.cc for k in kernels] == ccs and all(k.compiled for k in kernels)
    for k in kernels:
        # 3 stages of a 128x64 A tile and a 64x128 B tile in fp16: 32 KB a stage, at most
        # every stage buffered; pipelining on (the specialized launch), not the 8 KB of an
        # unspecialized compile
        assert 32768 <= k.shared <= 3 * 32768, k
        assert 64 <= k.registers <= 255 and k.max_threads == 128
        assert programs_per_sm(k, load_device({"8.0": "a100", "9.0": "h200",
                                               "12.0": "rtx5090"}[k.cc])) >= 1
    soft = compile_configs(_example("softmax.py:softmax_kernel"), SOFTMAX_ARGS,
                           [{"BLOCK_SIZE": 4096, "num_stages": 2, "num_warps": 8}], ccs,
                           stats=stats)
    for k in soft:
        # a row of 4096 fp32 is 16 KB: the 2-stage row loop may stage one row in shared
        # memory, plus the reduction's scratch
        assert k.compiled and k.shared <= 16384 + 1024 and 16 <= k.registers <= 255, k
    again = CompileStats()
    compile_configs(_example("matmul.py:matmul_kernel"), MATMUL_ARGS, [mm], ccs, stats=again)
    assert again.cached == 3 and again.compiled == 0
    assert stats.compiled == 6 and stats.failed == 0


@pytest.mark.slow
def test_cubin_registers_are_ptxas_own(tmp_path) -> None:
    """The numbers read from the cubin are the ones ptxas reports (Triton discards its
    `ptxas -v` log; the driver's NUM_REGS / LOCAL_SIZE_BYTES are the cubin's)."""
    triton = _triton()
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas
    from triton.compiler import ASTSource

    from occupancy.build.resources import parse_ptxas_log
    from occupancy.build.triton import from_compiled, specialize_call

    fn = _example("matmul.py:matmul_kernel")
    meta = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}
    spec = specialize_call(fn, MATMUL_ARGS, meta)
    for cc in (80, 90):
        k = triton.compile(ASTSource(fn, spec.signature, spec.constexprs, spec.attrs),
                           target=GPUTarget("cuda", cc, 32),
                           options={"num_warps": 4, "num_stages": 3})
        ours = from_compiled(k, cc)
        assert from_compiled(k) == ours  # the target read from the cubin
        dev = load_device("a100" if cc == 80 else "h200")
        assert programs_per_sm(k, dev) == programs_per_sm(ours, dev) >= 1  # a CompiledKernel
        ptx = tmp_path / "k.ptx"
        ptx.write_text(k.asm["ptx"])
        arch = f"sm_{cc}a" if cc >= 90 else f"sm_{cc}"
        log = subprocess.run([get_ptxas(cc).path, "-v", "-lineinfo", f"--gpu-name={arch}",
                              str(ptx), "-o", str(tmp_path / "k.o")],
                             capture_output=True, text=True, check=True).stderr
        res = parse_ptxas_log(log)[arch]["matmul_kernel"]
        assert (ours.registers, ours.stack_frame_bytes, ours.barriers) == (
            res.registers_per_thread, res.stack_frame_bytes, res.barriers)


# --- fit, occupancy (no Triton needed) ------------------------------------------------------


def _kernel(shared: int, regs: int = 128, warps: int = 8, cc: str = "9.0", **meta: int
            ) -> TritonKernel:
    cfg = TritonConfig(tuple(sorted(meta.items())), warps, 3)
    return TritonKernel("k", cc, cfg, shared=shared, registers=regs, max_threads=warps * 32,
                        triton_version="3.6.0")


def test_fit_check_is_tritons_message() -> None:
    k = _kernel(147456, cc="12.0")
    assert out_of_resources(k, load_device("rtx5090")) == (
        "out of resource: shared memory, Required: 147456, Hardware limit: 101376. "
        "Reducing block sizes or `num_stages` may help.")
    assert out_of_resources(_kernel(147456), load_device("h200")) is None
    assert out_of_resources(_kernel(232448), load_device("h200")) is None
    assert "Hardware limit: 232448" in str(out_of_resources(_kernel(232449), load_device("h200")))


def test_programs_per_sm_is_the_solver() -> None:
    dev = load_device("h200")
    for shared, regs, warps in [(147456, 193, 8), (32768, 64, 4), (0, 40, 8), (98304, 255, 4)]:
        k = _kernel(shared, regs, warps)
        want = solve(dev, warps * 32, regs, 0, shared, max_threads_per_block=warps * 32)
        assert programs_per_sm(k, dev) == want.active_blocks_per_sm
    # 256 registers x 128 threads: 2 blocks by registers, 2 x 97 KB of 228 KB by smem
    assert programs_per_sm(k.resources(), dev, num_warps=4, shared=98304) == 2
    with pytest.raises(OccupancyError, match="compiled for sm_90"):
        programs_per_sm(k, load_device("a100"))


def test_config_key_is_one_name() -> None:
    d = {"BLOCK_SIZE_N": 64, "BLOCK_SIZE_M": 16, "num_stages": 3, "num_warps": 4}
    assert TritonConfig.from_dict(d).key == config_key(d) == \
        "BLOCK_SIZE_M=16,BLOCK_SIZE_N=64,num_warps=4,num_stages=3"


# --- config files ---------------------------------------------------------------------------

GOOD = {"1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
              "num_warps": 4, "num_stages": 4},
        "64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 16,
               "num_warps": 8, "num_stages": 5}}


def test_config_file_round_trip(tmp_path) -> None:
    p = tmp_path / "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json"
    p.write_text(json.dumps(GOOD))
    got = read_config_file(p)
    assert list(got) == [1, 64] and got[64]["num_stages"] == 5
    out = tmp_path / "out.json"
    write_config_file(out, got)
    assert read_config_file(out) == got


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ("[1, 2]", "a config file is a JSON object"),
    ("{}", "a config file is a JSON object"),
    ('{"abc": {"num_warps": 4, "num_stages": 2}}', "'abc' is not a batch size"),
    ('{"0": {"num_warps": 4, "num_stages": 2}}', "'0' is not a batch size"),
    ('{"8": [16, 32]}', "batch size '8': a config is an object of integers, got list"),
    ('{"8": {"num_warps": 4}}', "batch size '8': no num_stages"),
    ('{"8": {"num_warps": 3, "num_stages": 2}}', "num_warps must be one of"),
    ('{"8": {"num_warps": true, "num_stages": 2}}', "num_warps must be an integer"),
    ('{"8": {"BLOCK_SIZE_M": "16", "num_warps": 4, "num_stages": 2}}',
     "BLOCK_SIZE_M must be an integer"),
    ('{"8": {"BLOCK SIZE": 16, "num_warps": 4, "num_stages": 2}}', "is not a parameter name"),
])
def test_config_file_errors_are_one_line(tmp_path, text: str, message: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ConfigFileError) as e:
        read_config_file(p)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert str(e.value).startswith(str(p))


def test_config_file_missing_is_one_line(tmp_path) -> None:
    with pytest.raises(ConfigFileError, match="no such file") as e:
        read_config_file(tmp_path / "nope.json")
    assert "\n" not in str(e.value)


# --- the table and the hook -----------------------------------------------------------------

SPACE = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
              "num_warps": w, "num_stages": s}
         for bm in (16, 64, 128) for bn in (64, 256) for w in (4, 8) for s in (2, 4)]


def _fake_kernels(cc: str) -> list[TritonKernel]:
    out = []
    for c in SPACE:
        stage = (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) * c["BLOCK_SIZE_K"] * 2
        out.append(TritonKernel("fused_moe_kernel", cc, TritonConfig.from_dict(c),
                                shared=stage * c["num_stages"], registers=128,
                                max_threads=c["num_warps"] * 32, triton_version="3.6.0"))
    return out


def _table() -> dict:
    predict = gemm_predictor(N=14336, K=4096, experts=8, top_k=2)
    rows = {name: device_row(_fake_kernels(load_device(name).compute_capability),
                             load_device(name), [1, 64, 1024], predict)
            for name in ("h200", "rtx5090")}
    return build_table("fused_moe_kernel", "3.6.0", "M", rows)


class Config:
    """A stand-in for triton.Config (kwargs + options)."""

    def __init__(self, d: dict) -> None:
        self.kwargs = {k: v for k, v in d.items() if not k.startswith("num_")}
        self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = \
            d["num_warps"], d["num_stages"], 1, None


def test_table_drops_what_does_not_fit() -> None:
    table = _table()
    h200, rtx = table["devices"]["h200"], table["devices"]["rtx5090"]
    big = config_key(SPACE[-1])  # 128 x 256 x 64, 4 stages: 196,608 B
    assert h200["configs"][big]["fits"] and not rtx["configs"][big]["fits"]
    assert "Hardware limit: 101376" in rtx["configs"][big]["reason"]
    assert big not in rtx["order"]["64"] and big in h200["order"]["64"]
    assert "NVIDIA_H200" in " ".join(h200["names"]) or "h200" in h200["names"]
    json.dumps(table)  # the table is plain JSON


def test_hook_prunes_from_the_table(tmp_path) -> None:
    path = tmp_path / "table.json"
    path.write_text(json.dumps(_table()))
    configs = [Config(c) for c in SPACE]
    hook = make_prune_hook(str(path), device="rtx5090", top_k=3)
    kept = hook(configs, {"M": 60})
    table = json.loads(path.read_text())
    want = table["devices"]["rtx5090"]["order"]["64"][:3]
    assert [config_key({**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages})
            for c in kept] == want
    everything = make_prune_hook(table, device="rtx5090", top_k=None)(configs, {"M": 5000})
    fits = [k for k, v in table["devices"]["rtx5090"]["configs"].items() if v["fits"]]
    assert len(everything) == len(fits) < len(configs)
    stranger = Config({**SPACE[0], "BLOCK_SIZE_K": 32})
    assert stranger in make_prune_hook(table, "rtx5090", 1)([*configs, stranger], {"M": 1})
    with pytest.raises(OccupancyError, match="no device 'v100'"):
        make_prune_hook(table, device="v100")(configs, {"M": 1})


def test_shipped_file_pruned_per_device() -> None:
    table = _table()
    shipped = {1: SPACE[0], 64: SPACE[-1]}
    on_h200, notes = prune_config_file(shipped, table, "h200")
    assert on_h200 == shipped and not notes
    on_rtx, notes = prune_config_file(shipped, table, "rtx5090")
    assert on_rtx[1] == SPACE[0] and on_rtx[64] != SPACE[-1] and len(notes) == 1
    assert "M=64" in notes[0] and "Hardware limit: 101376" in notes[0]
    assert rank_of(table, "rtx5090", 64, SPACE[-1]) is None
    assert rank_of(table, "h200", 64, on_rtx[64]) is not None


def test_moe_rows_are_padded_per_expert() -> None:
    """Rows and B's reads in expectation over uniform random routing: an expert gets
    Binomial(M, top_k / E) tokens, padded to BLOCK_SIZE_M, and B is read once per
    GROUP_SIZE_M of its row blocks."""
    from math import ceil, comb

    def expect(m: int, q: float, f: Any) -> float:
        return sum(comb(m, x) * q ** x * (1 - q) ** (m - x) * f(x) for x in range(m + 1))

    p = GemmProblem(M=4, N=128, K=128, experts=8, top_k=2)
    # 8 routed tokens: an expert is empty with probability 0.75^4, so 5.47 of them have rows
    assert p.rows(16) == pytest.approx(8 * 16 * (1 - 0.75 ** 4))
    m = GemmProblem(M=256, N=4096, K=2048, experts=8, top_k=2)
    for bm, group in ((16, 1), (16, 4), (64, 1), (128, 16)):
        blocks = expect(256, 0.25, lambda x, bm=bm: ceil(x / bm))
        reads = expect(256, 0.25, lambda x, bm=bm, g=group: ceil(ceil(x / bm) / g))
        assert m.rows(bm) == pytest.approx(8 * bm * blocks, rel=1e-9)
        assert m.weights_read(bm, group) == pytest.approx(8 * reads * 4096 * 2048 * 2, rel=1e-9)
    # 64 tokens an expert on average, unevenly: 64-row blocks need 1.47 of them
    assert m.rows(64) / (8 * 64) == pytest.approx(1.466, abs=1e-3)
    assert m.weights_read(16, 1) > 4 * m.weights_read(16, 16)
    assert GemmProblem(M=8, N=128, K=128, experts=2, top_k=2).rows(16) == 2 * 16  # every expert
    assert GemmProblem(M=0, N=128, K=128, experts=8, top_k=2).rows(16) == 0
    assert GemmProblem(M=100, N=128, K=128).rows(64) == 100


# --- lazy imports ---------------------------------------------------------------------------


def test_cli_and_hook_do_not_import_triton() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = ("import occupancy.cli, occupancy.tune.triton_prune, occupancy.build.triton, sys; "
            "print(' '.join(sys.modules))")
    mods = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True).stdout.split()
    assert "triton" not in mods and "torch" not in mods


# --- the worker pool ------------------------------------------------------------------------


def test_workers_survive_a_crash_and_a_timeout() -> None:
    from occupancy.build.workers import WorkerLost, run_jobs

    assert run_jobs("math:sqrt", [4.0, 9.0, 16.0], jobs=2) == [2.0, 3.0, 4.0]
    got = run_jobs("time:sleep", [0, 30, 0], jobs=2, timeout=2,
                   on_lost=lambda job, why: f"lost {job}: {why}")
    assert got == [None, "lost 30: timed out after 2 s", None]
    got = run_jobs("os:_exit", [3], jobs=2, on_lost=lambda job, why: why)
    assert got == ["worker died (exit 3)"]
    with pytest.raises(WorkerLost, match="worker died"):
        run_jobs("os:_exit", [3, 3], jobs=2)


@pytest.mark.parametrize("n, m, s, t, u", [(1, 1, 1, 1, 1), (16, 32, 16, 48, 2**31),
                                           (17, 1, 64, 1, 16), (1, 16, 1, 16, None)])
def test_specialize_call_honours_what_turns_it_off(n, m, s, t, u) -> None:
    """do_not_specialize (no constant for 1, no divisibility), ..._on_alignment (no
    divisibility), annotated ints and floats and bools, None, defaults."""
    from occupancy.build.triton import specialize_call

    fn = _example("../../tests/fixtures/triton_special.py:special_kernel")
    values = {"x_ptr": FakeTensor("float32"), "y_ptr": FakeTensor("float32"), "n": n, "m": m, "s": s,
                  "t": t, "f": 1.0, "b": True, "u": u, "BLOCK": 128}
    sig, constexprs, attrs = _tritons_own(fn, values, {"num_warps": 4})
    mine = specialize_call(fn, _mine(values))
    assert (mine.signature, mine.constexprs, mine.attrs) == (sig, constexprs, attrs)


def test_call_from_signature() -> None:
    from occupancy.build.triton_spec import call_from_signature

    sig = {"a_ptr": "*fp16", "b_ptr": "*kbf16", "n": "i32", "big": "i32", "alpha": "fp32",
           "flag": "i1", "BLOCK": "constexpr"}
    call = call_from_signature(sig, {"n": 4096, "big": 2**40, "alpha": 1, "flag": True,
                                     "BLOCK": 64}, unaligned={"b_ptr"})
    assert call == {"a_ptr": Pointer("fp16"), "b_ptr": Pointer("bf16", False), "n": 4096,
                    "big": 2**40, "alpha": 1.0, "flag": True, "BLOCK": 64}
    assert specialize_value(call["big"]) == ("i64", "D")  # the value decides, as at launch
    with pytest.raises(OccupancyError, match="n \\(i32\\) needs a value"):
        call_from_signature(sig, {})
    with pytest.raises(OccupancyError, match="not an integer"):
        call_from_signature({"n": "i32"}, {"n": 1.5})
    with pytest.raises(OccupancyError, match="unknown Triton dtype"):
        call_from_signature({"p": "*float99"}, {})
