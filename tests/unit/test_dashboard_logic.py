"""The dashboard's compute functions (no streamlit): form -> sweeps, results table, plots, diffs."""

import numpy as np
import pandas as pd
import pytest

from dashboard.charts import diagnosis, speed_charts, styling
from dashboard.data import diff, filters, frame, plot_data, repeats, series_labels
from dashboard.data.submission import FormValues, label_for, message, plan, slot_for, submit_all
from db import views
from db.results import RECORD_FIELDS, export_records
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


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
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
    warm = speed_charts.warmup(plot_data.first_calls(view), fails)
    assert {t.name for t in warm.data} <= set(speed_charts.CALLS.values())
    assert {speed_charts.CALLS["eager_first_call_s"], speed_charts.CALLS["compiled_second_call_s"]} < {
        t.name for t in warm.data}
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


def test_a_sweeps_first_call_is_its_cold_runs_never_a_median_over_cold_and_warm():
    """Two sweeps of one configuration, each a cold first run and its warm process repeat (the run recorded
    first_call_cache="warm"): the first call Compare sets side by side is the cold run's (lab.first_call), not the
    median over both (9.08 s, a first call no run had); a warm run whose graph missed the cache compiled cold."""
    def side(cold, warm, sweep_id, **warm_run):
        rows = jobs(("default", 1.0, 2.0), ("default", 1.0, 2.0), sweep_id=sweep_id)
        rows = rows.assign(compiled_first_call_s=[cold, warm], first_call_cache=["cold", "warm"],
                           graph_cache_hit=[False, True], job_id=rows["job_id"] + 10 * sweep_id)
        rest = {m: np.nan for m in diff.METRICS if m not in rows.columns and m != diff.COLD}
        return rows.assign(**rest, **{k: [None, v] for k, v in warm_run.items()})
    a, b = side(15.72, 2.44, 1), side(31.0, 6.5, 2)
    nums = diff.numbers(a, b).iloc[0]
    assert (nums["first_call_cold_s A"], nums["first_call_cold_s B"]) == (15.72, 31.0)
    assert nums["first_call_cold_s Δ%"] == pytest.approx((31.0 / 15.72 - 1) * 100)
    assert "compiled_first_call_s A" not in nums.index and diff.verdict(diff.COLD, -40.0) == "better"
    missed = diff.numbers(side(15.72, 2.44, 1, graph_cache_hit=False), b).iloc[0]
    assert missed["first_call_cold_s A"] == pytest.approx((15.72 + 2.44) / 2)  # both compiled from nothing
    nothing = diff.numbers(a.assign(first_call_cache="warm", graph_cache_hit=True), b).iloc[0]
    assert np.isnan(nothing["first_call_cold_s A"])  # no run of A compiled cold: no cold figure, never a warm one
    # two single runs: each one's own first call, whatever it compiled from
    assert "compiled_first_call_s" in set(diff.run_numbers({}, {})["metric"])


