"""The dashboard's compute functions (no streamlit): form -> sweeps, results table, plots, diffs."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.charts import diagnosis, speed_charts, styling
from dashboard.data import diff, filters, frame, plot_data, repeats, roofline_points, series_labels, snapshot, store
from dashboard.data.submission import FormValues, label_for, message, plan, slot_for, submit_all
from db import queue, views
from db.device_ceilings import newest_ceilings, store_ceilings
from db.models import JobStatus
from db.results import RECORD_FIELDS, export_records
from lab.sweep import SweepRequest
from runner import zoo

CATALOG = zoo.model_infos(zoo.catalog())  # the real zoo's metadata (read with ast: no torch)


# -- the Submit form ----------------------------------------------------------------------------------
def test_plan_counts_jobs_like_submit_and_names_no_error():
    values = FormValues(model="simplenet", device="cpu", batch_sizes="8, 32 64", dynamics=["false", "true"],
                        modes=["default", "max-autotune"], backends=["inductor", "aot_eager"])
    planned = plan(values, CATALOG)
    # 3 sizes x 2 dynamic x (inductor: 2 modes + aot_eager: default only)
    assert planned.ok and planned.jobs == 18 and len(planned.requests) == 1
    assert any("aot_eager" in n for n in planned.notes)
    assert len(planned.labels) == 18 and "simplenet bs=64" in planned.labels[-1]


def test_plan_says_what_gpu_modes_mean_on_the_cpu():
    values = FormValues(model="complexnet", device="cpu", batch_sizes="32",
                        modes=["default", "reduce-overhead", "max-autotune"], timeout_s=1800)
    planned = plan(values, CATALOG)
    notes = planned.notes
    assert any(n.startswith("reduce-overhead on cpu is default") and "one default job runs for both" in n for n in notes)
    assert planned.jobs == 2  # default and max-autotune: reduce-overhead is the same compile as default there
    assert any(n.startswith("max-autotune on the CPU") and "1,800 s" in n for n in notes)
    on_gpu = plan(FormValues(model="complexnet", device="cuda", batch_sizes="32", modes=["reduce-overhead"]), CATALOG)
    assert not any("on the CPU" in n or "on cpu" in n for n in on_gpu.notes)
    # on a GPU too, max-autotune's compile time is worth a word: the H100's complexnet took 1,058 s
    gpu = plan(FormValues(model="complexnet", device="cuda", batch_sizes="32", modes=["max-autotune"],
                          timeout_s=3600), CATALOG).notes
    assert any("1,058 s" in n and "3,600 s" in n for n in gpu)


@pytest.mark.parametrize("change, field, words", [
    ({"batch_sizes": "8, x"}, "batch_sizes", "Batch sizes: expected an integer, got 'x'"),
    ({"batch_sizes": ""}, "batch_sizes", "Batch sizes: choose at least one value"),
    ({"batch_sizes": "0"}, "batch_sizes", "Batch sizes: must be a positive integer"),
    ({"batch_sizes": "8,,16"}, "batch_sizes", "Batch sizes: an empty entry in '8,,16': was a size left out?"),
    ({"schedule": "32, , 64"}, "schedule", "Schedule: an empty entry"),
    ({"schedule": "32, -1"}, "schedule", "Schedule: every size must be a positive integer"),
    ({"modes": []}, "modes", "Modes: choose at least one value"),
    ({"backends": ["cudagraphs"], "device": "cpu"}, "backends", "Backends: cudagraphs needs device cuda"),
    ({"model": "sincos", "task": "training", "params": {"width": 8}}, "task", "Task: model 'sincos' supports"),
    ({"model": "localopt", "params": {"scope": [], "image_size": 64}}, "model_args.scope",
     "Parameter scope: choose at least one value"),
    ({"model": "nope"}, "model", "Model: unknown model 'nope'"),
])
def test_bad_input_names_the_field_it_belongs_to(change, field, words):
    planned = plan(FormValues(**{"model": "simplenet", "device": "cpu", **change}), CATALOG)
    assert not planned.ok and slot_for(planned.error.field) == field
    assert message(planned.error).startswith(words), message(planned.error)


def test_a_choice_parameter_with_two_values_is_two_sweeps_stored(engine):
    values = FormValues(model="localopt", device="cpu", batch_sizes="4", params={"scope": ["model", "functions"],
                                                                                 "image_size": 32}, name="scope")
    planned = plan(values, CATALOG)
    assert planned.ok and planned.jobs == 2 and [r.name for r in planned.requests] == [
        "scope (scope=model)", "scope (scope=functions)"]
    stored = submit_all(engine, planned, CATALOG)
    specs = [r["model_args"] for r in export_records(engine)]
    assert len(stored) == 2 and specs == [{"image_size": 32, "scope": "model"}, {"image_size": 32, "scope": "functions"}]


def test_labels_cover_every_spec_error_field():
    for f in ("batch_size", "backend", "mode", "dynamic", "fullgraph", "timeout_s", "iters", "repeat", "schedule"):
        assert label_for(f) != f or f == "dtype"


# -- the Results table --------------------------------------------------------------------------------
@pytest.fixture
def synthetic(fill_synthetic):
    engine = fill_synthetic(300, seed=3, device="cuda")
    return frame.load_frame(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS + views.FIRST_CALL_FIELDS
                             + views.ROOFLINE_FIELDS)[0]


def test_results_frame_has_every_export_field_and_keeps_failures(engine, synthetic):
    df = synthetic
    assert len(df) == 300 and set(RECORD_FIELDS) <= set(frame.complete(df, engine).columns)
    assert df["speedup"].dtype == float and str(df["batch_size"].dtype) == "Int64"
    bad = plot_data.failures(df)
    assert len(bad) == (df["status"] != "succeeded").sum() > 0 and bad["error"].notna().all()
    assert df.loc[df["status"] != "succeeded", "speedup"].isna().all()  # never a 0.0 speedup


def test_download_names_say_what_the_file_holds():
    assert filters.download_name({}, "csv") == "compile_lab_results.csv"
    assert filters.download_name({"sweep": ["#12 modes on ComplexModel"], "model": ["complexnet"], "mode": [],
                                 "dynamic": ["none"]}, "json") == "compile_lab_sweep12_complexnet_dynamic-none.json"
    assert filters.download_name({"model": ["a/b c"]}, "csv") == "compile_lab_a-b-c.csv"
    # the answer's rows of the same view: another name, never the jobs' file
    assert filters.download_name({"model": ["../<x>"]}, "csv", kind="answer") == "compile_lab_answer_..-x.csv"


def test_filters_keep_rows_without_an_environment(synthetic):
    df = synthetic.copy()
    df.loc[df.index[0], "torch_version"] = None
    shown = filters.apply_filters(df, {"torch_version": ["2.13.0"], "model": ["simplenet"]})
    assert set(shown["model"]) == {"simplenet"}
    assert df.index[0] in shown.index  # unknown environment is kept under an environment filter
    assert filters.apply_filters(df, {"torch_version": ["9.9"]}).index.tolist() == [df.index[0]]
    labels = filters.filter_options(df, "sweep")
    assert labels[0].startswith(f"#{df['sweep_id'].max()} ") and len(labels) == df["sweep_id"].nunique()
    assert filters.apply_filters(df, {"sweep": [labels[0]]})["sweep_id"].nunique() == 1


def test_series_labels_name_only_what_differs(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "simplenet"])
    assert set(view["config"]) == {f"{m} · dynamic={d}" for m in ("default", "max-autotune")
                                   for d in ("none", "true", "false")}
    assert set(view["baseline"]) == {"eager"}
    one = series_labels.label_series(synthetic[(synthetic["model"] == "simplenet") & (synthetic["mode"] == "default")
                                        & (synthetic["dynamic"] == "none")])
    assert set(one["config"]) == {"default"} and one["series"].str.contains(" · bs ").all()


def test_plots_draw_failures_bands_and_the_one_line(synthetic):
    worst = plot_data.failures(synthetic)["model"].value_counts().index[0]
    view = series_labels.label_series(synthetic[synthetic["model"] == worst])
    agg, fails = plot_data.summarize(view)
    assert len(fails) > 0, "the synthetic data holds failures"
    speed = speed_charts.speedup(agg, fails)
    notes = [a for a in speed.layout.annotations if a.text.startswith("✕")]
    hover = " ".join(a.hovertext for a in notes)
    assert all(f"#{job_id} " in hover for job_id in fails["job_id"])  # every failed job, with its reason
    assert all(str(e)[:40] in hover for e in fails["error"])
    assert any(s.y0 == 1.0 and s.y1 == 1.0 for s in speed.layout.shapes)  # the 1.0x line
    lat = speed_charts.latency(agg, fails)
    assert any(t.fill == "toself" for t in lat.data)  # p10-p90 bands
    assert {t.name for t in lat.data if t.name} >= {"eager"} | set(agg["config"])
    warm = speed_charts.warmup(agg, fails)
    assert {t.name for t in warm.data} == set(speed_charts.CALLS.values())
    assert speed_charts.break_even(agg, fails).layout.yaxis.categoryarray


def test_a_configuration_that_only_failed_still_has_its_category():
    agg = pd.DataFrame(columns=["config", "baseline", "batch_size", "series", *frame.NUMBERS, "runs"])
    agg.loc[0] = ["inductor/default · fullgraph=false", "eager", 8, "inductor/default · fullgraph=false",
                  *[1.0] * len(frame.NUMBERS), 1]
    fails = pd.DataFrame([{"job_id": 7, "status": "failed", "error": "graph break", "batch_size": 8,
                           "config": "inductor/default · fullgraph=true",
                           "series": "inductor/default · fullgraph=true"}])
    fig = speed_charts.warmup(agg, fails)
    assert "inductor/default · fullgraph=true" in fig.layout.yaxis.categoryarray
    assert any("graph break" in (a.hovertext or "") for a in fig.layout.annotations)


def test_one_batch_size_sets_configurations_side_by_side():
    """Seed 004's modes at bs 32: close speedups at one x would hide each other."""
    agg = pd.DataFrame({"config": ["inductor/default", "inductor/reduce-overhead"], "baseline": ["eager"] * 2,
                        "batch_size": [32, 32], "speedup": [1.34, 1.35], "eager_ms": [2.3, 2.3],
                        "compiled_ms": [1.7, 1.6], "runs": [1, 1], "eager_p10_ms": [2.2] * 2, "eager_p90_ms": [2.4] * 2,
                        "compiled_p10_ms": [1.6, 1.5], "compiled_p90_ms": [1.8, 1.7]})
    fails = pd.DataFrame({"job_id": [9], "config": ["inductor/max-autotune"], "batch_size": [32],
                          "status": ["timed_out"], "error": ["timed out after 400 s"], "series": ["x"]})
    for fig in (speed_charts.speedup(agg, fails), speed_charts.latency(agg, fails)):
        assert fig.layout.scattermode == "group" and fig.layout.xaxis.type == "category"
        assert [a.x for a in fig.layout.annotations if a.text.startswith("✕")] == [0]  # the category's number
    # one noisy run's p90 far above every median: a log axis, or the medians would lie flat on zero
    assert speed_charts.latency(agg, fails).layout.yaxis.type != "log"
    assert speed_charts.latency(agg.assign(compiled_p90_ms=[1.8, 60.0]), fails).layout.yaxis.type == "log"
    several = agg.assign(batch_size=[8, 32])
    assert speed_charts.speedup(several, fails.iloc[0:0]).layout.scattermode is None
    # a noisy configuration's ring sits in its configuration's slot, not in a slot of its own
    noisy = agg.assign(noisy_runs=[0, 1], max_spread=[0.01, 0.09])
    fig = speed_charts.mark_noisy(speed_charts.speedup(noisy, fails), noisy)
    rings = [t for t in fig.data if t.legendgroup == "noisy"]
    assert [(t.offsetgroup, list(t.y)) for t in rings] == [("inductor/reduce-overhead", [1.35])]
    assert next(t for t in fig.data if t.name == "inductor/reduce-overhead").offsetgroup == "inductor/reduce-overhead"


