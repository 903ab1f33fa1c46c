"""db.queue.finish_kept, the store of an outcome a worker kept through an outage (runner.worker.store), on a real SQLite
file and a real PostgreSQL database: taken under the lease, or after the lease ran out while nobody claimed the
job since; refused (nothing written) once anyone else holds the job or it ended; never stored twice."""
from datetime import timedelta

import pytest
from sqlalchemy import update

from db import queue
from db.database import get_engine
from db.engine import atomic, reading
from db.models import Job, JobStatus, utcnow
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from runner.worker import store as kept
from tests.conftest import at_head

RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "samples": {}, "detail": {}}


@pytest.fixture
def engine(any_db_url, migrated_sqlite):
    return get_engine(at_head(any_db_url, migrated_sqlite))


def claimed(engine, max_attempts: int = 3):
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu", process_repeats=1),
                 {"tiny": ModelInfo("tiny", "d")},
                 max_attempts=max_attempts)
    return queue.claim_next(engine, "w1", ["cpu"], ["tiny"], 60)


def expire(engine, job_id: int) -> None:
    """The lease ran out (the worker's renewals could not go in) and another worker's poll took the job back."""
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.id == job_id).values(lease_expires_at=utcnow() - timedelta(seconds=1)))
    assert queue.requeue_expired(engine) == [job_id]


def job(engine, job_id: int) -> Job:
    with reading(engine) as s:
        return s.get(Job, job_id)


def store(engine, claim, worker="w1") -> bool:
    return queue.finish_kept(engine, claim.job_id, claim.token, worker, claim.attempt, JobStatus.SUCCEEDED,
                             result=RESULT, log_tail="tail")


def test_under_the_lease_it_is_a_fenced_finish_and_never_stores_twice(engine):
    claim = claimed(engine)
    assert store(engine, claim) and not store(engine, claim)
    j = job(engine, claim.job_id)
    assert j.status == "succeeded" and j.attempts == 1 and j.lease_token is None


@pytest.mark.parametrize("max_attempts", [3, 1], ids=["re-queued", "failed-as-lost"])
def test_after_the_lease_ran_out_it_is_stored_and_no_attempt_is_counted(engine, max_attempts):
    claim = claimed(engine, max_attempts)
    expire(engine, claim.job_id)
    assert job(engine, claim.job_id).status == ("queued" if max_attempts > 1 else "failed")
    assert not store(engine, claim, worker="someone-else")  # the fence names the worker that ran it
    assert store(engine, claim) and not store(engine, claim)
    j = job(engine, claim.job_id)
    assert (j.status, j.attempts, j.error, j.log_tail) == ("succeeded", 1, None, "tail")
    assert queue.claim_next(engine, "w2", ["cpu"], ["tiny"], 60) is None  # nothing left to run again


def test_once_claimed_again_or_cancelled_the_job_is_someone_elses(engine):
    claim = claimed(engine)
    expire(engine, claim.job_id)
    second = queue.claim_next(engine, "w2", ["cpu"], ["tiny"], 60)
    assert second.job_id == claim.job_id and not store(engine, claim)
    assert job(engine, claim.job_id).status == "running"  # the new attempt goes on untouched
    assert store(engine, second, worker="w2")

    claim = claimed(engine)
    queue.cancel(engine, claim.job_id)
    assert not store(engine, claim) and job(engine, claim.job_id).status == "cancelled"


def test_a_kept_outcome_file_round_trips_and_is_dropped_once_stored(engine, tmp_path):
    claim = claimed(engine)
    folder = tmp_path / "jobs" / f"{claim.job_id}-1"
    folder.mkdir(parents=True)
    k = kept.keep(folder, claim.job_id, claim.token, claim.attempt, "w1", JobStatus.SUCCEEDED, None,
                  {**RESULT, "max_abs_error": float("inf")}, "tail")
    (found,) = kept.found(tmp_path)
    assert found == k and found.result["max_abs_error"] is None  # strict JSON on disk, as the child writes it
    (tmp_path / "jobs" / "9-1").mkdir()
    (tmp_path / "jobs" / "9-1" / kept.FILE).write_text("{cut")  # a damaged file is left alone, not fatal
    assert kept.found(tmp_path) == [k]
    assert found.store(engine) and not found.path.exists()
