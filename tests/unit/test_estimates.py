"""db.estimates on a real SQLite file and a real PostgreSQL database: the newest similar finished jobs per
configuration and per model on a device kind, with timelines where asked; the queue's unfinished jobs; and
jobs.phase_at, when a running job's phase began, kept while the heartbeat repeats the phase and moved when it changes."""
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from db import estimates, queue
from db.database import get_engine
from db.engine import atomic, reading
from db.models import Job, JobStatus, utcnow
from lab.sweep import SweepRequest
from runner import zoo
from tests.unit.test_eta import timeline

WORKER = "host:1:any:eta"


def lab(url: str):
    engine = get_engine(url)
    models = [i.to_dict() for i in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(engine, WORKER, "host", 1, None, {"devices": ["cpu"], "torch_version": "2.13.0",
                                                            "models": models})
    return engine


def sweep(engine, model="simplenet", bs=(8,)):
    return queue.submit(engine, SweepRequest(model=model, batch_sizes=list(bs), device="cpu", process_repeats=1,
                                             repeat=1), zoo.model_infos(zoo.catalog()))[1]


def run(engine, seconds: float, compile_s: float) -> int:
    """Claim the next job and store it succeeded, `seconds` from claim to stored, with a timeline."""
    claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet", "mlp"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
        "eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "detail": {"timeline": timeline(compile_s)}})
    now = utcnow()
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.id == claim.job_id)
                  .values(claimed_at=now - timedelta(seconds=seconds), finished_at=now))
    return claim.job_id


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_history_per_configuration_and_per_model(any_db_url):
    engine = lab(any_db_url)
    sweep(engine, bs=(8,))
    run(engine, 70.0, 50.0)
    sweep(engine, bs=(8, 16))  # bs 8 again: the same configuration
    run(engine, 90.0, 60.0)
    run(engine, 200.0, 150.0)  # bs 16: the same model only
    sweep(engine, "mlp")
    run(engine, 5.0, 1.0)
    (config,) = {r["config"] for r in _configs(engine, 8)}
    # each model asked for with no configuration of its own (a queued job's new settings): its history is read
    found = estimates.history(engine, [config], {("simplenet", "cpu"): ["new"], ("mlp", "cpu"): [None],
                                                 ("resnet", "cpu"): []}, [config])
    assert sorted(j["seconds"] for j in found["config"][config]) == [70.0, 90.0]
    assert all(j["timeline"] for j in found["config"][config])  # asked for: a running job's stages
    assert sorted(j["seconds"] for j in found["model"][("simplenet", "cpu")]) == [70.0, 90.0, 200.0]
    assert [j["seconds"] for j in found["model"][("mlp", "cpu")]] == [5.0]
    assert found["model"][("resnet", "cpu")] == []
    plain = estimates.history(engine, [config], {}, [])
    assert all(j["timeline"] is None for j in plain["config"][config])  # not asked for: not read
    # a model whose every configuration asked for has a history of its own: its own is not read (lab.eta would not
    # take it), only where one has none
    known = estimates.history(engine, [config], {("simplenet", "cpu"): [config]}, [])
    assert known["model"] == {} and len(known["config"][config]) == 2
    mixed = estimates.history(engine, [config, "new"], {("simplenet", "cpu"): [config, "new"]}, [])
    assert len(mixed["model"][("simplenet", "cpu")]) == 3


def _configs(engine, bs):
    with reading(engine) as s:
        return [{"config": c} for c, spec in s.execute(select(Job.config, Job.spec)).all()
                if spec["batch_size"] == bs and spec["model"] == "simplenet"]


def test_unfinished_jobs_and_when_a_phase_began(any_db_url):
    engine = lab(any_db_url)
    ids = sweep(engine, bs=(1, 2))
    claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
    rows = estimates.unfinished(engine)
    assert [(r["job_id"], r["status"], r["phase"]) for r in rows] == [(ids[0], "running", "starting"),
                                                                      (ids[1], "queued", None)]
    assert rows[0]["model"] == "simplenet" and rows[0]["device"] == "cpu" and rows[0]["worker"] == WORKER
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "compiling", None)
    began = estimates.unfinished(engine)[0]["phase_at"]
    assert began is not None
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "compiling", None)
    assert estimates.unfinished(engine)[0]["phase_at"] == began  # the same phase: it began then
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "warming up", None)
    assert estimates.unfinished(engine)[0]["phase_at"] >= began and estimates.unfinished(engine)[0]["phase"] == \
        "warming up"
    assert queue.timed_on_host(engine, "host", ["warming up", "measuring"]) == [(claim.job_id, "warming up")]
    assert queue.timed_on_host(engine, "elsewhere", ["warming up", "measuring"]) == []
    assert queue.timed_on_host(engine, "host", ["measuring"]) == []
    # a phase published a beat after the child began it (its progress line's time) keeps that start; one said to
    # begin after this beat (another clock) begins now
    said = utcnow() - timedelta(seconds=1.5)
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "measuring", 0.1, since=said)
    assert estimates.unfinished(engine)[0]["phase_at"] == said
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "counting kernels", None,
                        since=utcnow() + timedelta(hours=1))
    assert estimates.unfinished(engine)[0]["phase_at"] <= utcnow()


