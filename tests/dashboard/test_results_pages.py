"""Results and Compare through Streamlit's AppTest, on a real SQLite file of synthetic finished jobs: every tab
draws, filters and choices live in the link, failures are listed, not drawn."""
import json

import pytest

from dashboard.charts.diagnosis import HOST_COLORS
from dashboard.markup import md
from db import queue
from db.models import JobStatus
from db.results import export_records
from runner import zoo
from tests.dashboard.test_pages import answer_table, every_column, lab, ok, page, texts, worker  # noqa: F401 (fixtures)


# -- Results and Compare ------------------------------------------------------------------------------------
@pytest.fixture
def results(lab, fill_synthetic):  # noqa: F811 (the fixture)
    return fill_synthetic(240, seed=1)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_results_page_plots_tables_and_downloads(results):
    at = ok(page("results"))
    # the Speedup tab opens first, on its N-calls chart: one chart at a time; no other tab ran
    assert [t.label for t in at.tabs] == ["Speedup", "First call", "Repeats", "Roofline", "Failures", "Table"]
    assert at.segmented_control(key="chart").value == "N calls"
    assert [c.key for c in at.get("plotly_chart")] == ["plot_ncalls"]
    # the answer table above the tabs, as text the browser lays out at once; its grid with every column waits behind
    # a button (tests/dashboard/test_answer_page.py): no dataframe's code before the chart
    assert len(answer_table(at)) > 0 and len(at.dataframe) == 0
    assert {m.label for m in at.metric} >= {"Jobs shown", "Succeeded", "Did not succeed"}
    assert any(m.label == f"Median speedup · {at.segmented_control(key='plot').value}" for m in at.metric)  # whose
    assert [m.value for m in at.metric][:1] == ["240"]
    failed_n = 240 - int(at.metric[1].value)
    assert any(f"{failed_n:,} jobs in view did not succeed" in t for t in texts(at.caption))
    assert {s.label for s in at.multiselect} == {"Sweep", "Model", "Backend", "Mode", "Dynamic", "Fullgraph", "Scope",
                                                "Compile cache", "Device", "dtype", "torch", "GPU / CPU", "Status"}
    # the downloads are links the server streams from `runner export` (tests/dashboard/test_downloads.py)
    assert {b.proto.label for b in at.get("link_button")} == {"CSV", "JSON"} and not at.get("download_button")
    # the plotted model is the newest job's, and the URL names it so a copied link keeps showing it
    newest = export_records(results, job_ids=[240])[0]["model"]
    assert at.segmented_control(key="plot").value == newest and at.query_params["plot"] == newest
    # each chart of the tab, by the name a link gives it
    for chart, key in {"Speedup": "plot_speedup", "Latency": "plot_latency", "Warmup": "plot_warmup",
                       "Break-even": "plot_break_even", "Recompiles": "plot_recompiles"}.items():
        at = ok(page("results", chart=chart))
        assert [c.key for c in at.get("plotly_chart")] == [key] and at.segmented_control(key="chart").value == chart

    at = ok(page("results", view="Failures"))
    assert "Did not succeed (%d)" % failed_n in [s.value for s in at.subheader]
    assert not at.get("plotly_chart")  # the Failures tab draws none
    failed = at.dataframe[0].value
    assert len(failed) == failed_n and (failed["status"] != "succeeded").all() and failed["error"].str.len().gt(0).all()
    at = ok(page("results", view="Table"))
    table = at.dataframe[0].value
    assert len(table) == 240 and table["job_id"].iloc[0] == 240  # newest first, one page


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_a_cancelled_job_is_listed_but_not_counted_or_drawn_as_a_failure(results):
    """A person stopped it: it says nothing about its configuration, so no red ✕ and no failure count."""
    before = ok(page("results", model="simplenet", plot="simplenet", chart="Speedup"))
    from lab.sweep import SweepRequest
    (job_id,) = queue.submit(results, SweepRequest(model="simplenet", batch_sizes=[8], device="cuda"),
                             {"simplenet": zoo.model_infos(zoo.catalog())["simplenet"]})[1]
    queue.cancel(results, job_id)
    at = ok(page("results", model="simplenet", plot="simplenet", chart="Speedup"))
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Jobs shown"].replace(",", "")) == int(before.metric[0].value.replace(",", "")) + 1
    assert [m.proto.delta for m in at.metric if m.label == "Did not succeed"] == ["+ 1 cancelled"]
    assert metrics["Did not succeed"] == {m.label: m.value for m in before.metric}["Did not succeed"]

    def marks(t):
        return sorted(a.text for f in t.get("plotly_chart") for a in json.loads(f.proto.spec)["layout"].get(
            "annotations", []) if a["text"].startswith("✕"))

    assert marks(at) == marks(before)
    at = ok(page("results", model="simplenet", view="Failures"))
    assert any(s.value.endswith("and cancelled (1)") for s in at.subheader)
    assert job_id in at.dataframe[0].value["job_id"].tolist()
    # the newest job is a cancelled convnetmix one: the plots open on a model with something to draw
    (cancelled,) = queue.submit(results, SweepRequest(model="convnetmix", batch_sizes=[8], device="cuda"),
                                {"convnetmix": zoo.model_infos(zoo.catalog())["convnetmix"]})[1]
    queue.cancel(results, cancelled)
    at = ok(page("results"))
    assert at.segmented_control(key="plot").value == export_records(results, job_ids=[240])[0]["model"]
    at = ok(page("results", plot="convnetmix"))  # only cancelled jobs: a note, not empty axes
    assert any("all cancelled" in t for t in texts(at.info)) and not at.get("plotly_chart")


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_every_tab_draws_a_view_with_no_succeeded_job(results):
    """status=failed leaves no succeeded job: each tab says what is missing instead of failing."""
    for view in ("Speedup", "First call", "Repeats", "Roofline", "Failures", "Table"):
        at = ok(page("results", status="failed", view=view))
        assert at.metric[1].value == "0"  # succeeded
    assert any("no first call to break down" in t for t in texts(ok(page("results", status="failed",
                                                                          view="First call")).info))


