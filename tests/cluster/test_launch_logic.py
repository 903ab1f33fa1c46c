"""The launcher's parts that need no cluster: its config file (defaults, refusals naming the key), how many workers it
asks for (runner.launch.sizing), the scheduler's words (lab.scheduler), a worker's identity from Slurm's environment,
and what the lab's database keeps of the scheduler (db.cluster) on a real SQLite file."""
from datetime import timedelta

import pytest
from sqlalchemy import update

from db import cluster, queue
from db.cluster import Demand
from db.engine import atomic
from db.models import Job, utcnow
from lab import scheduler
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from runner.launch import identity, sizing
from runner.launch.config import ConfigError, from_dict, load
from tests.conftest import job_row


def test_config_defaults_and_pools():
    cfg = from_dict({"max_workers": 6, "slurm": {"partition": "gpu", "time_limit": "02:00:00"},
                     "pool": [{"name": "h100", "torch": "2.13"},
                              {"name": "cpu", "device": "cpu", "max_workers": 2, "slurm": {"partition": "cpu"}}]})
    h100, cpu = cfg.pools
    assert cfg.pool_slurm(h100).gres == "gpu:1" and cfg.pool_slurm(h100).partition == "gpu"  # a GPU each
    assert cfg.pool_slurm(cpu).gres is None and cfg.pool_slurm(cpu).partition == "cpu"  # its own over [slurm]
    assert cfg.pool_slurm(cpu).time_limit == "02:00:00"
    assert (cfg.pool_max(h100), cfg.pool_max(cpu)) == (6, 2) and cfg.job_name(cpu) == "compile-lab-cpu"
    assert from_dict({}).pools[0].device == "cuda"  # no pool: one for the GPUs


@pytest.mark.parametrize("data, said", [
    ({"max_worker": 3}, "unknown key 'max_worker'"),
    ({"slurm": {"partiton": "gpu"}}, "[slurm]: unknown key 'partiton'"),
    ({"pool": [{"name": "a", "device": "tpu"}]}, "device must be one of cuda, cpu"),
    ({"pool": [{"name": "a"}, {"name": "a"}]}, "two pools are named 'a'"),
    ({"max_workers": 0}, "max_workers must be a number of 1 or more"),
    ({"max_workers": True}, "max_workers must be a number"),
    ({"slurm": {"time_limit": "two hours"}}, "time_limit 'two hours' is not minutes"),
    ({"slurm": {"cpus_per_task": "8"}}, "cpus_per_task must be a whole number"),
    ({"worker": {"args": "--lease 10"}}, "args must be a list of strings"),
    ({"worker": {"env": {"A B": "1"}}}, "names must be letters, digits and _"),
    ({"name": "Compile_Lab"}, "name must be lower-case letters"),
])
def test_config_refusals_name_the_key(data, said):
    with pytest.raises(ConfigError) as e:
        from_dict(data, "lab.toml")
    assert said in str(e.value) and str(e.value).startswith("lab.toml")


