"""`runner launch slurm` on a real one-node Slurm cluster: workers submitted as a job array for what is queued, every
job run once, the workers gone from squeue soon after the queue empties; a worker's Slurm job cancelled under a
running lab job puts that job back in the scheduler's words, and it runs again elsewhere, never two at once; scheduler
jobs that wait say the scheduler's reason. Real sbatch, squeue, scancel, workers, children, SQLite and PostgreSQL."""
import json
import re
import time

import pytest

from tests.cluster.conftest import CLUSTER_MODELS, stop
from tests.conftest import job_row, records, result_count, run_cli, submit, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]
QUICK = ("--backend", "eager", "--device", "cpu", "--iters", "2")
LONELY = ("--models-dir", str(CLUSTER_MODELS), "--model", "lonely")


def statuses(db_url: str, ids: list[int]) -> dict[int, str]:
    return {i: job_row(db_url, i).status for i in ids}


def test_a_sweep_gets_an_array_of_workers_that_exit_once_the_queue_is_empty(slurm, db_url, tmp_path):
    ids = submit(db_url, "--model", "tiny", "--batch", "2,4,8,16,32,64", *QUICK)
    assert len(ids) == 6
    launcher = slurm.launcher(slurm.config(tmp_path, max_workers=3, idle_exit_s=10), db_url, "--watch")
    try:
        started = time.monotonic()
        tasks = wait_until(lambda: len(slurm.tasks()) == 3 and slurm.tasks(), 60, "3 workers submitted")
        arrays = {t.split("_")[0] for t in tasks}
        assert len(arrays) == 1 and sorted(t.split("_")[1] for t in tasks) == ["0", "1", "2"], tasks  # one array
        wait_until(lambda: set(statuses(db_url, ids).values()) == {"succeeded"}, 240,
                   f"every job to succeed (now {statuses(db_url, ids)})")
        emptied = time.monotonic()
        gone = wait_until(lambda: not slurm.in_squeue() and time.monotonic(), 120,
                          f"squeue to hold no worker of ours (now {slurm.in_squeue()})")
        print(f"queued to all succeeded: {emptied - started:.1f} s; queue empty to squeue empty: {gone - emptied:.1f} s")
        assert stop(launcher) == 0
    finally:
        stop(launcher)
    done = records(db_url)
    assert all(done[i]["attempts"] == 1 and result_count(db_url, i) == 1 for i in ids)
    ran_on = {job_row(db_url, i).worker_id for i in ids}
    status = json.loads(run_cli("status", "--db", db_url, "--json").stdout)
    assert status["workers"] == [] and status["scheduler_pending"] == []  # all stopped, none waits
    # each job's worker said which Slurm job it was: one of the array's tasks, on this node
    from sqlalchemy import select

    from db.database import get_engine
    from db.engine import reading
    from db.models import WorkerRow

    with reading(get_engine(db_url)) as s:
        placed = {w.id: w.capabilities.get("scheduler") or {}
                  for w in s.scalars(select(WorkerRow).where(WorkerRow.id.in_(ran_on)))}
    assert {p.get("job_id") for p in placed.values()} <= set(tasks) and all(p.get("node") for p in placed.values())
    assert all(p.get("kind") == "slurm" and p.get("pool") == "cpu" and p.get("cpus") == 1 for p in placed.values())
    log = launcher.log_path.read_text()
    assert re.search(r"pool cpu: submitted Slurm job array \d+ \(3 workers\)", log), log
    assert log.count("submitted Slurm job array") == 1, log  # sized once: no second array for the same queue


def test_a_cancelled_worker_hands_its_job_back_in_the_schedulers_words(slurm, pg_url, tmp_path):
    """On PostgreSQL, a team's database (the sweep above runs on SQLite)."""
    db_url = pg_url
    runs, wake = tmp_path / "runs", tmp_path / "wake"
    env = {"COMPILE_LAB_TEST_RUNS": str(runs), "COMPILE_LAB_TEST_WAKE": str(wake)}
    (job,) = submit(db_url, *LONELY, "--batch", "2", *QUICK)
    launcher = slurm.launcher(slurm.config(tmp_path, max_workers=2, idle_exit_s=8), db_url, "--watch", env=env)
    try:
        wait_until(lambda: runs.exists() and runs.read_text().count("start") == 1, 90, "the job's first run to start")
        first = job_row(db_url, job).worker_id
        slurm_job = _placed(db_url, first)["job_id"]
        assert slurm.tasks()[slurm_job][0] == "RUNNING"
        slurm.run("scancel", slurm_job)
        said = f"the worker's Slurm job {slurm_job} was cancelled (scancel) while building"
        row = wait_until(lambda: (r := job_row(db_url, job)).error and said in r.error and r, 30,
                         "the job back in the queue in Slurm's words")
        assert row.status in ("queued", "running") and row.attempts in (0, 1), (row.status, row.attempts, row.error)
        assert "re-queued without counting the attempt" in row.error
        # the launcher starts another worker for it; the first run is over before the second starts (the lock)
        wait_until(lambda: runs.read_text().count("start") == 2, 90, "the job's second run to start")
        second = job_row(db_url, job).worker_id
        assert second != first and _placed(db_url, second)["job_id"] != slurm_job
        assert slurm_job not in slurm.in_squeue()
        wake.touch()
        wait_until(lambda: job_row(db_url, job).status == "succeeded", 60, "the job to succeed on the second worker")
        assert "overlap" not in runs.read_text()  # never two runs at once
        assert result_count(db_url, job) == 1 and job_row(db_url, job).attempts == 1
        # cancelling a lab job cancels nothing else: its worker's Slurm job runs on, and the worker takes the next
        wake.unlink()  # before it is queued: the next job naps until cancelled
        (other,) = submit(db_url, *LONELY, "--batch", "4", *QUICK)
        wait_until(lambda: runs.read_text().count("start") == 3, 60, "the next job to start")
        worker = job_row(db_url, other).worker_id
        held = _placed(db_url, worker)["job_id"]
        assert run_cli("cancel", str(other), "--db", db_url).returncode == 0
        wait_until(lambda: _state(db_url, worker) == "idle", 30, "the worker idle again after the cancel")
        assert slurm.tasks()[held][0] == "RUNNING" and job_row(db_url, other).status == "cancelled"
        assert stop(launcher) == 0
        wait_until(lambda: not slurm.in_squeue(), 60, "the idle workers to exit")
    finally:
        stop(launcher)


