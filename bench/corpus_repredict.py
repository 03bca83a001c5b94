"""Re-predict the corpus's measured records with the current model (CPU only; bench/CORPUS.md).

    python bench/corpus_repredict.py --corpus bench/corpus --out OUT_DIR RECORD.json ...

For each record (one (space, size) pair measured on the GPU), `occupancy tile` ranks the
space from the corpus's manifest at the record's problem size (`--set` each problem key),
and each measured point gets the model's `predicted_ms`, `predicted_bound`, `doubts` and `error`
(predicted / measured - 1); `fastest.predicted_rank` is the fastest measured point's place
with the points sorted by prediction, as bench/corpus_check.py counts it. Measured times,
verification and occupancy stay the record's. A point the model no longer ranks (pruned,
or missing) keeps no prediction, and the script says so. The model is this checkout's: `tile`
runs with this checkout as its working directory. Records go to OUT_DIR under their
own names; OUT_DIR must not be a record's own folder, and a record already there is replaced
only with --force (a measured record is never replaced by mistake).

The manifests are the local corpus's (bench/CORPUS.md: the fetched sources stay out of the
repository; bench/CORPUS.md says how to place them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent

# record id (the file name before its sizes) -> the corpus manifest that builds it
MANIFESTS = {
    "sgemm-1d": "SGEMM_CUDA/tune.yaml",
    "sgemm-vectorize": "SGEMM_CUDA/tune.yaml",
    "sgemm-2d": "SGEMM_CUDA/tune.yaml",
    "sgemm-warptiling": "SGEMM_CUDA/tune.yaml",
    "kt-convolution": "kernel_tuner/tune.yaml",
    "kt-reduction": "kernel_tuner/tune.yaml",
    "kt-pnpoly": "kt-pnpoly/tune.yaml",
    "samples-matrixmul": "cuda-samples/tune.yaml",
    "samples-reduce6": "cuda-samples/tune.yaml",
    "jacobi": "multi-gpu-programming-models/tune.yaml",
    "llmc-softmax4": "llm.c/tune.yaml",
    "llmc-softmax7": "llm.c/tune.yaml",
    "llmc-softmax-online8": "llm.c/tune.yaml",
    "flash-attention": "flash-attention-minimal/tune.yaml",
}


def _fail(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(2)


def space_of(path: str | Path) -> str | None:
    """A record's corpus space: the longest MANIFESTS key its file name starts with (the
    rest is its sizes); None for a record of no corpus space."""
    name = Path(path).stem
    return next((k for k in sorted(MANIFESTS, key=len, reverse=True) if name.startswith(k + "-")),
                None)


def space_id(path: Path) -> str:
    """space_of, or an error naming the spaces."""
    space = space_of(path)
    if space is not None:
        return space
    _fail(f"Error: {path}: no corpus space named by its file name "
                     f"(one of {', '.join(sorted(MANIFESTS))})")


def tile(manifest: Path, kernel: str, problem: dict[str, int]) -> dict[str, dict]:
    """`occupancy tile --json` of the manifest's entry at this problem: point key -> row."""
    cmd = [sys.executable, "-m", "occupancy", "tile", str(manifest), "--kernel", kernel,
           "-d", "h200", "--json", "--max-compiles", "5000", "--max-points", "10000"]
    for k, v in problem.items():
        cmd += ["--set", f"{k}={int(v)}"]
    with tempfile.TemporaryFile() as out:  # run in this checkout: its model (-m puts the cwd first)
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=False, check=False,
                              cwd=ROOT)
        if done.returncode != 0:
            _fail(f"Error: {manifest} --kernel {kernel}: occupancy tile exited "
                             f"{done.returncode}: {done.stderr.decode(errors='replace')[-400:]}")
        out.seek(0)
        report = json.load(out)
    if isinstance(report, list):
        report = report[0]
    return {json.dumps(c["params"], sort_keys=True): c for c in report["candidates"]
            if not c.get("pruned")}


def repredict(path: Path, corpus: Path) -> tuple[dict, int, int]:
    """The record with the model's predictions; (record, points moved, points unranked)."""
    rec = json.loads(path.read_text(encoding="utf-8"))
    rows = tile((corpus / MANIFESTS[space_id(path)]).resolve(), rec["kernel"], rec["problem"])
    moved = unranked = 0
    for r in rec["results"]:
        row = rows.get(json.dumps(r["params"], sort_keys=True))
        before = r.get("predicted_ms")
        if row is None or not row.get("predicted_ms"):
            r["predicted_ms"] = r["error"] = None
            r["predicted_bound"] = None
            r["doubts"] = None  # not read
            unranked += 1
            continue
        r["predicted_ms"] = row["predicted_ms"]
        r["predicted_bound"] = row.get("bound")
        r["doubts"] = row.get("doubts", [])
        r["error"] = row["predicted_ms"] / r["measured"]["median_ms"] - 1
        moved += before != r["predicted_ms"]
    ok = [r for r in rec["results"] if r.get("predicted_ms") and r.get("verified") is not False]
    if ok:
        fastest = min(ok, key=lambda r: r["measured"]["median_ms"])
        by_pred = sorted(ok, key=lambda r: r["predicted_ms"])
        rec["fastest"] = {"params": fastest["params"], "median_ms": fastest["measured"]["median_ms"],
                          "predicted_rank": by_pred.index(fastest) + 1}
    rec["repredicted_by"] = "bench/corpus_repredict.py"
    return rec, moved, unranked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--corpus", type=Path, default=ROOT / "bench" / "corpus")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="replace records already in --out")
    a = ap.parse_args()
    out = a.out.resolve()
    for p in a.records:
        if p.resolve().parent == out:
            _fail(f"Error: --out {a.out} holds the record {p}: write elsewhere, then "
                             "compare and move")
        if (out / p.name).exists() and not a.force:
            _fail(f"Error: --out {a.out} has a {p.name} already: another folder, or "
                             "--force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    for p in a.records:
        rec, moved, unranked = repredict(p, a.corpus)
        tmp = out / f".{p.name}.tmp"
        tmp.write_text(json.dumps(rec), encoding="utf-8")
        os.replace(tmp, out / p.name)
        print(f"{p.name}: {len(rec['results'])} points, {moved} moved, {unranked} unranked, "
              f"fastest #{rec['fastest']['predicted_rank']}", flush=True)


if __name__ == "__main__":
    main()
