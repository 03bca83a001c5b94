"""`measure --budget N` against kernel_tuner 1.5's strategies, replayed on measured tuning
spaces (issue 18, item 4): which finds a point within 3% of the measured fastest in N runs.

For every tuning record given (a (space, size) pair, the JSON `occupancy measure MANIFEST
--kernel K` writes: occupancy/tune/records.py TuningRecord) with enough verified points:

- writes a kernel_tuner cache file of the record (its JSON cache format, see `kt_cache`);
- runs kernel_tuner's `tune_kernel(..., simulation_mode=True, cache=...)` with the strategies
  random_sample, bayes_opt (an initial sample of B/2) and genetic_algorithm at each budget
  B (strategy_options max_fevals=B), over the seeds 0..S-1 (Python's and NumPy's global
  generators, and the Latin hypercube of bayes_opt's initial sample, seeded per run);
- replays this project's budgeted search (occupancy.tune.budget.simulate) on the record's
  predicted and measured times, and the model's plain top B (the B lowest predicted_ms);
- counts, per method and budget, how often the best point found is within the tolerance
  (3%) of the record's fastest measured point.

Writes a JSON (per pair and totals) and a Markdown table. Needs kernel_tuner==1.5.0 (and
scikit-learn for bayes_opt; both come with `pip install kernel_tuner==1.5.0`), which the
project does not depend on: the cache writer alone needs neither.

Run (quote the globs, the script expands them, so the command line recorded stays short):
  PYTHONPATH=. python bench/budget_compare.py 'bench/results/h200-*/*.json' --min-points 8 \
      --json bench/results/budget-compare-project.json --md bench/results/budget-compare-project.md

How the record maps onto kernel_tuner (what a live kernel_tuner run on the same space would
do): tune_params are every value each parameter takes in the record's points; the points
of the space are the record's results and its pruned points, and any other combination of
those values is excluded by a restriction (kernel_tuner never builds, times or counts a
point a restriction excludes). A result that failed to verify or has no time is cached as
"RuntimeFailedConfig"; a pruned point (which the project's tool never times, e.g. one that
spills) as "CompilationFailedConfig" if its reason says it does not compile, else as
"RuntimeFailedConfig": kernel_tuner would spend a run on it, we do not know its time, and
it cannot win. In simulation mode a cached error entry counts one evaluation towards
max_fevals on its first visit, exactly as a valid one does (runners/simulation.py), which
is what a live run does too (runners/sequential.py counts every configuration it is
handed). A configuration visited again is free in simulation mode, whereas the live
sequential runner counts it again: simulation mode is, if anything, generous to kernel_tuner.

What else limits the comparison (kernel_tuner 1.5.0, read from its source):
- genetic_algorithm shrinks its population (default 26) to 2 on a space of fewer than 52
  points, and stops breeding once its own count of evaluations, repeats included, reaches
  the space's size; repeats are free here, so it can end below max_fevals (the JSON's
  runs_mean says how far). A live run would count the repeats and time no more distinct
  points than this.
- bayes_opt compares a failed point's cost (sys.float_info.max from CostFunc) with its own
  invalid marker (1e20), so it takes a failed point as a valid observation of 1.8e308 and
  fits its Gaussian process to it (overflow warnings); it only matters on spaces with
  failed or pruned points. Its initial sample is popsize *valid* points (Latin hypercube).
  Its default method (multi-ultrafast) decides whether to refit by wall-clock time, which
  in simulation mode makes it skip refits at random; this runs multi-fast, which is what
  multi-ultrafast does when every evaluation takes seconds (see `strategy_options`).
- kernel_tuner's strategies are model-free: they see only the times, never the predictions;
  the "time" both sides see is the record's median (the project's timing), not kernel_tuner's
  own benchmark loop.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import io
import json
import math
import os
import platform
import random
import signal
import statistics
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOLERANCE = 0.03
BUDGETS = (4, 8)
SEEDS = 20
STRATEGIES = ("random_sample", "bayes_opt", "genetic_algorithm")
ERRORS = ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")


@dataclass
class Point:
    params: dict[str, Any]
    ms: float | None  # the measured median, None when the point failed (or was pruned)
    error: str = ""  # kernel_tuner's error string for a point with no time
    predicted_ms: float | None = None
    pruned: bool = False
    doubts: tuple[str, ...] = ()  # what the model named for it and did not price


@dataclass
class Space:
    """One tuning record: a space of points at one problem size."""

    path: str
    kernel: str
    problem: dict[str, Any]
    device: str
    names: list[str]
    points: list[Point] = field(default_factory=list)

    @property
    def timed(self) -> list[Point]:
        return [p for p in self.points if p.ms is not None]

    @property
    def fastest_ms(self) -> float:
        return min(p.ms for p in self.timed if p.ms is not None)

    def values(self) -> dict[str, list[Any]]:
        """Every value each parameter takes in the space, in order (kernel_tuner's tune_params)."""
        out: dict[str, list[Any]] = {}
        for n in self.names:
            vals = {json.dumps(p.params[n]): p.params[n] for p in self.points}
            out[n] = sorted(vals.values(), key=lambda v: (type(v).__name__, v))
        return out

    def key(self, params: dict[str, Any]) -> str:
        """kernel_tuner's cache key: the values, in tune_params order, str() and comma-joined."""
        return ",".join(str(params[n]) for n in self.names)


def _ms(r: dict[str, Any]) -> float | None:
    m = r.get("measured") or {}
    v = m.get("median_ms") if isinstance(m, dict) else None
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def load_space(path: str) -> Space | None:
    """The record at `path` as a Space, or None when it is not a tuning record."""
    from occupancy.tune.ranked import read_doubts

    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("results"), list) or not d["results"]:
        return None
    if "search" in d:
        return None  # a budgeted search's own run: the points it chose, not a space
    rows = d["results"]
    if not all(isinstance(r, dict) and isinstance(r.get("params"), dict) for r in rows):
        return None
    names = list(rows[0]["params"])
    s = Space(path, str(d.get("kernel", "")), dict(d.get("problem") or {}), str(d.get("device", "")),
              names)
    for r in rows:
        if list(r["params"]) != names and set(r["params"]) != set(names):
            return None  # not one space
        ms = _ms(r) if r.get("verified") is not False else None  # None: no reference, passes
        pred = r.get("predicted_ms")
        s.points.append(Point(dict(r["params"]), ms, "" if ms is not None else "RuntimeFailedConfig",
                              float(pred) if isinstance(pred, (int, float)) else None,
                              doubts=read_doubts(r.get("doubts"))))
    seen = {s.key(p.params) for p in s.points}
    for q in d.get("pruned") or []:
        params = q.get("params") if isinstance(q, dict) else None
        if not isinstance(params, dict) or set(params) != set(names) or s.key(params) in seen:
            continue
        reasons = " ".join(str(x) for x in q.get("reasons") or [])
        err = "CompilationFailedConfig" if "compile" in reasons.lower() else "RuntimeFailedConfig"
        s.points.append(Point(dict(params), None, err, pruned=True))
        seen.add(s.key(params))
    return s


