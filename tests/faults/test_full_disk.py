"""A full disk is an outage: a worker whose home (a small, real tmpfs) fills up while its child runs a real
torch.compile hands the job back uncounted with the cause named, pauses claiming (its row says so, its heartbeat
goes on), and once the space is back runs the same job to success, one attempt counted."""

import pytest

from runner.child.diskspace import MIN_FREE_ENV
from runner.worker.lease import read_progress
from tests.conftest import job_row, records, result_count, run_cli, start_worker, submit, wait_until
from tests.tmpfs import fill, mounted

COMPILE = ["--model", "tiny", "--batch", "2", "--device", "cpu", "--backend", "inductor", "--iters", "2"]


@pytest.fixture
def small_home(tmp_path):
    with mounted(tmp_path / "small", "64m") as where:
        yield where


def worker_row(db_url: str):
    """The one worker's row (the test starts one)."""
    from sqlalchemy import select

    from db.database import get_engine
    from db.engine import reading
    from db.models import WorkerRow

    with reading(get_engine(db_url)) as s:
        rows = s.scalars(select(WorkerRow).where(WorkerRow.state != "stopped")).all()
        return rows[0] if rows else None


def running(worker):
    """For wait_until: stop waiting at once when the worker died (its log says why)."""
    if worker.poll() is not None:
        raise AssertionError(f"the worker exited with {worker.returncode}:\n{worker.log_path.read_text()[-3000:]}")
    return True


def test_home_filled_during_a_compile_hands_the_job_back_uncounted_and_it_succeeds_once_space_is_back(
        db_url, tmp_path, small_home):
    home = small_home / "home"
    (job_id,) = submit(db_url, *COMPILE)
    worker = start_worker(db_url, tmp_path / "logs", "--home", str(home), env={MIN_FREE_ENV: "16"})
    progress = home / "jobs" / f"{job_id}-1" / "progress.jsonl"
    try:
        wait_until(lambda: running(worker) and read_progress(progress)[0] == "compiling", 300,
                   "the child to start compiling", interval=0.02)
        filler = fill(small_home)

        def handed_back():
            job = running(worker) and job_row(db_url, job_id)
            assert job.status in ("running", "queued"), f"the job ended {job.status}: {job.error}"
            return job.status == "queued" and job.error and job
        job = wait_until(handed_back, 300, "the job to be handed back")
        assert job.attempts == 0, job.error
        assert job.error.startswith(f"no space left on device under {home}"), job.error
        assert " while compiling: " in job.error and "not counted" in job.error, job.error  # the compile met it
        assert "No space left on device" in (job.log_tail or "")  # the child's traceback's end, past the cut log

        paused = wait_until(lambda: running(worker) and (w := worker_row(db_url)) and w.state == "paused" and w, 60,
                            "the worker to say it is paused")
        assert "no space left on device" in paused.capabilities["paused"]
        assert job_row(db_url, job_id).status == "queued"  # paused: it claims nothing
        status = run_cli("status", "--db", db_url)
        assert status.returncode == 0 and " paused" in status.stdout, status.stdout
        wait_until(lambda: running(worker) and worker_row(db_url).heartbeat_at > paused.heartbeat_at, 30,
                   "the paused worker's next heartbeat")

        filler.unlink()
        wait_until(lambda: running(worker) and job_row(db_url, job_id).status == "succeeded", 300,
                   "the same job to succeed once space is back")
        back = worker_row(db_url)
        assert back.state != "paused" and "paused" not in back.capabilities
        assert "space is back" in worker.log_path.read_text()
    finally:
        worker.terminate()
        worker.wait(60)
    rec = records(db_url)[job_id]
    assert rec["status"] == "succeeded" and rec["attempts"] == 1, (rec["status"], rec["attempts"], rec["error"])
    assert result_count(db_url, job_id) == 1
