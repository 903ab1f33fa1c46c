"""The one gate for new jobs (db.admission) on a real SQLite file and a real PostgreSQL database: a re-submit past the
sweep's 5,000-job limit is refused whole, the lab's queued-job limit (COMPILE_LAB_MAX_QUEUED) refuses submits and
re-submits with the numbers, follow-ups stop at either limit with the skip recorded and the finish kept, and on
both engines two re-submits racing at the edge cannot both pass (on PostgreSQL, one waits for the lab-wide lock)."""
import threading

import pytest
from sqlalchemy import func, select, text, update

from db import admission, queue
from db.database import get_engine
from db.engine import atomic, reading
from db.follow_ups import SKIPPED
from db.models import Job, JobStatus, LabEvent, Sweep
from lab import noise
from lab import sweep as sweep_limits
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import at_head, run_cli, wait_until

CATALOG = {"simplenet": ModelInfo("simplenet", "d")}
RESULT = {"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "round_speedup": 2.0, "detail": {}}


@pytest.fixture
def engine(any_db_url, migrated_sqlite, monkeypatch):
    monkeypatch.delenv(admission.MAX_QUEUED_ENV, raising=False)
    return get_engine(at_head(any_db_url, migrated_sqlite))


def submit(engine, n=1, **kw) -> tuple[int, list[int]]:
    request = SweepRequest(model="simplenet", batch_sizes=list(range(1, n + 1)), device="cpu",
                           **{"process_repeats": 1, **kw})
    return queue.submit(engine, request, CATALOG)[:2]


def finish_all(engine, sweep_id: int) -> None:
    """The sweep's jobs ended (cancelled): what a re-submit copies."""
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.sweep_id == sweep_id).values(status=JobStatus.CANCELLED.value))


def counts(engine, sweep_id: int | None = None) -> tuple[int, int, int]:
    """(sweeps, jobs of the sweep or of the lab, queued jobs of the lab)."""
    with reading(engine) as s:
        jobs = select(func.count()).select_from(Job)
        return (s.scalar(select(func.count()).select_from(Sweep)),
                s.scalar(jobs.where(Job.sweep_id == sweep_id) if sweep_id else jobs),
                s.scalar(select(func.count()).select_from(Job).where(Job.status == JobStatus.QUEUED.value)))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_resubmitting_a_sweep_past_its_job_limit_is_refused_whole(engine):
    """Seen: a sweep of 2,500 jobs re-submitted twice held 7,500, 5,000 of them queued."""
    sweep_id, first = submit(engine, 2500)
    finish_all(engine, sweep_id)
    again = queue.resubmit(engine, first)
    assert len(again) == 2500 and counts(engine, sweep_id) == (1, 5000, 2500)
    with pytest.raises(admission.AdmissionError, match=f"sweep {sweep_id} holds 5,000 jobs; 2,500 more would make "
                                                       "7,500, past its limit of 5,000 jobs per sweep"):
        queue.resubmit(engine, first)
    with pytest.raises(queue.QueueError, match="past its limit of 5,000"):  # one is one too many, and a QueueError
        queue.resubmit(engine, first[:1])
    assert counts(engine, sweep_id) == (1, 5000, 2500)  # nothing half-stored


def test_the_labs_queued_limit_refuses_submits_and_resubmits_with_the_numbers(engine, monkeypatch):
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "5")
    a, a_jobs = submit(engine, 3)
    with pytest.raises(admission.AdmissionError, match=r"the lab has 3 jobs queued; 3 more would make 6, past its "
                                                       r"limit of 5 queued jobs \(COMPILE_LAB_MAX_QUEUED"):
        submit(engine, 3)
    assert counts(engine) == (1, 3, 3)  # the refused sweep's row went too
    b, b_jobs = submit(engine, 2)
    finish_all(engine, b)
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "4")  # read at each admission
    with pytest.raises(admission.AdmissionError, match="the lab has 3 jobs queued; 2 more would make 5"):
        queue.resubmit(engine, b_jobs)
    assert counts(engine) == (2, 5, 3)
    queue.cancel(engine, a_jobs[0])  # a cancelled job leaves the queue, and makes room
    assert len(queue.resubmit(engine, b_jobs[:1])) == 1 and counts(engine) == (2, 6, 3)


@pytest.mark.parametrize("value", ["lots", "0", "-3", "1e4", "１２"])
def test_a_lab_limit_that_is_no_number_refuses_naming_the_variable(engine, monkeypatch, value):
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, value)
    with pytest.raises(admission.AdmissionError, match=f"^{admission.MAX_QUEUED_ENV}: .* is not a number of jobs"):
        submit(engine, 1)
    assert counts(engine) == (0, 0, 0)


def finish(engine, job_id: int, result=RESULT) -> None:
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    assert claim.job_id == job_id
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=result)


def skips(engine, sweep_id: int) -> list[dict]:
    with reading(engine) as s:
        return [e.detail for e in s.scalars(select(LabEvent).where(LabEvent.sweep_id == sweep_id,
                                                                  LabEvent.action == SKIPPED).order_by(LabEvent.id))]


