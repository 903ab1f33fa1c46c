"""The Results page's store of finished jobs: what it reads, appends, keeps on disk as a snapshot and reuses."""
from pathlib import Path

import pandas as pd
import pytest

from dashboard.data import frame, snapshot, store
from db import queue, views
from db.models import JobStatus
from lab.sweep import SweepRequest
from runner import zoo

CATALOG = zoo.model_infos(zoo.catalog())  # the real zoo's metadata (read with ast: no torch)




def test_result_store_appends_what_finished_since(engine):
    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
    req = SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1, 2, 3], device="cpu")
    queue.submit(engine, req, CATALOG)
    rs = store.ResultStore(engine)
    assert rs.frame().empty and rs.full_loads == 1
    for _ in range(2):
        claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                     result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0})
    first = rs.frame()
    assert len(first) == 2 and rs.full_loads == 2  # from empty: a full load
    assert rs.frame() is first  # nothing changed: the same frame, no query for rows
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.FAILED, error="boom")
    third = rs.frame()
    assert rs.full_loads == 2 and third["job_id"].tolist() == [1, 2, 3]  # appended, not reloaded
    assert third["error"].tolist()[-1] == "boom"


def test_the_store_reads_a_models_numbers_once_and_then_only_new_jobs(engine, fill_synthetic, monkeypatch):
    """The frame of every job holds what filters use; a model's numbers are read when it is plotted, and a
    finished job's numbers never change: after one more job finishes, only that job is read."""
    fill_synthetic(300, seed=3, device="cuda")
    rs = store.ResultStore(engine)
    held = rs.frame()
    assert "eager_ms" not in held.columns and "speedup" in held.columns
    full = frame.load_frame(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS)[0].set_index("job_id")
    reads = []
    real = views.result_rows
    monkeypatch.setattr(views, "result_rows", lambda *a, **k: reads.append(k) or real(*a, **k))
    mlp = held[held["model"] == "mlp"]
    got = rs.complete(mlp, views.VIEW_FIELDS)
    assert got.index.equals(mlp.index) and len(reads) == 1
    for col in ("eager_ms", "compiled_ms", "cache_hits", "has_schedule"):
        pd.testing.assert_series_equal(got.set_index("job_id")[col], full.loc[mlp["job_id"], col], check_names=False)
    assert (got["cache_state"] == full.loc[mlp["job_id"], "cache_state"].to_numpy()).all()
    assert rs.complete(mlp, views.VIEW_FIELDS) is not None and len(reads) == 1  # held

    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cuda"], "models": []})
    queue.submit(engine, SweepRequest(process_repeats=1, model="mlp", batch_sizes=[4], device="cuda"), CATALOG)
    claim = queue.claim_next(engine, "w", ["cuda"], ["mlp"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 3.0, "compiled_ms": 1.0, "speedup": 3.0})
    grown = rs.frame()
    reads.clear()
    again = rs.complete(grown[grown["model"] == "mlp"], views.VIEW_FIELDS)
    assert [r.get("job_ids") for r in reads if "fields" in r and r["fields"] != views.FRAME_FIELDS] == [[claim.job_id]]
    assert again.set_index("job_id").loc[claim.job_id, "eager_ms"] == 3.0 and len(again) == len(mlp) + 1


def finish_jobs(engine, n: int, status=JobStatus.SUCCEEDED) -> None:
    for _ in range(n):
        claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, status,
                     result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0} if status == "succeeded" else None,
                     error=None if status == "succeeded" else "boom")


def persist(store) -> None:
    """What the app does once a page has run: write the snapshot (here: and wait for the writer thread)."""
    store.save_if_due()
    store.saving.join()


def saved_store(engine, path):
    """A store that loaded everything and wrote its snapshot."""
    rs = store.ResultStore(engine, path)
    got = rs.frame()
    assert rs.saving is None and not path.exists()  # never while a page draws
    persist(rs)
    return rs, got


def test_a_restarted_store_starts_from_its_snapshot_and_appends(engine, db_url, tmp_path):
    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
    queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1, 2, 3, 4], device="cpu"), CATALOG)
    finish_jobs(engine, 2)
    path = snapshot.path_for(db_url)
    assert path == tmp_path / "lab.db-results.pkl"
    first, held = saved_store(engine, path)
    assert first.full_loads == 1 and not first.restored and len(held) == 2
    assert path.stat().st_mode & 0o777 == 0o600

    restarted = store.ResultStore(engine, path)  # a new server process: nothing in memory
    pd.testing.assert_frame_equal(restarted.frame(), held)
    assert restarted.restored and restarted.full_loads == 0
    finish_jobs(engine, 1, JobStatus.FAILED)
    finish_jobs(engine, 1)
    grown = restarted.frame()
    assert restarted.full_loads == 0 and grown["job_id"].tolist() == [1, 2, 3, 4]  # appended to the snapshot
    fresh = store.ResultStore(engine).frame()  # what reading every row gives
    pd.testing.assert_frame_equal(grown, fresh)


