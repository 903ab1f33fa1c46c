"""A short lease on a slow host: a worker restarted from kept host facts claims a job at once and renews its lease
while its start goes on; when the start takes longer than the lease, the job must still run, its lease counted
from the last renewal rather than from the claim. A real worker object on a real SQLite file and a real PostgreSQL
database, a real child; the probe is stood in for by one the test holds (tests/unit/test_hostfacts.py's Gate)
until the database shows a renewal made a whole lease after the claim: a slow start the test holds, not a race."""
from datetime import timedelta

import pytest

from db import queue
from db.database import get_engine
from db.engine import reading
from db.models import Job, JobStatus
from lab.sweep import SweepRequest
from runner import zoo
from runner.worker import loop as worker
from tests.conftest import FIXTURE_MODELS
from tests.unit.test_hostfacts import Gate, gated_workers

LEASE_S = 3.0


@pytest.fixture
def make_worker(tmp_path, any_db_url, monkeypatch):
    yield from gated_workers(monkeypatch, tmp_path / "home", db_url=any_db_url, lease_s=LEASE_S,
                             models_dirs=[str(FIXTURE_MODELS)])


def job(engine, job_id: int) -> Job:
    with reading(engine) as s:
        return s.get(Job, job_id)


def test_a_job_that_waited_out_a_slow_start_keeps_its_lease_and_runs(make_worker, any_db_url):
    make_worker(Gate(until=lambda: True)).start()  # an earlier start on this host: its facts are kept
    engine = get_engine(any_db_url)
    catalog = zoo.model_infos(zoo.catalog([FIXTURE_MODELS]))
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu", backends=["eager"], iters=2,
                                      reruns=0, process_repeats=1), catalog)
    held = {}

    def renewed_a_lease_after_the_claim() -> bool:
        if "job" not in held:
            return False
        j = job(engine, held["job"])
        return j.lease_expires_at - j.claimed_at >= timedelta(seconds=2 * LEASE_S)

    w = make_worker(Gate(until=renewed_a_lease_after_the_claim))
    w.start()
    claimed_at = worker.time.monotonic()
    claim = queue.claim_next(engine, w.id, ["cpu"], ["tiny"], LEASE_S)
    held["job"] = claim.job_id
    outcome = w.run_claim(claim, claimed_at)
    assert outcome.status is JobStatus.SUCCEEDED, outcome.error
    j = job(engine, claim.job_id)
    assert (j.status, j.attempts) == ("succeeded", 1), (j.status, j.attempts, j.error)