def test_config_file_that_is_not_toml(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text("max_workers = \n")
    with pytest.raises(ConfigError, match="not TOML"):
        load(bad)
    with pytest.raises(ConfigError, match="No such file"):
        load(tmp_path / "missing.toml")


def test_sizing_asks_for_what_the_queue_needs_up_to_the_maximum():
    cfg = from_dict({"max_workers": 3, "pool": [{"name": "cpu", "device": "cpu"}]})
    six = [Demand("cpu", "any", "tiny", 6)]
    (need,) = sizing.plan(cfg, six, {}, set(), {})
    assert (need.queued, need.held, need.start) == (6, 0, 3)  # the maximum, not one per job
    (need,) = sizing.plan(cfg, six, {"cpu": ["9_0", "9_1", "9_2"]}, set(), {})
    assert need.start == 0  # three held already
    (need,) = sizing.plan(from_dict({"max_workers": 5, "pool": [{"name": "cpu", "device": "cpu"}]}),
                          [Demand("cpu", "any", "tiny", 3)], {"cpu": ["9_0", "9_1"]}, {"9_0"}, {})
    assert (need.busy, need.start) == (1, 2)  # one free worker for three jobs: two more
    (need,) = sizing.plan(cfg, [], {"cpu": ["9_0"]}, set(), {})
    assert need.start == 0  # nothing queued: none (the idle worker exits by itself)


def test_sizing_routes_jobs_by_device_torch_and_what_a_pool_offered():
    cfg = from_dict({"max_workers": 8, "pool": [{"name": "old", "torch": "2.13"}, {"name": "new", "torch": "2.14"},
                                                {"name": "cpu", "device": "cpu"}]})
    demand = [Demand("cuda", "2.14", "mlp", 2), Demand("cuda", "any", "mlp", 3), Demand("cpu", "any", "tiny", 1),
              Demand("cuda", "2.15", "mlp", 4), Demand("cpu", "2.13", "tiny", 5)]
    needs = {n.pool: n for n in sizing.plan(cfg, demand, {}, set(), {})}
    assert (needs["old"].queued, needs["new"].queued, needs["cpu"].queued) == (3, 2, 1)
    assert needs["old"].waiting == 9  # torch 2.15 on no pool; a cpu pool without a torch takes unpinned jobs only
    offers = {"old": {"torch_version": "2.13.0+cu128", "models": ["resnet18"]}}  # what its workers showed
    needs = {n.pool: n for n in sizing.plan(cfg, demand, {}, set(), offers)}
    assert needs["old"].queued == 0 and needs["new"].queued == 5  # no mlp on "old": the next pool takes the unpinned


def test_the_schedulers_words():
    job = {"kind": "slurm", "job_id": "812_3"}
    assert scheduler.ending(job, scheduler.slurm_ending("COMPLETING", "TimeLimit")) == (
        "the worker's Slurm job 812_3 hit its time limit", True)
    assert scheduler.ending(job, scheduler.slurm_ending("COMPLETING", "None")) == (
        "the worker's Slurm job 812_3 was cancelled (scancel)", False)
    assert scheduler.slurm_ending("PREEMPTED") == "PREEMPTED" and scheduler.slurm_ending("NODE_FAIL") == "NODE_FAIL"
    # while ending, a requeue and a preemption read COMPLETING like a cancel: slurmstepd's line tells them apart
    stepd = "*** JOB 812 ON c12 CANCELLED AT 2026-11-28T15:50:05 DUE TO {} ***"
    assert scheduler.slurm_ending("COMPLETING", "None", stepd.format("JOB REQUEUE")) == "REQUEUED"
    assert scheduler.slurm_ending("COMPLETING", "None", stepd.format("PREEMPTION")) == "PREEMPTED"
    assert scheduler.slurm_ending("COMPLETING", "None", "*** JOB 812 ON c12 CANCELLED AT 2026-11-28T15:50:05 ***") == (
        "CANCELLED")
    assert scheduler.ending(job, "NODE_FAIL").words.endswith("lost its node (node failure)")
    assert scheduler.allocation({**job, "node": "c12", "cpus": 8, "gpus": "0", "partition": "gpu",
                                 "time_limit": "4:00:00"}) == (
        "Slurm job 812_3 on node c12: 8 CPUs, GPU 0, partition gpu, time limit 4:00:00")
    assert scheduler.pending_line([{"kind": "slurm", "reason": "Resources"}] * 2 + [
        {"kind": "slurm", "reason": "Priority"}]) == "3 Slurm jobs pending (Resources: 2, Priority: 1)"


def test_a_workers_identity_from_slurms_environment():
    env = {"SLURM_JOB_ID": "815", "SLURM_ARRAY_JOB_ID": "812", "SLURM_ARRAY_TASK_ID": "3", "SLURMD_NODENAME": "c12",
           "SLURM_CPUS_ON_NODE": "8", "SLURM_JOB_GPUS": "2", "SLURM_JOB_PARTITION": "gpu",
           "COMPILE_LAB_LAUNCH_POOL": "h100", "SLURM_CONF": "/nonexistent/slurm.conf"}
    found = identity.current(env)
    assert {k: found[k] for k in ("kind", "job_id", "node", "cpus", "gpus", "partition", "pool")} == {
        "kind": "slurm", "job_id": "812_3", "node": "c12", "cpus": 8, "gpus": "2", "partition": "gpu", "pool": "h100"}
    assert identity.current({}) is None and identity.ending({}) is None  # outside a scheduler: nothing to say
    pod = identity.current({identity.POD_ENV: "cl-h100-1-abcde", "JOB_COMPLETION_INDEX": "1",
                            identity.NODE_ENV: "gpu-7"})
    assert pod["kind"] == "kubernetes" and pod["index"] == 1 and pod["node"] == "gpu-7"
    assert identity.ending({identity.POD_ENV: "cl-h100-1-abcde"}).words == (
        "the worker's Kubernetes pod cl-h100-1-abcde was stopped (deleted, evicted or preempted)")


def test_slurmstepds_last_word_is_read_from_the_jobs_output(tmp_path):
    out = tmp_path / "w-812_3.out"
    out.write_text("slurmstepd-c12: error: *** JOB 812 ON c12 CANCELLED AT 2026-11-28T15:33:17 DUE TO TIME LIMIT ***\n"
                   "15:33:17 worker c12:1:any:aa: SIGTERM received\n" + "x" * 20000 + "\n"
                   "slurmstepd-c12: error: *** JOB 812 ON c12 CANCELLED AT 2026-11-28T15:50:05 DUE TO JOB REQUEUE ***\n")
    assert identity.stepd_line(str(out)).endswith("DUE TO JOB REQUEUE ***")  # the last one, from the file's end
    assert identity.stepd_line(str(tmp_path / "missing.out")) is None and identity.stepd_line(None) is None


def _claimed(engine, worker_id: str, job_id: str | None = "812_3", lease_s: float = 60) -> queue.Claim:
    caps = {"devices": ["cpu"], "torch_version": "2.13.0", "models": [{"name": "tiny"}]}
    if job_id:
        caps["scheduler"] = {"kind": "slurm", "job_id": job_id, "pool": "cpu"}
    queue.register_worker(engine, worker_id, "c12", 1, None, caps)
    queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu", process_repeats=1),
                 {"tiny": ModelInfo("tiny", "d")})
    return queue.claim_next(engine, worker_id, ["cpu"], ["tiny"], lease_s)