def test_schedule_timeline_rings_recompiles(engine, synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "simplenet"])
    ids = view.loc[view["has_schedule"] & (view["status"] == "succeeded"), "job_id"].tolist()[:3]
    sched = diagnosis.schedule_frame(view, views.schedule_calls(engine, ids))
    assert len(sched) == 9 and sched["recompiled"].sum() == 6
    fig = diagnosis.recompile_timeline(sched)
    ringed = [t for t in fig.data if t.name == "recompiled"]
    assert sum(len(t.x) for t in ringed) == 6


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
def test_diff_matches_sweep_jobs_and_marks_changes(engine, synthetic):
    both = frame.complete(synthetic[synthetic["sweep_id"].isin([1, 5])], engine)  # as the Compare page does
    a = both[both["sweep_id"] == 1]
    b = both[both["sweep_id"] == 5]  # the same model (simplenet), another run
    nums = diff.numbers(a, b)
    assert len(nums) == 24 and {"speedup A", "speedup B", "speedup Δ%"} <= set(nums.columns)
    row = nums.dropna(subset=["speedup A", "speedup B"]).iloc[0]
    assert row["speedup Δ%"] == pytest.approx((row["speedup B"] / row["speedup A"] - 1) * 100)
    assert diff.verdict("speedup", 25.0) == "better" and diff.verdict("compiled_ms", 25.0) == "worse"
    assert diff.verdict("speedup", 3.0) == ""
    spec = diff.side_by_side({"model": "simplenet", "modes": ["default"]}, {"model": "simplenet", "modes": ["max"]})
    assert spec["differs"].tolist() == [False, True]


