"""On a real GPU (skipped elsewhere, with the reason): the driver against the solver.

Run on the H200 with `python -m pytest -m gpu tests/test_gpu.py`; the record of the run
is committed under bench/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from occupancy import Device, load_device, solve
from occupancy.gpu.measure import GpuUnavailable, cupy_module, device_properties

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def cp() -> Any:
    try:
        return cupy_module("GPU testing")
    except GpuUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def dev(cp: Any) -> Device:
    return Device.from_cuda_properties(device_properties(0))


def _function(cp: Any, dev: Device, source: str, name: str, defines: dict[str, int]) -> Any:
    from occupancy.build.builds import build_cubin
    from occupancy.build.compilers import make_build
    from occupancy.gpu.measure import load_function

    build = make_build(ROOT / "kernels" / source, f"sm_{dev.cc_major}{dev.cc_minor}",
                       defines=defines)
    return load_function(cp, build_cubin(build), name)


def test_detected_profile_matches_shipped(dev: Device) -> None:
    if "H200" not in dev.name:
        pytest.skip(f"no shipped profile to compare with for {dev.name}")
    shipped = load_device("h200")
    skip = {"name", "aliases", "sources", "path", "architecture", "boost_clock_mhz",
            "dram_bandwidth_gb_s", "fp32_gflops", "gpc_count", "cluster_table"}
    for key, value in shipped.to_dict().items():
        if key not in skip:
            assert dev.to_dict()[key] == value, key


@pytest.mark.parametrize(("source", "name", "defines"), [
    ("copy.cu", "copy_kernel", {}),
    ("matmul.cu", "matmul_tiled", {"TILE": 16}),
    ("matmul.cu", "matmul_regblock", {}),
    ("transpose.cu", "transpose_padded", {"TILE": 32, "BLOCK_ROWS": 8}),
])
def test_driver_occupancy_equals_solver(cp: Any, dev: Device, source: str, name: str,
                                        defines: dict[str, int]) -> None:
    module, fn = _function(cp, dev, source, name, defines)
    drv = cp.cuda.driver
    regs = drv.funcGetAttribute(4, fn.kernel.ptr)
    static = drv.funcGetAttribute(1, fn.kernel.ptr)
    bound = drv.funcGetAttribute(0, fn.kernel.ptr)
    # Opt in to the most dynamic smem the kernel may use (CU_FUNC_ATTRIBUTE 8).
    drv.funcSetAttribute(fn.kernel.ptr, 8, dev.shared_memory_per_block_optin_bytes - static)
    mismatches = []
    checked = 0
    for carveout in (None, 0, 25, 50, 100):
        if carveout is not None:
            drv.funcSetAttribute(fn.kernel.ptr, 9, carveout)  # PREFERRED_SHARED_MEMORY_CARVEOUT
        for block in list(range(32, min(bound, 1024) + 1, 32)) + [1, 33, 100, 224]:
            if block > bound:
                continue
            for dyn in (0, 1000, 8192, 49152, 65536, 100000, 232448 - static, 232449 - static):
                if dyn < 0 or dyn > dev.shared_memory_per_block_optin_bytes - static:
                    continue
                got = drv.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, block, dyn)
                want = solve(dev, block, regs, static, dyn, carveout=carveout).active_blocks_per_sm
                checked += 1
                if got != want:
                    mismatches.append((carveout, block, dyn, got, want))
    assert checked > 100
    assert not mismatches, f"{len(mismatches)} of {checked}: {mismatches[:5]} (regs {regs})"


def test_measure_verifies_small(cp: Any) -> None:
    from occupancy.gpu.measure import measure

    data = measure(["matmul", "transpose"], 300, 333, ["tiled 16", "regblock128 8x8",
                                                        "padded 32x8", "naive 32x8"], 3)
    assert len(data["results"]) == 4
    for r in data["results"]:
        assert r["verified"], r
        assert r["occupancy_match"], r


def test_measure_verifies_against_another_kernel(cp: Any, dev: Device, tmp_path: Path) -> None:
    """`reference: NAME`: the SGEMM space checked by another instance of the same template
    run on the same inputs (verified), and by a kernel that computes something else (not
    verified: alpha 2 instead of 1)."""
    from occupancy.gpu.measure import measure_tuning
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.spaces import points, rank
    from tests.test_tuning import REFERENCE_ENTRY

    text = (ROOT / "examples/sgemm/tune.yaml").read_text()
    (tmp_path / "sgemm.cuh").write_text((ROOT / "examples/sgemm/sgemm.cuh").read_text())
    for alpha, ok in (("1.0", True), ("2.0", False)):
        p = tmp_path / "tune.yaml"
        p.write_text(text.replace('reference: "A @ B"', "reference: other")
                     + REFERENCE_ENTRY.format(name="other", alpha=alpha))
        spec = load_tuning(p, "sgemm2d", {"M": 256, "N": 256, "K": 256})
        pts, removed = points(spec)
        data = measure_tuning(spec, rank(spec, dev, pts, removed), 2, 3)
        assert len(data["results"]) == 2
        for r in data["results"]:
            assert r["verified"] is ok, r


def test_measure_fills_constants_before_each_launch(cp: Any, dev: Device, tmp_path: Path) -> None:
    """`constants:` fills a __constant__ table from a .npy file in every point's module and
    in the reference kernel's: both count against the same table, so they agree (verified);
    a reference that reads a zero table (no `constants:`) disagrees on the same inputs."""
    import numpy

    from occupancy.gpu.measure import measure_tuning
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.spaces import points, rank
    from tests.test_constants import KERNEL, MANIFEST

    numpy.save(tmp_path / "table.npy", numpy.random.default_rng(1).standard_normal(
        (600, 2)).astype(numpy.float32))
    (tmp_path / "walk.cu").write_text(KERNEL)
    ref = ("  - name: ref\n    source: walk.cu\n    function: walk\n    defines: {BS: 64}\n"
           "    block: 64\n"
           "    grid: ceil(n / 64)\n    args: [{array: out, dtype: int32, shape: [n], "
           "output: true}, {array: pts, dtype: float32, shape: [n, 2]}, n]\n")
    for filled, ok in ((True, True), (False, False)):
        p = tmp_path / "tune.yaml"
        p.write_text(MANIFEST.format(constants="{d_vertices: table.npy}")
                     + "    reference: ref\n    tolerance: 1e-6\n" + ref
                     + ("    constants: {d_vertices: table.npy}\n" if filled else ""))
        spec = load_tuning(p, "walk")
        pts, removed = points(spec)
        data = measure_tuning(spec, rank(spec, dev, pts, removed), 2, 3)
        assert [r["verified"] for r in data["results"]] == [ok, ok], data["results"]


def test_measure_budget_times_its_picks_and_says_why(cp: Any, dev: Device) -> None:
    """`--budget 4` on the SGEMM example: at most 4 points timed, each verified, the record's
    picks the timed points in order, the first two the predicted leaders, and the record
    valid JSON."""
    import json

    from occupancy.gpu.measure import measure_tuning
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.spaces import points, rank

    spec = load_tuning(ROOT / "examples/sgemm/tune.yaml", "sgemm2d", {"M": 512, "N": 512, "K": 512})
    pts, removed = points(spec)
    report = rank(spec, dev, pts, removed)
    rec = measure_tuning(spec, report, None, 3, None, 4)
    s = rec["search"]
    assert s["runs"] == len(rec["results"]) <= 4 and len(s["picks"]) == s["runs"]
    assert [p["point"] for p in s["picks"]] == [
        " ".join(f"{k}={v}" for k, v in r["params"].items()) for r in rec["results"]]
    assert [p["why"] for p in s["picks"][:2]] == ["a leader", "a leader"]
    assert all(r["verified"] for r in rec["results"])
    json.dumps(rec, allow_nan=False)


def test_cluster_table_and_random_launches_equal_the_driver(cp: Any, dev: Device) -> None:
    """devices detect's table equals the shipped H200 one, and >= 500 random launches
    (kernels' own registers, block sizes, smem, carveouts, 1-D/2-D/3-D cluster shapes) give
    the driver's cuOccupancyMaxActiveClusters."""
    import dataclasses
    import random

    from occupancy.gpu.measure import active_clusters, measure_cluster_table

    if dev.max_cluster_size is None:
        pytest.skip(f"{dev.name} has no thread-block clusters")
    table = measure_cluster_table(cp, dev)
    if "H200" in dev.name:
        assert table == load_device("h200").cluster_table
    measured = dataclasses.replace(dev, cluster_table=table)
    rng = random.Random(7)
    kernels = [_function(cp, dev, "matmul.cu", "matmul_tiled", {"TILE": 16}),
               _function(cp, dev, "matmul.cu", "matmul_regblock", {}),
               _function(cp, dev, "copy.cu", "copy_kernel", {})]
    drv = cp.cuda.driver
    mismatches, checked = [], 0
    for _ in range(520):
        _, fn = rng.choice(kernels)
        regs = drv.funcGetAttribute(4, fn.kernel.ptr)
        static = drv.funcGetAttribute(1, fn.kernel.ptr)
        bound = drv.funcGetAttribute(0, fn.kernel.ptr)
        threads = rng.choice([t for t in (32, 64, 128, 256, 512, 1024) if t <= bound])
        dyn = rng.choice([0, rng.randrange(0, 60000)])
        shape = rng.choice([(rng.randint(1, 16), 1, 1), (2, 2, 1), (4, 2, 1), (2, 4, 1), (4, 4, 1),
                            (2, 2, 2), (8, 2, 1), (3, 3, 1)])
        got = active_clusters(cp, fn, threads, dyn, shape)
        r = solve(measured, threads, regs, static, dyn, max_threads_per_block=bound, cluster=shape)
        assert r.cluster is not None
        checked += 1
        if r.cluster.active_clusters != got:
            mismatches.append((threads, regs, static, dyn, shape, got, r.cluster.active_clusters))
    assert checked >= 500 and not mismatches, mismatches[:5]


# --- Triton entries: measure launches them with Triton's own launcher (issue 22) --------------

TRITON = ROOT / "examples" / "triton"


@pytest.fixture(scope="module")
def triton_launch(cp: Any) -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (Triton's launcher)")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")


@pytest.mark.parametrize(("kernel", "sets"), [
    ("matmul", {"M": 4096}), ("matmul", {"M": 16}), ("softmax", {}),
    ("fused_moe", {"M": 1}), ("fused_moe", {"M": 256}),
])
def test_triton_measure_examples(triton_launch: None, kernel: str, sets: dict[str, int]) -> None:
    """Every config that fits is launched by Triton, verified against the entry's
    reference, its driver programs per SM equal to the prediction, and the launched
    kernel's shared memory, registers and spills equal to the offline compile's."""
    import json

    from occupancy.gpu.triton_measure import measure_triton
    from occupancy.tune.records import tuning_failures

    rec = measure_triton(str(TRITON / "manifest.yaml"), kernel, sets, None, 5)
    assert rec["results"] and rec["launch_failures"] == [], rec["launch_failures"]
    for r in rec["results"]:
        assert r["verified"] is True, r
        assert r["occupancy_match"], r
        assert r["resources_match"], r
    assert tuning_failures(rec) == [] and rec["fastest"] is not None
    assert rec["triton_version"] and rec["torch_version"]
    json.dumps(rec, allow_nan=False)


def test_triton_measure_budget_and_a_wrong_reference(triton_launch: None,
                                                     tmp_path: Path) -> None:
    """--budget 2 times at most 2 configs; a reference that disagrees fails verification."""
    import shutil

    from occupancy.gpu.triton_measure import measure_triton

    rec = measure_triton(str(TRITON / "manifest.yaml"), "softmax", {}, None, 3, budget=2)
    assert rec["search"]["runs"] <= 2 and len(rec["results"]) <= 2
    assert len(rec["search"]["picks"]) == rec["search"]["runs"]
    # the softmax configs have no predicted time: the leaders in Triton's ranked order
    assert rec["search"]["picks"][0]["why"].startswith("a leader")
    assert all(r["verified"] for r in rec["results"])
    for f in ("matmul.py", "manifest.yaml"):
        shutil.copy(TRITON / f, tmp_path / f)
    m = tmp_path / "manifest.yaml"
    m.write_text(m.read_text().replace('reference: "a_ptr @ b_ptr"',
                                       'reference: "2 * a_ptr @ b_ptr"'))
    rec = measure_triton(str(m), "matmul", {"M": 256, "N": 256, "K": 256}, 1, 3)
    assert len(rec["results"]) == 1 and rec["results"][0]["verified"] is False
