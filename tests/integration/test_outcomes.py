"""Every way a child can end becomes exactly one recorded state with a reason; no process is left.
Each test runs on a real SQLite file and on a real PostgreSQL database."""
import subprocess
import sys

from tests.conftest import (
    FIXTURE_MODELS,
    ROOT,
    pid_alive,
    read_pids,
    records,
    result_count,
    run_cli,
    submit,
    wait_until,
    work,
)


def test_exception_segfault_oom_and_timeout_are_recorded(any_db_url, tmp_path):
    db_url = any_db_url
    home = tmp_path / "home"
    boom = submit(db_url, "--model", "boom", "--batch", "2", "--device", "cpu", "--backend", "eager")
    segv = submit(db_url, "--model", "segv", "--batch", "2", "--device", "cpu")
    sleepy = submit(db_url, "--model", "sleepy", "--batch", "2", "--device", "cpu", "--timeout", "15")
    oom = submit(db_url, "--model", "oom", "--batch", "2", "--device", "cpu", "--backend", "eager")
    # a shape that cannot fit: 2**24 x 10000 float32 = 625 GiB; the allocator refuses at once (no swapping)
    huge = submit(db_url, "--model", "sincos", "--batch", str(2 ** 24), "--device", "cpu", "--backend", "eager")
    ok = submit(db_url, "--model", "tiny", "--batch", "2", "--device", "cpu", "--backend", "eager", "--iters", "2")
    done = work(db_url, home, "--drain")
    recs = records(db_url)

    assert recs[boom[0]]["status"] == "failed"
    assert "boom: fixture model refuses to run" in recs[boom[0]]["error"]
    assert recs[segv[0]]["status"] == "crashed"
    assert "SIGSEGV" in recs[segv[0]]["error"] and "building" in recs[segv[0]]["error"]
    assert recs[sleepy[0]]["status"] == "timed_out"
    assert "timed out after 15 s" in recs[sleepy[0]]["error"]
    # torch.cuda.OutOfMemoryError raised on the CPU (the class exists there; a GPU's real OOM is not run here)
    assert recs[oom[0]]["status"] == "failed"
    assert recs[oom[0]]["error"].startswith("out of memory during eager first call: CUDA out of memory")
    assert recs[huge[0]]["status"] == "failed"
    assert recs[huge[0]]["error"].startswith("out of memory during building (CPU): tried to allocate "
                                             "671088640000 bytes (625.0 GiB)"), recs[huge[0]]["error"]
    # the worker lived on: the job after the failures still ran
    assert recs[ok[0]]["status"] == "succeeded", recs[ok[0]]["error"]
    for job_id, r in recs.items():
        assert r["speedup"] is None or r["status"] == "succeeded"
        assert r["attempts"] == 1
        assert result_count(db_url, job_id) == (1 if r["status"] == "succeeded" else 0)
    # the sleeper's child and its grandchild are gone
    child_pid, grandchild_pid = read_pids(home / "jobs" / f"{sleepy[0]}-1" / "pids")
    assert not pid_alive(child_pid) and not pid_alive(grandchild_pid)
    assert "job %d: timed_out" % sleepy[0] in done.stderr


def test_cancelling_a_running_job_kills_its_process_group(any_db_url, tmp_path):
    db_url = any_db_url
    home = tmp_path / "home"
    (job_id,) = submit(db_url, "--model", "sleepy", "--batch", "2", "--device", "cpu", "--timeout", "600")
    worker = subprocess.Popen([sys.executable, "-m", "runner", "work", "--drain", "--db", db_url, "--home", str(home),
                               "--models-dir", str(FIXTURE_MODELS)], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pids = home / "jobs" / f"{job_id}-1" / "pids"
        wait_until(pids.exists, 120, "the sleepy child to start its grandchild")
        child_pid, grandchild_pid = read_pids(pids)
        cancel = run_cli("cancel", str(job_id), "--db", db_url)
        assert cancel.returncode == 0 and "was running" in cancel.stdout
        assert worker.wait(timeout=60) == 0  # it noticed at its next heartbeat, killed the group, drained
    finally:
        worker.kill()
    rec = records(db_url)[job_id]
    assert rec["status"] == "cancelled" and "while running" in rec["error"]
    assert not pid_alive(child_pid) and not pid_alive(grandchild_pid)