def test_two_sweeps_that_differ_in_one_setting_are_compared_on_it():
    """Seed 004: one sweep in default mode, one in reduce-overhead, same batch sizes. Matching on mode too left
    no row with both sides; the setting that sets them apart is what is compared."""
    a = pd.concat([jobs(("default", 2.95, 4.28), ("default", 2.96, 4.29)),
                   jobs(("default", 1.0, 1.2), batch_size=8)], ignore_index=True)
    b = pd.concat([jobs(("reduce-overhead", 2.88, 4.31), ("reduce-overhead", 2.89, 4.32), sweep_id=2),
                   jobs(("reduce-overhead", 0.5, 1.2), batch_size=8, sweep_id=2)], ignore_index=True)
    rest = {m: np.nan for m in diff.METRICS if m not in a.columns}
    a, b = a.assign(**rest), b.assign(**rest)
    assert diff.compared(a, b) == {"mode": ("default", "reduce-overhead")}
    nums = diff.numbers(a, b).set_index("batch_size")
    assert nums.loc[32, "mode"] == "default → reduce-overhead" and nums.loc[32, "status B"] == "succeeded"
    assert nums.loc[32, "compiled_ms A"] == pytest.approx(2.955) and nums.loc[32, "compiled_ms B"] == pytest.approx(2.885)
    assert nums.loc[8, "compiled_ms Δ%"] == pytest.approx(-50.0)
    # the batch size is the workload, never what a comparison is about; a job without the setting is no value
    assert diff.compared(a[a["batch_size"] == 8], b[b["batch_size"] == 32].assign(batch_size=16)) == {
        "mode": ("default", "reduce-overhead")}
    assert diff.compared(a.assign(fullgraph=["false", None, "false"]), b.assign(fullgraph="true")) == {
        "mode": ("default", "reduce-overhead")}
    # a sweep of both modes against one of one: the modes are matched as before
    both_modes = pd.concat([a, b.assign(sweep_id=1)], ignore_index=True)
    assert diff.compared(both_modes, b) == {}
    assert set(diff.numbers(both_modes, b)["mode"]) == {"default", "reduce-overhead"}


def test_when_eager_moved_as_much_a_compiled_change_is_the_machine_not_the_setting():
    """Two CPU sweeps of mlp bs 64 (this session, dynamic false vs true), run a minute apart: eager went from
    14.51 to 8.43 ms and compiled from 14.95 to 8.71 ms, each job steady (spread 3%). Eager runs no compiled
    code, so the -42% is the machine; compiled_ms must not be coloured as dynamic=true's win."""
    def side(eager, compiled, **kw):
        rest = {m: np.nan for m in diff.METRICS if m not in ("eager_ms", "compiled_ms", "speedup")}
        return jobs(("default", compiled, eager), batch_size=64, eager_spread=0.03, compiled_spread=0.01,
                    model="mlp", **kw).assign(**rest)
    a, b = side(14.51, 14.95, dynamic="false"), side(8.427, 8.706, dynamic="true", sweep_id=2)
    assert diff.same_workload(a, b)
    table = diff.long_form(diff.numbers(a, b), ["eager_ms", "compiled_ms", "speedup"], same_workload=True)
    notes = dict(zip(table["metric"], table["note"]))
    assert notes["compiled_ms"].startswith("≈ eager moved -42% too: the machine, not the setting")
    assert notes["eager_ms"].startswith("eager runs no compiled code") and notes["speedup"].startswith("≈ within noise")
    assert all(diff.verdict(m, d, n) == "" for m, d, n in zip(table["metric"], table["Δ%"], table["note"]))
    # compiled got faster while eager held: that is the setting, and it is coloured
    c = side(14.40, 9.0, dynamic="true", sweep_id=3)
    row = diff.long_form(diff.numbers(a, c), ["compiled_ms"], same_workload=True).iloc[0]
    assert row["note"] == "" and diff.verdict("compiled_ms", row["Δ%"], row["note"]) == "better"
    # another dtype is another eager workload: eager is no control there
    assert not diff.same_workload(a, side(8.4, 8.7, dtype="bfloat16", sweep_id=4))
    runs = diff.run_numbers({"model": "mlp", "model_args": {}, "task": "inference", "device": "cpu", "dtype": "float32",
                             "eager_ms": 14.51, "compiled_ms": 14.95, "speedup": 0.97, "eager_spread": 0.03},
                            {"model": "mlp", "model_args": {}, "task": "inference", "device": "cpu", "dtype": "float32",
                             "eager_ms": 8.427, "compiled_ms": 8.706, "speedup": 0.968, "eager_spread": 0.03})
    assert runs.set_index("metric").loc["compiled_ms", "note"].startswith("≈ eager moved -42% too")