def test_results_filters_live_in_the_link(results):
    at = ok(page("results", model="mlp", dynamic=["true", "false"], plot="mlp", view="Table"))
    assert at.multiselect(key="model").value == ["mlp"]
    table = at.dataframe[-1].value
    assert set(table["model"]) == {"mlp"} and set(table["dynamic"]) == {"true", "false"}
    assert at.metric[0].value == str(len(table))
    assert at.query_params["view"] == "Table"
    assert _popover_label(at) == "Filters (2 set)"
    assert "Jobs with Model: mlp · Dynamic: true, false" in texts(at.caption)  # the line beside the filters


def _popover_label(at) -> str:
    (popover,) = [b for b in at.main.children.values() for b in _blocks(b) if b.type == "popover"
                  and b.proto.popover.label.startswith("Filters")]
    return popover.proto.popover.label


def _blocks(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _blocks(child)


def test_a_plot_choice_that_names_no_choice_leaves_the_link(results):
    at = ok(page("results", model="mlp", plot="sincos"))  # one model in view: there is no picker
    assert "plot" not in at.query_params and at.get("plotly_chart")


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_repeats_mostly_noisy_carry_a_caveat(results):
    import streamlit as st
    from sqlalchemy import text

    at = ok(page("results", plot="complexnet", view="Repeats"))
    assert not any("repeated runs were disturbed" in w.value for w in at.warning)
    with results.begin() as conn:  # as if the runs had been disturbed (a finished job never changes: start afresh)
        conn.execute(text("UPDATE results SET noisy = 1, disturbed = 1"))
    st.cache_resource.clear()
    at = ok(page("results", plot="complexnet", view="Repeats"))
    [warning] = [w.value for w in at.warning if "repeated runs were disturbed" in w.value]
    assert warning.startswith("24 of 24 repeated runs were disturbed from outside")


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_results_filters_set_by_a_link_are_named_beside_them(results):
    """A colleague's link may set any filter: the popover's label counts them, the line beside it names them."""
    at = ok(page("results", dtype="float64"))  # not an option: not set
    assert _popover_label(at) == "Filters" and any(t.startswith("Every job in the database") for t in texts(at.caption))
    at = ok(page("results", dtype="float32", view="Table"))
    assert _popover_label(at) == "Filters (1 set)" and "Jobs with dtype: float32" in texts(at.caption)
    assert at.multiselect(key="dtype").value == ["float32"]
    assert set(at.dataframe[-1].value["dtype"]) == {"float32"}


def test_a_link_may_name_a_sweep_by_its_number(results):
    """"?sweep=1" is what a person types (a first-hour walk's was refused as a sweep that is not here): it names the
    sweep the filter lists as "#1 ...", and the link then says so; a number no sweep has is still said to be missing."""
    at = ok(page("results", sweep="1", view="Table"))
    (label,) = at.multiselect(key="sweep").value
    assert label.startswith("#1 ") and set(at.dataframe[-1].value["sweep"]) == {label[3:]}  # the view: that sweep
    assert _popover_label(at) == "Filters (1 set)" and not [w for w in at.warning if "names what is not here" in w.value]
    at = ok(page("results", sweep="999"))
    assert any("names what is not here (Sweep: 999)" in w.value for w in at.warning)


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_jobs_whose_stored_spec_the_worker_refused_do_not_break_a_page(results):
    """A spec edited by hand (lab.spec refuses it, so the job failed on it) is still a row: every tab and
    Compare draw, and its settings read as the worker reads them."""
    from sqlalchemy import text

    from db import views

    with results.begin() as conn:  # the worker refuses such a spec: the job fails, naming the field
        conn.execute(text("UPDATE jobs SET spec = :s WHERE id = 1"), {"s": json.dumps(
            {"model": "simplenet", "batch_size": "lots", "dynamic": "false", "fullgraph": "false"})})
        conn.execute(text("UPDATE jobs SET spec = '[1, 2]' WHERE id = 2"))
        conn.execute(text("UPDATE jobs SET status = 'failed', error = 'bad stored spec: batch_size' WHERE id IN (1, 2)"))
        conn.execute(text("DELETE FROM results WHERE job_id IN (1, 2)"))
    row = {k: v[0] for k, v in views.result_rows(results, job_ids=[1]).columns.items()}
    assert row["batch_size"] is None and row["dynamic"] == "false" and row["fullgraph"] is False
    for view in ("Speedup", "First call", "Repeats", "Roofline", "Failures", "Table"):
        ok(page("results", view=view))
    failures = ok(page("results", view="Failures")).dataframe[0].value
    assert {1, 2} <= set(failures["job_id"])
    ok(page("results", status="succeeded", plot="simplenet"))
    ok(page("compare", a="1", b="2"))
    ok(page("compare", kind="runs", ja="1", jb="2"))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_compare_sets_one_sweep_under_two_torch_versions_side_by_side(worker):  # noqa: F811 (the fixture)
    """One sweep pinned to two versions, each job run by a worker of that version: Compare's torch versions view
    and the block under the answer on Results show the change, coloured past 5%."""
    from lab.sweep import SweepRequest

    ids = queue.submit(worker, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", name="upgrade",
                                            torch_versions=["2.13", "2.14"]), zoo.model_infos(zoo.catalog()))[1]
    for job_id, version, compiled_ms, first in ((ids[0], "2.13.0+cpu", 1.0, 10.0), (ids[1], "2.14.1+cu130", 0.8, 10.2)):
        claim = queue.claim_next(worker, "w", ["cpu"], ["simplenet"], 60, torch_version=version)
        assert claim.job_id == job_id
        queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 2.0, "compiled_ms": compiled_ms, "speedup": 2.0 / compiled_ms, "compiled_first_call_s": first,
            "eager_first_call_s": 0.1, "recompiles": 0, "torch_version": version})
    at = ok(page("compare", kind="torch versions"))
    assert at.multiselect(key="vs").value == [1]
    table = at.dataframe[0].value  # the Styler's data
    assert table.iloc[0]["torch A → B"] == "2.13.0+cpu → 2.14.1+cu130"
    assert (table.iloc[0]["speedup Δ"], table.iloc[0]["compiled ms Δ"], table.iloc[0]["cold first call s Δ"]) == \
        ("+25.0%", "-20.0%", "+2.0%")
    styles = at.dataframe[0].proto.arrow_data.styler.styles
    assert "rgba(44, 160, 44" in styles and "rgba(214, 39, 40" not in styles  # better twice, the first call within 5%
    results = ok(page("results"))
    assert "Torch versions: simplenet" in [s.value for s in results.subheader]