def test_pending_scheduler_jobs_are_not_workers(engine):
    jobs = [{"kind": "slurm", "name": "compile-lab-cpu", "job_id": f"812_{i}", "pool": "cpu", "state": "PENDING",
             "reason": "Resources"} for i in range(3)]
    cluster.publish_pending(engine, ["compile-lab-cpu"], jobs, "login1", 42)
    assert queue.live_workers(engine) == []  # Workers alive stays 0: they have not started
    assert [p["job_id"] for p in cluster.pending_jobs(engine)] == ["812_0", "812_1", "812_2"]
    _claimed(engine, "c12:1:any:aa", "812_1")  # one started and registered
    assert [p["job_id"] for p in cluster.pending_jobs(engine)] == ["812_0", "812_2"]
    cluster.publish_pending(engine, ["compile-lab-cpu"], jobs[2:], "login1", 42)  # the launcher's next look
    assert [p["job_id"] for p in cluster.pending_jobs(engine)] == ["812_2"]
    cluster.publish_pending(engine, ["another-lab-cpu"], [], "login2", 7)  # another launcher's names: not ours
    assert [p["job_id"] for p in cluster.pending_jobs(engine)] == ["812_2"]
    assert cluster.scheduler_workers(engine) == {"812_1": "idle"}  # by the scheduler's id, with its state


def test_a_job_ended_by_the_scheduler_goes_back_in_its_words(engine, db_url):
    claim = _claimed(engine, "c12:1:any:aa")
    words = "the worker's Slurm job 812_3 was cancelled (scancel) while building"
    assert cluster.requeue_ended(engine, claim.job_id, claim.token, words, counted=False)
    row = job_row(db_url, claim.job_id)
    assert (row.status, row.attempts) == ("queued", 0) and row.error == f"{words}; re-queued without counting the attempt"
    assert not cluster.requeue_ended(engine, claim.job_id, claim.token, words, counted=False)  # fenced: lease gone
    for attempt in (1, 2, 3):  # a time limit counts: the third ends the job
        claim = queue.claim_next(engine, "c12:1:any:aa", ["cpu"], ["tiny"], 60)
        limit = "the worker's Slurm job 812_3 hit its time limit while building"
        assert claim.attempt == attempt and cluster.requeue_ended(engine, claim.job_id, claim.token, limit, True)
    row = job_row(db_url, claim.job_id)
    assert row.status == "failed" and row.error.startswith(queue.LOST) and row.error.endswith("on attempt 3 of 3")


def test_a_lease_lost_with_a_failed_node_gets_slurms_words(engine, db_url):
    claim = _claimed(engine, "c12:1:any:aa", lease_s=1)
    with atomic(engine) as s:  # the node died: no renewal since
        s.execute(update(Job).values(lease_expires_at=utcnow() - timedelta(seconds=5)))
    assert queue.requeue_expired(engine) == [claim.job_id]
    noted = cluster.note_ended(engine, {"812_3": scheduler.ending({"kind": "slurm", "job_id": "812_3"},
                                                                   "NODE_FAIL").words})
    assert noted == [claim.job_id]
    row = job_row(db_url, claim.job_id)
    assert row.error == ("attempt 1 lost: c12:1:any:aa stopped heartbeating (the worker's Slurm job 812_3 lost its "
                         "node (node failure)); re-queued")
    assert cluster.note_ended(engine, {"812_3": "again"}) == []  # said once


@pytest.mark.subprocess
def test_idle_exit_goes_with_drain(db_url):
    from tests.conftest import run_cli

    done = run_cli("work", "--db", db_url, "--idle-exit", "30")
    assert done.returncode == 2 and "error: --idle-exit goes with --drain" in done.stderr


def test_slurms_local_submit_time_is_stored_with_its_offset_and_shown_in_utc(monkeypatch):
    import time

    from lab import scheduler
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        stored = scheduler.local_to_utc("2026-11-28T17:05:00")  # squeue's %V: the cluster's local time
        assert stored == "2026-11-28T16:05:00+00:00" and scheduler.utc_text(stored) == "2026-11-28 16:05:00 UTC"
        assert scheduler.local_to_utc("N/A") == "N/A" and scheduler.utc_text("Unknown") == "Unknown"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