def test_the_latency_plot_says_when_eager_moved_between_configurations():
    """The same CPU jobs on Results: one eager line over both configurations hid that eager itself went from
    14.5 to 8.4 ms, and the compiled lines looked like dynamic=true won by 40%."""
    def rows(dynamic, eager, compiled, start):
        df = jobs(("default", compiled, eager), batch_size=64, dynamic=dynamic, eager_spread=0.03,
                  compiled_spread=0.01, measure_recompiles=0, cache_hits=None, error=None).assign(job_id=start)
        return df.assign(**{c: np.nan for c in frame.NUMBERS if c not in df})
    view = series_labels.label_series(pd.concat([rows("false", 14.51, 14.95, 1), rows("true", 8.427, 8.706, 2)],
                                         ignore_index=True))
    agg, _ = plot_data.summarize(view)
    drift = plot_data.eager_drift(plot_data.with_noise(agg, view))
    assert drift["batch_size"] == 64 and drift["gap"] == pytest.approx(14.51 / 8.427 - 1)
    assert (drift["low"], drift["high"]) == ("default · dynamic=true", "default · dynamic=false")
    steady = series_labels.label_series(pd.concat([rows("false", 14.51, 14.95, 1), rows("true", 14.2, 9.1, 2)],
                                           ignore_index=True))
    agg, _ = plot_data.summarize(steady)
    assert plot_data.eager_drift(plot_data.with_noise(agg, steady)) is None  # 2% apart: eager held


def test_a_change_inside_the_runs_noise_is_not_coloured_as_a_finding():
    """Seen in the walkthrough: two CPU runs with 5,000% spreads, speedup -11.6% coloured red. A steady-state
    change is called better or worse only when it is larger than twice the runs' spread; a large change
    stays a finding even between slightly noisy runs; first calls are not timed in rounds."""
    a = {"speedup": 0.93, "compiled_ms": 0.30, "compiled_first_call_s": 10.0, "eager_spread": 58.0,
         "compiled_spread": 72.0}
    b = {"speedup": 0.82, "compiled_ms": 0.36, "compiled_first_call_s": 4.0, "eager_spread": 0.01,
         "compiled_spread": 0.02}
    rows = diff.run_numbers(a, b).set_index("metric")
    assert rows.loc["speedup", "note"].startswith("≈ within noise") and rows.loc["compiled_first_call_s", "note"] == ""
    assert diff.verdict("speedup", rows.loc["speedup", "Δ%"], rows.loc["speedup", "note"]) == ""
    assert diff.verdict("compiled_first_call_s", rows.loc["compiled_first_call_s", "Δ%"]) == "better"
    slightly = diff.run_numbers({**a, "eager_spread": 0.06, "compiled_spread": 0.03}, {**b, "speedup": 0.19})
    speedup = slightly.set_index("metric").loc["speedup"]
    assert speedup["note"] == "" and diff.verdict("speedup", speedup["Δ%"], speedup["note"]) == "worse"  # -80%


def test_sweeps_judge_a_change_against_their_median_runs_spread(engine, synthetic):
    both = frame.complete(synthetic[synthetic["sweep_id"].isin([1, 5])], engine)
    a, b = both[both["sweep_id"] == 1].copy(), both[both["sweep_id"] == 5].copy()
    quiet = diff.long_form(diff.numbers(a, b), ["speedup"])
    a[["eager_spread", "compiled_spread"]] = 9.0  # 900%: every change here is noise
    loud = diff.long_form(diff.numbers(a, b), ["speedup"])
    compared = loud["Δ%"].notna()  # both sides ran the combination
    # within the noise, or (a combination whose runs on a side were all noisy, as the answer says) no finding at all
    assert compared.any() and loud.loc[compared, "note"].str.startswith(("≈ within noise", "⚠ B: every run disturbed")).all()
    assert (quiet.loc[compared, "note"] == "").any()


def test_two_runs_where_one_has_no_numbers_show_gaps_not_none():
    """A failed run B has no numbers: its cells are NaN in float columns (the table's "–"), never None."""
    nums = diff.run_numbers({"speedup": 1.5, "compiled_ms": 2.0}, {"speedup": None, "compiled_ms": 4.0})
    assert [str(nums[c].dtype) for c in ("A", "B", "Δ%")] == ["float64"] * 3
    speedup = nums.set_index("metric").loc["speedup"]
    assert speedup["A"] == 1.5 and pd.isna(speedup["B"]) and pd.isna(speedup["Δ%"])
    assert nums.set_index("metric").loc["compiled_ms", "Δ%"] == pytest.approx(100.0)


# -- issue 5: repeats, roofline, first-call breakdown, device vs host ---------------------------------------
def jobs(*runs, **common) -> pd.DataFrame:
    """Labelled rows as label_series makes them: (mode, compiled_ms, eager_ms) per run, plus overrides."""
    base = {"status": "succeeded", "sweep_id": 1, "sweep": "modes", "sweep_label": "#1 modes", "model": "complexnet",
            "model_args": "{}", "variant": "", "task": "inference", "device": "cuda", "dtype": "float32",
            "batch_size": 32, "backend": "inductor", "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold",
            "schedule": "[]", "iters": 30, "timeout_s": 1800, "noisy": False, "torch_version": "2.13.0",
            "device_name": "NVIDIA H100 80GB HBM3", **common}
    rows = [{**base, "job_id": i, "mode": mode, "config": f"inductor/{mode}", "compiled_ms": c, "eager_ms": e,
             "speedup": e / c} for i, (mode, c, e) in enumerate(runs, start=1)]
    return pd.DataFrame(rows)


# the H100 repeats of bench/results/h100_repeats.txt (complexnet bs 32), plus an overlapping third mode
H100 = [("default", 2.9493, 4.2828), ("default", 2.9645, 4.2912), ("default", 2.9577, 4.2895),
        ("reduce-overhead", 2.8853, 4.3149), ("reduce-overhead", 2.8825, 4.3117), ("reduce-overhead", 2.8802, 4.3367),
        ("max-autotune", 2.9400, 4.3000), ("max-autotune", 2.9700, 4.2950)]