def test_runner_status_says_the_time_left_and_the_queues_end(db_url, capsys):
    import argparse

    from runner.cli.status import cmd_status

    engine = lab(db_url)
    sweep(engine)
    run(engine, 80.0, 50.0)
    ids = [sweep(engine)[0] for _ in range(2)]
    claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
    queue.heartbeat_job(engine, claim.job_id, claim.token, 60, "compiling", None)
    assert cmd_status(argparse.Namespace(db=db_url, json=False)) == 0
    out = capsys.readouterr().out
    assert "queue: done in about " in out
    running = next(line for line in out.splitlines() if line.strip().startswith(f"{ids[0]} "))
    assert "[compiling]" in running and " so far; about " in running
    queued = next(line for line in out.splitlines() if line.strip().startswith(f"{ids[1]} "))
    assert "starts in " in queued


def test_a_sweeps_end_counts_the_process_repeats_its_settings_plan_before_they_are_queued(any_db_url):
    """A sweep of 3 processes per configuration holds one job per configuration until each first run ends and queues
    its 2 repeats (lab.noise.plan_follow_ups): its end counts those 2 each from the start, as jobs after the whole
    queue, and says how many are still to come; once queued they are rows like any other, counted once."""
    engine = lab(any_db_url)
    sweep(engine, bs=(8, 16))
    run(engine, 10.0, 5.0)
    run(engine, 10.0, 5.0)  # each configuration's history: 10 s a job
    sid = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8, 16], device="cpu", process_repeats=3,
                                            repeat=1), zoo.model_infos(zoo.catalog()))[0]
    workers = queue.live_workers(engine)
    est = estimates.queue_estimates(engine, workers)
    assert est.planned == {sid: 4} and len(est.starts) == 2  # the 4 to come are no rows, and no row's start
    assert est.sweeps[sid] == (60.0, False) and est.queue == (60.0, False)  # 6 jobs of 10 s on the one worker
    run(engine, 10.0, 5.0)  # bs 8's first run ends: its 2 repeats are queued now
    est = estimates.queue_estimates(engine, workers)
    assert est.planned == {sid: 2} and len(est.starts) == 3
    assert est.sweeps[sid] == (50.0, False)  # the first run done: 5 of 10 s, none counted twice
    one = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[32], device="cpu", process_repeats=1,
                                            repeat=1), zoo.model_infos(zoo.catalog()))[0]
    assert one not in estimates.queue_estimates(engine, workers).planned  # one process asked for: none to come


def test_the_repeats_to_come_are_counted_as_the_planner_counts_runs(any_db_url):
    """As lab.noise.plan_follow_ups counts a configuration's runs: a disturbed run is none of its processes (so a
    repeat more is to come), a configuration's two first runs (`repeat`) share its repeats, and a job with no
    configuration key (stored before keys) is one run of its own."""
    engine = lab(any_db_url)
    infos = zoo.model_infos(zoo.catalog())
    sid = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=3,
                                            repeat=2, reruns=0), infos)[0]
    assert estimates.queue_estimates(engine, queue.live_workers(engine)).planned == {sid: 1}  # 3 less its 2 first runs
    claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
        "eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "disturbed": True, "noise_note": "a neighbour"})
    with reading(engine) as s:
        queued_now = s.scalar(select(func.count()).select_from(Job).where(Job.sweep_id == sid, Job.status == "queued"))
    planned = estimates.queue_estimates(engine, queue.live_workers(engine)).planned.get(sid, 0)
    assert queued_now - 1 + planned == 2  # the disturbed run counts for none: 2 more processes in all, queued or to come
    other = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[32], device="cpu", process_repeats=2,
                                              repeat=1), infos)[1][0]
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.id == other).values(config=None))
    with reading(engine) as s:
        other_sweep = s.scalar(select(Job.sweep_id).where(Job.id == other))
    assert estimates.queue_estimates(engine, queue.live_workers(engine)).planned[other_sweep] == 1


