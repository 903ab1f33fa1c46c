"""Issue 29's traffic must-show: the transformer under one stream of calls with sequence lengths drawn from 1..512,
compiled with dynamic=False, dynamic=True, and dynamic=False padded to buckets of 64, each stream against eager;
recompiles, recompile-limit hits and fallback calls beside torch's own counters. Submits the three jobs through the
CLI into a fresh SQLite file, runs one worker (real child processes), prints a table.

    python -m bench.traffic_replay --device cpu --out /tmp/traffic
    python -m bench.traffic_replay --device cuda --out $OUT        # on the GPU machine
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from db.database import get_engine
from db.results import export_records

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, timeout: float = 3000) -> str:
    done = subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode:
        raise SystemExit(f"runner {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batch", default="8")
    ap.add_argument("--calls", default="200")
    ap.add_argument("--traffic", default="uniform:1..512")
    ap.add_argument("--which", default="static,dynamic,bucket", help="the jobs: static, dynamic, bucket (64)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{args.out / 'traffic.db'}"
    common = ["submit", "--db", db, "--model", "transformer", "--batch", args.batch, "--device", args.device,
              "--traffic", args.traffic, "--calls", args.calls, "--process-repeats", "1", "--reruns", "0",
              "--trace", "false", "--iters", "10"]
    which = args.which.split(",")
    jobs = {"static": ("--dynamic", "false"), "dynamic": ("--dynamic", "true"),
            "bucket": ("--dynamic", "false", "--bucket", "64")}
    for name in which:
        cli(*common, *jobs[name], "--name", f"traffic {name}")
    started = time.perf_counter()
    log = cli("work", "--db", db, "--home", str(args.out / "home"), "--max-jobs", str(len(which)))
    wall = time.perf_counter() - started
    recs = export_records(get_engine(db))
    print(f"transformer bs {args.batch}, {args.calls} calls, {args.traffic}, device {args.device}; "
          f"worker {wall:.0f} s; torch {recs[0].get('torch_version')} on {recs[0].get('device_name')}")
    head = (f"{'job':>4} {'dynamic':>7} {'bucket':>6} {'eager s':>9} {'compiled s':>10} {'c/e':>6} {'even@':>6} "
            f"{'compiles':>8} {'recomp':>6} {'limit':>5} {'fallback':>8} {'graphs':>6} | torch frames_ok limit "
            f"graphs | steady speedup")
    print(head)
    for r in recs:
        t = r.get("traffic") or {}
        if r["status"] != "succeeded" or "calls_compared" not in t:
            print(f"{r['job_id']:>4} {r['status']}: {r['error']}")
            continue
        c = t["torch_counters"]
        even = "never" if t["break_even_call"] is None else str(t["break_even_call"] + 1)
        print(f"{r['job_id']:>4} {str(r['dynamic']):>7} {str(t['bucket'] or '-'):>6} {t['eager_total_s']:>9.3f} "
              f"{t['compiled_total_s']:>10.3f} {t['ratio']:>6.2f} {even:>6} {t['compiles']:>8} {t['recompiles']:>6} "
              f"{t['limit_hits']:>5} {t['fallback_calls']:>8} {t['graphs']:>6} | {c['frames_ok']:>15} "
              f"{c['limit_refusals']:>5} {c['unique_graphs']:>6} | {r['speedup']:.3f}x")
        agree = (t["compiles"] == c["frames_ok"], t["limit_hits"] == c["limit_refusals"],
                 t["graphs"] == c["unique_graphs"])
        if not all(agree):
            print(f"     counts disagree with torch's counters: {agree}")
    (args.out / "records.json").write_text(json.dumps(recs, default=str))
    (args.out / "worker.log").write_text(log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
