"""Thread-block clusters: the H200 record replayed, guaranteed bounds, the CLI and check."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy import load_device, solve
from occupancy.cli import main
from occupancy.core.clusters import cluster_occupancy, max_cluster_size

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "bench" / "clusters" / "cases.txt"
RECORD = ROOT / "bench" / "results" / "h200-clusters" / "probe.txt"


def _record() -> tuple[dict[int, tuple[int, int, int]], list[tuple[list[int], list[int]]]]:
    lines = RECORD.read_text().splitlines()
    attrs = {int(p[1]): (int(p[2]), int(p[3]), int(p[4]))
             for p in (ln.split() for ln in lines if ln.startswith("attr"))}
    rows = [[int(x) for x in ln.split()[1:]] for ln in lines if ln.startswith("r ")]
    cases = [[int(x) for x in ln.split()[1:]] for ln in CASES.read_text().splitlines()]
    assert len(rows) == len(cases) == 1152
    return attrs, list(zip(cases, rows, strict=True))


def test_h200_record_replays_exactly() -> None:
    """1,152 cuOccupancyMaxActiveClusters answers of the H200 (bench/results/h200-clusters):
    the 512 table queries and 640 random launches (6 kernels, 11 block sizes, smem up to
    232 KB, 7 carveouts, 1-D/2-D/3-D shapes): blocks per SM, active clusters and the
    potential cluster size all equal the solver's."""
    h200 = load_device("h200")
    attrs, pairs = _record()
    checked = shaped = 0
    for (kid, threads, dyn, carveout, x, y, z), (eb, blocks, ec, clusters, ep, potential) in pairs:
        assert eb == ec == ep == 0
        regs, static, bound = attrs[kid]
        r = solve(h200, threads, regs, static, dyn, None if carveout < 0 else carveout, bound,
                  cluster=(x, y, z))
        assert r.active_blocks_per_sm == blocks
        assert r.cluster is not None and r.cluster.source == "measured"
        assert r.cluster.active_clusters == clusters, (kid, threads, dyn, carveout, x, y, z)
        assert max_cluster_size(h200, blocks)[0] == potential
        checked += 1
        shaped += y * z > 1
    assert checked == 1152 and shaped > 100


def test_bounds_hold_without_a_table() -> None:
    h200 = load_device("h200")
    bare = dataclasses.replace(h200, cluster_table=())
    for b, row in enumerate(h200.cluster_table, start=1):
        for s, measured in enumerate(row, start=1):
            est = cluster_occupancy(bare, b, (s, 1, 1))
            assert est.source == "estimate" and est.active_clusters is None
            assert est.lower <= measured <= est.upper, (b, s, est, measured)


def test_what_cannot_launch() -> None:
    h200, a100 = load_device("h200"), load_device("a100")
    assert "compute capability 9.0" in solve(a100, 128, 32, cluster=(2, 1, 1)).cannot_launch[0]
    assert "exceeds the 16" in solve(h200, 128, 32, cluster=(4, 4, 2)).cannot_launch[0]
    r = solve(h200, 128, 32, cluster=(4, 1, 1), grid=(130, 1))
    assert "not a multiple of the cluster" in r.cannot_launch[0]
    big = solve(h200, 1024, 32, cluster=(16, 1, 1))
    assert big.cluster and big.cluster.notes and "non-portable" in big.cluster.notes[0]
    assert big.cluster.active_clusters == 14  # 2 blocks of 1024 threads per SM: row 2, size 16
    with pytest.raises(Exception, match="cluster"):
        solve(h200, 128, 32, cluster=(0, 1, 1))


def run(*args: str) -> object:
    return CliRunner().invoke(main, list(args))


def test_calc_side_by_side_and_json_list() -> None:
    r = run("calc", "-d", "v100", "-d", "a100", "-d", "h100", "-t", "256", "-r", "40")
    assert r.exit_code == 0  # type: ignore[attr-defined]
    out = r.stdout  # type: ignore[attr-defined]
    assert "Side by side" in out and out.index("v100") < out.index("a100") < out.index("h100")
    data = json.loads(run("calc", "-d", "h100", "-d", "v100", "-t", "256", "--json").stdout)  # type: ignore[attr-defined]
    assert [d["device"] for d in data] == ["h100", "v100"]
    single = json.loads(run("calc", "-d", "h200", "-t", "128", "-r", "32", "--cluster", "4x2",
                            "--json").stdout)  # type: ignore[attr-defined]
    assert single["cluster"] == [4, 2, 1] and single["active_clusters"] == 124
    assert single["active_clusters_source"] == "measured"
    est = json.loads(run("calc", "-d", "h100", "-t", "128", "-r", "32", "--cluster", "8",
                         "--json").stdout)  # type: ignore[attr-defined]
    assert est["active_clusters"] is None and est["active_clusters_source"] == "estimate"
    lo, hi = est["active_clusters_bounds"]
    assert 0 < lo <= hi


def test_best_cluster_and_side_by_side() -> None:
    data = json.loads(run("best", "-d", "h200", "-r", "32", "--cluster", "1", "--json").stdout)  # type: ignore[attr-defined]
    assert data["cluster"] == {"min_active_clusters": 1, "max_cluster_size": 16, "source": "measured"}
    data = json.loads(run("best", "-d", "h200", "-r", "64", "--cluster", "100", "--json").stdout)  # type: ignore[attr-defined]
    assert data["cluster"]["max_cluster_size"] == 1  # 1 block/SM: only size 1 keeps 100 active
    r = run("best", "-d", "a100", "-d", "h200", "-r", "64", "--smem-per-thread", "16")
    assert "side by side" in r.stdout and "16 B per thread" in r.stdout  # type: ignore[attr-defined]
    data = json.loads(run("best", "-d", "a100", "-d", "h200", "--json").stdout)  # type: ignore[attr-defined]
    assert [d["device"] for d in data] == ["a100", "h200"]


def test_check_cluster_key(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text("devices: [h200, a100]\nkernels:\n"
                 "  - {name: g, block: 256, registers: 128, dynamic_shared_memory: 100K,"
                 " opt_in_shared_memory: true, cluster: [2, 1, 1], grid: [128, 64]}\n")
    r = run("check", str(m), "--format", "json")
    data = json.loads(r.stdout)  # type: ignore[attr-defined]
    h200, a100 = data["results"]
    assert h200["ok"] and h200["active_clusters"] == 132 and h200["cluster"] == [2, 1, 1]
    assert not a100["ok"] and "compute capability 9.0" in a100["problems"][0]


@pytest.mark.slow
def test_cluster_dims_from_the_build(tmp_path: Path) -> None:
    from occupancy.build.compilers import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    m = tmp_path / "m.yaml"
    src = ROOT / "tests" / "fixtures" / "project" / "src" / "cluster.cu"
    m.write_text(f"devices: [h200]\nkernels:\n  - {{name: paired, source: {src}, block: 128}}\n")
    data = json.loads(run("check", str(m), "--format", "json").stdout)  # type: ignore[attr-defined]
    (v,) = data["results"]
    assert v["ok"] and v["cluster"] == [2, 1, 1] and v["active_clusters"] == 528
    rows = json.loads(run("resources", str(src), "--arch", "sm_90", "--json").stdout)  # type: ignore[attr-defined]
    assert rows[0]["cluster_dims"] == [2, 1, 1]
