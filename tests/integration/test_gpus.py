"""`work --gpus` on this CPU machine: one worker process per listed GPU, pinned with CUDA_VISIBLE_DEVICES,
supervised by the parent. The GPUs are NOT real here (CUDA_VISIBLE_DEVICES=0 on a machine without a
GPU): the tests prove the fan-out, the pinning each child sees, the worker rows, restarts and signals.
bench/gpu_workers.sh proves the same on real GPUs."""
import signal
import subprocess

from sqlalchemy import select

from db.database import get_engine
from db.engine import reading
from db.models import Result, WorkerRow
from tests.conftest import pid_alive, records, run_cli, start_worker, submit, wait_until

NAPPER = ["--model", "napper", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2"]


def worker_rows(db_url):
    with reading(get_engine(db_url)) as s:
        return list(s.scalars(select(WorkerRow).order_by(WorkerRow.started_at)).all())


def test_two_gpus_two_pinned_workers_each_job_sees_its_workers_gpu(db_url, tmp_path):
    home, wake = tmp_path / "home", tmp_path / "wake"
    jobs = submit(db_url, *NAPPER, "--repeat", "2")
    env = {"COMPILE_LAB_TEST_WAKE": str(wake)}
    parent = start_worker(db_url, home, "--gpus", "0,1", "--drain", env=env)
    try:
        # both jobs running at once, one per worker, before either may finish
        wait_until(lambda: all((home / "jobs" / f"{j}-1" / "pids").exists() for j in jobs), 120,
                   "both jobs to run at the same time")
        wake.touch()
        assert parent.wait(timeout=120) == 0, parent.log_path.read_text()[-3000:]
    finally:
        parent.kill()
    rows = worker_rows(db_url)
    assert sorted(w.gpu for w in rows) == ["0", "1"]
    assert all(w.hostname and w.heartbeat_at and w.state == "stopped" for w in rows)
    assert all(f":gpu{w.gpu}:" in w.id for w in rows)
    by_id = {w.id: w for w in rows}
    recs = records(db_url)
    assert {recs[j]["worker"] for j in jobs} == set(by_id)  # one job each
    with reading(get_engine(db_url)) as s:
        for j in jobs:
            assert recs[j]["status"] == "succeeded", recs[j]["error"]
            seen = s.scalar(select(Result.detail).where(Result.job_id == j))["env"]["cuda_visible_devices"]
            assert seen == by_id[recs[j]["worker"]].gpu  # the child ran pinned to its worker's GPU


def test_supervisor_restarts_a_killed_worker_and_forwards_sigterm(db_url, tmp_path):
    parent = start_worker(db_url, tmp_path / "home", "--gpus", "0,1")
    try:
        wait_until(lambda: len(worker_rows(db_url)) == 2, 120, "two workers to register")
        victim = next(w for w in worker_rows(db_url) if w.gpu == "1")
        subprocess.run(["kill", "-9", str(victim.pid)], check=True)
        wait_until(lambda: len([w for w in worker_rows(db_url) if w.gpu == "1"]) == 2, 120,
                   "a new worker for GPU 1")
        assert "worker for GPU 1 ended abnormally (killed by SIGKILL); restarting" in parent.log_path.read_text()
        status = run_cli("status", "--db", db_url)  # worker rows as people see them: host, GPU, heartbeat
        # (the killed worker is listed too until its last heartbeat is WORKER_FRESH_S old)
        live_lines = [line for line in status.stdout.splitlines() if ":gpu" in line and victim.id not in line]
        assert len(live_lines) == 2, status.stdout
        assert all(f"host {victim.hostname}" in line and "heartbeat" in line for line in live_lines)
        assert sorted(line.split("  gpu ")[1].split()[0] for line in live_lines) == ["0", "1"]
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=60) == 0
    finally:
        parent.kill()
    rows = worker_rows(db_url)
    live = [w for w in rows if w.id != victim.id]
    assert sorted(w.gpu for w in live) == ["0", "1"]
    assert all(w.state == "stopped" for w in live)  # each stopped cleanly on the forwarded SIGTERM
    assert not any(pid_alive(w.pid) for w in rows)


def test_workers_stop_when_their_supervisor_is_killed(db_url, tmp_path):
    parent = start_worker(db_url, tmp_path / "home", "--gpus", "0,1")
    try:
        wait_until(lambda: len(worker_rows(db_url)) == 2 and all(w.state == "idle" for w in worker_rows(db_url)),
                   120, "two idle workers")
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        # the parent-death signal (SIGTERM) stops each worker the normal way
        wait_until(lambda: all(w.state == "stopped" for w in worker_rows(db_url)), 60, "both workers to stop")
        wait_until(lambda: not any(pid_alive(w.pid) for w in worker_rows(db_url)), 30, "both workers to exit")
    finally:
        parent.kill()
