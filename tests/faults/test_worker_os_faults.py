"""The worker against its own machinery, with real processes, a real SQLite file and a real tmpfs:
its write-lock file unwritable, its --home full, its database file deleted, a grandchild that left
the child's session, the worker frozen past its lease, a database outage longer than the lease.
In each, the job runs to one end exactly once and nothing runs twice at the same time."""
import os
import signal
import subprocess

import pytest

from db.models import utcnow
from runner.child.diskspace import MIN_FREE_ENV
from tests.conftest import job_row, pid_alive, read_pids, records, result_count, start_worker, submit, wait_until
from tests.tmpfs import fill, mounted

NAPPER = ["--model", "napper", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2"]
TINY = ["--model", "tiny", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2"]


def log_has(worker, text: str) -> bool:
    return text in worker.log_path.read_text()


def stop(worker) -> int:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    return worker.wait(timeout=60)


def test_unwritable_lock_file_the_worker_hands_the_job_back_and_lives_on(db_url, tmp_path):
    """An immutable lock file (chattr +i: root cannot write it either) refuses every write with
    PermissionError mid-job: the lease cannot be renewed, the child is stopped, the job handed back
    once writes go in again, then run to its end by the same worker, counted once."""
    home, wake, lock = tmp_path / "home", tmp_path / "wake", db_url.removeprefix("sqlite:///") + ".writelock"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    (job_id,) = submit(db_url, *NAPPER)
    worker = start_worker(db_url, home, "--lease", "4", "--drain", env=env)
    try:
        wait_until((home / "jobs" / f"{job_id}-1" / "pids").exists, 120, "the child to start napping")
        child, grandchild = read_pids(home / "jobs" / f"{job_id}-1" / "pids")
        if subprocess.run(["chattr", "+i", lock], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available on this file system")
        try:
            wait_until(lambda: not pid_alive(child) and not pid_alive(grandchild), 30, "the child to be stopped")
            wait_until(lambda: log_has(worker, "Operation not permitted"), 15, "the worker to log the refusal")
            assert worker.poll() is None  # alive, still trying
        finally:
            subprocess.run(["chattr", "-i", lock], check=True)
        wake.touch()
        assert worker.wait(timeout=120) == 0
    finally:
        worker.kill()
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1, (rec["status"], rec["attempts"], rec["error"])
    assert result_count(db_url, job_id) == 1


@pytest.fixture
def small_tmpfs(tmp_path):
    with mounted(tmp_path / "small", "2m") as where:
        yield where


def test_full_home_the_job_is_handed_back_and_runs_once_when_space_returns(db_url, tmp_path, small_tmpfs):
    """Its home too full for the job folder (the spec file goes in, the child's no-space marker does not), under a
    free-space threshold of 0 (a worker at the default claims nothing on a home this small): the worker's own write
    fails, the job goes back uncounted with the cause named, and runs once when space is back."""
    home = small_tmpfs / "home"
    worker = start_worker(db_url, tmp_path / "logs", "--home", str(home), "--lease", "4",  # the last --home wins
                          env={MIN_FREE_ENV: "0"})
    try:
        wait_until(lambda: log_has(worker, " ready: "), 120, "the worker to be ready")
        fill(small_tmpfs)
        os.truncate(small_tmpfs / "filler", os.path.getsize(small_tmpfs / "filler") - 2 * 4096)  # two pages free
        (job_id,) = submit(db_url, *TINY)
        wait_until(lambda: log_has(worker, "No space left on device"), 60, "the worker to meet the full disk")
        # the worker logs the refusal, then hands the job back: the row shows it once that has committed

        def handed_back() -> bool:
            job = job_row(db_url, job_id)
            return job.attempts == 0 and "not counted" in (job.error or "")
        wait_until(handed_back, 30, "the job to be handed back without counting the attempt")
        assert job_row(db_url, job_id).error.startswith(f"no space left on device under {home}")
        assert worker.poll() is None
        (small_tmpfs / "filler").unlink()
        wait_until(lambda: job_row(db_url, job_id).status == "succeeded", 120, "the job to run once space is back")
    finally:
        assert stop(worker) == 0
    rec = records(db_url)[job_id]
    assert rec["attempts"] == 1 and result_count(db_url, job_id) == 1


def test_deleted_database_file_is_noticed_and_the_worker_stops(db_url, tmp_path):
    path = db_url.removeprefix("sqlite:///")
    worker = start_worker(db_url, tmp_path / "home")
    try:
        wait_until(lambda: log_has(worker, " ready: "), 120, "the worker to be ready")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        assert worker.wait(timeout=30) == 2
    finally:
        worker.kill()
    log = worker.log_path.read_text()
    assert f"error: the database file {path} was deleted or replaced" in log
    assert "Traceback" not in log


def test_setsid_grandchild_is_gone_after_the_jobs_timeout(db_url, tmp_path):
    home = tmp_path / "home"
    (job_id,) = submit(db_url, "--model", "escaper", "--batch", "2", "--device", "cpu", "--backend", "eager",
                       "--timeout", "20")  # long enough for a loaded host to reach build before it
    worker = start_worker(db_url, home, "--drain")
    try:
        pids = home / "jobs" / f"{job_id}-1" / "pids"
        wait_until(pids.exists, 20, "the child to start its grandchild")
        child, grandchild = read_pids(pids)
        assert os.getsid(grandchild) == grandchild != os.getsid(child)  # a session of its own
        assert worker.wait(timeout=120) == 0  # the job times out, the worker drains
    finally:
        worker.kill()
    assert not pid_alive(child) and not pid_alive(grandchild)
    assert records(db_url)[job_id]["status"] == "timed_out"


def test_frozen_workers_child_stops_before_another_worker_runs_the_job(any_db_url, tmp_path):
    db_url, home, wake = any_db_url, tmp_path / "home", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    (job_id,) = submit(db_url, *NAPPER)
    frozen = start_worker(db_url, home, "--lease", "3", env=env)
    second = None
    try:
        wait_until((home / "jobs" / f"{job_id}-1" / "pids").exists, 120, "the first child to start napping")
        child, grandchild = read_pids(home / "jobs" / f"{job_id}-1" / "pids")
        frozen.send_signal(signal.SIGSTOP)
        second = start_worker(db_url, home, "--lease", "3", env=env)
        second_run = home / "jobs" / f"{job_id}-2"

        def first_event():
            if not pid_alive(child) and not pid_alive(grandchild):
                return "first child stopped"
            if second_run.exists():
                return "second run started"
        assert wait_until(first_event, 120, "the first child to stop or the second run to start",
                          interval=0.01) == "first child stopped"
        wake.touch()
        wait_until(lambda: job_row(db_url, job_id).status == "succeeded", 120, "the second worker to run the job")
        assert stop(second) == 0
    finally:
        frozen.send_signal(signal.SIGKILL)
        frozen.send_signal(signal.SIGCONT)
        frozen.wait(30)
        if second is not None:
            second.kill()
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 2 and result_count(db_url, job_id) == 1
    assert "lease ran out" in (home / "jobs" / f"{job_id}-1" / "child.log").read_text()


def test_outage_longer_than_the_lease_counts_no_attempt(db_url, tmp_path, monkeypatch):
    """Every write waits past the lease (the test holds SQLite's write turn); meanwhile another worker
    takes the expired job back (counting the attempt as lost). The stopped worker's hand-back gives
    the attempt back: the job's one real run is attempt 1, as the README says."""
    import contextlib
    import fcntl

    import db.engine
    from db import queue
    from db.database import get_engine

    home, wake = tmp_path / "home", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    (job_id,) = submit(db_url, *NAPPER)
    worker = start_worker(db_url, home, "--lease", "3", "--drain", env=env)
    try:
        pids = home / "jobs" / f"{job_id}-1" / "pids"
        wait_until(pids.exists, 120, "the child to start napping")
        child, _ = read_pids(pids)
        fd = os.open(db_url.removeprefix("sqlite:///") + ".writelock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # db.engine.atomic: the worker's writes queue here
        try:
            wait_until(lambda: not pid_alive(child), 30, "the worker to stop its child")
            wait_until(lambda: job_row(db_url, job_id).lease_expires_at < utcnow(), 30, "the lease to expire")
            # another worker's poll, past our lock (SQLite's own lock is free: the worker waits on the flock)
            monkeypatch.setattr(db.engine, "_write_turn", lambda engine: contextlib.nullcontext())
            assert queue.requeue_expired(get_engine(db_url)) == [job_id]
            monkeypatch.undo()
        finally:
            os.close(fd)
        wake.touch()
        assert worker.wait(timeout=120) == 0
    finally:
        worker.kill()
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1, (rec["status"], rec["attempts"], rec["error"])
    assert result_count(db_url, job_id) == 1
