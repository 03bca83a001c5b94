"""Every --json output validates against docs/json-schema.json, the documented contract."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from occupancy.cli import main

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "json-schema.json").read_text())


@functools.cache
def _validator(name: str) -> Any:
    """jsonschema.validate's validator for one shape, the schema checked once (validate
    checks it against the metaschema on every call: most of a record's cost)."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = {**SCHEMA, "$ref": f"#/$defs/{name}"}
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _validate(data: Any, name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(data))
    if error is not None:
        raise error


CASES = [
    ("calc", ["calc", "-d", "h200", "-t", "128", "-r", "32", "--cluster", "2", "--json"]),
    ("best", ["best", "-d", "h200", "-r", "64", "--cluster", "1", "--json"]),
    ("devices", ["devices", "--json"]),
    ("banks", ["banks", "--column", "--json"]),
    ("plot", ["plot", "-d", "a100", "--json"]),
    # the shipped families answer in the shape of a user's tuning entry
    ("tune", ["tile", "transpose", "-d", "h200", "-n", "2048", "--json"]),
    ("tune", ["tile", "matmul", "-d", "v100", "-n", "1000", "--json"]),
]


@pytest.mark.parametrize(("name", "args"), [
    pytest.param(*c, marks=[pytest.mark.slow] if c[1][0] == "tile" else []) for c in CASES
], ids=[" ".join(c[1][:2]) for c in CASES])  # tile compiles: slow
def test_outputs_match_the_schema(name: str, args: list[str]) -> None:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    _validate(json.loads(r.stdout), name)