def kt_cache(space: Space) -> dict[str, Any]:
    """The space as a kernel_tuner 1.5 cache (util.process_cache / read_cache / store_cache):
    a header naming the device, kernel, problem size and tune_params, and one entry per point
    keyed by its comma-joined values, holding the params plus "time" (ms, the objective) and
    "times", or, for a point with no time, "__error__" set to one of kernel_tuner's error
    strings (read_cache turns any value equal to one of them into that error)."""
    cache: dict[str, Any] = {}
    for p in space.points:
        entry: dict[str, Any] = dict(p.params)
        if p.ms is not None:
            entry["time"] = p.ms
            entry["times"] = [p.ms]
        else:
            entry["__error__"] = p.error or "RuntimeFailedConfig"
        cache[space.key(p.params)] = entry
    values = space.values()
    return {
        "device_name": space.device or "unknown",
        "kernel_name": space.kernel or "kernel",
        "problem_size": problem_size(space),
        "tune_params_keys": list(space.names),
        "tune_params": values,
        "objective": "time",
        "cache": cache,
    }


def problem_size(space: Space) -> list[int] | int:
    vals = [v for v in space.problem.values() if isinstance(v, int)] or [0]
    return vals[0] if len(vals) == 1 else vals


def write_kt_cache(space: Space, path: str | os.PathLike[str]) -> str:
    """Write the cache file (closed JSON, as kernel_tuner leaves one it has finished)."""
    path = str(path)
    if not path.endswith(".json"):
        path += ".json"  # tune_kernel appends it otherwise
    Path(path).write_text(json.dumps(kt_cache(space), indent=1) + "\n")
    return path


