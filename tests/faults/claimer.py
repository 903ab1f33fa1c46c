"""A claim loop for the race tests and bench/claims.py: claim_next + finish until the queue is empty,
with no child process (the claims are the subject). Waits for a go file so that every process starts
at once. Prints one JSON line: the job ids it claimed and each claim's latency in ms.

    python -m tests.faults.claimer DB_URL GO_FILE WORKER_NAME
"""
import json
import os
import sys
import time

from db import queue
from db.database import get_engine
from db.models import JobStatus

RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "samples": {}, "detail": {}}


def main(url: str, go: str, name: str) -> None:
    engine = get_engine(url)
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.005)
    claimed, latencies = [], []
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        claim = queue.claim_next(engine, name, ["cpu"], ["tiny"], lease_s=60)
        latencies.append((time.perf_counter() - t0) * 1000)
        if claim is None:
            break
        claimed.append(claim.job_id)
        assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    print(json.dumps({"claimed": claimed, "claim_ms": latencies, "wall_s": time.perf_counter() - started}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
