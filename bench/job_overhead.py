"""Per-job overhead beyond the measurement: a fresh interpreter per job vs a fork of the preloaded
parent. Runs N tiny jobs with each spawn method through the real worker on one database and prints, per
method, the time from claim to stored result minus the eager and compiled first calls, warm-up and rounds
(the job's timeline, lab.timeline: every other phase, the child's start and analysis passes included).

    python -m bench.job_overhead [--jobs 20] [--device cpu|cuda]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from db.database import get_engine
from db.engine import reading
from db.models import Job, Result
from lab.timeline import overhead_s
from runner.child.stats import percentile

ROOT = Path(__file__).resolve().parent.parent


def run(method: str, jobs: int, device: str, tmp: Path) -> dict:
    db = f"sqlite:///{tmp / f'{method}.db'}"
    subprocess.run([sys.executable, "-m", "runner", "submit", "--db", db, "--model", "simplenet", "--batch", "8",
                    "--backend", "eager", "--iters", "1", "--device", device, "--repeat", str(jobs),
                    "--reruns", "0", "--process-repeats", "1"],  # exactly `jobs` jobs: no follow-ups
                   cwd=ROOT, check=True, capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "runner", "work", "--drain", "--db", db, "--home", str(tmp / method),
                    "--spawn", method, *(["--gpu", "0"] if device == "cuda" else [])],
                   cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    with reading(get_engine(db)) as s:
        rows = s.execute(select(Job.claimed_at, Job.finished_at, Job.status, Result.detail)
                         .join(Result, Result.job_id == Job.id)).all()
    assert len(rows) == jobs and all(r.status == "succeeded" for r in rows), rows
    # the job's timeline: claim to stored minus what a plain script also spends (first calls, warm-up, rounds)
    overheads = [overhead_s(r.detail["timeline"]) for r in rows]
    return {"method": method, "jobs": jobs, "mean": sum(overheads) / jobs, "p50": percentile(overheads, 50),
            "p90": percentile(overheads, 90), "first": overheads[0], "wall": wall}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=20)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(m, args.jobs, args.device, Path(tmp)) for m in ("fresh", "fork")]
    print(f"{'spawn':<6} {'jobs':>4} {'overhead/job s: mean':>21} {'p50':>7} {'p90':>7} {'first':>7} {'wall s':>7}")
    for r in rows:
        print(f"{r['method']:<6} {r['jobs']:>4} {r['mean']:>21.3f} {r['p50']:>7.3f} {r['p90']:>7.3f} "
              f"{r['first']:>7.3f} {r['wall']:>7.1f}")
    print(f"preloaded child: {rows[0]['mean'] / rows[1]['mean']:.1f}x lower mean overhead per job "
          f"({args.device}, host {os.uname().nodename})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
