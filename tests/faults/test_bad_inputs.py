"""Bad rows in the database (written with SQL, around every check the CLI and the form make): each ends
`failed` with "stored spec is invalid: ..." naming the problem, the worker goes on to the next job,
and `status` and `export` keep working. Real SQLite file and real PostgreSQL database."""
import json

import pytest
from sqlalchemy import text

from db.database import get_engine
from db.engine import atomic
from db.models import Sweep, utcnow
from lab.spec import ExperimentSpec
from tests.conftest import records, result_count, run_cli, submit, work

GOOD = ExperimentSpec(model="tiny", batch_size=2, model_args={"width": 16}, device="cpu", backend="eager",
                      iters=2).to_dict()

# (name, stored spec as JSON text, what the recorded error must say)
BAD_ROWS = [
    ("json array", "[1, 2]", "stored spec is invalid: experiment spec: expected an object, got list"),
    ("json string", '"tiny"', "stored spec is invalid: experiment spec: expected an object, got str"),
    ("unknown field", json.dumps({**GOOD, "colour": "red"}),
     "stored spec is invalid: colour: unknown field in experiment spec"),
    ("missing device", json.dumps({k: v for k, v in GOOD.items() if k != "device"}),
     "stored spec is invalid: device: None is not a device this worker offers"),
    ("unknown device", json.dumps({**GOOD, "device": "tpu"}),
     "stored spec is invalid: device: unknown value 'tpu'"),
    ("model is a number", json.dumps({**GOOD, "model": 42}), "stored spec is invalid: model: a model name is required"),
    ("batch not a number", json.dumps({**GOOD, "batch_size": "lots"}),
     "stored spec is invalid: batch_size: expected an integer, got 'lots'"),
    ("negative timeout", json.dumps({**GOOD, "timeout_s": -5}),
     "stored spec is invalid: timeout_s: must be between 1 and 86,400 seconds, got -5"),
    ("zero iters", json.dumps({**GOOD, "iters": 0}), "stored spec is invalid: iters: must be between 1 and 10,000"),
    ("unknown model parameter", json.dumps({**GOOD, "model_args": {"width": 16, "depth": 3}}),
     "stored spec is invalid: model_args.depth: unknown parameter of 'tiny'; it takes: width"),
    ("model parameter out of range", json.dumps({**GOOD, "model_args": {"width": -1}}),
     "stored spec is invalid: model_args.width: -1 is outside 1..16,777,216"),
]


def insert_job(engine, sweep_id: int, spec_text: str) -> int:
    cast = "CAST(:spec AS JSON)" if engine.dialect.name == "postgresql" else ":spec"
    with atomic(engine) as s:
        return s.execute(text(f"INSERT INTO jobs (sweep_id, spec, status, attempts, max_attempts, created_at) "
                              f"VALUES (:sweep, {cast}, 'queued', 0, 3, :now) RETURNING id"),
                         {"sweep": sweep_id, "spec": spec_text, "now": utcnow()}).scalar_one()


def test_bad_stored_specs_are_recorded_and_nothing_is_lost(any_db_url, tmp_path):
    engine = get_engine(any_db_url)
    with atomic(engine) as s:
        sweep = Sweep(name="hand-written rows", request={})
        s.add(sweep)
        s.flush()
        sweep_id = sweep.id
    bad = {name: (insert_job(engine, sweep_id, spec), message) for name, spec, message in BAD_ROWS}
    if engine.dialect.name == "sqlite":  # PostgreSQL's JSON type refuses this on insert (tested below)
        bad["malformed json"] = (insert_job(engine, sweep_id, '{"model": "tiny", "batch_size": 2'),
                                 "stored spec is invalid: spec: not valid JSON")
    waiting = insert_job(engine, sweep_id, json.dumps({**GOOD, "model": "nobody_has_this"}))
    (good,) = submit(any_db_url, "--model", "tiny", "--batch", "2", "--device", "cpu", "--backend", "eager",
                     "--iters", "2")

    # with the bad rows queued, reading the queue works
    status = run_cli("status", "--db", any_db_url)
    assert status.returncode == 0, status.stderr

    work(any_db_url, tmp_path / "home", "--drain")
    recs = records(any_db_url)
    for name, (job_id, message) in bad.items():
        rec = recs[job_id]
        assert rec["status"] == "failed", (name, rec["status"])
        assert rec["error"].startswith(message), (name, rec["error"])
        assert rec["attempts"] == 1 and result_count(any_db_url, job_id) == 0, name
    assert recs[good]["status"] == "succeeded", recs[good]["error"]  # the worker went on
    # a model no live worker offers is not an error: it waits (a lab's worker with that model may come)
    assert recs[waiting]["status"] == "queued" and recs[waiting]["attempts"] == 0

    assert run_cli("status", "--db", any_db_url).returncode == 0
    exported = run_cli("export", "--db", any_db_url, "--format", "json")
    assert exported.returncode == 0, exported.stderr
    assert len(json.loads(exported.stdout)) == len(bad) + 2


def test_postgresql_refuses_malformed_json_on_insert(pg_url):
    engine = get_engine(pg_url)
    with atomic(engine) as s:
        s.add(Sweep(name="x", request={}))
    with pytest.raises(Exception, match="invalid input syntax for type json"):
        insert_job(engine, 1, '{"model": "tiny", "batch_size": 2')


def test_a_cuda_result_fits_and_a_result_the_database_refuses_ends_the_job_failed(any_db_url, tmp_path, monkeypatch):
    """The CUDA timing method's description did not fit results.timing_method on PostgreSQL (SQLite never
    checks lengths), so every CUDA result was refused there. And whatever the database refuses, the job
    ends failed with the reason; the worker goes on (in-process worker; the child is replaced by its outcome:
    no GPU here)."""
    from db import queue
    from db.models import JobStatus
    from lab.record import ResultRecord
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest
    from runner.child import timing
    from runner.worker import loop as worker
    from runner.worker.attempt import Attempt
    from runner.worker.store import Outcome

    engine = get_engine(any_db_url)
    catalog = {"tiny": ModelInfo("tiny", "fixture")}
    queue.submit(engine, SweepRequest(process_repeats=1, model="tiny", batch_sizes=[1, 2], device="cpu"), catalog)
    cuda_method = timing.CudaTimer.method  # the text the CUDA timer records (the longest method)
    assert len(cuda_method) > len(timing.CpuTimer.method)
    w = worker.Worker(worker.WorkerConfig(db_url=any_db_url, home=tmp_path, spawn="fresh", calibrate=False))
    w.capabilities = {"devices": ["cpu"]}
    ok = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.0}
    results = iter([{**ok, "timing_method": cuda_method}, {**ok, "torch_version": "2." + "9" * 300}])
    monkeypatch.setattr(w, "rebuild_spec", lambda stored: ExperimentSpec.from_dict(stored))
    monkeypatch.setattr(Attempt, "execute", lambda job, renewed_at: job.record(
        Outcome(JobStatus.SUCCEEDED, record=ResultRecord.from_dict(next(results)))))
    for _ in range(2):
        w.run_claim(queue.claim_next(engine, w.id, ["cpu"], ["tiny"], 60))
    first, second = records(any_db_url).values()
    assert first["status"] == "succeeded" and first["timing_method"] == cuda_method
    if engine.dialect.name == "postgresql":  # SQLite stores any length
        assert second["status"] == "failed" and second["error"].startswith(
            "the database refused this job's succeeded outcome: (psycopg.errors.StringDataRightTruncation)")
        assert result_count(any_db_url, second["job_id"]) == 0