def test_a_job_finished_again_replaces_the_row_the_snapshot_holds(engine, db_url):
    """A database file restored from a backup can re-run a job the snapshot already holds: the database wins."""
    from sqlalchemy import text

    from db.engine import atomic

    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
    queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1, 2, 3], device="cpu"), CATALOG)
    finish_jobs(engine, 3)
    saved_store(engine, snapshot.path_for(db_url))
    with atomic(engine) as s:  # job 2 ran again and finished later with another result
        s.execute(text("UPDATE results SET speedup = 7.0 WHERE job_id = 2"))
        s.execute(text("UPDATE jobs SET finished_at = :t WHERE id = 2"), {"t": pd.Timestamp.now("UTC").tz_localize(None)
                                                                          .to_pydatetime()})
    restarted = store.ResultStore(engine, snapshot.path_for(db_url))
    got = restarted.frame()
    assert restarted.restored and restarted.full_loads == 0
    assert got.set_index("job_id")["speedup"].to_dict() == {1: 2.0, 2: 7.0, 3: 2.0}
    # what the store read for a view is dropped for a job read again, so a plot cannot show its old numbers
    assert restarted.complete(got, ["eager_ms"]).set_index("job_id")["eager_ms"].to_dict() == {1: 2.0, 2: 2.0, 3: 2.0}
    with atomic(engine) as s:
        s.execute(text("UPDATE results SET eager_ms = 9.0 WHERE job_id = 3"))
        s.execute(text("UPDATE jobs SET finished_at = :t WHERE id = 3"), {"t": pd.Timestamp.now("UTC").tz_localize(None)
                                                                          .to_pydatetime()})
    got = restarted.frame()
    assert restarted.complete(got, ["eager_ms"]).set_index("job_id")["eager_ms"].to_dict() == {1: 2.0, 2: 2.0, 3: 9.0}


def test_a_restarted_store_reads_the_answers_it_kept_and_computes_only_new_ones(engine, db_url):
    """The answer for a model's jobs is kept beside the snapshot: a new server process reads it back instead of
    computing it; one more job, a job finished again, or other code makes another answer."""
    import os

    from sqlalchemy import text

    from db import reports
    from db.engine import atomic

    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
    queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1, 2, 3], device="cpu"), CATALOG)
    finish_jobs(engine, 2)
    path = snapshot.path_for(db_url)

    def ask(rs):
        jobs = rs.frame()[["job_id", "finished_at"]]
        return rs.answer(jobs, lambda: reports.report(engine, job_ids=jobs["job_id"].tolist()))

    first, _ = saved_store(engine, path)
    want = ask(first)
    assert first.answers_computed == 1 and ask(first) == want and first.answers_computed == 1  # held in memory
    persist(first)
    kept = snapshot.answers_path(path)
    assert kept.exists() and kept.stat().st_mode & 0o777 == 0o600 and kept != path

    restarted = store.ResultStore(engine, path)
    assert ask(restarted) == want and restarted.answers_computed == 0  # read back, not computed
    finish_jobs(engine, 1)  # one more job: another set, another answer
    grown = ask(restarted)
    assert restarted.answers_computed == 1 and len(grown) == len(want) + 1
    with atomic(engine) as s:  # job 2 ran again (a file restored from a backup): same ids, another answer
        s.execute(text("UPDATE results SET compiled_ms = 0.5 WHERE job_id = 2"))
        s.execute(text("UPDATE jobs SET finished_at = :t WHERE id = 2"), {"t": pd.Timestamp.now("UTC").tz_localize(None)
                                                                          .to_pydatetime()})
    again = ask(restarted)
    assert restarted.answers_computed == 2 and again != grown
    jobs = restarted.frame()[["job_id", "finished_at"]]  # a frame holding its times in another unit: the same jobs
    assert snapshot.jobs_digest(jobs) == snapshot.jobs_digest(jobs.astype({"finished_at": "datetime64[ns]"}))
    assert [r["compiled_ms"] for r in again if r["batch_size"] == 2] == [0.5]
    # the same jobs under other spreads between processes (another sweep of their configurations landed): recomputed
    before = restarted.answers_computed
    assert restarted.answer(jobs, lambda: "under other spreads", also="other") == "under other spreads"
    assert restarted.answers_computed == before + 1
    persist(restarted)

    os.chmod(kept, 0o666)  # writable by others: not read
    other = store.ResultStore(engine, path)
    ask(other)
    assert other.answers_computed == 1
    os.chmod(kept, 0o600)
    snapshot._answer_code_digest.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:  # another release of db/: every kept answer is stale
            mp.setattr(snapshot, "FORMAT", snapshot.FORMAT + 1)
            newer = store.ResultStore(engine, path)
            ask(newer)
            assert newer.answers_computed == 1
    finally:
        snapshot._answer_code_digest.cache_clear()