def needs_restriction(space: Space) -> bool:
    """Whether the space is less than the product of its values (kernel_tuner then needs a
    restriction to keep to the points the record has)."""
    return math.prod(len(v) for v in space.values().values()) > len(space.points)


def _restriction(space: Space) -> Any:
    """An old-style restriction (one function of the params dict, which kernel_tuner accepts
    for two or more parameters): the point is one of the record's."""
    allowed = {space.key(p.params) for p in space.points}
    names = list(space.names)

    def in_space(p: dict[str, Any]) -> bool:
        return ",".join(str(p[n]) for n in names) in allowed

    return in_space


# --- the methods ---------------------------------------------------------------------------

def project_search(space: Space, budget: int) -> tuple[float, int]:
    """occupancy's budgeted search replayed on the record: (best measured ms, runs used).
    Its candidates are the record's results (a pruned point is never a candidate of
    `measure`); a point that failed counts as a run and never wins."""
    from occupancy.tune.budget import Candidate, simulate

    rows = [p for p in space.points if not p.pruned]
    cands = [Candidate(json.dumps(p.params, sort_keys=True),
                       p.predicted_ms if p.predicted_ms is not None else math.inf, p.params,
                       p.doubts)
             for p in rows]
    truth = {c.key: p.ms for c, p in zip(cands, rows, strict=True) if p.ms is not None}
    s = simulate(cands, truth, budget)
    best = s.best()
    return (best[1] if best else math.inf), len(s.measured)


def model_top(space: Space, budget: int) -> tuple[float, int]:
    """The model's plain top B: the B results with the lowest predicted_ms, all timed."""
    rows = sorted((p for p in space.points if not p.pruned),
                  key=lambda p: p.predicted_ms if p.predicted_ms is not None else math.inf)[:budget]
    return min((p.ms for p in rows if p.ms is not None), default=math.inf), len(rows)


def _seed(seed: int) -> None:
    import numpy as np
    from kernel_tuner.strategies import bayes_opt
    from scipy.stats import qmc

    random.seed(seed)
    np.random.seed(seed)

    # bayes_opt draws its initial sample with scipy's LatinHypercube, built without a seed
    # (a fresh generator each run): give it one so a seed repeats its run
    def lhs(*a: Any, **k: Any) -> Any:
        k.setdefault("rng", np.random.default_rng(seed))
        return qmc.LatinHypercube(*a, **k)

    bayes_opt.LatinHypercube = lhs


EXTRA_OPTIONS: dict[str, dict[str, Any]] = {}  # --option STRATEGY.KEY=VALUE


