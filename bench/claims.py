"""Claim latency and throughput of the queue: W worker processes claim and finish N jobs (no child
process per job: the claims are what is measured), on SQLite and on PostgreSQL.

    python -m bench.claims [--jobs 400] [--workers 1,4,8] [--pg URL]

PostgreSQL: --pg, else COMPILE_LAB_TEST_PG (a role that may CREATE DATABASE: each run gets a fresh
database, dropped afterwards); skipped with a note when neither is set. Prints one row per run:
jobs/s (all jobs over the wall time from the start signal to the last finish) and the latency of
each successful claim_next call (p50, p95, max). Target: claim p95 < 50 ms with 8 workers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from db import queue
from db.database import dispose_engine, get_engine
from db.engine import resolve_url
from db.models import JobStatus
from lab.spec import ModelInfo
from lab.sweep import SweepRequest

ROOT = Path(__file__).resolve().parent.parent

RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "samples": {}, "detail": {}}


def worker(url: str, go: str, name: str) -> None:
    """One claimer: wait for the start signal, then claim + finish until nothing is left."""
    engine = get_engine(url)
    with engine.connect():  # a pooled connection, ready before the start signal
        pass
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    latencies = []
    while True:
        t0 = time.perf_counter()
        claim = queue.claim_next(engine, name, ["cpu"], ["tiny"], lease_s=60)
        if claim is None:
            break
        latencies.append((time.perf_counter() - t0) * 1000)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    print(json.dumps({"claim_ms": latencies, "done_at": time.time()}))


def fill(url: str, jobs: int) -> None:
    engine = get_engine(url)
    request = SweepRequest(model="tiny", batch_sizes=list(range(1, jobs + 1)), device="cpu")  # one job per size
    queue.submit(engine, request, {"tiny": ModelInfo("tiny", "bench")})
    dispose_engine(url)


def run(url: str, workers: int, jobs: int, tmp: Path) -> dict:
    fill(url, jobs)
    go = tmp / f"go-{uuid.uuid4().hex}"
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", url, str(go), f"bench{i}"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for i in range(workers)]
    for proc in procs:  # every process imported and connected: start-up is not measured
        assert proc.stdout.readline().strip() == "ready"
    started = time.time()
    go.touch()
    outs = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    wall = max(o["done_at"] for o in outs) - started
    lat = sorted(x for o in outs for x in o["claim_ms"])
    assert len(lat) == jobs, f"{len(lat)} claims for {jobs} jobs"
    return {"jobs_s": jobs / wall, "p50": statistics.median(lat), "p95": lat[int(0.95 * (len(lat) - 1))],
            "max": lat[-1]}


@contextmanager
def pg_database(base: str):
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = resolve_url(base)
    name = f"lab_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:5])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=400)
    p.add_argument("--workers", default="1,4,8")
    p.add_argument("--pg", default=os.environ.get("COMPILE_LAB_TEST_PG"))
    args = p.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    print(f"{args.jobs} jobs per run, claim_next + finish per job, no child processes; "
          f"{os.cpu_count()} CPU cores on this host")
    print(f"{'db':<11} {'workers':>7} {'jobs':>5} {'jobs/s':>8} {'claim p50 ms':>13} {'p95 ms':>8} {'max ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for db in ("sqlite", "postgresql"):
            if db == "postgresql" and not args.pg:
                print("postgresql: skipped (set COMPILE_LAB_TEST_PG or pass --pg URL)")
                continue
            for w in counts:
                if db == "sqlite":
                    r = run(f"sqlite:///{tmp}/bench-{w}.db", w, args.jobs, Path(tmp))
                else:
                    with pg_database(args.pg) as url:
                        r = run(url, w, args.jobs, Path(tmp))
                print(f"{db:<11} {w:>7} {args.jobs:>5} {r['jobs_s']:>8.0f} {r['p50']:>13.1f} {r['p95']:>8.1f} "
                      f"{r['max']:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
