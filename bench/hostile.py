"""A hostile run: >= 500 generated inputs across every command, each in a fresh folder, then
the round-2 attacks of issue 21 (fatbin bombs, injected names, files that are not profiles,
bounded work, function names, expression values, stores, closed or full stdout, profile
chains, PTX size, includes of devices) and signals sent mid-compile.

Counts commands executed (a marker file a payload would create), files written outside the
output or replaced, hangs (runs killed at the time limit), runs over 5 s, tracebacks, NaN
or Infinity in JSON output, workflow commands / escapes / bidi characters that reach text
output, secrets echoed from a file that is not a profile, peak memory of any process a run
started (this tool or a compiler), and, after SIGINT/SIGTERM mid-compile, children left
running and temporary folders left behind. Writes bench/results/hostile.json.
Run: python bench/hostile.py [--n 600]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_round2 import CASES, STDOUT, injected, signal_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SRC = (ROOT / "tests" / "fixtures" / "project" / "src" / "kernels.cu").read_text()
T4 = (ROOT / "profiles" / "t4.yaml").read_text()
PAYLOADS = ["$(touch PWNED)", "`touch PWNED`", "; touch PWNED", "| touch PWNED", "&& touch PWNED",
            "\n::error file=x,line=1::PWNED", "\x1b[2J", "<script>PWNED</script>",
            "[x](javascript:PWNED)", "../../../tmp/PWNED", "--help", "-o PWNED", "\x00", "\udc80",
            "9" * 400, "1e999", ".nan", ".inf", "-1", "''", "*a", "&a [1]", "{", "]]"]


def manifest(rng: random.Random) -> str:
    p = rng.choice(PAYLOADS)
    key = rng.choice(["name", "function", "source", "cubin", "ptxas_log", "defines", "flags",
                      "include_dirs", "block", "registers", "devices", "dynamic_shared_memory",
                      "min_occupancy", "carveout"])
    entry = {"name": "k", "block": "256", "source": "k.cu"}
    if key == "defines":
        entry["defines"] = json.dumps({rng.choice(["X", p]): p})
    elif key in ("flags", "include_dirs", "devices"):
        entry[key] = json.dumps([p, "-DX=" + p][: rng.randint(1, 2)])
    else:
        entry[key] = json.dumps(p)
    body = "  - " + "\n    ".join(f"{k}: {v}" for k, v in entry.items())
    return f"devices: [a100, gtx1080]\nkernels:\n{body}\n"


def profile(rng: random.Random) -> str:
    lines = T4.splitlines()
    i = rng.randrange(len(lines))
    if ":" in lines[i] and not lines[i].startswith("#"):
        k = lines[i].split(":")[0]
        lines[i] = f"{k}: {rng.choice(PAYLOADS + ['1000000000000', '0', '1e308'])!r}"
    return "\n".join(lines) + "\n"


def case(rng: random.Random, d: Path) -> list[str]:
    (d / "k.cu").write_text(SRC)
    kind = rng.randrange(6)
    if kind == 0:
        (d / "m.yaml").write_text(manifest(rng))
        return ["check", "m.yaml", "--format", rng.choice(["text", "json", "junit", "github", "sarif"]),
                *rng.choice([[], ["-o", "m.yaml"], ["-o", "out.txt"], ["-o", "/dev/full"], ["-o", "-"]])]
    if kind == 1:
        (d / "p.yaml").write_text(profile(rng))
        cmd = rng.choice([["calc", "-t", "256", "-r", "32"], ["best"], ["plot"], ["devices", "show"],
                          ["report", "-o", "r.md"], ["report", "-o", "p.yaml"]])
        if cmd[0] == "devices":
            return [*cmd, "p.yaml"]
        return [cmd[0], "-d", "p.yaml", *cmd[1:]]
    if kind == 2:
        v = rng.choice(PAYLOADS + ["2147483648", str(2**64), "1000000x1000000x1000000", "0", "-5"])
        return rng.choice([["calc", "-d", "v100", "-t", v], ["calc", "-d", "v100", "-t", "256", "--smem", v],
                           ["best", "-d", "v100", "--threads", v], ["calc", "-d", v, "-t", "256"],
                           ["banks", "--words", v], ["tile", "matmul", "-d", "v100", "-n", v]])
    if kind == 3:
        rec = {"device": rng.choice(PAYLOADS), "results": rng.choice([[], [{}], "x", [{"kernel": 1}]]),
               "ceilings": rng.choice([{}, {"copy_gb_s": "x"}, [], None])}
        (d / "rec.json").write_text(json.dumps(rec))
        return ["report", "-d", "v100", "--measured", "rec.json", "-o", "r.html"]
    if kind == 4:
        os.mkfifo(d / "f.yaml")
        return rng.choice([["check", "f.yaml"], ["calc", "-d", "f.yaml", "-t", "32"],
                           ["check", "/dev/zero"], ["resources", "/dev/urandom"]])
    (d / "bin").write_bytes(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096)))
                            if rng.random() < 0.5 else b"\x7fELF\x02\x01\x01\x41" + os.urandom(200))
    return rng.choice([["resources", "bin"], ["resources", "bin", "--arch", "sm_80"]])


def _run(args: list[str], d: Path, env: dict[str, str], tally: dict[str, Any],
         bad: list[dict[str, object]], stdout: Any = subprocess.PIPE,
         close_stdout: bool = False) -> None:
    """One run of the CLI in `d`, judged on every count."""
    before = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "occupancy", *args], cwd=d, env=env,
                           stdout=stdout, stderr=subprocess.PIPE, text=True, errors="replace",
                           timeout=60, stdin=subprocess.DEVNULL,
                           preexec_fn=(lambda: os.close(1)) if close_stdout else None)
        rc, out, err = r.returncode, r.stdout or "", r.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = -1, "", "timeout"
    except ValueError:  # a NUL in an argument: the OS refuses it before we run
        return
    wall = time.monotonic() - t0
    tally["inputs"] += 1
    tally["exit_codes"][str(rc)] = tally["exit_codes"].get(str(rc), 0) + 1
    problems = []
    if any(p.name.startswith("PWNED") for p in d.rglob("*")) or Path("/tmp/PWNED").exists():
        tally["commands_executed"] += 1
        problems.append("executed")
    after = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    allowed = {"out.txt", "r.md", "r.html"}
    if any(after.get(k) != v for k, v in before.items()) or \
            not set(after) - set(before) <= allowed | {"-"}:
        tally["files_outside_or_replaced"] += 1
        problems.append("files")
    checks = [(rc == -1, "hangs", "hang"), (wall > 5, "over_5_s", f"slow {wall:.1f}s"),
              ("Traceback" in err, "tracebacks", "traceback"),
              (re.search(r"\bNaN\b|-?Infinity\b", out) is not None and out.lstrip()[:1] in "{[",
               "nan_in_json", "NaN in JSON"),
              ("github" not in args and injected(out) or injected(err), "injections", "injection"),
              ("SECRET" in out + err or "saltsalt" in out + err, "secrets_echoed", "echoed")]
    for cond, key, what in checks:
        if cond:
            tally[key] += 1
            problems.append(what)
    if problems:
        bad.append({"args": [a[:80] for a in args], "problems": problems, "stderr": err[-400:]})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--seed", type=int, default=20261130)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tally: dict[str, Any] = {
        "inputs": 0, "commands_executed": 0, "files_outside_or_replaced": 0, "hangs": 0,
        "over_5_s": 0, "tracebacks": 0, "nan_in_json": 0, "injections": 0, "secrets_echoed": 0,
        "exit_codes": {}}
    bad: list[dict[str, object]] = []
    cache = tempfile.mkdtemp(prefix="occ-hostile-cache-")
    # This checkout's code, whatever the cwd (an editable install may point elsewhere).
    env = {**os.environ, "OCCUPANCY_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    for _ in range(a.n):
        with tempfile.TemporaryDirectory(prefix="occ-hostile-") as tmp:
            d = Path(tmp)
            _run(case(rng, d), d, env, tally, bad)
    generated = tally["inputs"]
    # Warm the compile cache for the shipped families (tile matmul compiles them once: a
    # cold cache is legitimate work, not an attack).
    subprocess.run([sys.executable, "-m", "occupancy", "tile", "matmul", "-d", "a100"], env=env,
                   capture_output=True, timeout=600)
    round2 = []
    for name, make in CASES:
        with tempfile.TemporaryDirectory(prefix="occ-hostile-") as tmp:
            d = Path(tmp)
            args = make(d)
            run_env = {**env, "OCCUPANCY_PROFILES": str(d / "profs")} if (d / "profs").is_dir() \
                else env
            n_bad, before = len(bad), dict(tally["exit_codes"])
            _run(args, d, run_env, tally, bad)
            rc = next((k for k, v in tally["exit_codes"].items() if v != before.get(k, 0)), "?")
            round2.append({"case": name, "exit": rc})
            for b in bad[n_bad:]:
                b["case"] = name
    for how, args in STDOUT.items():
        with tempfile.TemporaryDirectory(prefix="occ-hostile-") as tmp:
            d = Path(tmp)
            if how == "/dev/full":
                with open("/dev/full", "w") as full:
                    _run(args, d, env, tally, bad, stdout=full)
            else:
                _run(args, d, env, tally, bad, close_stdout=True)
    signals = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGINT):
        with tempfile.TemporaryDirectory(prefix="occ-hostile-sig-") as tmp:
            signals.append(signal_run(Path(tmp), sig, env))
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "seed": a.seed,
           "generated_inputs": generated, "round2_inputs": tally["inputs"] - generated, **tally,
           "peak_memory_mb": round(peak_kb / 1024, 1),
           "signal_runs": len(signals),
           "children_left_after_signal": sum(int(s["children_left"]) for s in signals),  # type: ignore[call-overload]
           "temp_dirs_left_after_signal": sum(int(s["temp_dirs_left"]) for s in signals),  # type: ignore[call-overload]
           "signal_exit_codes": [s["exit"] for s in signals],
           "wall_s": round(time.monotonic() - t0, 1), "signals": signals, "round2": round2,
           "failures": bad[:50]}
    path = ROOT / "bench" / "results" / "hostile.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k not in ("failures", "signals", "round2")},
                     indent=2))
    for b in bad[:10]:
        print(b)


if __name__ == "__main__":
    main()