def test_repeats_are_identical_specs_within_one_sweep():
    df = jobs(*H100)
    once = jobs(("default", 3.1, 4.3)).assign(job_id=20, dynamic="true")  # no twin: not a repeat
    elsewhere = jobs(("default", 2.95, 4.29)).assign(job_id=21, sweep_id=2, sweep_label="#2 again")  # other sweep
    rep = repeats.repeated(pd.concat([df, once, elsewhere], ignore_index=True))
    assert sorted(rep["job_id"]) == list(range(1, 9)) and set(rep["group"]) == {"#1 modes · bs 32"}
    summary = repeats.summary(rep).set_index("config")
    assert summary.loc["default", "runs"] == 3
    assert summary.loc["default", "compiled_ms"] == pytest.approx(2.9577)
    assert summary.loc["default", "compiled_ms min"] == 2.9493
    assert summary.loc["default", "compiled_ms spread %"] == pytest.approx(100 * (2.9645 - 2.9493) / 2.9577)
    assert summary.index.tolist() == ["reduce-overhead", "max-autotune", "default"]


def test_separability_needs_ranges_that_do_not_overlap():
    rep = repeats.repeated(jobs(*H100))
    runs = repeats.candidates(rep)
    assert len(runs) == 16  # 8 compiled runs under their mode, 8 eager runs pooled as `eager`
    spans = repeats.ranges(runs)
    assert spans["candidate"].tolist() == ["reduce-overhead", "max-autotune", "default",
                                           "eager"]  # fastest first
    pairs = repeats.separability(spans).set_index(["faster", "slower"])
    assert len(pairs) == 6  # every unordered pair once
    assert pairs.loc[("reduce-overhead", "default"), "verdict"] == "separated"
    assert pairs.loc[("max-autotune", "default"), "verdict"] == "not separable"
    assert pairs.loc[("max-autotune", "default"), "gap %"] < 0  # they overlap
    assert (pairs.xs("eager", level="slower")["verdict"] == "separated").all()
    gap = pairs.loc[("reduce-overhead", "default"), "gap %"]
    assert gap == pytest.approx(100 * (2.9493 - 2.8853) / 2.8825)
    assert pairs.loc[("reduce-overhead", "default"), "faster ms"] == "2.882 (2.88–2.885, 3 runs)"
    assert repeats.chains(spans) == {
        "#1 modes · bs 32": "reduce-overhead < max-autotune ≈ default < eager"}
    fig = diagnosis.repeat_spread(runs, spans, ["#1 modes · bs 32"])
    assert sum(len(t.x) for t in fig.data if t.mode == "markers") == 16


def test_a_repeated_configuration_none_of_whose_runs_answers_is_named_noisy_and_greyed():
    """Repeats judge runs as everywhere (lab.noise): max-autotune's two runs were both disturbed (their numbers,
    marked and grey); reduce-overhead's scatter within their rounds, which is no cause: they answer."""
    df = jobs(*H100)
    df.loc[df["mode"] == "max-autotune", "disturbed"] = True
    df.loc[df["mode"] == "reduce-overhead", ["noisy", "speedup_spread"]] = [True, 0.3]
    rep = repeats.repeated(df)
    summary = repeats.summary(rep).set_index("config")
    assert summary.loc["⚠ noisy · max-autotune", "noisy runs"] == 2 and summary.loc["reduce-overhead", "noisy runs"] == 0
    spans = repeats.ranges(repeats.candidates(rep))
    fig = diagnosis.repeat_spread(repeats.candidates(rep), spans, sorted(set(rep["group"])))
    bars = {t.y[0]: t.line.color for t in fig.data if t.mode == "lines"}
    assert bars["⚠ noisy · max-autotune"] == styling.NOISY_GREY and bars["default"] != styling.NOISY_GREY


def test_synthetic_repeat_sweep_is_found(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "complexnet"])
    rep = repeats.repeated(view)
    assert set(rep["sweep"]) == {"complexnet repeats 13"} and (repeats.summary(rep)["runs"] == 4).all()
    assert repeats.repeated(series_labels.label_series(synthetic[synthetic["model"] == "mlp"])).empty