def test_the_answers_kept_are_the_newest_used(engine, db_url, monkeypatch):
    """A long-running server asks for many views: it keeps the ANSWERS_KEPT used last, in memory and on disk."""
    monkeypatch.setattr(snapshot, "ANSWERS_KEPT", 2)
    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
    queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[1, 2, 3], device="cpu"), CATALOG)
    finish_jobs(engine, 3)
    rs, df = saved_store(engine, snapshot.path_for(db_url))
    views_ = [df.iloc[:1], df.iloc[:2], df.iloc[:3]]  # three sets of jobs: three answers
    for jobs in (views_[0], views_[1], views_[0], views_[2]):  # the first set is used again after the second
        rs.answer(jobs[["job_id", "finished_at"]], lambda jobs=jobs: len(jobs))
    assert rs.answers_computed == 3
    persist(rs)
    kept = snapshot.load_answers(snapshot.answers_path(snapshot.path_for(db_url)))
    assert sorted(kept.values()) == [1, 3]  # the second set, used longest ago, is gone


def test_stale_temp_files_of_a_killed_save_are_removed(engine, db_url):
    import os
    import time

    path = snapshot.path_for(db_url)
    old, new = path.with_name(path.name + ".dead1.tmp"), path.with_name(path.name + ".live2.tmp")
    for f in (old, new):
        f.write_bytes(b"half a pickle")
    long_ago = time.time() - snapshot.STALE_TMP_S - 60
    os.utime(old, (long_ago, long_ago))
    saved_store(engine, path)  # a later save cleans up after the process that died mid-save
    assert not old.exists() and new.exists() and path.exists()


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_snapshot_of_another_database_or_layout_is_not_used(tmp_path, monkeypatch):
    from db.database import dispose_engine, get_engine

    url = f"sqlite:///{tmp_path / 'lab.db'}"
    path = snapshot.path_for(url)

    def fresh_db(batches):
        dispose_engine(url)
        for f in tmp_path.glob("lab.db*"):
            if f != path:
                f.unlink()
        eng = get_engine(url)
        queue.register_worker(eng, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
        queue.submit(eng, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=batches, device="cpu"), CATALOG)
        finish_jobs(eng, len(batches))
        return eng

    saved_store(fresh_db([1, 2]), path)
    # the database is deleted and made anew at the same path, with as many jobs: other rows, other times
    other = fresh_db([7, 8])
    rs = store.ResultStore(other, path)
    assert sorted(rs.frame()["batch_size"].tolist()) == [7, 8] and not rs.restored and rs.full_loads == 1
    persist(rs)
    monkeypatch.setattr(snapshot, "_code_digest", lambda: "another release")  # code that builds rows otherwise
    rs = store.ResultStore(other, path)
    rs.frame()
    assert not rs.restored and rs.full_loads == 1
    persist(rs)
    monkeypatch.setattr(snapshot, "FORMAT", snapshot.FORMAT + 1)  # a newer layout of the frame
    rs = store.ResultStore(other, path)
    rs.frame()
    assert not rs.restored and rs.full_loads == 1
    persist(rs)
    path.chmod(0o666)  # writable by others: never unpickled
    rs = store.ResultStore(other, path)
    rs.frame()
    assert not rs.restored
    persist(rs)
    path.write_bytes(b"not a pickle")
    path.chmod(0o600)
    rs = store.ResultStore(other, path)
    assert len(rs.frame()) == 2 and not rs.restored


def test_snapshot_location_follows_the_database_and_the_setting(monkeypatch, tmp_path):
    assert snapshot.path_for("sqlite:///data/x.db") == Path("data/x.db-results.pkl")
    assert snapshot.path_for("sqlite://") is None
    pg = snapshot.path_for("postgresql+psycopg://lab:secret@db.host/lab")
    assert pg.parent == Path("data/cache") and pg == snapshot.path_for("postgresql+psycopg://lab:other@db.host/lab")
    monkeypatch.setenv("COMPILE_LAB_RESULTS_CACHE", "0")
    assert snapshot.path_for("sqlite:///data/x.db") is None
    monkeypatch.setenv("COMPILE_LAB_RESULTS_CACHE", str(tmp_path))
    assert snapshot.path_for("sqlite:///data/x.db").parent == tmp_path


# -- Compare ------------------------------------------------------------------------------------------