def test_results_without_data_points_to_submit(lab):  # noqa: F811 (the fixture)
    at = ok(page("results"))
    assert any("No finished jobs yet" in t for t in texts(at.info))


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_compare_sweeps_and_runs(results):
    at = ok(page("compare", a="1", b="5"))
    assert at.selectbox(key="a").value == 1 and at.selectbox(key="b").value == 5
    assert [s.value for s in at.subheader] == ["Spec", "Environment", "Numbers"]
    spec = at.dataframe[0].value  # a Styler's data
    assert "field" in spec.columns
    numbers = at.dataframe[2].value  # 24 matched combinations x the 5 default metrics
    assert len(numbers) == 120 and list(numbers.columns[-5:]) == ["metric", "A", "B", "Δ%", "note"]
    # the three clocks' speedups, each under its own name
    assert set(numbers["metric"]) == {"speedup", "throughput_speedup", "gpu_speedup", "compiled_ms",
                                      "first_call_cold_s"}  # the cold runs' first call, as the answer's
    assert "background-color" in at.dataframe[2].proto.arrow_data.styler.styles  # one model: changes are judged
    assert len(at.get("vega_lite_chart")) == 1  # A's and B's speedups
    at = ok(page("compare", kind="runs"))
    assert [s.value for s in at.subheader] == ["Spec and status", "Environment", "Numbers", "Compiler story"]
    ok_runs = [r["job_id"] for r in export_records(results) if r["status"] == "succeeded"]
    # the two newest runs with numbers, in the link
    assert (at.query_params["ja"], at.query_params["jb"]) == (str(ok_runs[-2]), str(ok_runs[-1]))


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_compare_starts_from_sweeps_with_results_and_says_when_nothing_matches(results):
    from lab.sweep import SweepRequest

    catalog = zoo.model_infos(zoo.catalog())
    _, ids, _ = queue.submit(results, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                                   backends=["aot_eager"], name="never ran"), catalog)
    queue.cancel(results, ids[0])
    newest = max(s["sweep_id"] for s in export_records(results))
    at = ok(page("compare"))
    numbers = at.dataframe[2].value  # this pair has combinations one side did not run: "–", never "None"
    assert numbers[["A", "B", "Δ%"]].eq("–").any().any() and not numbers.isin(["None", "nan"]).any().any()
    a, b = at.selectbox(key="a").value, at.selectbox(key="b").value
    assert newest not in (a, b)  # the cancelled sweep
    model = {r["sweep_id"]: r["model"] for r in export_records(results)}
    assert model[a] == model[b] and a < b  # the newest sweep with results, and the newest before it of its model
    at = ok(page("compare", a="1", b=str(newest)))
    assert any("No configuration has results in both sweeps" in t for t in texts(at.warning))
    # two different models: side by side, but nothing is called better or worse
    model = {r["sweep_id"]: r["model"] for r in export_records(results)}
    other = next(i for i in sorted(model) if model[i] != model[1])
    cross = ok(page("compare", a="1", b=str(other)))
    assert any("nothing is coloured" in t for t in texts(cross.warning))
    styles = cross.dataframe[2].proto.arrow_data.styler.styles
    assert "background-color" not in styles  # no cell coloured better or worse
    runs = ok(page("compare", kind="runs"))
    ja, jb = runs.selectbox(key="ja").value, runs.selectbox(key="jb").value
    by_job = {r["job_id"]: r["model"] for r in export_records(results)}
    assert by_job[ja] == by_job[jb] and not any("nothing is coloured" in t for t in texts(runs.warning))
    assert not at.get("vega_lite_chart")  # no empty plot with made-up axes


