"""Queue operations on a real SQLite file and a real PostgreSQL database: atomic submit, exactly-once
claim, fenced writes (a stale finisher writes nothing), leases."""
import threading
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from db import queue
from db.database import get_engine
from db.engine import atomic, reading
from db.models import Job, JobStatus, Result, Sweep, utcnow
from lab.checks import SpecError
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import at_head

CATALOG = {"simplenet": ModelInfo("simplenet", "d"), "mlp": ModelInfo("mlp", "d")}
RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "samples": {"eager": [[2.0]]}, "detail": {}}


@pytest.fixture
def engine(any_db_url, migrated_sqlite):
    return get_engine(at_head(any_db_url, migrated_sqlite))


def counts(engine):
    with reading(engine) as s:
        return s.scalar(select(func.count(Sweep.id))), s.scalar(select(func.count(Job.id)))


def submit(engine, n=1, **kw):
    req = SweepRequest(model="simplenet", batch_sizes=list(range(1, n + 1)), device="cpu", **{"process_repeats": 1, **kw})
    return queue.submit(engine, req, CATALOG)


def test_submit_stores_one_job_per_combination(engine):
    sweep_id, job_ids, _ = submit(engine, n=3, modes=["default", "max-autotune"])
    assert len(job_ids) == 6 and counts(engine) == (1, 6)
    with reading(engine) as s:
        job = s.get(Job, job_ids[0])
        assert job.status == "queued" and job.sweep_id == sweep_id and job.spec["device"] == "cpu"


def test_a_sweep_stores_its_models_parameters_as_they_ran_defaults_filled(engine):
    """The form sends every parameter, the CLI none: both sweeps store what their jobs ran, so Compare reads them
    the same (issue 27)."""
    from lab.spec import ParamInfo

    catalog = {"mlp": ModelInfo("mlp", "d", params=(ParamInfo("hidden", 64), ParamInfo("depth", 2)))}
    ids = [queue.submit(engine, SweepRequest(model="mlp", batch_sizes=[8], device="cpu", model_args=args), catalog)[0]
           for args in ({}, {"hidden": 64, "depth": 2}, {"hidden": 128})]
    with reading(engine) as s:
        stored = [s.get(Sweep, i).request["model_args"] for i in ids]
    assert stored == [{"hidden": 64, "depth": 2}, {"hidden": 64, "depth": 2}, {"hidden": 128, "depth": 2}]


def test_bad_submission_stores_nothing(engine):
    with pytest.raises(SpecError):
        queue.submit(engine, SweepRequest(model="nope", batch_sizes=[1]), CATALOG)
    with pytest.raises(SpecError):
        queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[4, -1]), CATALOG)
    assert counts(engine) == (0, 0)


def test_claim_filters_by_device_and_model(engine):
    queue.submit(engine, SweepRequest(model="mlp", batch_sizes=[1], device="cuda"), CATALOG)
    assert queue.claim_next(engine, "w", ["cpu"], ["mlp", "simplenet"], 60) is None
    assert queue.claim_next(engine, "w", ["cuda", "cpu"], ["simplenet"], 60) is None
    claim = queue.claim_next(engine, "w", ["cuda", "cpu"], ["mlp"], 60)
    assert claim and claim.attempt == 1 and claim.spec["model"] == "mlp"


def test_concurrent_claims_take_each_job_exactly_once(engine):
    _, job_ids, _ = submit(engine, n=60)
    taken, errors = [], []

    def claimer(name):
        try:
            while (c := queue.claim_next(engine, name, ["cpu"], ["simplenet"], 60)) is not None:
                taken.append(c.job_id)
        except Exception as e:  # pragma: no cover - shown in the assertion below
            errors.append(e)

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(taken) == sorted(job_ids)


