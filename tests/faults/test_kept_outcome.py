"""A database outage longer than the lease while a finished job's outcome is being stored (real workers, real
children, a real SQLite file and a real PostgreSQL server behind a proxy the test cuts): the measurement is kept
in the job folder and stored once the database answers, whether the job was taken back meanwhile or its worker
was killed and another started with the same home. The job runs once and counts one attempt.

The `napper` fixture naps in build until the test creates its wake file: the outage starts before the job may
finish, so its outcome meets the outage, with a lease long enough for the child to end before it runs out."""
import contextlib
import signal

import db.engine
from db import queue
from db.database import get_engine
from db.models import utcnow
from runner.worker import store
from tests.conftest import job_row, records, result_count, start_worker, submit, wait_until
from tests.faults.outage import Outage

NAPPER = ["--model", "napper", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2"]
LEASE = "8"  # a child that runs well under a second after its wake has 5 s to end before the lease is stale


def log_has(worker, text: str) -> bool:
    return text in worker.log_path.read_text()


def finish_during_an_outage(db_url: str, home, wake, outage: Outage, *args: str):
    """Submit a napper, start a worker on the outage's URL, cut the database while the child naps, wake it, and
    return (job id, worker) once the worker retries storing its outcome."""
    (job_id,) = submit(db_url, *NAPPER)
    worker = start_worker(outage.url, home, "--lease", LEASE, *args, env={"COMPILE_LAB_TEST_WAKE": str(wake)})
    wait_until((home / "jobs" / f"{job_id}-1" / "pids").exists, 120, "the child to start napping")
    outage.down()
    wake.touch()
    wait_until(lambda: log_has(worker, "could not store the outcome"), 60, "the worker to retry storing the outcome")
    assert (home / "jobs" / f"{job_id}-1" / store.FILE).exists()  # on disk until the database has it
    return job_id, worker


def ran_once(db_url: str, home, job_id: int) -> None:
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1 and rec["error"] is None, (
        rec["status"], rec["attempts"], rec["error"])
    assert result_count(db_url, job_id) == 1
    assert not (home / "jobs" / f"{job_id}-2").exists()  # never run again
    assert not (home / "jobs" / f"{job_id}-1" / store.FILE).exists()


def test_an_outage_past_the_lease_keeps_the_result_though_the_job_was_taken_back(any_db_url, tmp_path, monkeypatch):
    """Meanwhile another worker's poll takes the expired job back (counting the attempt as lost); the kept outcome
    is still stored once the database answers, and the attempt the outage cost is given back."""
    home, wake, outage = tmp_path / "home", tmp_path / "wake", Outage(any_db_url)
    worker = None
    try:
        job_id, worker = finish_during_an_outage(any_db_url, home, wake, outage, "--drain")
        wait_until(lambda: job_row(any_db_url, job_id).lease_expires_at < utcnow(), 30, "the lease to expire")
        # another worker's poll, on the real database (SQLite: past the lock the outage broke)
        monkeypatch.setattr(db.engine, "_write_turn", lambda engine: contextlib.nullcontext())
        assert queue.requeue_expired(get_engine(any_db_url)) == [job_id]
        monkeypatch.undo()
        assert job_row(any_db_url, job_id).status == "queued"
        outage.up()
        assert worker.wait(timeout=120) == 0
    finally:
        outage.up()
        if worker is not None:
            worker.kill()
    ran_once(any_db_url, home, job_id)
    log = worker.log_path.read_text()
    assert "giving up" not in log and f"job {job_id}: succeeded" in log


def test_a_worker_killed_while_storing_leaves_the_outcome_for_the_next_one(db_url, tmp_path):
    home, wake, outage = tmp_path / "home", tmp_path / "wake", Outage(db_url)
    worker = second = None
    try:
        job_id, worker = finish_during_an_outage(db_url, home, wake, outage, "--drain")
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        outage.up()
        assert job_row(db_url, job_id).status == "running"  # its lease still runs: nobody may take it yet
        second = start_worker(db_url, home, "--lease", LEASE, "--drain")
        assert second.wait(timeout=120) == 0
    finally:
        outage.up()
        for w in (worker, second):
            if w is not None:
                w.kill()
    ran_once(db_url, home, job_id)
    assert log_has(second, f"job {job_id}: its succeeded outcome kept in")