def test_roofline_points_lines_and_missing_ceilings(engine):
    store_ceilings(engine, "NVIDIA H100 80GB HBM3", "old-host", "2.12", 2000.0, {"float32": 40.0})
    store_ceilings(engine, "NVIDIA H100 80GB HBM3", "vm", "2.13", 2952.2, {"float32": 51.24, "bfloat16": 782.97})
    shown = pd.DataFrame([
        # complexnet bs32 on an H100: 35.8 TFLOP/s, 70% of the fp32 matmul ceiling
        {"model": "complexnet", "flops": 1.056e11, "min_bytes": 7.09e7, "achieved_tflops": 35.8, "achieved_gbps": 24.0,
         "roofline_pct": 70.0, "roofline_bound": "compute", "mfu": None, "compiled_ms": 2.95, "noisy": False},
        {"model": "complexnet", "flops": 1.056e11, "min_bytes": 7.09e7, "achieved_tflops": 35.0, "achieved_gbps": 23.0,
         "roofline_pct": 68.0, "roofline_bound": "compute", "mfu": None, "compiled_ms": 3.0, "disturbed": True},
        # sincos: elementwise only, 0 counted FLOPs, at the copy ceiling
        {"model": "sincos", "flops": 0.0, "min_bytes": 1.2e9, "achieved_tflops": 0.0, "achieved_gbps": 3056.0,
         "roofline_pct": 104.0, "roofline_bound": "memory", "mfu": None, "compiled_ms": 0.393, "noisy": False},
        {"model": "simplenet", "task": "training", "flops": 3e7, "min_bytes": 3.3e6, "achieved_tflops": 0.5,
         "achieved_gbps": 50.0, "roofline_pct": 2.0, "roofline_bound": "memory", "mfu": 0.01, "compiled_ms": 0.06,
         "noisy": False},
        {"model": "simplenet", "device": "cpu", "device_name": "AMD EPYC", "flops": 3e7, "min_bytes": 1.1e6,
         "achieved_tflops": 0.1, "achieved_gbps": 4.0, "roofline_pct": None, "roofline_bound": None, "mfu": None,
         "compiled_ms": 0.3, "noisy": False},
        {"model": "mlp", "status": "failed", "flops": None, "min_bytes": None},
    ])
    defaults = {"status": "succeeded", "variant": "", "task": "inference", "device": "cuda",
                "device_name": "NVIDIA H100 80GB HBM3", "dtype": "float32", "batch_size": 32, "backend": "inductor",
                "mode": "default", "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold"}
    shown = shown.assign(**{k: shown[k].fillna(v) if k in shown else v for k, v in defaults.items()})
    pts = roofline_points.points(shown).set_index(["model", "task"])
    # the point is the quiet run's alone (as on every plot: lab.noise), the noisy one counted beside it
    assert len(pts) == 4 and pts.loc[("complexnet", "inference"), "runs"] == 1
    assert pts.loc[("complexnet", "inference"), "noisy_runs"] == 1
    assert pts.loc[("complexnet", "inference"), "achieved_tflops"] == 35.8 and not pts["only_noisy"].any()
    assert pts.loc[("complexnet", "inference"), "ai"] == pytest.approx(1.056e11 / 7.09e7)
    assert not pts.loc[("sincos", "inference"), "on_plot"] and pts["on_plot"].sum() == 3
    pts = pts.reset_index()
    ceilings = newest_ceilings(engine, pts["device_name"].unique())
    assert {(c["dtype"], c["hostname"]) for c in ceilings} == {("float32", "vm"), ("bfloat16", "vm")}  # newest
    in_view = roofline_points.ceilings_in_view(ceilings, pts)
    assert in_view[["device_name", "dtype"]].values.tolist() == [["NVIDIA H100 80GB HBM3", "float32"]]
    line = roofline_points.lines(in_view, pts)
    ridge = 51.24 * 1e3 / 2952.2  # FLOP/byte where bandwidth meets compute
    assert line["ai"].tolist()[1] == pytest.approx(ridge) and line["tflops"].max() == pytest.approx(51.24)
    left = line.iloc[0]
    assert left["tflops"] == pytest.approx(2952.2 * left["ai"] / 1e3) and left["ai"] <= pts["ai"][pts["on_plot"]].min()
    assert line["ai"].max() >= pts["ai"].max()
    missing = roofline_points.missing_ceilings(ceilings, pts)
    assert missing.values.tolist() == [["cpu", "AMD EPYC", "float32"]]
    assert roofline_points.off_plot(pts) == ("sincos on NVIDIA H100 80GB HBM3 (1 configuration): 3,056 GB/s, "
                                      "at best 104% of the roofline.")
    fig = diagnosis.roofline(pts, line, "model")
    assert [t.name for t in fig.data if t.mode == "lines"] == ["NVIDIA H100 80GB HBM3 · float32: 51.2 TFLOP/s, 2,952 GB/s"]
    hollow = [t for t in fig.data if t.mode == "markers" and (t.marker.symbol or "").endswith("-open") and t.x[0] is not None]
    assert len(hollow) == 1 and hollow[0].name == "complexnet"
    simplenet = [row for t in fig.data if t.name == "simplenet" and t.x[0] is not None for row in t.customdata]
    assert sum("MFU 1.0%" in str(row[3]) for row in simplenet) == 1  # the training job's
    assert {t.name for t in fig.data if t.x[0] is None} == {  # legend entries; two devices: a symbol each
        "complexnet", "simplenet", "circle: AMD EPYC", "diamond: NVIDIA H100 80GB HBM3",
        "hollow: a disturbed run left out"}


def test_the_roofline_greys_a_configuration_with_noisy_runs_only_and_folds_modes_off_cuda():
    """A configuration whose only run was noisy is a grey point marked as such (not a hollow one beside quiet runs);
    on the CPU a job stored as reduce-overhead is the default configuration's point."""
    row = {"status": "succeeded", "model": "simplenet", "variant": "", "task": "inference", "device": "cpu",
           "device_name": "AMD EPYC", "dtype": "float32", "batch_size": 8, "backend": "inductor", "mode": "default",
           "dynamic": "none", "fullgraph": "false", "scope": "model", "cache": "cold", "flops": 3e7, "min_bytes": 1e6,
           "achieved_tflops": 0.1, "achieved_gbps": 4.0, "roofline_pct": None, "roofline_bound": None, "mfu": None,
           "compiled_ms": 0.3, "disturbed": False}
    shown = pd.DataFrame([row, {**row, "mode": "reduce-overhead", "achieved_tflops": 0.2},
                          {**row, "batch_size": 32, "disturbed": True, "achieved_tflops": 0.4}])
    pts = roofline_points.points(shown).set_index("batch_size")
    assert len(pts) == 2 and pts.loc[8, "mode"] == "default" and pts.loc[8, "runs"] == 2
    assert pts.loc[32, "only_noisy"] and pts.loc[32, "noisy_runs"] == 0 and not pts.loc[8, "only_noisy"]
    fig = diagnosis.roofline(pts.reset_index(), pd.DataFrame(columns=["device_name", "dtype", "ai", "tflops"]),
                             "model")
    (grey,) = [t for t in fig.data if t.x[0] is not None and t.marker.color == styling.NOISY_GREY]
    assert list(grey.y) == [0.4] and "every run disturbed" in grey.customdata[0][6]
    assert styling.NOISY_LEGEND in {t.name for t in fig.data} and not any(
        (t.marker.symbol or "").endswith("-open") for t in fig.data if t.x[0] is not None)