def test_check_and_multi_device_outputs(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text("devices: [v100, nosuch]\nkernels:\n  - {name: k, block: 256, registers: 32}\n")
    r = CliRunner().invoke(main, ["check", str(m), "--json"])
    _validate(json.loads(r.stdout), "check")
    for d in json.loads(CliRunner().invoke(main, ["calc", "-d", "v100", "-d", "h200", "-t", "64",
                                                  "--json"]).stdout):
        _validate(d, "calc")


@pytest.mark.slow
def test_tune_and_resources_outputs() -> None:
    from occupancy.build.compilers import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    r = CliRunner().invoke(main, ["tile", str(ROOT / "examples/transpose/tune.yaml"), "--kernel",
                                  "transpose", "-d", "h200", "--json"])
    _validate(json.loads(r.stdout), "tune")
    src = ROOT / "tests/fixtures/project/src/kernels.cu"
    r = CliRunner().invoke(main, ["resources", str(src), "-I", str(src.parent.parent / "include"),
                                  "--json"])
    _validate(json.loads(r.stdout), "resources")


def test_committed_gpu_records_match_the_schema() -> None:
    """The records `measure` wrote on the H200 are the documented shapes (serialize's
    MeasureRecord / TuningRecord): what a report or a CI job reads back."""
    res = ROOT / "bench" / "results"
    shipped = [res / "h200-2026-11-30/measure.json", *sorted(res.glob("h200-validate/matmul-*.json")),
               res / "h200-final/matmul-2048.json", res / "h200-final/transpose-8192.json",
               res / "h200-final-2/matmul-2048.json", res / "h200-final-2/transpose-8192.json",
               res / "h200-final-3/matmul-2048.json", res / "h200-final-3/transpose-8192.json"]
    tuned = [*sorted(res.glob("h200-tuning/*-*.json")), *sorted(res.glob("h200-validate/[slt]*-*.json")),
             res / "h200-final/tune-transpose-4096.json",
             *sorted(res.glob("h200-transpose-smem/*.json")),
             *sorted(res.glob("h200-transpose-check/*.json")),
             *sorted(res.glob("h200-layernorm*/*.json")),
             res / "h200-final-2/tune-transpose-4096.json",
             res / "h200-final-2/tune-layernorm5.json",
             *sorted(res.glob("h200-final-3/tune-*.json")), *sorted(res.glob("h200-final-3/budget-*.json")),
             *sorted(res.glob("h200-corpus/*.json")), *sorted(res.glob("h200-budget-gp/**/*.json")),
             *sorted(res.glob("h200-corpus-remeasured/**/*.json")),
             *sorted(res.glob("h200-corpus-day2/*.json")),
             *sorted(res.glob("h200-corpus-pnpoly-polygon/*.json")),
             *sorted(res.glob("h200-corpus-repredicted/*.json")),
             *sorted(res.glob("h200-budget-doubts/*.json")),
             *sorted(res.glob("h200-corpus-4096/*.json")),
             *sorted(res.glob("h200-doubts-own/*.json")),
             *sorted(res.glob("h200-corpus-third/*.json")),
             *sorted(res.glob("h200-budget-third/*.json"))]
    tuned = [f for f in tuned if f.name not in ("store.json", "lds-wavefronts.json")]
    assert len(shipped) == 10 and len(tuned) >= 31 + 3 + 19 + 11 + 7 + 4
    for f in shipped:
        _validate(json.loads(f.read_text()), "measure")
    for f in tuned:
        _validate(json.loads(f.read_text()), "measure_tuning")
    # a budgeted search's picks: why each point was timed
    rec = json.loads((res / "h200-budget-gp/round2/kt-pnpoly-2000000-b4.json").read_text())
    rec["search"]["picks"] = [{"point": "block_size_x=128", "why": "a leader"}]
    _validate(rec, "measure_tuning")
    rec["search"]["picks"] = [{"point": "block_size_x=128"}]
    with pytest.raises(Exception, match="why"):
        _validate(rec, "measure_tuning")


def test_measure_builders_and_pass_rules() -> None:
    """serialize builds the records gpu.py returns: the same shape as the committed ones,
    the rate by family, and the pass rule (verified and occupancy equal to the driver's)."""
    from occupancy import load_device
    from occupancy.gpu.results import measure_result
    from occupancy.tune.family import candidates
    from occupancy.tune.handcounts import estimated, occupancy
    from occupancy.tune.records import measure_failures, timing

    dev = load_device("h200")
    c = candidates("transpose")[0]
    res = estimated(c)
    occ = occupancy(dev, c, res)
    t = timing([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (t["median_ms"], t["min_ms"], t["p90_ms"], t["runs"]) == (3.0, 1.0, 5.0, 5)
    assert t["p10_ms"] == 1.0  # nearest rank of 5: round(0.4) = the first
    driver = {"registers_per_thread": 30, "static_shared_memory": 0,
              "max_threads_per_block": 1024, "active_blocks_per_sm": occ.active_blocks_per_sm}
    r = measure_result(c, 8192, (256, 256), res, occ, None, driver, True, {"exact": True}, t,
                       {"bytes": 8.0 * 8192 ** 2})
    assert r["gb_s"] == pytest.approx(8.0 * 8192 ** 2 / 3e-3 / 1e9) and "tflops" not in r
    assert r["occupancy_match"] and r["error"] is None
    env = {"date": "d", "device": "H200", "compute_capability": "9.0", "driver_version": "13.0",
           "runtime_version": 13000, "cupy_version": "14", "python": "3.12"}
    rec = {**env, "n_matmul": 4096, "n_transpose": 8192, "reps": 5,
           "ceilings": {"copy_gb_s": 4000.0, "sgemm_tflops": 50.0, "sgemm_n": 4096},
           "results": [r]}
    _validate(rec, "measure")
    assert measure_failures(rec) == []  # type: ignore[arg-type]
    assert r["percent_of_ceiling"] == 0.0 and r["predicted_ms"] is None
    # a prediction and a matmul's work: the error and the rate follow from them
    from occupancy.tune.model import Prediction

    pred = Prediction(2.0, "lsu", {}, 1.0, 1.0, 0.0, 0.0, 0.0)
    m = measure_result(c, 4096, (256, 256), res, occ, pred, driver, True, {}, t,
                       {"flops": 2.0 * 4096 ** 3})
    assert (m["predicted_ms"], m["predicted_bound"]) == (2.0, "lsu")
    assert m["error"] == pytest.approx(2.0 / 3.0 - 1)
    assert m["tflops"] == pytest.approx(2.0 * 4096 ** 3 / 3e-3 / 1e12) and "gb_s" not in m
    # nearest-rank percentiles of 11 runs: 10th is the 2nd, 90th the 10th
    t11 = timing([float(x) for x in range(11, 0, -1)])
    assert (t11["p10_ms"], t11["median_ms"], t11["p90_ms"], t11["min_ms"]) == (2.0, 6.0, 10.0, 1.0)
    assert timing([7.0])["p90_ms"] == 7.0
    bad = {**r, "driver_active_blocks_per_sm": occ.active_blocks_per_sm + 1, "occupancy_match": False}
    assert measure_failures({**rec, "results": [r, bad]}) == [c.label]  # type: ignore[arg-type]


def test_tuning_record_builders() -> None:
    """The tuning record gpu.measure_tuning returns, built from a real ranking with made-up
    timings: the schema's shape, the fastest among verified points only, the pass rule."""
    from occupancy import load_device
    from occupancy.build.compilers import nvcc_path
    from occupancy.gpu.results import tuning_record, tuning_result
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.records import timing, tuning_failures
    from occupancy.tune.spaces import points, rank

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    spec = load_tuning(ROOT / "examples/transpose/tune.yaml", "transpose", {"N": 4096})
    pts, removed = points(spec)
    rep = rank(spec, load_device("h200"), pts[:3], removed)
    ranked = [r for r in rep.ranked if not r.pruned]
    assert len(ranked) == 3 and all(r.occupancy for r in ranked)
    blocks = [r.occupancy.active_blocks_per_sm for r in ranked if r.occupancy]
    results = [tuning_result(ranked[0], 1, timing([0.5, 0.5, 0.5]), False, 0.2, blocks[0]),
               tuning_result(ranked[1], 2, timing([0.3, 0.3, 0.3]), True, 0.0, blocks[1]),
               tuning_result(ranked[2], 3, timing([0.4, 0.4, 0.4]), None, None, blocks[2] + 1,
                             ("rolled k loop",))]
    env = {"date": "d", "device": "H200", "compute_capability": "9.0", "driver_version": "13.0",
           "runtime_version": 13000, "cupy_version": "14", "python": "3.12"}
    rec = tuning_record(env, rep, 5, results)  # type: ignore[arg-type]
    _validate(rec, "measure_tuning")
    assert rec["fastest"] == {"params": ranked[1].point.params, "median_ms": 0.3,
                              "predicted_rank": 2}
    assert results[0]["error"] == pytest.approx(ranked[0].prediction.predicted_ms / 0.5 - 1)  # type: ignore[union-attr]
    assert results[2]["occupancy_match"] is False and results[1]["occupancy_match"] is True
    names = [" ".join(f"{k}={v}" for k, v in r.point.params.items()) for r in ranked]
    assert tuning_failures(rec) == [names[0], names[2]]
    assert rec["problem"] == {"N": 4096} and rec["kernel"] == "transpose" and rec["reps"] == 5
    assert rec["pruned"] == []
    # a pruned point is listed with its reasons; with nothing verified there is no fastest;
    # a point without a prediction has no error
    from dataclasses import replace

    from occupancy.tune.spaces import TuneReport

    gone = replace(ranked[2], reasons=("spills 8 B / 8 B per thread",))
    rep2 = TuneReport(rep.spec, rep.device, (ranked[0], gone), 0)
    rec2 = tuning_record(env, rep2, 5, [results[0]])  # type: ignore[arg-type]
    assert rec2["pruned"] == [{"params": ranked[2].point.params,
                               "reasons": ["spills 8 B / 8 B per thread"]}]
    assert rec2["fastest"] is None
    bare = tuning_result(replace(ranked[0], prediction=None), 1, timing([1.0]), True, 0.0,
                         blocks[0])
    assert bare["predicted_ms"] is None and bare["error"] is None and bare["predicted_bound"] is None
    # the roof each point is bound by, kept in the record for whoever reads it back
    assert [r["predicted_bound"] for r in results] == [r.prediction.bound for r in ranked]  # type: ignore[union-attr]
