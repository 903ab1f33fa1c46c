"""What a finished run's follow-up planning costs in a large sweep: a 5,000-job sweep (one job per configuration),
then runs finished one after another, each disturbed (a re-run is planned and queued in the transaction that stores
it). The planning reads the configuration's runs through the (sweep, config) index; before, it read every job of
the sweep under the write lock (106 ms a finish at 5,000 jobs).

    python -m bench.follow_ups [--jobs 5000] [--finishes 20] [--pg URL]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.scratch import scratch_database
from db import queue
from db.database import dispose_engine, get_engine
from db.models import JobStatus
from lab.spec import ModelInfo
from lab.sweep import SweepRequest

DISTURBED = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "round_speedup": 2.0, "round_speedup_se": 0.01,
             "disturbed": True, "noisy": True, "noise_note": "other processes used 1.5 of the job's 2 cores"}


def measure(url: str, jobs: int, finishes: int) -> dict:
    engine = get_engine(url)
    request = SweepRequest(model="tiny", batch_sizes=list(range(1, jobs + 1)), device="cpu", process_repeats=1,
                           reruns=2)
    queue.submit(engine, request, {"tiny": ModelInfo("tiny", "bench")})
    times = []
    for _ in range(finishes):
        claim = queue.claim_next(engine, "bench", ["cpu"], ["tiny"], 60)
        started = time.perf_counter()
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=DISTURBED)
        times.append((time.perf_counter() - started) * 1e3)
    dispose_engine(url)
    return {"median_ms": statistics.median(times), "max_ms": max(times)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=5000)
    p.add_argument("--finishes", type=int, default=20)
    p.add_argument("--pg", default=os.environ.get("COMPILE_LAB_TEST_PG"))
    args = p.parse_args()
    print(f"{'database':<12}{'sweep jobs':>11}{'finish + plan, median ms':>27}{'max ms':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        got = measure(f"sqlite:///{Path(tmp) / 'lab.db'}", args.jobs, args.finishes)
        print(f"{'SQLite':<12}{args.jobs:>11,}{got['median_ms']:>27.1f}{got['max_ms']:>9.1f}")
    if args.pg:
        with scratch_database(args.pg, "lab_bench") as url:
            got = measure(url, args.jobs, args.finishes)
            print(f"{'PostgreSQL':<12}{args.jobs:>11,}{got['median_ms']:>27.1f}{got['max_ms']:>9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
