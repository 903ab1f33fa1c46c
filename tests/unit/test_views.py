"""db/views.py on a real SQLite file and a real PostgreSQL database: one row per finished job, failures kept,
versions that move."""
import json

import pytest

from db import queue, views
from db.models import JobStatus
from db.results import RECORD_FIELDS, export_records
from lab.spec import ModelInfo
from lab.sweep import SweepRequest
from tests.conftest import at_head

CATALOG = {"simplenet": ModelInfo("simplenet", "d"),
           "localopt": ModelInfo.from_dict({"name": "localopt", "description": "d", "params": [
               {"name": "scope", "default": "model", "choices": ["model", "functions"]}]})}
CAPS = {"devices": ["cpu"], "device_name": "Fake CPU", "torch_version": "2.13.0", "models": []}


def result(speedup=2.0, **kw):
    return {"eager_ms": 2.0, "compiled_ms": 2.0 / speedup, "speedup": speedup, "torch_version": "2.13.0+cpu",
            "device_name": "AMD EPYC", "schedule": [{"size": 8, "recompiled": False}, {"size": 16, "recompiled": True}],
            "detail": {"graph_break_reasons": [{"reason": "numpy call", "line": "m.py:3"}], "recompile_reasons": []},
            **kw}


def run(engine, status, **finish):
    claim = queue.claim_next(engine, "w1", ["cpu"], ["simplenet", "localopt"], 60)
    assert claim is not None
    queue.finish(engine, claim.job_id, claim.token, status, **finish)
    return claim.job_id


@pytest.fixture
def engine(any_db_url, migrated_sqlite):
    from db.database import get_engine

    return get_engine(at_head(any_db_url, migrated_sqlite))


@pytest.fixture
def lab(engine):
    queue.register_worker(engine, "w1", "host", 1, None, CAPS)
    sweep, ids, _ = queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[8, 16],
                                                      dynamics=["none", "false"], device="cpu", schedule=[8, 16],
                                                      name="dyn"), CATALOG)
    run(engine, JobStatus.SUCCEEDED, result=result())
    run(engine, JobStatus.FAILED, error="compile failed: graph break at m.py:3")
    queue.cancel(engine, ids[2])  # queued -> cancelled
    return sweep, ids  # ids[3] stays queued


def frame(rows):
    """(one dict per job, in order; and the same keyed by job id)."""
    names = list(rows.columns)
    dicts = [dict(zip(names, values)) for values in zip(*rows.columns.values())]
    return dicts, {d["job_id"]: d for d in dicts}


def test_result_rows_hold_every_finished_job_and_its_failure(engine, lab):
    sweep, ids = lab
    rows = views.result_rows(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS)
    text, numbers = frame(rows)
    assert [r["job_id"] for r in text] == ids[:3]  # the queued job is not finished
    ok, failed, cancelled = text
    assert ok["status"] == "succeeded" and numbers[ids[0]]["speedup"] == 2.0
    assert failed["status"] == "failed" and "graph break" in failed["error"] and numbers[ids[1]]["speedup"] is None
    assert cancelled["status"] == "cancelled" and cancelled["error"] == "cancelled by user"
    # spec fields are decoded from the spec's JSON, as the export record names them
    assert ok["model"] == "simplenet" and numbers[ids[0]]["batch_size"] == 8 and ok["dynamic"] == "none"
    assert failed["dynamic"] == "false" and ok["fullgraph"] is False
    assert json.loads(ok["model_args"]) == {} and ok["has_schedule"] and json.loads(ok["schedule"]) == [8, 16]
    # a job without a result takes its environment from the worker that ran it; one never run has none
    assert ok["torch_version"] == "2.13.0+cpu" and failed["torch_version"] == "2.13.0"
    assert failed["device_name"] == "Fake CPU" and cancelled["torch_version"] is None
    assert ok["sweep"] == "dyn"
    # every finished job's frame holds what filters and counts need; the rest is read by job id
    assert set(RECORD_FIELDS) == (set(views.FRAME_FIELDS) | set(views.VIEW_FIELDS) | set(views.FIRST_CALL_FIELDS)
                                  | set(views.ROOFLINE_FIELDS)
                                  | set(views.LAZY_FIELDS)) - {"has_schedule"}
    assert "speedup" in views.FRAME_FIELDS and "eager_ms" not in views.result_rows(engine).columns
    assert rows.version == views.data_version(engine)
    lazy, by_id = frame(views.result_rows(engine, job_ids=[ids[0]], fields=views.LAZY_FIELDS))
    assert [d["job_id"] for d in lazy] == [ids[0]]
    assert json.loads(by_id[ids[0]]["graph_break_reasons"])[0]["line"] == "m.py:3"


