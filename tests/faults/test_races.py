"""Concurrency on real databases with real processes: 8 workers race over 200 jobs and each job is
claimed exactly once (SQLite and PostgreSQL); a writer holding SQLite's lock makes claims and
submits wait, and then succeed; on PostgreSQL, a held row lock makes a write wait, then fail after the lock
timeout instead of hanging."""
import json
import subprocess
import sys
import textwrap
import time

from sqlalchemy import func, select

from db import queue
from db.database import get_engine
from db.engine import reading
from db.models import Job, Result
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import FIXTURE_MODELS, ROOT, submit

CATALOG = {"tiny": ModelInfo("tiny", "fixture")}


def queue_jobs(engine, n: int) -> list[int]:
    request = SweepRequest(process_repeats=1, model="tiny", batch_sizes=list(range(1, n + 1)), device="cpu")  # one job per size
    return queue.submit(engine, request, CATALOG)[1]


def test_eight_workers_claim_each_of_200_jobs_exactly_once(any_db_url, tmp_path):
    engine = get_engine(any_db_url)
    job_ids = queue_jobs(engine, 200)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-m", "tests.faults.claimer", any_db_url, str(go), f"racer{i}"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(8)]
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err[-1500:] for _, err in outs]
    claimed = [job for out, _ in outs for job in json.loads(out)["claimed"]]
    assert len(claimed) == len(set(claimed)) == 200  # nobody claimed a job twice, or one another had
    assert sorted(claimed) == sorted(job_ids)
    assert sum(1 for out, _ in outs if json.loads(out)["claimed"]) >= 2  # it was a race, not a relay
    with reading(engine) as s:
        assert s.scalar(select(func.count(Job.id)).where(Job.status == "succeeded", Job.attempts == 1)) == 200
        assert s.scalar(select(func.count(Result.id))) == 200


HOLD_S = 3.0


def test_a_held_sqlite_writer_makes_claims_and_submits_wait_then_succeed(db_url, tmp_path):
    (queued,) = submit(db_url, "--model", "tiny", "--batch", "2", "--device", "cpu")
    path = db_url.removeprefix("sqlite:///")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f'''
        import sqlite3, sys, time
        conn = sqlite3.connect({path!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")  # the write lock, as a long writer would hold it
        conn.execute("UPDATE workers SET state = state")
        print("locked", flush=True)
        time.sleep({HOLD_S})  # the fault being injected: a writer that keeps the lock
        print(time.time(), flush=True)  # just before the lock is released
        conn.execute("COMMIT")
    ''')], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    claim = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f'''
        import time
        from db import queue
        from db.database import get_engine
        c = queue.claim_next(get_engine({db_url!r}), "waiter", ["cpu"], ["tiny"], 60)
        print(c.job_id, time.time())
    ''')], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.time()
    sub = subprocess.run([sys.executable, "-m", "runner", "submit", "--db", db_url, "--models-dir", str(FIXTURE_MODELS),
                          "--model", "tiny", "--batch", "4", "--device", "cpu"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    submitted_at = time.time()
    released_at = float(holder.stdout.readline())
    assert holder.wait(timeout=60) == 0
    out, err = claim.communicate(timeout=120)
    assert claim.returncode == 0, err[-1500:]
    job_id, claimed_at = out.split()
    assert int(job_id) == queued
    assert sub.returncode == 0, sub.stderr
    assert len(sub.stdout.split()) == 1
    # both had to wait for the writer: neither could finish before its lock was released
    assert float(claimed_at) >= released_at and submitted_at >= released_at
    assert submitted_at - started < 30  # ...and they waited on the busy timeout rather than failing


def test_a_held_postgresql_row_lock_makes_a_write_wait_then_fail_after_the_lock_timeout(pg_url, monkeypatch):
    import pytest
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    import db.engine

    (job_id,) = queue_jobs(get_engine(pg_url), 1)
    holder = create_engine(pg_url)
    monkeypatch.setattr(db.engine, "BUSY_TIMEOUT_S", 1)
    # the settings every engine gets, with a 1 s lock timeout; the user's own options in the URL stay
    short = db.engine.make_engine(pg_url + "?options=-csearch_path%3Dpublic,lab_extra")
    try:
        with short.connect() as conn:
            assert conn.execute(text("SHOW lock_timeout")).scalar() == "1s"
            assert conn.execute(text("SHOW search_path")).scalar().replace(" ", "") == "public,lab_extra"
        with holder.connect() as conn, conn.begin():
            conn.execute(text("SELECT id FROM jobs WHERE id = :id FOR UPDATE"), {"id": job_id})  # a stuck client
            started = time.monotonic()
            with pytest.raises(OperationalError, match="lock timeout"):
                queue.cancel(short, job_id)
            waited = time.monotonic() - started
        assert 0.9 <= waited < 10, waited  # it waited for the lock, then gave up
        assert queue.cancel(short, job_id) == "queued"  # the lock is gone: the same write goes through
        with reading(short) as s:
            assert s.get(Job, job_id).status == "cancelled"
    finally:
        short.dispose()
        holder.dispose()