# -- Results: issue 5's views ----------------------------------------------------------------------------------
def trace_names(at, key: str) -> set[str]:
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)
    return {t.get("name") for t in spec["data"]}


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_results_show_timing_spread_repeats_host_latency_and_the_roofline(results):
    at = ok(page("results", plot="complexnet"))  # the synthetic repeat sweep is complexnet's
    timing = next(c for c in at.caption if c.value.startswith("Timing: "))
    assert "cuda: latency = perf_counter around one synchronous call" in timing.value
    assert "5%" in timing.proto.help and "left out of the answer" in timing.proto.help  # how to read it: hovered
    assert "95% interval holds the spread between fresh processes" in at.subheader[0].proto.help
    at = ok(page("results", plot="complexnet", view="First call"))
    assert [s.value for s in at.subheader] == ["The answer for complexnet", "Warmup and launch overhead: complexnet"]
    assert {"dynamo tracing", "codegen + kernel compile", "eager first call"} <= trace_names(at, "plot_breakdown")
    assert set(HOST_COLORS) == trace_names(at, "plot_host")
    at = ok(page("results", plot="complexnet", view="Repeats"))
    assert [s.value for s in at.subheader] == ["The answer for complexnet", "Spread across repeats: complexnet"]
    pairs, summary = at.dataframe[0].value, at.dataframe[1].value
    assert list(pairs.columns) == ["group", "faster", "slower", "verdict", "ratio", "gap %", "faster ms", "slower ms"]
    assert set(pairs["verdict"]) <= {"✅ separated", "≈ not separable"} and "eager" in set(pairs["slower"])
    assert (summary["runs"] == 4).all() and {"compiled_ms spread %", "speedup min", "eager_ms max"} <= set(summary.columns)
    assert [c.key for c in at.get("plotly_chart")] == ["plot_repeats"]
    at = ok(page("results", plot="complexnet", view="Roofline"))
    assert [s.value for s in at.subheader][1:] == ["Roofline: every model in view"]
    assert {"NVIDIA H100 80GB HBM3 · float32: 51.2 TFLOP/s, 2,952 GB/s", "complexnet", "mlp"} <= \
        trace_names(at, "plot_roofline")
    assert any(t.startswith("Not on the log axes, with 0 counted FLOPs") and "sincos on NVIDIA" in t for t in texts(at.caption))
    assert not any("No measured ceilings" in t for t in texts(at.caption))
    # the table leads with the job, its result and whether it can be trusted
    at = ok(page("results", plot="complexnet", view="Table"))
    assert at.dataframe[-1].proto.column_order[:18] == ["job_id", "sweep", "status", "model", "batch_size", "backend",
                                                       "mode", "dynamic", "fullgraph", "scope", "speedup", "throughput_speedup",
                                                       "gpu_speedup", "noisy", "host_bound", "speedup_spread",
                                                       "eager_spread", "compiled_spread"]
    assert set(at.dataframe[-1].value["noisy"].dropna()) == {"⚠ noisy", "ok"}  # empty: no result