def test_a_warm_job_that_found_no_cached_graph_is_not_labelled_plain_warm(synthetic):
    """cache=warm asks for the worker's cache; the first job of its kind finds its graph missing and
    compiles it anyway. Its configuration's label says how many runs found the graph cached (the series stays
    one configuration, so repeats are not split), and the breakdown does not hatch a miss as a warm hit."""
    sincos = synthetic[synthetic["model"] == "sincos"].copy()
    warm = sincos[(sincos["cache"] == "warm") & (sincos["status"] == "succeeded")]
    assert len(warm) and set(warm["cache_state"]) == {"warm"}  # synthetic warm jobs all hit
    before = series_labels.label_series(sincos)
    configs = before.loc[warm.index, "config"]
    all_missed, some_missed = configs.unique()[:2]
    miss = json.dumps({"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 1})
    sincos.loc[configs.index[configs == all_missed], "cache_hits"] = miss
    partly = configs.index[configs == some_missed]
    sincos.loc[partly[:1], "cache_hits"] = miss
    sincos = frame._finish(sincos.drop(columns=["cache_state"]))
    view = series_labels.label_series(sincos)
    assert view["config"].nunique() == before["config"].nunique()  # labels change, series do not split
    assert view.loc[configs.index[configs == all_missed], "config"].str.endswith(
        "warm cache: graph not cached yet").all()
    assert view.loc[partly, "config"].str.endswith(f"warm cache: graph cached in {len(partly) - 1} of {len(partly)} "
                                                   "runs").all()
    assert view.loc[warm.index.difference(configs.index[configs.isin([all_missed, some_missed])]),
                    "config"].str.contains("warm cache: graph cached", regex=False).all()  # all hits say so too
    # the warmup plot keeps a miss and a hit apart: a median over both is a first call no run had
    hit = sincos.loc[warm.index.difference(partly).difference(configs.index[configs == all_missed])[0]]
    again = hit.copy()  # the same configuration and batch size once more, a miss this time
    again[["job_id", "cache_hits", "compiled_first_call_s"]] = [sincos["job_id"].max() + 1, miss,
                                                                hit["compiled_first_call_s"] * 5]
    both = series_labels.label_series(frame._finish(pd.concat([sincos, again.to_frame().T], ignore_index=True)
                                              .drop(columns=["cache_state"]).infer_objects()))
    calls = plot_data.first_calls(both)
    split = calls[calls["batch_size"] == hit["batch_size"]]
    split = split[split["series"].str.contains(" · hit · | · miss · ", regex=True)]
    assert sorted(s.split(" · ")[-2] for s in split["series"]) == ["hit", "miss"]  # "... · miss · bs 8"
    assert split.set_index(split["series"].str.split(" · ").str[-2]).loc[
        ["hit", "miss"], "compiled_first_call_s"].tolist() == [hit["compiled_first_call_s"],
                                                               hit["compiled_first_call_s"] * 5]
    got = plot_data.breakdown_frame(series_labels.split_by_graph_cache(view))
    hatched = diagnosis.warmup_breakdown(got, plot_data.failures(view))
    shapes = [shape for t in hatched.data if t.marker and t.marker.pattern and t.marker.pattern.shape is not None
              for shape, series in zip(t.marker.pattern.shape, t.y) if "not cached" in str(series)]
    assert shapes and set(shapes) == {""}


def test_a_backend_that_never_asks_the_graph_cache_is_not_called_a_miss():
    """aot_eager, eager, cudagraphs: every inductor counter is 0, which says nothing about the cache."""
    zeros = json.dumps({"inductor_fx_local_cache_hit_count": 0, "inductor_fx_local_cache_miss_count": 0})
    assert frame._graph_hit(zeros) is None
    assert frame._graph_hit(json.dumps({"inductor_fx_local_cache_hit_count": 0,
                                         "inductor_fx_local_cache_miss_count": 2})) is False


def test_breakdown_frame_takes_one_real_job_per_series(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "sincos"])
    got = plot_data.breakdown_frame(view)
    comp = got[got["bar"] == "compiled"]
    ok = view[view["status"] == "succeeded"]
    assert set(comp["series"]) == set(ok["series"])
    for series, parts in comp.groupby("series"):
        job = ok[ok["job_id"] == parts["job_id"].iloc[0]].iloc[0]
        assert job["series"] == series and set(parts["part"]) <= set(plot_data.BREAKDOWN_PARTS)
        assert parts["seconds"].sum() == pytest.approx(job["compiled_first_call_s"])  # the parts add up
        firsts = ok.loc[ok["series"] == series, "compiled_first_call_s"].sort_values().tolist()
        assert job["compiled_first_call_s"] == firsts[(len(firsts) - 1) // 2]  # the median run
    eager = got[got["bar"] == "eager"].set_index("series")["seconds"]
    assert eager.to_dict() == pytest.approx(ok.groupby("series")["eager_first_call_s"].median().to_dict())
    warm = comp[comp["cache"] == "warm"]
    assert len(warm) and (warm["cache_hits"] == "(1 cache hit, 0 misses)").all()
    fig = diagnosis.warmup_breakdown(got, plot_data.failures(view))
    assert {t.name for t in fig.data} >= {"dynamo tracing", "codegen + kernel compile", "eager first call",
                                          "hatched: warm compile cache"}


def test_breakdown_without_a_recorded_breakdown_and_a_failed_only_series():
    view = pd.DataFrame([{"status": "succeeded", "job_id": 1, "series": "inductor/default", "config": "inductor/default",
                          "batch_size": 8, "cache": "cold", "cache_hits": None, "compile_breakdown_s": None,
                          "compiled_first_call_s": 4.0, "eager_first_call_s": 0.01}])
    got = plot_data.breakdown_frame(view)
    assert got[["part", "seconds"]].values.tolist() == [[plot_data.NO_BREAKDOWN, 4.0], ["eager first call", 0.01]]
    fails = pd.DataFrame([{"job_id": 2, "status": "failed", "error": "compile failed: graph break", "batch_size": 8,
                           "config": "inductor/default · fullgraph=true", "series": "inductor/default · fullgraph=true"}])
    fig = diagnosis.warmup_breakdown(got, fails)
    assert "inductor/default · fullgraph=true" in fig.layout.yaxis.categoryarray
    assert any(a.text.startswith("✕ failed: compile failed") for a in fig.layout.annotations)


def test_gpu_time_inside_latency_host_bound_and_noisy_rings(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "simplenet"])
    agg, fails = plot_data.summarize(view)
    agg = plot_data.with_noise(agg, view)
    host = plot_data.gpu_latency_frame(agg)
    assert set(host["what"]) == set(diagnosis.HOST_COLORS) and len(host) == 4 * len(agg)
    assert (host["overhead_ms"] == host["latency_ms"] - host["gpu_ms"]).all() and (host["overhead_ms"] > 0).all()
    assert diagnosis.gpu_in_latency(host, fails, sorted(agg["series"])).data
    cpu = agg.assign(eager_gpu_ms=float("nan"), compiled_gpu_ms=float("nan"))
    assert plot_data.gpu_latency_frame(cpu).empty  # CPU jobs have no GPU clock: nothing to draw
    noisy = agg[agg["noisy_runs"] > 0]
    assert len(noisy), "the synthetic data holds disturbed runs beside undisturbed ones"
    fig = speed_charts.mark_noisy(speed_charts.speedup(agg, fails), agg)
    rings = [t for t in fig.data if t.name and t.name.startswith("⚠ disturbed")]
    assert len(rings) == 1 and len(rings[0].x) == len(noisy.dropna(subset=["speedup"]))
    bound = agg[agg["host_bound_runs"] > 0]
    assert len(bound), "synthetic simplenet is host-bound on CUDA"
    diamonds = [t for t in fig.data if t.name and t.name.startswith("◇ host-bound")]
    assert sum(len(t.x) for t in diamonds) == len(bound.dropna(subset=["speedup"]))
    assert "launch-bound" in diamonds[0].customdata[0][3]


def test_each_clock_draws_its_own_numbers(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "mlp"])
    agg, fails = plot_data.summarize(view)
    for clock, cols in plot_data.CLOCKS.items():
        timed = plot_data.on_clock(agg, clock)
        assert (timed["speedup"] == agg[cols["speedup"]]).all() and (timed["compiled_ms"] == agg[cols["compiled_ms"]]).all()
        fig = speed_charts.speedup(timed, fails, clock)
        ys = sorted(y for t in fig.data if t.mode.startswith("lines+markers") for y in t.y)
        assert ys == pytest.approx(sorted(agg[cols["speedup"]].dropna()))
    # latency is the headline: GPU time leaves the host out, so on this host-bound model it reads higher
    assert (agg["gpu_speedup"] != agg["speedup"]).all()
    assert "GPU time" in speed_charts.speedup(plot_data.on_clock(agg, "gpu"), fails, "gpu").layout.title.text


