"""The worker's own faults, with real processes and real signals, on SQLite and on PostgreSQL:
kill -9 mid-job (the child dies with it, the job re-runs elsewhere, one result), SIGTERM (a grace
period, then the job is handed back without counting an attempt), a database that takes no writes for
longer than the lease (the worker stops its child itself).

The `napper` fixture model naps in build until the test creates its wake file, so a test decides when
a job may finish instead of guessing how long anything takes."""
import fcntl
import os
import signal

from db.models import utcnow
from tests.conftest import job_row, pid_alive, read_pids, records, result_count, start_worker, submit, wait_until, work

NAPPER = ["--model", "napper", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2"]


def test_worker_killed_mid_job_child_dies_and_job_reruns_once(any_db_url, tmp_path):
    db_url, home, wake = any_db_url, tmp_path / "home", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    (job_id,) = submit(db_url, *NAPPER)
    first = start_worker(db_url, home, "--lease", "3", "--drain", env=env)
    try:
        pids = home / "jobs" / f"{job_id}-1" / "pids"
        wait_until(pids.exists, 120, "the first attempt's child to start napping")
        child, grandchild = read_pids(pids)
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
        # PR_SET_PDEATHSIG ends the child; its group keeper then ends the grandchild
        wait_until(lambda: not pid_alive(child) and not pid_alive(grandchild), 15,
                   "the dead worker's child and grandchild to exit")
    finally:
        first.kill()
    assert not (home / "jobs" / f"{job_id}-1" / "result.json").exists()  # the orphan wrote nothing
    job = job_row(db_url, job_id)
    assert job.status == "running" and job.attempts == 1  # nobody renews the lease now
    wait_until(lambda: job_row(db_url, job_id).lease_expires_at < utcnow(), 30, "the lease to expire")

    wake.touch()  # the second attempt may finish
    work(db_url, home, "--drain", env=env)  # another worker: re-queues the expired job, runs it
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded", rec["error"]
    assert rec["attempts"] == 2 and rec["error"] is None
    assert result_count(db_url, job_id) == 1
    child2, grandchild2 = read_pids(home / "jobs" / f"{job_id}-2" / "pids")
    assert child2 != child and not pid_alive(child2) and not pid_alive(grandchild2)


def test_sigterm_hands_the_job_back_after_the_grace_period(any_db_url, tmp_path):
    db_url, home, wake = any_db_url, tmp_path / "home", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    (job_id,) = submit(db_url, *NAPPER)
    worker = start_worker(db_url, home, "--grace", "1", env=env)  # no --drain: runs until stopped
    try:
        pids = home / "jobs" / f"{job_id}-1" / "pids"
        wait_until(pids.exists, 120, "the child to start napping")
        child, grandchild = read_pids(pids)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    finally:
        worker.kill()
    assert not pid_alive(child) and not pid_alive(grandchild)
    job = job_row(db_url, job_id)
    assert job.status == "queued" and job.attempts == 0, (job.status, job.attempts)
    assert "stopped while building; re-queued without counting the attempt" in job.error
    assert job.lease_token is None and job.worker_id is None
    assert "SIGTERM received" in worker.log_path.read_text()

    wake.touch()
    work(db_url, home, "--drain", env=env)  # the next worker runs it as attempt 1
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1 and result_count(db_url, job_id) == 1


def test_sigterm_lets_a_job_finish_within_the_grace_period(db_url, tmp_path):
    home, wake = tmp_path / "home", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    first, second = submit(db_url, *NAPPER, "--repeat", "2")
    worker = start_worker(db_url, home, "--grace", "300", env=env)
    try:
        wait_until((home / "jobs" / f"{first}-1" / "pids").exists, 120, "the child to start napping")
        worker.send_signal(signal.SIGTERM)
        wait_until(lambda: "SIGTERM received" in worker.log_path.read_text(), 30, "the worker to note SIGTERM")
        wake.touch()  # the job ends inside the grace period
        assert worker.wait(timeout=120) == 0
    finally:
        worker.kill()
    assert records(db_url)[first]["status"] == "succeeded" and result_count(db_url, first) == 1
    assert job_row(db_url, second).status == "queued"  # a stopping worker claims nothing more
    assert job_row(db_url, second).attempts == 0


def test_database_locked_past_the_lease_the_worker_stops_its_child_itself(db_url, tmp_path):
    """Every write waits (the test holds SQLite's write turn, as a stuck writer would) for longer than
    the lease: the worker cannot renew it, so it stops the child before another worker could take the
    job back, and hands the job back once the database answers again."""
    home, wake = tmp_path / "home", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    (job_id,) = submit(db_url, *NAPPER)
    worker = start_worker(db_url, home, "--lease", "4", "--drain", env=env)
    try:
        pids = home / "jobs" / f"{job_id}-1" / "pids"
        wait_until(pids.exists, 120, "the child to start napping")
        child, grandchild = read_pids(pids)
        fd = os.open(db_url.removeprefix("sqlite:///") + ".writelock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)  # db.engine.atomic: every writer queues here
        try:
            wait_until(lambda: not pid_alive(child) and not pid_alive(grandchild), 30,
                       "the worker to stop its child while the database takes no writes")
            job = job_row(db_url, job_id)  # reads still work (WAL); nothing could be written
            assert job.status == "running" and job.attempts == 1
        finally:
            os.close(fd)
        wake.touch()
        assert worker.wait(timeout=120) == 0
    finally:
        worker.kill()
    log = worker.log_path.read_text()
    assert f"job {job_id}: lease not renewed" in log
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1, (rec["status"], rec["attempts"], rec["error"])
    assert result_count(db_url, job_id) == 1


def test_restarting_the_app_hands_its_embedded_workers_job_back_uncounted(db_url, tmp_path, monkeypatch):
    """`make run MODELS=...` means a restart: the app's shutdown stops the worker it started (SIGTERM, as the server's
    lifespan does), and the job that worker was running goes back to the queue without an attempt counted; the next
    app's worker runs it as attempt 1."""
    from dashboard.state import embedded
    from db.database import get_engine
    from tests.conftest import FIXTURE_MODELS

    home, wake = tmp_path / "home", tmp_path / "wake"
    monkeypatch.setenv("COMPILE_LAB_TEST_WAKE", str(wake))
    monkeypatch.setenv("COMPILE_LAB_MODELS_DIR", str(FIXTURE_MODELS))  # what `make run MODELS=dir` sets
    monkeypatch.setenv(embedded.ENV_SWITCH, "1")
    (job_id,) = submit(db_url, *NAPPER)
    app = embedded.EmbeddedWorker(db_url, get_engine(db_url), home=home)
    app.command += ["--grace", "1"]
    assert app.ensure(force=True).state == "starting"
    worker = app.proc
    wait_until(lambda: job_row(db_url, job_id).status == "running" or worker.poll() is not None, 120,
               "the embedded worker to take the job")
    assert worker.poll() is None, (home / "worker-embedded.log").read_text()[-2000:]
    app.stop()  # the app's shutdown
    assert worker.wait(timeout=60) == 0
    job = job_row(db_url, job_id)
    assert job.status == "queued" and job.attempts == 0 and "re-queued without counting the attempt" in job.error

    wake.touch()
    again = embedded.EmbeddedWorker(db_url, get_engine(db_url), home=home)  # the restarted app's
    again.command += ["--drain"]
    again.ensure(force=True)
    assert again.proc.wait(timeout=300) == 0
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1 and result_count(db_url, job_id) == 1