def test_results_roofline_colour_lives_in_the_link(results):
    at = ok(page("results", rcolor="mode", view="Roofline"))
    assert at.segmented_control(key="rcolor").value == "mode"
    assert {"default", "max-autotune", "reduce-overhead"} <= trace_names(at, "plot_roofline")


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_results_without_ceilings_repeats_or_cuda_say_so(lab, fill_synthetic):  # noqa: F811 (the fixture)
    fill_synthetic(30, seed=2, device="cpu", ceilings=False)

    def tab(view):  # a regular sweep: no repeats
        return ok(page("results", sweep="#1 simplenet sweep 1", view=view))

    at = tab("Speedup")
    assert [c.key for c in at.get("plotly_chart")] == ["plot_ncalls"]
    assert any(t.startswith("Timing: cpu: latency = perf_counter per call") for t in texts(at.caption))
    at = tab("First call")
    assert [c.key for c in at.get("plotly_chart")] == ["plot_breakdown"]
    assert any("CUDA jobs" in t for t in texts(at.info))  # device vs host: nothing to draw on the CPU
    at = tab("Repeats")
    assert any("No configuration of this model was repeated" in t and "--repeat" in t for t in texts(at.caption))
    at = tab("Roofline")
    missing = [t for t in texts(at.caption) if t.startswith("No measured ceilings")]
    assert len(missing) == 1 and "AMD EPYC" in missing[0] and "python -m runner calibrate --device cpu" in missing[0]
    assert trace_names(at, "plot_roofline") == {"simplenet"}  # the points, without a line


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_results_plots_follow_a_new_result(results):
    """The plots are built once per (data, filters, choices) and shared; a new result is a new build."""
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest

    at = ok(page("results", plot="complexnet", rcolor="mode", view="Roofline"))
    assert "max-autotune-no-cudagraphs" not in trace_names(at, "plot_roofline")
    queue.submit(results, SweepRequest(model="complexnet", batch_sizes=[32], modes=["max-autotune-no-cudagraphs"],
                                       device="cuda"), {"complexnet": ModelInfo("complexnet", "d")})
    claim = queue.claim_next(results, "w", ["cuda"], ["complexnet"], 60)
    queue.finish(results, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
        "eager_ms": 4.3, "compiled_ms": 2.9, "speedup": 1.48, "flops": 1.056e11, "min_bytes": 7.09e7,
        "achieved_tflops": 36.4, "achieved_gbps": 24.4, "device_name": "NVIDIA H100 80GB HBM3"})
    ok(at.run())
    assert "max-autotune-no-cudagraphs" in trace_names(at, "plot_roofline")


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_results_clock_switch_draws_each_clock_by_name(results):
    at = ok(page("results", plot="mlp", chart="Speedup"))
    assert at.segmented_control(key="clock").value == "latency"
    latency = at.get("plotly_chart")[0].proto.spec
    at = ok(page("results", plot="mlp", chart="Speedup", clock="GPU time"))
    assert at.segmented_control(key="clock").value == "GPU time"
    gpu = at.get("plotly_chart")[0].proto.spec
    assert "Speedup vs batch size (GPU time)" in gpu and "Speedup vs batch size (GPU time)" not in latency
    assert any("Showing **GPU time" in t for t in texts(at.caption))
    at = ok(page("results", plot="mlp", chart="Latency", clock="GPU time"))
    assert "Steady-state GPU time vs batch size" in at.get("plotly_chart")[0].proto.spec
    at = ok(page("results", plot="mlp", chart="Warmup", clock="GPU time"))  # the clock changes nothing here
    assert "clock" not in [s.key for s in at.segmented_control]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_repeats_judge_eager_as_the_answer_does(lab):  # noqa: F811 (the fixture)
    """Three processes whose whole host speed differs (eager 1.0-1.4 ms, compiled 1.32-1.84 ms: the ranges overlap)
    while every process's paired rounds read 0.76x: the answer says slower, and so do the Repeats tab's order and
    pairs, with the answer's ratio and medians (issue 27: one number per configuration on every tab)."""
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest

    queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=[32], device="cpu", repeat=3, process_repeats=1),
                 {"simplenet": ModelInfo("simplenet", "d")})
    for eager, center in ((1.0, 0.758), (1.4, 0.761), (1.2, 0.759)):
        claim = queue.claim_next(lab, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(lab, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": eager, "compiled_ms": round(eager / center, 4), "speedup": center, "round_speedup": center,
            "round_speedup_se": 0.002, "eager_first_call_s": 0.01, "compiled_first_call_s": 3.0,
            "device_name": "cpu"})
    from db.reports import report

    (row,) = report(lab)
    assert row.speedup < 0.77 and row.verdict.startswith("slower")
    (shown,) = answer_table(ok(page("results"))).to_dict(orient="records")
    assert shown["verdict"] == row.verdict
    at = ok(page("results", view="Repeats"))
    chain = next(t for t in texts(at.markdown) if t.startswith("- **"))
    assert md("eager < ") in chain, chain  # eager first: faster, separated by the answer's interval
    pairs = at.dataframe[0].value
    (eager_pair,) = pairs[(pairs["faster"] == "eager") | (pairs["slower"] == "eager")].to_dict(orient="records")
    assert eager_pair["faster"] == "eager" and eager_pair["verdict"] == "✅ separated"
    assert abs(eager_pair["ratio"] - 1 / row.speedup) < 1e-9 and eager_pair["gap %"] != eager_pair["gap %"]
    summary = at.dataframe[1].value
    assert abs(summary["compiled_ms"].iloc[0] - row.compiled_ms) < 1e-9 and shown["compiled ms"] == f"{row.compiled_ms:.4g}"