def test_failure_notes_on_a_log_batch_axis_sit_at_their_batch(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == plot_data.failures(synthetic)["model"].iloc[0]])
    agg, fails = plot_data.summarize(view)
    fig = speed_charts.speedup(agg, fails)
    assert fig.layout.xaxis.type == "log"  # batch 1..128
    notes = [a for a in fig.layout.annotations if a.text.startswith("✕")]
    # plotly reads x on a log axis as log10(x): a raw 128 would stretch the range to 1e128
    assert sorted(a.x for a in notes) == pytest.approx(sorted(np.log10(fails["batch_size"].unique().astype(float))))


def test_cpu_results_stored_as_reduce_overhead_are_drawn_under_default(engine):
    from bench.synthetic import fill

    fill(engine, 6, seed=2, device="cpu", models=("complexnet",), batches=(8, 32), dynamics=(None,),
         modes=("default", "reduce-overhead", "max-autotune-no-cudagraphs"))
    df = frame.load_frame(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS)[0]
    view = series_labels.label_series(df)
    assert set(view["config"]) == {"default", "max-autotune"}  # two compiles, not four configurations
    assert series_labels.folded_notes(view) == [
        "2 jobs stored as max-autotune-no-cudagraphs are shown under max-autotune: on cpu they are the same compile, "
        "since CUDA graphs need CUDA.",
        "2 jobs stored as reduce-overhead are shown under default: on cpu they are the same compile, since CUDA graphs "
        "need CUDA."]
    assert "cpu" in view.attrs["common"] and "inductor" in view.attrs["common"]


def test_break_even_hides_when_it_has_nothing_to_say_and_bars_carry_their_values(synthetic):
    view = series_labels.label_series(synthetic[synthetic["model"] == "complexnet"])
    agg, fails = plot_data.summarize(view)
    fig = speed_charts.break_even(agg, fails)
    paid = agg.dropna(subset=["break_even_calls"])
    bars = [t for t in fig.data if t.type == "bar"]
    assert all(t.orientation == "h" for t in bars) and fig.layout.yaxis.type == "category"
    assert sorted(x for t in bars for x in t.x) == sorted(paid["break_even_calls"])
    assert {f"{n:,.0f} calls" for n in paid["break_even_calls"]} == {s for t in bars for s in t.text}
    assert speed_charts.break_even_note(agg) == ""
    never = agg.assign(break_even_calls=float("nan"), speedup=0.8)
    assert speed_charts.break_even(never, fails) is None and "never pays off" in speed_charts.break_even_note(never)
    one = paid.iloc[:1]
    assert speed_charts.break_even(one, fails) is None
    assert speed_charts.break_even_note(one) == (f"Break-even: one configuration in view ({one['series'].iloc[0]}), paying off "
                                           f"after {one['break_even_calls'].iloc[0]:,.0f} calls.")
    warm = speed_charts.warmup(plot_data.first_calls(view), fails)
    assert all(t.orientation == "h" and all(t.text) for t in warm.data if t.type == "bar")
    assert warm.layout.height >= 170 + 58 * agg["series"].nunique()  # a row per series, three bars a row


def test_point_values_never_collide():
    agg = pd.DataFrame({"config": ["a", "b", "c"], "baseline": ["eager"] * 3, "batch_size": [8, 8, 8],
                        "speedup": [1.50, 1.51, 1.10], "runs": [1, 1, 1], "eager_ms": [1.0] * 3,
                        "compiled_ms": [0.7] * 3})
    fig = speed_charts.speedup(agg, agg.iloc[0:0].assign(job_id=[], status=[], error=[]))
    shown = sorted(t for tr in fig.data if tr.text is not None for t in tr.text if t)
    assert shown == ["1.10×", "1.51×"]  # 1.50 sits on 1.51: its value is in the hover only


def test_the_preloaded_imports_are_their_own_segment_of_the_first_call():
    """A forked CUDA child's first call plus what its parent preloaded for it (runner.preload): the First call tab
    draws the added imports as a named segment, and the parts still add up to compiled_first_call_s."""
    from runner.preload import COMPILE_PART

    parts = {"dynamo tracing": 1.0, "codegen + kernel compile": 2.0, "other (run, guards)": 0.5, COMPILE_PART: 0.7}
    view = pd.DataFrame([{"status": "succeeded", "job_id": 1, "series": "inductor/default", "config": "inductor/default",
                          "batch_size": 8, "cache": "cold", "cache_hits": None, "compile_breakdown_s": json.dumps(parts),
                          "compiled_first_call_s": 4.2, "eager_first_call_s": 0.01, "error": None}])
    got = plot_data.breakdown_frame(view)
    comp = got[got["bar"] == "compiled"]
    assert comp.set_index("part")["seconds"].to_dict() == parts and comp["seconds"].sum() == pytest.approx(4.2)
    fig = diagnosis.warmup_breakdown(got, plot_data.failures(view))
    (seg,) = [t for t in fig.data if t.name == COMPILE_PART]
    assert seg.marker.color == diagnosis.PART_COLORS[COMPILE_PART]