def test_the_repeats_to_come_follow_the_configurations_history_on_the_workers_device(any_db_url):
    """Where a configuration ran before on the device kind the live workers share, its earlier processes plan the
    count (lab.history.planned) in the estimate as in the planner: more where they disagreed, fewer where 6 agreed
    closely; the count the Queue showed is the count the first run's end queues. Workers of two device kinds: the
    sweep's own count (which kind runs it is not known)."""
    engine = get_engine(any_db_url)
    infos = zoo.model_infos(zoo.catalog())
    caps = {"devices": ["cpu"], "cpu_name": "Lab CPU", "torch_version": "2.13.0",
            "models": [i.to_dict() for i in infos.values()]}
    queue.register_worker(engine, WORKER, "host", 1, None, caps)

    def earlier(bs: int, centers: list[float]) -> None:  # a past sweep's processes of this configuration, undisturbed
        queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[bs], device="cpu", process_repeats=1,
                                          repeat=len(centers)), infos)
        for c in centers:
            claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
            queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
                "eager_ms": 2.0, "compiled_ms": 2.0 / c, "speedup": c, "round_speedup": c, "device_name": "Lab CPU",
                "torch_version": "2.13.0"})

    earlier(8, [1.20, 1.65, 1.30, 1.75])  # disagreed: about 18% apart (one standard deviation)
    earlier(16, [1.500, 1.501, 1.499, 1.500, 1.502, 1.498])  # agreed within 0.1%
    sid = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8, 16], device="cpu", process_repeats=2,
                                            repeat=1), infos)[0]
    planned = estimates.queue_estimates(engine, queue.live_workers(engine)).planned[sid]
    assert planned == 5  # bs 8: the sweep's 2 and 4 more (history.MORE), less its first run; bs 16: one, its first
    for _ in range(2):  # both first runs end as the worker stores them: their plans queue what the Queue counted
        claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 2.0, "compiled_ms": 1.4, "speedup": 1.43, "round_speedup": 1.43, "device_name": "Lab CPU",
            "torch_version": "2.13.0"})
    with reading(engine) as s:
        queued = s.scalar(select(func.count()).select_from(Job).where(Job.sweep_id == sid, Job.status == "queued"))
    assert queued == planned
    assert estimates.queue_estimates(engine, queue.live_workers(engine)).planned.get(sid, 0) == 0

    queue.register_worker(engine, "other:2:any:eta", "other", 2, None, {**caps, "cpu_name": "Another CPU"})
    again = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8, 16], device="cpu", process_repeats=2,
                                              repeat=1), infos)[0]
    assert estimates.queue_estimates(engine, queue.live_workers(engine)).planned[again] == 2  # the sweep's own


def test_another_unfinished_sweeps_processes_are_history_as_the_planner_reads_them(db_url):
    """The planner leaves out only the sweep it plans: an unfinished sweep's finished processes of the configuration
    are history for another sweep's estimate too (and its own are left out of its own)."""
    engine = get_engine(db_url)
    infos = zoo.model_infos(zoo.catalog())
    queue.register_worker(engine, WORKER, "host", 1, None, {"devices": ["cpu"], "cpu_name": "Lab CPU",
                                                            "torch_version": "2.13.0",
                                                            "models": [i.to_dict() for i in infos.values()]})

    def finish_next(center: float) -> None:
        claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 2.0, "compiled_ms": 2.0 / center, "speedup": center, "round_speedup": center,
            "device_name": "Lab CPU", "torch_version": "2.13.0"})

    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=1, repeat=2),
                 infos)
    finish_next(1.20), finish_next(1.75)
    # sweep A: bs 8 thrice (its `repeat`) and bs 32; its bs 8 runs end, bs 32 stays queued: A is unfinished
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8, 32], device="cpu", process_repeats=1,
                                      repeat=3), infos)
    for center in (1.30, 1.62, 1.25):
        finish_next(center)
    b = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=2,
                                          repeat=1), infos)[0]
    planned = estimates.queue_estimates(engine, queue.live_workers(engine)).planned[b]
    assert planned > 1  # 5 earlier processes (3 of them A's) that disagreed plan more than B's 2
    with atomic(engine) as s:  # B's first run next: A's queued bs 32 runs held back
        s.execute(update(Job).where(Job.sweep_id != b, Job.status == "queued").values(status="cancelled"))
    finish_next(1.40)
    with reading(engine) as s:
        queued = s.scalar(select(func.count()).select_from(Job).where(Job.sweep_id == b, Job.status == "queued"))
    assert queued == planned