def test_compare_reads_each_sweeps_answer(lab):  # noqa: F811 (the fixture)
    """Compare's speedup and latencies of a configuration are the ones its answer gives (the mean over its
    processes' paired rounds), not a second statistic of the same runs (the median of the jobs' own speedups)."""
    from db.reports import report
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest

    sweeps = []
    for name, speedups in (("one", (0.70, 0.80, 0.75)), ("two", (0.90, 0.84, 0.88))):
        sid, _, _ = queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=[32], device="cpu", repeat=3,
                                                   process_repeats=1, name=name),
                                 {"simplenet": ModelInfo("simplenet", "d")})
        sweeps.append(sid)
        for s, center in zip(speedups, (0.758, 0.761, 0.759) if name == "one" else (0.86, 0.87, 0.865)):
            claim = queue.claim_next(lab, "w", ["cpu"], ["simplenet"], 60)
            queue.finish(lab, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
                "eager_ms": 1.0, "compiled_ms": 1.0 / s, "speedup": s, "round_speedup": center,
                "round_speedup_se": 0.002, "eager_first_call_s": 0.01, "compiled_first_call_s": 3.0,
                "device_name": "cpu"})
    at = ok(page("compare", a=str(sweeps[0]), b=str(sweeps[1])))
    table = at.dataframe[2].value
    (speedup,) = table[table["metric"] == "speedup"].to_dict(orient="records")
    (a,), (b,) = (report(lab, sweep_ids=[s]) for s in sweeps)
    assert (speedup["A"], speedup["B"]) == (f"{a.speedup:.4g}", f"{b.speedup:.4g}")  # not 0.75 and 0.88 (medians)