def strategy_options(strategy: str, budget: int) -> dict[str, Any]:
    opts: dict[str, Any] = {"max_fevals": budget}
    if strategy == "bayes_opt":
        opts["popsize"] = max(1, budget // 2)  # the initial sample (default 20, "lhs")
        # its default method, multi-ultrafast, refits its model only when the last round of
        # evaluations took 5x longer than the last prediction (a wall-clock test): always on
        # a GPU, where a point takes seconds to build and time, but only now and then when
        # the points are replayed from a cache in a millisecond, and then not repeatably.
        # multi-fast is the same portfolio refitted every round: what multi-ultrafast does
        # in a live run, and deterministic (--option bayes_opt.method=multi-ultrafast for
        # the default as it behaves in simulation mode).
        opts["method"] = "multi-fast"
    opts.update(EXTRA_OPTIONS.get(strategy, {}))
    return opts


# A replayed run takes well under a second; kernel_tuner 1.5's genetic_algorithm never
# returned on 3 of 20 seeds of the smallest space (SGEMM_CUDA's 1-D blocktiling: 8 valid
# points among 256 combinations), so a run gets this long and then counts as a run that
# found nothing (`hung` in the JSON, named under the Markdown table).
KT_TIMEOUT_S = 20


class KtHung(BaseException):
    """A kernel_tuner run that did not return within KT_TIMEOUT_S (a BaseException, so no
    `except Exception` inside kernel_tuner swallows it)."""


def _hung(signum: int, frame: Any) -> None:
    raise KtHung


def kt_search(space: Space, cachefile: str, strategy: str, budget: int, seed: int) -> tuple[float, int]:
    """One kernel_tuner run in simulation mode: (best time found, distinct points evaluated,
    failed ones included). Raises KtHung past KT_TIMEOUT_S (a SIGALRM: main thread, POSIX)."""
    from kernel_tuner import tune_kernel

    _seed(seed)
    restrictions = _restriction(space) if needs_restriction(space) else None
    old = signal.signal(signal.SIGALRM, _hung)
    try:
        try:
            signal.alarm(KT_TIMEOUT_S)
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                results, _env = tune_kernel(
                    space.kernel or "kernel", "", problem_size(space), [], space.values(),
                    restrictions=restrictions, cache=cachefile, simulation_mode=True,
                    strategy=strategy, strategy_options=strategy_options(strategy, budget),
                    quiet=True, verbose=False)
        finally:
            signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)
    times = [r["time"] for r in results
             if "__error__" not in r and isinstance(r.get("time"), (int, float))]
    seen = {space.key(r) for r in results}
    return min(times, default=math.inf), len(seen)


# --- the comparison ------------------------------------------------------------------------

def expand(patterns: Iterable[str]) -> list[str]:
    out: list[str] = []
    for pat in patterns:
        hits = sorted(glob.glob(pat)) if any(c in pat for c in "*?[") else [pat]
        out.extend(h for h in hits if h not in out)
    return out


def compare(space: Space, cachefile: str, budgets: Sequence[int], seeds: int,
            strategies: Sequence[str], tol: float) -> dict[str, Any]:
    fastest = space.fastest_ms
    row: dict[str, Any] = {
        "record": space.path, "kernel": space.kernel, "problem": space.problem,
        "points": len(space.timed), "space": len(space.points),
        "failed_or_pruned": len(space.points) - len(space.timed),
        "fastest_ms": fastest, "budgets": {},
    }
    for b in budgets:
        per: dict[str, Any] = {}
        for name, fn in (("occupancy_budget", project_search), ("model_top", model_top)):
            best, runs = fn(space, b)
            per[name] = {"within": float(best <= fastest * (1 + tol)), "best_over_fastest":
                         best / fastest, "runs": runs}
        for st in strategies:
            hits, ratios, runs, secs = [], [], [], []
            hung = 0
            for seed in range(seeds):
                t0 = time.perf_counter()
                try:
                    best, n = kt_search(space, cachefile, st, b, seed)
                    runs.append(n)  # a hung run's points are unknown: left out of the means
                except KtHung:
                    best, hung = math.inf, hung + 1
                secs.append(time.perf_counter() - t0)
                hits.append(best <= fastest * (1 + tol))
                ratios.append(best / fastest)
            median = statistics.median(ratios)
            per[st] = {"within": sum(hits) / len(hits),
                       "best_over_fastest_median": median if math.isfinite(median) else None,
                       "runs_max": max(runs, default=0),
                       "runs_mean": statistics.fmean(runs) if runs else 0.0,
                       "seconds": round(sum(secs), 2), "hung": hung}
        # the reference for the random sampler's seeds: B distinct points drawn uniformly
        # from the space (failed ones included), the chance one is within the tolerance
        near = sum(1 for p in space.timed if p.ms is not None and p.ms <= fastest * (1 + tol))
        n, k = len(space.points), min(b, len(space.points))
        per["random_exact"] = {"within": 1 - math.comb(n - near, k) / math.comb(n, k), "runs": k}
        row["budgets"][str(b)] = per
    return row