def test_waiting_scheduler_jobs_say_the_schedulers_reason(slurm, db_url, tmp_path):
    """Workers asked to begin in an hour wait with Slurm's reason BeginTime: the launcher publishes it (status, the
    sidebar, Queue); cancelling those scheduler jobs loses no lab job, and leaves nothing pending in the lab."""
    ids = submit(db_url, "--model", "tiny", "--batch", "2,4", *QUICK)
    config = slurm.config(tmp_path, max_workers=4, text='extra = ["--begin=now+3600"]')
    once = run_cli("launch", "slurm", "--config", str(config), "--db", db_url, env=slurm.env)
    assert once.returncode == 0, once.stderr
    assert re.search(r"submitted Slurm job array \d+ \(2 workers\)", once.stderr), once.stderr
    shown = json.loads(run_cli("status", "--db", db_url, "--json").stdout)["scheduler_pending"]
    assert len(shown) == 2 and {p["state"] for p in shown} == {"PENDING"} and {p["pool"] for p in shown} == {"cpu"}
    # Slurm gives a reason at its next scheduling pass ("None" until then); the launcher's next look publishes it
    waiting = wait_until(lambda: _all_say(slurm.tasks(), "BeginTime"), 30, "Slurm to say why the workers wait")
    assert sorted(p["job_id"] for p in shown) == sorted(waiting)
    again = run_cli("launch", "slurm", "--config", str(config), "--db", db_url, env=slurm.env)
    assert again.returncode == 0 and "submitted" not in again.stderr  # the two that wait are the queue's workers
    shown = json.loads(run_cli("status", "--db", db_url, "--json").stdout)["scheduler_pending"]
    assert {p["reason"] for p in shown} == {"BeginTime"} and sorted(p["job_id"] for p in shown) == sorted(waiting)
    assert "2 Slurm jobs pending (BeginTime)" in run_cli("status", "--db", db_url).stdout
    slurm.run("scancel", *waiting)
    wait_until(lambda: not slurm.in_squeue(), 30, "the cancelled jobs gone")
    after = run_cli("launch", "slurm", "--config", str(config.parent / "none.toml"), "--db", db_url, env=slurm.env)
    assert after.returncode == 2 and "none.toml" in after.stderr  # a config that is not there: one line, exit 2
    assert statuses(db_url, ids) == {i: "queued" for i in ids}  # no lab job lost with the scheduler's
    config.write_text(config.read_text().replace('extra = ["--begin=now+3600"]', ""))
    assert run_cli("launch", "slurm", "--config", str(config), "--db", db_url, env=slurm.env).returncode == 0
    pending = json.loads(run_cli("status", "--db", db_url, "--json").stdout)["scheduler_pending"]
    assert not {p["job_id"] for p in pending} & set(waiting)  # the cancelled ones are no longer said to wait
    wait_until(lambda: set(statuses(db_url, ids).values()) == {"succeeded"}, 180, "the queued jobs to run")


def _all_say(tasks: dict, reason: str) -> dict | None:
    return tasks if tasks and {r for _, r in tasks.values()} == {reason} else None


def _placed(db_url: str, worker_id: str) -> dict:
    from db.database import get_engine
    from db.engine import reading
    from db.models import WorkerRow

    with reading(get_engine(db_url)) as s:
        return s.get(WorkerRow, worker_id).capabilities["scheduler"]


def _state(db_url: str, worker_id: str) -> str:
    from db.database import get_engine
    from db.engine import reading
    from db.models import WorkerRow

    with reading(get_engine(db_url)) as s:
        return s.get(WorkerRow, worker_id).state


def test_a_pool_whose_workers_fail_at_start_is_held_back(slurm, db_url, tmp_path):
    """A worker Python that is not there fails each task at once: after 3 such workers the launcher submits no more
    (a storm of failing jobs is what an admin fears most) and says where the logs are; the lab job stays queued."""
    (job,) = submit(db_url, "--model", "tiny", "--batch", "2", *QUICK)
    config = slurm.config(tmp_path, max_workers=1)
    config.write_text(config.read_text().replace("[worker]\n", '[worker]\npython = "/nonexistent/bin/python"\n'))
    launcher = slurm.launcher(config, db_url, "--watch")
    try:
        held = "its last 3 workers failed at start"
        wait_until(lambda: launcher.log_path.read_text().count(held) >= 3, 90, "the launcher to hold the pool back")
        log = launcher.log_path.read_text()
        assert log.count("submitted Slurm job array") == 3 and str(tmp_path / "logs") in log, log
        assert len(slurm.tasks()) == 3 and {s for s, _ in slurm.tasks().values()} == {"FAILED"}
        assert job_row(db_url, job).status == "queued" and job_row(db_url, job).attempts == 0
    finally:
        stop(launcher)