def test_result_rows_agree_with_the_export_record(engine, lab):
    text, _ = frame(views.result_rows(engine, fields=RECORD_FIELDS))
    exported = {r["job_id"]: r for r in export_records(engine)}
    for row in text:
        rec = exported[row["job_id"]]
        for field in ("status", "error", "model", "device", "backend", "mode", "cache", "attempts", "eager_ms",
                      "compiled_ms", "speedup", "batch_size", "iters", "timeout_s", "worker", "task", "dtype"):
            assert row[field] == rec[field], field
        assert json.loads(row["model_args"]) == rec["model_args"] and json.loads(row["schedule"]) == rec["schedule"]
        assert row["fullgraph"] is rec["fullgraph"] and row["dynamic"] == {None: "none", True: "true"}.get(
            rec["dynamic"], "false")


def test_the_answer_is_read_from_its_index_on_sqlite(engine, lab, monkeypatch):
    """The answer's read (lab.answer.READ) names ix_results_answer on SQLite, and SQLite answers it from that index
    alone (a result row is ~60 kB: reading each cost 0.2 s more at 100k jobs), with the same columns as a read left to
    the planner; a read of a column outside the index, and any read on PostgreSQL, is SQLAlchemy's statement as is."""
    from db import reports
    from db.models import ANSWER_INDEX

    made = []
    rows_sql = views.rows_sql
    monkeypatch.setattr(views, "rows_sql", lambda *a, **kw: made.append(rows_sql(*a, **kw)) or made[-1])
    indexed, _ = reports.answer_columns(engine)
    (sql,) = made
    other = views.rows_sql(engine, ["job_id", "speedup", "timing_method"])
    if engine.dialect.name != "sqlite":
        assert "INDEXED BY" not in sql + other
        return
    with engine.connect() as conn:
        plan = " ".join(r[-1] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
    assert f"USING COVERING INDEX {ANSWER_INDEX}" in plan and "INDEXED BY" not in other
    monkeypatch.setattr(views, "_answer_index", lambda engine, q, sql: sql)
    planner, _ = reports.answer_columns(engine)
    assert indexed == planner and indexed["speedup"][0] == 2.0


def test_the_spreads_between_processes_are_read_from_the_answers_index_on_sqlite(engine, synthetic, monkeypatch):
    """Every page's first answer after a restart reads the database's spreads between processes (db.reports.spreads):
    on SQLite from ix_results_answer in job order, not through the status index and each result's row (0.4-0.6 s
    against 0.12 s at 100k jobs), and the same spreads as the planner's own plan gives."""
    from db import reports
    from db.models import ANSWER_INDEX

    made = []
    answer_sql = views.answer_sql
    monkeypatch.setattr(views, "answer_sql", lambda *a: made.append(answer_sql(*a)) or made[-1])
    indexed = reports.spreads(engine)
    assert indexed.configs and indexed.devices
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            plan = " ".join(r[-1] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {made[0]}"))
        assert f"SCAN results USING COVERING INDEX {ANSWER_INDEX}" in plan, plan
    monkeypatch.setattr(views, "_answer_index", lambda engine, q, sql: sql)
    assert reports.spreads(engine).digest == indexed.digest


def test_finished_since_and_sweep_filter(engine, lab):
    sweep, ids = lab
    text, _ = frame(views.result_rows(engine))
    last = max(r["finished_at"] for r in text)
    newer, _ = frame(views.result_rows(engine, finished_since=last))
    assert [r["job_id"] for r in newer] == [ids[2]]
    assert len(views.result_rows(engine, sweep_ids=[sweep + 1])) == 0
    ranged, _ = frame(views.result_rows(engine, job_id_range=(ids[1], ids[3]), fields=["status"]))
    assert [(r["job_id"], r["status"]) for r in ranged] == [(ids[1], "failed"), (ids[2], "cancelled")]


def test_a_spec_is_decoded_once_per_distinct_text_and_tolerates_junk():
    texts = ['{"model": "mlp", "batch_size": 8, "dynamic": true, "fullgraph": true, "model_args": {"d": 4}}',
             '{"model": "mlp", "batch_size": 8, "dynamic": true, "fullgraph": true, "model_args": {"d": 4}}',
             "not json", None, "[1, 2]"]
    cols = {k: list(v) for k, v in views._spec_columns(
        texts, ["model", "batch_size", "dynamic", "fullgraph", "model_args", "schedule"]).items()}
    assert cols["model"] == ["mlp", "mlp", None, None, None] and cols["batch_size"] == [8, 8, None, None, None]
    assert cols["dynamic"] == ["true", "true", "none", "none", "none"] and cols["fullgraph"][0] is True
    assert cols["model_args"][0] == '{"d":4}' and cols["schedule"] == [None] * 5
    # read as the worker reads it: "false" is false; a value it would refuse is no number, no bool
    odd = ['{"batch_size": "lots", "iters": 2.0, "dynamic": "false", "fullgraph": "false"}',
           '{"batch_size": [8], "dynamic": "sometimes", "fullgraph": 1}']
    cols = {k: list(v) for k, v in views._spec_columns(odd, ["batch_size", "iters", "dynamic", "fullgraph"]).items()}
    assert cols == {"batch_size": [None, None], "iters": [2, None], "dynamic": ["false", "sometimes"],
                    "fullgraph": [False, None]}


def test_data_version_moves_when_a_job_finishes(engine, lab):
    sweep, ids = lab
    before = views.data_version(engine)
    assert views.data_version(engine) == before
    run(engine, JobStatus.SUCCEEDED, result=result(speedup=1.5))
    after = views.data_version(engine)
    assert after != before and after[0] == before[0] + 1 and after[3] == before[3] + 1


def test_schedule_calls_sweeps_and_job_rows(engine, lab):
    sweep, ids = lab
    calls = views.schedule_calls(engine, ids)
    assert list(calls) == [ids[0]] and [c["size"] for c in calls[ids[0]]] == [8, 16]
    [summary] = views.sweeps(engine)
    assert summary.label == f"#{sweep} dyn" and summary.total == 4
    assert summary.counts == {"succeeded": 1, "failed": 1, "cancelled": 1, "queued": 1}
    queued = views.job_rows(engine, statuses=["queued"])
    assert [r["job_id"] for r in queued] == [ids[3]] and queued[0]["spec"]["batch_size"] == 16
    assert views.job_rows(engine, sweep_ids=[sweep + 1]) == []
    assert views.job_statuses(engine, [ids[0], 999]) == {ids[0]: "succeeded"}
    assert views.job_detail(engine, ids[1])["error"].startswith("compile failed")


def test_export_and_dashboard_agree_on_a_failed_jobs_environment(engine, lab):
    sweep, ids = lab
    exported = {r["job_id"]: r for r in export_records(engine)}
    _, rows = frame(views.result_rows(engine))
    failed = ids[1]
    assert exported[failed]["torch_version"] == rows[failed]["torch_version"] == "2.13.0"  # from the worker
    assert exported[failed]["device_name"] == rows[failed]["device_name"] == "Fake CPU"
    assert exported[ids[2]]["torch_version"] is None  # cancelled while queued: it never ran anywhere


def test_overlapping_reads_leave_the_garbage_collector_as_they_found_it():
    import gc
    import threading

    inside, release = threading.Event(), threading.Event()

    def long_read():
        with views.gc_paused():
            inside.set()
            release.wait(10)

    assert gc.isenabled()
    t = threading.Thread(target=long_read)
    t.start()
    inside.wait(10)
    with views.gc_paused():  # a second read starts while the first runs, and ends first
        assert not gc.isenabled()
    assert not gc.isenabled()  # the first is still reading
    release.set()
    t.join(10)
    assert gc.isenabled()
    gc.disable()  # a process that runs with the GC off keeps it off
    try:
        with views.gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_sweep_is_named_one_way_everywhere(engine, lab):
    """The Queue's "Sweep ... on Results" link, the sweep pickers and the Results sweep filter use one label
    (lab.sweep.sweep_label). The Queue once built "#2 sweep 2" for an unnamed sweep, which no filter offered."""
    from dashboard.data import filters
    from dashboard.data import frame as results_frame

    queue.submit(engine, SweepRequest(process_repeats=1, model="simplenet", batch_sizes=[4], device="cpu"), CATALOG)  # no name
    named = run(engine, JobStatus.SUCCEEDED, result=result())  # the lab's last queued job (sweep 1, "dyn")
    unnamed = run(engine, JobStatus.SUCCEEDED, result=result())
    df, _ = results_frame.load_frame(engine)
    options = filters.filter_options(df, "sweep")
    pickers = {s.id: s.label for s in views.sweeps(engine)}
    for job_id in (named, unnamed):
        detail = views.job_detail(engine, job_id)
        assert detail["sweep_label"] in options and detail["sweep_label"] == pickers[detail["sweep_id"]]
    assert views.job_detail(engine, unnamed)["sweep_label"] == "#2 simplenet"
    assert views.job_detail(engine, named)["sweep_label"] == "#1 dyn"