def test_follow_ups_stop_at_the_sweeps_limit_and_the_skip_is_recorded(engine, monkeypatch):
    sweep_id, (job,) = submit(engine, 1, process_repeats=3)  # its result calls for two more processes
    monkeypatch.setattr(sweep_limits, "MAX_JOBS", 2)
    finish(engine, job)
    with reading(engine) as s:
        jobs = s.execute(select(Job.id, Job.status, Job.follow_up_of).where(Job.sweep_id == sweep_id)
                         .order_by(Job.id)).all()
    assert [(status, of) for _, status, of in jobs] == [("succeeded", None), ("queued", job)]  # one fits
    (skip,) = skips(engine, sweep_id)
    assert skip["job_id"] == job and (skip["wanted"], skip["queued"], len(skip["skipped"])) == (2, 1, 1)
    assert skip["because"] == f"sweep {sweep_id} holds 1 jobs, its limit 2 (lab.sweep.MAX_JOBS)"


def test_follow_ups_stop_at_the_labs_limit_and_a_bad_setting_never_fails_the_finish(engine, monkeypatch):
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "2")
    sweep_id, (job,) = submit(engine, 1, process_repeats=2)
    submit(engine, 1)
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    assert claim.job_id == job
    submit(engine, 1)  # the lab's queue is full again: 2 of 2
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    assert counts(engine, sweep_id) == (3, 1, 2)  # the finish stands, with no follow-up
    (skip,) = skips(engine, sweep_id)
    assert skip["because"] == "the lab has 2 jobs queued, its limit 2 (COMPILE_LAB_MAX_QUEUED)"
    assert skip["skipped"][0]["kind"] == noise.PROCESS_REPEAT

    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "10")
    other, (second,) = submit(engine, 1, process_repeats=2)
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "many")  # set wrong on this worker
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    while claim.job_id != second:  # the two older jobs first, finished undisturbed by one-process sweeps
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
        claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    assert queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result=RESULT)
    (skip,) = skips(engine, other)
    assert skip["because"].startswith(f"{admission.MAX_QUEUED_ENV}: 'many' is not a number of jobs")


@pytest.mark.subprocess  # starts an interpreter (`python -m runner submit`)
def test_the_cli_refuses_a_submission_past_the_labs_limit_in_one_line(db_url):
    done = run_cli("submit", "--db", db_url, "--model", "simplenet", "--batch", "1,2,3", "--device", "cpu",
                   "--process-repeats", "1", env={admission.MAX_QUEUED_ENV: "2"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["error: the lab has 0 jobs queued; 3 more would make 3, past its limit of 2 "
                                        "queued jobs (COMPILE_LAB_MAX_QUEUED; cancel some, or wait)"]
    assert counts(get_engine(db_url)) == (0, 0, 0)


# -- two transactions at the edge ---------------------------------------------------------------------------------
def race(*calls) -> list:
    """Run the calls at once, each in a thread of its own (and so on a connection of its own); their outcomes:
    the return value, or the exception raised."""
    start, out = threading.Barrier(len(calls)), [None] * len(calls)

    def run(i, call):
        start.wait()
        try:
            out[i] = call()
        except Exception as e:  # the outcome under test
            out[i] = e

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def test_two_resubmits_racing_at_a_sweeps_edge_one_wins(engine, monkeypatch):
    """PostgreSQL: the sweep's row lock makes the second wait for the first's commit; SQLite: BEGIN IMMEDIATE."""
    sweep_id, jobs = submit(engine, 6)
    finish_all(engine, sweep_id)
    monkeypatch.setattr(sweep_limits, "MAX_JOBS", 9)  # room for 3: either re-submit fits, not both
    for _ in range(5):  # several rounds: a race that passes once by luck would not pass every time
        outcomes = race(lambda: queue.resubmit(engine, jobs[:3]), lambda: queue.resubmit(engine, jobs[3:]))
        refused = [o for o in outcomes if isinstance(o, admission.AdmissionError)]
        won = [o for o in outcomes if isinstance(o, list)]
        assert len(won) == 1 and len(won[0]) == 3 and len(refused) == 1, outcomes
        assert "past its limit of 9 jobs per sweep" in str(refused[0])
        assert counts(engine, sweep_id)[1] == 9
        with atomic(engine) as s:  # back to the edge for the next round
            s.execute(Job.__table__.delete().where(Job.id.in_(won[0])))


def test_a_resubmit_waits_for_an_admission_in_flight_on_postgresql_then_sees_its_jobs(pg_url, monkeypatch):
    """Two sweeps, so no sweep row is shared: only the lab-wide lock can make the second wait. Without it, both would
    count 2 queued jobs and both go in (5 queued, past the limit of 4)."""
    engine = get_engine(pg_url)
    monkeypatch.setenv(admission.MAX_QUEUED_ENV, "4")
    a, a_jobs = submit(engine, 2)
    b, b_jobs = submit(engine, 2)
    finish_all(engine, a)
    finish_all(engine, b)
    submit(engine, 2)  # 2 queued: room for 2 more
    outcome = []
    with atomic(engine) as s:
        assert len(admission.add_jobs(s, [admission.NewJob(a, {"model": "simplenet"}, "k", 3)] * 2)) == 2
        second = threading.Thread(target=lambda: outcome.append(_outcome(lambda: queue.resubmit(engine, b_jobs[:1]))))
        second.start()
        wait_until(lambda: _waiting_on_advisory_lock(engine), 30, "the second re-submit to wait for the lab's lock")
    second.join(timeout=60)
    (refused,) = outcome
    assert isinstance(refused, admission.AdmissionError), refused
    assert "the lab has 4 jobs queued; 1 more would make 5, past its limit of 4" in str(refused)
    assert counts(engine)[2] == 4


def _outcome(call):
    try:
        return call()
    except Exception as e:  # the outcome under test
        return e


def _waiting_on_advisory_lock(engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                      "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")).scalar())