def test_finish_is_fenced_by_the_lease_token(engine):
    _, (job_id,), _ = submit(engine)
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    assert not queue.finish(engine, job_id, "not-the-token", JobStatus.SUCCEEDED, result=RESULT)
    assert queue.finish(engine, job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    # a second finish of the same attempt is stale: the result is stored once
    assert not queue.finish(engine, job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    with reading(engine) as s:
        assert s.scalar(select(func.count(Result.id))) == 1
        assert s.get(Job, job_id).status == "succeeded"


def test_failure_is_never_a_zero_speedup(engine):
    _, (job_id,), _ = submit(engine)
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    with pytest.raises(ValueError):
        queue.finish(engine, job_id, claim.token, JobStatus.FAILED, "x", result={"speedup": 0.0})
    assert queue.finish(engine, job_id, claim.token, JobStatus.FAILED, "compile failed: x")
    with reading(engine) as s:
        assert s.scalar(select(func.count(Result.id))) == 0


def test_unknown_result_field_is_refused(engine):
    _, (job_id,), _ = submit(engine)
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    with pytest.raises(ValueError, match="speedup_x"):
        queue.finish(engine, job_id, claim.token, JobStatus.SUCCEEDED, result={"speedup_x": 1.0})


def test_cancel_running_job_revokes_its_lease(engine):
    _, (job_id,), _ = submit(engine)
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    assert queue.heartbeat_job(engine, job_id, claim.token, 60, "compiling", None)
    assert queue.cancel(engine, job_id) == "running"
    assert not queue.heartbeat_job(engine, job_id, claim.token, 60, "measuring", 0.5)
    assert not queue.finish(engine, job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    with reading(engine) as s:
        job = s.get(Job, job_id)
        assert job.status == "cancelled" and "while running" in job.error
    with pytest.raises(queue.QueueError, match="already cancelled"):
        queue.cancel(engine, job_id)
    with pytest.raises(queue.QueueError, match="no such job"):
        queue.cancel(engine, 999)


def test_expired_lease_requeues_then_fails_as_lost(engine):
    _, (job_id,), _ = queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1], device="cpu"),
                                   CATALOG, max_attempts=2)
    later = utcnow() + timedelta(seconds=120)
    first = queue.claim_next(engine, "w1", ["cpu"], ["simplenet"], 60)
    assert queue.requeue_expired(engine, now=later) == [job_id]
    with reading(engine) as s:
        job = s.get(Job, job_id)
        assert job.status == "queued" and "attempt 1 lost: w1" in job.error
    second = queue.claim_next(engine, "w2", ["cpu"], ["simplenet"], 60)
    assert second.attempt == 2
    assert not queue.finish(engine, job_id, first.token, JobStatus.SUCCEEDED, result=RESULT)  # stale worker
    assert queue.requeue_expired(engine, now=later) == [job_id]
    with reading(engine) as s:
        job = s.get(Job, job_id)
        assert job.status == "failed" and job.error.startswith("lost: w2")


def test_release_requeues_without_counting_the_attempt(engine):
    _, (job_id,), _ = submit(engine)
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    assert queue.release(engine, job_id, claim.token, "worker stopping")
    again = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    assert again.attempt == 1


def test_resubmit_queues_a_copy(engine):
    _, (job_id,), _ = submit(engine)
    queue.cancel(engine, job_id)
    (new_id,) = queue.resubmit(engine, [job_id])
    with reading(engine) as s:
        assert s.get(Job, new_id).status == "queued" and s.get(Job, new_id).spec == s.get(Job, job_id).spec


def test_atomic_rolls_back_on_error(engine):
    with pytest.raises(RuntimeError):
        with atomic(engine) as s:
            s.add(Sweep(name="x", request={}))
            s.flush()
            raise RuntimeError("boom")
    assert counts(engine) == (0, 0)


def test_published_catalog_reads_live_workers_only(engine):
    info = ModelInfo("labnet", "a lab model").to_dict()
    queue.register_worker(engine, "w1", "h", 1, None, {"devices": ["cpu"], "models": [info]})
    assert "labnet" in queue.published_catalog(engine)
    queue.heartbeat_worker(engine, "w1", "stopped")
    assert queue.published_catalog(engine) == {}


def test_submit_many_is_all_or_nothing(engine):
    good = SweepRequest(model="simplenet", batch_sizes=[1], device="cpu")
    bad = SweepRequest(model="nope", batch_sizes=[1], device="cpu")
    with pytest.raises(SpecError):
        queue.submit_many(engine, [good, bad], CATALOG)
    assert counts(engine) == (0, 0)
    stored = queue.submit_many(engine, [good, good], CATALOG)
    assert len(stored) == 2 and counts(engine) == (2, 2)