def test_compare_runs_warns_of_a_disturbed_run_not_of_old_scatter(lab):  # noqa: F811 (the fixture)
    """A run an older worker flagged noisy for its scatter answers (scatter is no cause); a run disturbed by a measured
    cause is out of the answer, and Compare says so with the cause."""
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest

    _, ids, _ = queue.submit(lab, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", repeat=2,
                                               process_repeats=1), {"simplenet": ModelInfo("simplenet", "d")})
    flags = ({"noisy": True, "noise_note": "speedup spread 7% (past 5%)"},
             {"noisy": True, "disturbed": True, "noise_note": "another process used 0.9 of the cores"})
    for extra in flags:
        claim = queue.claim_next(lab, "w", ["cpu"], ["simplenet"], 60)
        queue.finish(lab, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 1.0, "compiled_ms": 0.8, "speedup": 1.25, "device_name": "cpu", **extra})
    at = ok(page("compare", kind="runs", ja=str(ids[0]), jb=str(ids[1])))
    warned = [w.value for w in at.warning]
    cause = md("another process used 0.9 of the cores")  # a worker's words, shown as text
    assert warned == [f"Run B (#{ids[1]}) was disturbed: {cause}. Its numbers are out of the answer; no change "
                      "against it is coloured."], warned


def test_a_link_naming_a_missing_sweep_or_value_says_so_then_shows_the_fallback(results):
    at = ok(page("results", sweep="999", model="mlp"))
    (warning,) = [w for w in texts(at.warning) if "not here" in w]
    assert "Sweep: 999" in warning and "every job the rest of the link keeps" in warning
    assert at.multiselect(key="model").value == ["mlp"]  # the rest of the link holds
    assert warning in texts(ok(at.run()).warning)  # still said on the page's next run (its live refresh)
    at = ok(page("results", model="mlp"))
    assert not [w for w in texts(at.warning) if "not here" in w]  # a link naming what is there: no warning


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_compare_says_when_its_link_names_a_missing_sweep_then_shows_the_fallback(results):
    at = ok(page("compare", a="999", b="5"))
    (warning,) = [w for w in texts(at.warning) if "999" in w]
    assert warning.startswith("Sweep A: the link names 999, which is not here; showing ")
    assert at.selectbox(key="b").value == 5 and at.selectbox(key="a").value not in (None, 999)
    assert not [w for w in texts(ok(page("compare", a="1", b="5")).warning) if "not here" in w]
