"""The dashboard's compute functions (no streamlit): form -> sweeps, results table, plots, diffs."""
import json

import pandas as pd
import pytest

from bench.synthetic import fill
from dashboard import charts, diff, tables
from dashboard.submission import FormValues, label_for, message, plan, slot_for, submit_all
from db import queue, views
from db.models import JobStatus
from db.results import RECORD_FIELDS, export_records
from db.spec import SweepRequest
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


@pytest.mark.parametrize("change, field, words", [
    ({"batch_sizes": "8, x"}, "batch_sizes", "Batch sizes: expected an integer, got 'x'"),
    ({"batch_sizes": ""}, "batch_sizes", "Batch sizes: choose at least one value"),
    ({"batch_sizes": "0"}, "batch_sizes", "Batch sizes: must be a positive integer"),
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
def synthetic(engine):
    fill(engine, 300, seed=3, device="cuda")
    return tables.results_frame(views.result_rows(engine))


def test_results_frame_has_every_export_field_and_keeps_failures(engine, synthetic):
    df = synthetic
    assert len(df) == 300 and set(RECORD_FIELDS) <= set(tables.complete(df, engine).columns)
    assert df["speedup"].dtype == float and str(df["batch_size"].dtype) == "Int64"
    bad = tables.failures(df)
    assert len(bad) == (df["status"] != "succeeded").sum() > 0 and bad["error"].notna().all()
    assert df.loc[df["status"] != "succeeded", "speedup"].isna().all()  # never a 0.0 speedup


def test_json_download_is_the_export_record(engine, synthetic):
    shown = synthetic[synthetic["model"] == "mlp"]
    ours = json.loads(tables.to_json(shown, engine))
    theirs = {r["job_id"]: r for r in export_records(engine)}
    assert len(ours) == len(shown) > 0
    for rec in ours:
        assert list(rec) == list(RECORD_FIELDS)
        ref = theirs[rec["job_id"]]
        for key, value in rec.items():
            if isinstance(value, float):
                assert value == pytest.approx(ref[key]), key
            else:
                assert value == ref[key], key
    csv = tables.to_csv(shown, engine)
    assert csv.splitlines()[0].split(",") == list(RECORD_FIELDS) and len(csv.splitlines()) == len(shown) + 1


def test_filters_keep_rows_without_an_environment(synthetic):
    df = synthetic.copy()
    df.loc[df.index[0], "torch_version"] = None
    shown = tables.apply_filters(df, {"torch_version": ["2.13.0"], "model": ["simplenet"]})
    assert set(shown["model"]) == {"simplenet"}
    assert df.index[0] in shown.index  # unknown environment is kept under an environment filter
    assert tables.apply_filters(df, {"torch_version": ["9.9"]}).index.tolist() == [df.index[0]]
    labels = tables.filter_options(df, "sweep")
    assert labels[0].startswith(f"#{df['sweep_id'].max()} ") and len(labels) == df["sweep_id"].nunique()
    assert tables.apply_filters(df, {"sweep": [labels[0]]})["sweep_id"].nunique() == 1


def test_series_labels_name_only_what_differs(synthetic):
    view = tables.label_series(synthetic[synthetic["model"] == "simplenet"])
    assert set(view["config"]) == {f"inductor/{m} · dynamic={d}" for m in ("default", "max-autotune")
                                   for d in ("none", "true", "false")}
    assert set(view["baseline"]) == {"eager"}
    one = tables.label_series(synthetic[(synthetic["model"] == "simplenet") & (synthetic["mode"] == "default")
                                        & (synthetic["dynamic"] == "none")])
    assert set(one["config"]) == {"inductor/default"} and one["series"].str.contains(" · bs ").all()


def test_plots_draw_failures_bands_and_the_one_line(synthetic):
    worst = tables.failures(synthetic)["model"].value_counts().index[0]
    view = tables.label_series(synthetic[synthetic["model"] == worst])
    agg, fails = tables.summarize(view)
    assert len(fails) > 0, "the synthetic data holds failures"
    speed = charts.speedup(agg, fails)
    notes = [a for a in speed.layout.annotations if a.text.startswith("✕")]
    hover = " ".join(a.hovertext for a in notes)
    assert all(f"#{job_id} " in hover for job_id in fails["job_id"])  # every failed job, with its reason
    assert all(str(e)[:40] in hover for e in fails["error"])
    assert any(s.y0 == 1.0 and s.y1 == 1.0 for s in speed.layout.shapes)  # the 1.0x line
    lat = charts.latency(agg, fails)
    assert any(t.fill == "toself" for t in lat.data)  # p10-p90 bands
    assert {t.name for t in lat.data if t.name} >= {"eager"} | set(agg["config"])
    warm = charts.warmup(agg, fails)
    assert {t.name for t in warm.data} == set(charts.CALLS.values())
    assert charts.break_even(agg, fails).layout.xaxis.categoryarray


def test_a_configuration_that_only_failed_still_has_its_category():
    agg = pd.DataFrame(columns=["config", "baseline", "batch_size", "series", *tables.NUMBERS, "runs"])
    agg.loc[0] = ["inductor/default · fullgraph=false", "eager", 8, "inductor/default · fullgraph=false",
                  *[1.0] * len(tables.NUMBERS), 1]
    fails = pd.DataFrame([{"job_id": 7, "status": "failed", "error": "graph break", "batch_size": 8,
                           "config": "inductor/default · fullgraph=true",
                           "series": "inductor/default · fullgraph=true"}])
    fig = charts.warmup(agg, fails)
    assert "inductor/default · fullgraph=true" in fig.layout.xaxis.categoryarray
    assert any("graph break" in (a.hovertext or "") for a in fig.layout.annotations)


def test_schedule_timeline_rings_recompiles(engine, synthetic):
    view = tables.label_series(synthetic[synthetic["model"] == "simplenet"])
    ids = view.loc[view["has_schedule"] & (view["status"] == "succeeded"), "job_id"].tolist()[:3]
    sched = charts.schedule_frame(view, views.schedule_calls(engine, ids))
    assert len(sched) == 9 and sched["recompiled"].sum() == 6
    fig = charts.recompile_timeline(sched)
    ringed = [t for t in fig.data if t.name == "recompiled"]
    assert sum(len(t.x) for t in ringed) == 6


def test_result_store_appends_what_finished_since(engine):
    queue.register_worker(engine, "w", "h", 1, None, {"devices": ["cpu"], "models": []})
    req = SweepRequest(model="simplenet", batch_sizes=[1, 2, 3], device="cpu")
    queue.submit(engine, req, CATALOG)
    store = tables.ResultStore(engine)
    assert store.frame().empty and store.full_loads == 1
    for _ in range(2):
        claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                     result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0})
    first = store.frame()
    assert len(first) == 2 and store.full_loads == 2  # from empty: a full load
    assert store.frame() is first  # nothing changed: the same frame, no query for rows
    claim = queue.claim_next(engine, "w", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.FAILED, error="boom")
    third = store.frame()
    assert store.full_loads == 2 and third["job_id"].tolist() == [1, 2, 3]  # appended, not reloaded
    assert third["error"].tolist()[-1] == "boom"


# -- Compare ------------------------------------------------------------------------------------------
def test_diff_matches_sweep_jobs_and_marks_changes(engine, synthetic):
    both = tables.complete(synthetic[synthetic["sweep_id"].isin([1, 5])], engine)  # as the Compare page does
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