def methods(strategies: Sequence[str]) -> list[str]:
    return ["occupancy_budget", "model_top", *strategies,
            *(["random_exact"] if "random_sample" in strategies else [])]


LABEL = {"occupancy_budget": "measure --budget", "model_top": "model top-B",
         "random_sample": "kt random", "bayes_opt": "kt bayes_opt", "genetic_algorithm": "kt GA",
         "random_exact": "random, exact"}


def totals(rows: list[dict[str, Any]], budgets: Sequence[int], strategies: Sequence[str]) -> dict[str, Any]:
    """Per budget and method: the mean over pairs of the fraction within the tolerance, and
    the mean number of distinct points it timed (failed ones included)."""
    out: dict[str, Any] = {"pairs": len(rows)}
    for b in budgets:
        per = [r["budgets"][str(b)] for r in rows]
        out[str(b)] = {m: round(statistics.fmean(x[m]["within"] for x in per), 4) if rows else None
                       for m in methods(strategies)}
        out[f"runs_{b}"] = {m: round(statistics.fmean(x[m].get("runs", x[m].get("runs_mean", 0))
                                                      for x in per), 2) if rows else None
                            for m in methods(strategies)}
    return out


def _problem(p: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())


def markdown(doc: dict[str, Any]) -> str:
    budgets, strategies = doc["budgets"], doc["strategies"]
    ms = methods(strategies)
    lines = [
        "# Budgeted search against kernel_tuner, replayed on measured tuning spaces",
        "",
        f"Fraction of runs whose best point is within {doc['tolerance']:.0%} of the record's "
        f"fastest measured point. kernel_tuner {doc['kernel_tuner']} in simulation mode, "
        f"seeds 0..{doc['seeds'] - 1} ({doc['seeds']} per strategy and budget); "
        "`measure --budget` and the model's top-B are deterministic (0 or 1). "
        f"Date {doc['date']}.",
        "",
        f"Command: `{doc['command']}`",
        "",
        "bayes_opt: initial sample of B/2 (strategy_options popsize; samplingmethod lhs, the "
        "default), method multi-fast (the default multi-ultrafast refits its model by a "
        "wall-clock test that a live run always passes and a cache replay does not, so it "
        "is not repeatable here; multi-fast is what it does live); random_sample and "
        "genetic_algorithm: kernel_tuner's defaults (max_fevals = B; the GA shrinks its "
        "population to 2 on spaces under 52 points). Options: "
        f"`{json.dumps(doc['strategy_options'])}`. points: measured points of the record; space: those plus "
        "failed and pruned ones (kernel_tuner error entries). random, exact: the chance that B "
        "distinct points drawn uniformly from the space include one within the tolerance (what "
        "kt random estimates from its seeds).",
        "",
    ]
    head = ["record", "kernel", "problem", "points", "space"]
    for b in budgets:
        head += [f"{LABEL[m]} B={b}" for m in ms]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in doc["pairs"]:
        cells = [Path(r["record"]).parent.name + "/" + Path(r["record"]).name, r["kernel"],
                 _problem(r["problem"]), str(r["points"]), str(r["space"])]
        for b in budgets:
            cells += [f"{r['budgets'][str(b)][m]['within']:.2f}" for m in ms]
        lines.append("| " + " | ".join(cells) + " |")
    t = doc["totals"]
    lines += ["", f"## Totals over {t['pairs']} (space, size) pairs", "",
              "| method | " + " | ".join(f"within {doc['tolerance']:.0%}, B={b}" for b in budgets)
              + " | " + " | ".join(f"points timed, B={b}" for b in budgets) + " |",
              "|---|" + "---|" * 2 * len(budgets)]
    for m in ms:
        lines.append(f"| {LABEL[m]} | " + " | ".join(
            f"{t[str(b)][m]:.3f}" if t[str(b)][m] is not None else "-" for b in budgets) + " | "
            + " | ".join(f"{t[f'runs_{b}'][m]:.2f}" if t[f"runs_{b}"][m] is not None else "-"
                         for b in budgets) + " |")
    lines += ["", "points timed: the mean number of distinct points a method timed (failed "
              "ones included); `measure --budget` stops early when no unmeasured point can beat "
              "its best, and kernel_tuner's genetic algorithm can end below its budget (see "
              "bench/budget_compare.py)."]
    hung = [(Path(r["record"]).name, b, st, r["budgets"][str(b)][st]["hung"]) for r in doc["pairs"]
            for b in budgets for st in strategies if r["budgets"][str(b)][st].get("hung")]
    if hung:
        lines += ["", f"Runs that did not return within {doc['kt_timeout_s']} s, counted as finding "
                  "nothing (and left out of the points timed): "
                  + "; ".join(f"{rec} B={b} {LABEL[st]}: {n} of {doc['seeds']} seeds"
                              for rec, b, st, n in hung) + "."]
    if doc.get("skipped"):
        lines += ["", "Skipped: " + "; ".join(f"{s['record']} ({s['why']})" for s in doc["skipped"])]
    lines += ["", f"kernel_tuner wall time: {doc['kernel_tuner_seconds']:.0f} s "
              f"(of {doc['wall_seconds']:.0f} s in all)."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+", help="tuning record JSON files or (quoted) globs")
    ap.add_argument("--min-points", type=int, default=4, help="verified points a record needs (4)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    ap.add_argument("--cache-dir", default=None, help="where the kernel_tuner caches go (a temp dir)")
    ap.add_argument("--option", action="append", default=[], metavar="STRATEGY.KEY=VALUE",
                    help="an extra strategy option (VALUE as JSON), e.g. genetic_algorithm.popsize=4")
    ap.add_argument("--json", default="bench/results/budget-compare.json")
    ap.add_argument("--md", default="bench/results/budget-compare.md")
    a = ap.parse_args(argv)
    budgets = [int(x) for x in a.budgets.split(",") if x]
    strategies = [x for x in a.strategies.split(",") if x]
    for o in a.option:
        name, _, value = o.partition("=")
        st, _, key = name.partition(".")
        try:
            v: Any = json.loads(value)
        except ValueError:
            v = value
        EXTRA_OPTIONS.setdefault(st, {})[key] = v
    import tempfile

    import kernel_tuner

    t_start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cdir = Path(a.cache_dir or tmp)
        cdir.mkdir(parents=True, exist_ok=True)
        for i, path in enumerate(expand(a.records)):
            space = load_space(path)
            if space is None:  # not a tuning record (measure of the shipped families, a store, ...)
                print(f"{path}: not a tuning record, left out", file=sys.stderr)
                continue
            if len(space.timed) < a.min_points:
                skipped.append({"record": path, "why": f"{len(space.timed)} verified points"})
                continue
            name = f"{i:03d}-{Path(path).parent.name}-{Path(path).stem}.json"
            cachefile = write_kt_cache(space, cdir / name)
            t0 = time.perf_counter()
            row = compare(space, cachefile, budgets, a.seeds, strategies, a.tolerance)
            print(f"{path}: {len(space.timed)} points, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            rows.append(row)
    kt_secs = sum(r["budgets"][str(b)][s]["seconds"] for r in rows for b in budgets for s in strategies)
    doc = {
        "tolerance": a.tolerance, "budgets": budgets, "seeds": a.seeds, "strategies": strategies,
        "kernel_tuner": getattr(kernel_tuner, "__version__", None) or _dist_version("kernel_tuner"),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python bench/budget_compare.py " + " ".join(_quote(x) for x in (argv or sys.argv[1:])),
        "strategy_options": {s: {k: ("B" if k == "max_fevals" else "B/2" if k == "popsize" else v)
                                 for k, v in strategy_options(s, 8).items()} for s in strategies},
        "pairs": rows, "skipped": skipped,
        "totals": totals(rows, budgets, strategies),
        "kernel_tuner_seconds": round(kt_secs, 1), "kt_timeout_s": KT_TIMEOUT_S,
        "wall_seconds": round(time.perf_counter() - t_start, 1),
    }
    Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    Path(a.md).write_text(markdown(doc))
    print(markdown(doc).split("## Totals", 1)[1], file=sys.stderr)
    return 0


def _quote(s: str) -> str:
    return f"'{s}'" if any(c in s for c in "*?[ ") else s


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