def test_a_change_between_two_sweeps_answers_is_a_finding_only_past_both_intervals():
    """Compare's speedup and cold first call are each sweep's answer, which moves with its processes: a change inside
    the two intervals together is no finding, whatever its size; a cold first call with no interval yet is one
    process's cold compile, and a change inside how far that moves (1.69x) is none either."""
    def side(sweep_id, cold):
        rest = {m: np.nan for m in diff.METRICS if m not in ("eager_ms", "compiled_ms", "speedup", "compiled_first_call_s")}
        return jobs(("default", 2.0, 2.6), sweep_id=sweep_id, eager_spread=0.01, compiled_spread=0.01).assign(
            **rest, job_id=sweep_id, compiled_first_call_s=cold, first_call_cache="cold", graph_cache_hit=False)

    def row(s, lo, hi, cold, cold_lo=None, cold_hi=None):
        return {"speedup": s, "speedup_ci_low": lo, "speedup_ci_high": hi, "eager_ms": 2.6, "compiled_ms": 2.6 / s,
                "break_even_calls": None, "first_call_cold_s": cold, "first_call_cold_low": cold_lo,
                "first_call_cold_high": cold_hi}

    def notes(ra, rb, cold_a=3.0, cold_b=4.0):
        table = diff.long_form(diff.numbers(side(1, cold_a), side(2, cold_b), {1: ra, 2: rb}),
                               ["speedup", diff.COLD])
        return {m: (n, diff.verdict(m, d, n)) for m, d, n in zip(table["metric"], table["Δ%"], table["note"])}

    wide = notes(row(1.30, 1.20, 1.41, 3.0), row(1.45, 1.33, 1.58, 4.0))  # +11.5%: inside both intervals together
    assert wide["speedup"] == ("≈ within the two answers' intervals (together ±13%)", "")
    assert wide[diff.COLD][0].startswith("≈ within how far one cold compile moves") and wide[diff.COLD][1] == ""
    narrow = notes(row(1.30, 1.28, 1.32, 3.0, 2.9, 3.1), row(1.45, 1.43, 1.47, 3.6, 3.5, 3.7), cold_b=3.6)
    assert narrow["speedup"] == ("", "better") and narrow[diff.COLD] == ("", "worse")  # past both: findings
    twice = notes(row(1.30, 1.28, 1.32, 3.0), row(1.30, 1.28, 1.32, 6.0), cold_b=6.0)  # 2x: past one process's moves
    assert twice[diff.COLD] == ("", "worse")


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
    # a first run against its process repeat: a cold compile against a warm one (lab.first_call.kind), no finding
    repeat = diff.run_numbers({**a, "cache": "cold", "first_call_cache": "cold"},
                              {**b, "cache": "cold", "first_call_cache": "warm", "graph_cache_hit": True})
    first = repeat.set_index("metric").loc["compiled_first_call_s"]
    assert first["note"] == "A compiled cold, B warm: not the same first call"
    assert diff.verdict("compiled_first_call_s", first["Δ%"], first["note"]) == ""


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


def test_a_cpu_jobs_cache_table_has_no_triton_row():
    from dashboard.data import story

    layers = {"fxgraph": {"hit": 1, "miss": 0, "bypass": 0}, "triton": {"hit": 0, "miss": 0, "bypass": 0}}
    assert [r["cache"] for r in story.cache_rows(layers, "cpu")] == [story.LAYERS["fxgraph"]]
    assert len(story.cache_rows(layers, "cuda")) == 2


def test_compare_legend_keeps_each_sides_colour_when_its_first_bars_are_greyed():
    import pandas as pd

    from dashboard.charts import compare_bars

    plot = pd.DataFrame({"combination": ["x", "y", "x", "y"], "speedup": [1.2, 1.3, 1.1, 1.4],
                         "sweep": ["A: one", "A: one", "B: two", "B: two"], "noisy": [True, False, True, False]})
    chart = compare_bars.sweeps_speedup(plot).to_dict()
    bars = chart["layer"][0]
    scale = bars["encoding"]["color"]["scale"]
    legend = dict(zip(scale["domain"], scale["range"]))  # legend entry -> its colour
    assert legend["A: one"] == "#1f77b4" and legend["B: two"] == "#ff7f0e"
    assert legend[compare_bars.NOISY_ENTRY] == compare_bars.NOISY_GREY and compare_bars.NOISY_ENTRY.startswith("⚠")
    rows = chart["datasets"][bars["data"]["name"]]
    greyed = [r for r in rows if r["noisy"]]
    # both sides' first bars greyed, each in its own side's slot
    assert len(greyed) == 2 and {r["bar"] for r in greyed} == {compare_bars.NOISY_ENTRY}
    assert sorted(r["sweep"] for r in greyed) == ["A: one", "B: two"] and all(r["label"] == "x" for r in greyed)


def test_a_side_with_disturbed_runs_only_colours_no_metric(engine, synthetic):
    """Compare: where every run of a side was disturbed, throughput and first call are no finding either (a
    throughput delta was coloured green for a configuration whose answer was "no answer")."""
    both = frame.complete(synthetic[synthetic["sweep_id"].isin([1, 5])], engine)
    a, b = both[both["sweep_id"] == 1].copy(), both[both["sweep_id"] == 5].copy()
    b["disturbed"] = True
    b["noisy"] = True
    table = diff.long_form(diff.numbers(a, b), ["throughput_speedup", "first_call_cold_s", "speedup"])
    compared = table["Δ%"].notna()
    assert compared.any() and table.loc[compared, "note"].str.startswith("⚠ B: every run disturbed").all()
    assert not any(diff.verdict(r["metric"], r["Δ%"], r["note"]) for r in table.loc[compared].to_dict(orient="records"))
