"""Every page through Streamlit's AppTest, on a real SQLite file: no exception, the widgets are there,
a submit stores exactly the jobs the form shows, bad input is reported next to its field, links open
the view they name. A live worker row publishing the real zoo stands in for the worker process."""
import io
import json
import zipfile
from html.parser import HTMLParser

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.charts.diagnosis import HOST_COLORS
from dashboard.markup import md
from dashboard.state.embedded import ENV_SWITCH
from db import queue
from db.models import JobStatus
from db.results import export_records
from runner import zoo
from tests.conftest import ROOT

APP = str(ROOT / "dashboard" / "main.py")


@pytest.fixture
def lab(db_url, engine, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")  # no worker process: these tests are about the pages
    return engine


@pytest.fixture
def worker(lab):
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(lab, "host:1:any:test", "host", 1, None,
                          {"devices": ["cpu"], "device_name": None, "torch_version": "2.13.0", "models": models})
    return lab


def page(name: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.switch_page(f"screens/{name}.py")
    return at.run()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(elements) -> list[str]:
    return [e.value for e in elements]


class _Table(HTMLParser):
    """The cells of an st.html table as text (entities decoded), and which rows are drawn faded."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.grey, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
            self.grey.append(("class", "grey") in attrs)
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def answer_table(at: AppTest) -> pd.DataFrame:
    """The answer table as the page draws it (dashboard.panels.answer_table.table_html): its header, its cells as text, and a
    `faded` column (a configuration with no answer)."""
    (body,) = [h.value for h in at.html if "<table>" in h.value]
    parsed = _Table()
    parsed.feed(body)
    header, *rows = parsed.rows
    return pd.DataFrame(rows, columns=header).assign(faded=parsed.grey[1:])


def every_column(at: AppTest) -> pd.DataFrame:
    """The answer with every column, as the dialog behind its "Every column" button shows it."""
    at = ok(at.button(key="answer_every").click().run())
    return at.dataframe[0].value


# -- app frame and Submit -------------------------------------------------------------------------------
def test_sidebar_names_the_database_and_the_workers(worker, db_url):
    at = ok(page("submit"))
    assert db_url in texts(at.sidebar.text)
    assert [m.value for m in at.sidebar.metric] == ["1"]
    assert any("CPU only" in t for t in texts(at.sidebar.markdown))
    assert any(f"{ENV_SWITCH}=0" in t for t in texts(at.sidebar.caption))


def test_submit_waits_for_a_worker_instead_of_an_empty_form(lab):
    at = ok(page("submit"))
    assert any("No worker is alive yet" in t for t in texts(at.info)) and not at.selectbox


def test_submit_form_has_every_field_and_a_live_count(worker):
    at = ok(page("submit"))
    assert {s.label for s in at.selectbox} == {"Model", "Task", "Device", "dtype"}
    assert {t.label for t in at.text_input} == {"Batch sizes", "Schedule", "Sweep name"}
    assert {n.label for n in at.number_input} == {"Rounds", "Timeout (s)", "Repeat", "Re-runs", "Processes"}
    assert {p.label for p in at.button_group} >= {"Backends", "Modes", "Dynamic", "Fullgraph"}
    assert at.selectbox(key="f_model").value == "simplenet" and at.selectbox(key="f_device").value == "cpu"
    assert any(t.startswith("#### 1 job will be created") for t in texts(at.markdown))
    at.text_input(key="f_batch").input("8, 16, 32").run()
    at.button_group(key="f_dynamics").set_value(["false", "true"]).run()
    assert any(t.startswith("#### 6 jobs will be created") for t in texts(at.markdown))
    assert at.button(key="f_submit").label == "Submit 6 jobs"


def test_submit_creates_exactly_the_jobs_shown(worker):
    at = ok(page("submit"))
    at.text_input(key="f_batch").input("8, 32").run()
    at.button_group(key="f_dynamics").set_value(["false", "true"]).run()
    at.text_input(key="f_schedule").input("8, 16").run()
    at.number_input(key="f_iters").set_value(5).run()
    at.text_input(key="f_name").input("from the form").run()
    ok(at.button(key="f_submit").click().run())
    records = export_records(worker)
    assert [(r["batch_size"], r["dynamic"]) for r in records] == [(8, False), (8, True), (32, False), (32, True)]
    assert {(r["model"], r["device"], r["iters"], r["sweep"], tuple(r["schedule"])) for r in records} == {
        ("simplenet", "cpu", 5, "from the form", (8, 16))}
    assert any("4 job(s) queued" in t for t in texts(at.success))
    # the same sweep is not queued twice by a second click: that takes a tick
    assert at.button(key="f_submit").disabled
    assert any(t.startswith("#### 4 jobs just queued") for t in texts(at.markdown))
    again = next(c for c in at.checkbox if c.label.startswith("Queue this same sweep again"))
    ok(again.check().run())
    ok(at.button(key="f_submit").click().run())
    assert len(export_records(worker)) == 8 and at.button(key="f_submit").disabled
    assert not next(c for c in at.checkbox if c.label.startswith("Queue this same sweep again")).value
    at.text_input(key="f_batch").input("8").run()  # a changed form is a new sweep
    assert not at.button(key="f_submit").disabled and not any(
        c.label.startswith("Queue this same sweep again") for c in at.checkbox)


def test_bad_input_is_reported_next_to_its_field_and_nothing_is_stored(worker):
    at = ok(page("submit"))
    at.text_input(key="f_batch").input("8, abc").run()
    assert texts(at.error) == [md("Batch sizes: expected an integer, got 'abc'")]  # typed text stays text
    assert at.button(key="f_submit").disabled
    # the error sits in the matrix column, right under the batch-size box
    middle = at.columns[1]
    assert texts(middle.error) == [md("Batch sizes: expected an integer, got 'abc'")]
    at.text_input(key="f_batch").input("8").run()
    at.button_group(key="f_modes").set_value([]).run()
    assert texts(at.columns[1].error) == [md("Modes: choose at least one value")]
    assert export_records(worker) == []


def test_preset_in_the_link_fills_the_form_and_submits_the_seed_experiment(worker):
    at = ok(page("submit", preset="static-vs-dynamic"))
    assert at.button_group(key="preset").value == "static-vs-dynamic"
    assert at.text_input(key="f_batch").value == "32" and at.text_input(key="f_schedule").value == "32, 64"
    ok(at.button(key="f_submit").click().run())
    records = export_records(worker)
    assert [(r["model"], r["batch_size"], r["dynamic"], r["schedule"]) for r in records] == [
        ("simplenet", 32, False, [32, 64]), ("simplenet", 32, True, [32, 64])]


def test_an_edited_preset_no_longer_carries_its_name(worker):
    """The preset's sweep name stays while the form is the preset; a changed field clears it, so the
    stored sweep is not named after an experiment it is not."""
    at = ok(page("submit", preset="static-vs-dynamic"))
    assert at.text_input(key="f_name").value == "static vs dynamic 32→64"
    ok(at.text_input(key="f_batch").input("8").run())
    assert at.text_input(key="f_name").value == ""
    assert any("preset's sweep name was cleared" in t for t in texts(at.caption))
    ok(at.text_input(key="f_name").input("my own").run())
    ok(at.button(key="f_submit").click().run())
    assert {r["sweep"] for r in export_records(worker)} == {"my own"}


def test_a_sweep_name_already_taken_is_pointed_out(worker):
    """Two sweeps may share a name (the same experiment again); the form says so and how they are told apart."""
    at = ok(page("submit", preset="static-vs-dynamic"))
    ok(at.button(key="f_submit").click().run())
    assert not any("already named" in t for t in texts(at.caption))  # the sweep just sent from here is not news
    at = ok(page("submit", preset="static-vs-dynamic"))  # another visit, the same preset and name
    [note] = [t for t in texts(at.caption) if "already named" in t]
    assert "1 sweep is already named “static vs dynamic 32→64” (newest #1" in note
    ok(at.button(key="f_submit").click().run())
    [note] = [t for t in texts(at.caption) if "already named" in t]  # the other one still is
    assert "(newest #1" in note and {r["sweep_id"] for r in export_records(worker)} == {1, 2}


def test_whole_model_vs_function_level_preset_is_two_sweeps(worker):
    at = ok(page("submit"))
    ok(at.button_group(key="preset").set_value("whole-vs-functions").run())
    assert any("2 jobs in 2 sweeps" in t for t in texts(at.markdown))
    ok(at.button(key="f_submit").click().run())
    records = export_records(worker)
    assert [(r["model"], r["model_args"]["scope"], r["mode"], r["sweep_id"]) for r in records] == [
        ("localopt", "model", "max-autotune", 1), ("localopt", "functions", "max-autotune", 2)]


@pytest.mark.parametrize("preset, model", [("modes", "complexnet"), ("fullgraph-break", "convnetmix"),
                                           ("sincos-first-call", "sincos")])
def test_every_other_preset_makes_a_valid_sweep(worker, preset, model):
    at = ok(page("submit", preset=preset))
    assert at.selectbox(key="f_model").value == model and not at.error
    assert not at.button(key="f_submit").disabled


# -- Queue ------------------------------------------------------------------------------------------------
def submit_some(engine, n=3):
    from lab.sweep import SweepRequest
    return queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=list(range(1, n + 1)), device="cpu",
                                             name="q"), zoo.model_infos(zoo.catalog()))[1]


def test_queue_shows_phase_progress_and_why_jobs_wait(worker):
    ids = submit_some(worker)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.heartbeat_job(worker, claim.job_id, claim.token, 60, "measuring", 0.4)
    at = ok(page("queue"))
    assert {m.label for m in at.metric} >= {"⏳ queued", "▶️ running"}
    assert any(f"#{ids[0]}" in p.proto.text and "measuring" in p.proto.text for p in at.get("progress"))
    table = at.dataframe[0].value
    assert table["job"].tolist() == ids[::-1]
    assert table.set_index("job").loc[ids[0], "phase"] == "measuring"
    assert table.set_index("job").loc[ids[1], "note"] == "waiting for a free worker"
    assert at.multiselect(key="qsweep") and at.button_group(key="qstatus")


def test_queue_says_a_job_waits_for_a_torch_no_live_worker_has(worker):
    from lab.sweep import SweepRequest

    ids = queue.submit(worker, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu",
                                            torch_versions=["2.99", "2.13"]), zoo.model_infos(zoo.catalog()))[1]
    table = ok(page("queue")).dataframe[0].value.set_index("job")
    assert table.loc[ids[0], "note"] == "no live worker has torch 2.99 (live: 2.13.0)"
    assert table.loc[ids[1], "note"] == "waiting for a free worker" and "torch 2.13" in table.loc[ids[1], "what"]
    why = md("no live worker has torch 2.99 (live: 2.13.0)")  # escaped: a version text is shown as text
    assert any(f"1 queued job waits: {why} (#{ids[0]})" in w for w in texts(ok(page("queue")).warning))


def test_queue_cancel_and_resubmit_through_the_form(worker):
    ids = submit_some(worker)
    at = ok(page("queue"))
    at.text_input[0].input(f"{ids[0]}-{ids[1]}")
    ok(at.button[0].click().run())  # "Cancel jobs"
    assert [r["status"] for r in export_records(worker)] == ["cancelled", "cancelled", "queued"]
    at.text_input[0].input(f"{ids[2]}")
    ok(at.button[1].click().run())  # "Re-submit jobs": still queued
    assert any("still queued; cancel it first" in t for t in texts(at.error))
    at.text_input[0].input(f"{ids[0]}, 99")
    ok(at.button[1].click().run())
    assert texts(at.error) == ["Job ids: no such job: 99"] and len(export_records(worker)) == 3
    at.text_input[0].input(f"{ids[0]}")
    ok(at.button[1].click().run())
    records = export_records(worker)
    assert len(records) == 4 and records[-1]["status"] == "queued" and records[-1]["batch_size"] == 1
    at.text_input[0].input("twelve")
    ok(at.button[0].click().run())
    assert any(md("'twelve' is not a job id") in t for t in texts(at.error))  # typed text stays text


def test_queue_filters_come_from_the_link(worker):
    ids = submit_some(worker)
    queue.cancel(worker, ids[0])
    at = ok(page("queue", qstatus="cancelled", job=str(ids[0])))
    assert at.dataframe[0].value["job"].tolist() == [ids[0]]
    detail = at.expander[0]  # a link naming a job opens its detail, first on the page
    assert detail.label == "Job detail" and detail.proto.expanded
    assert any("cancelled by user" in c.value for c in detail.code)
    other = submit_some(worker, 2)  # another sweep: the counts follow the sweep filter
    at = ok(page("queue", qsweep=["#2 q"]))
    assert at.multiselect(key="qsweep").value == [2]
    counts = {m.label: m.value for m in at.metric}
    assert (counts["⏳ queued"], counts["🚫 cancelled"]) == ("2", "0") and len(at.dataframe[0].value) == len(other)


def test_a_succeeded_job_detail_shows_its_numbers_and_links_to_its_sweep(worker):
    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.5,
                         "eager_first_call_s": 0.1, "recompiles": 0})
    at = ok(page("queue", job=str(ids[0])))
    assert {m.label: m.value for m in at.metric if m.label in ("Speedup", "Compiled first call")} == {
        "Speedup": "2.000×", "Compiled first call": "9.5 s"}
    (link,) = [e for e in at.get("page_link") if "on Results" in e.proto.label]
    assert link.proto.page == "results" and link.proto.query_string == "sweep=%231+q&plot=simplenet"
    assert ok(page("results", sweep="#1 q")).multiselect(key="sweep").value == ["#1 q"]  # the link's filter holds
    assert "cold cache" in at.dataframe[0].value.set_index("job").loc[ids[0], "what"]


def test_a_graph_break_line_in_a_job_error_is_shown_as_written(worker):
    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    line = "return self.classifiers[np.random.randint(0, len(self.classifiers))](x)"
    queue.finish(worker, claim.job_id, claim.token, JobStatus.FAILED, error=f"graph break at convnetmix.py:45: {line}")
    at = ok(page("queue", job=str(ids[0])))
    assert any(line in c.value for c in at.expander[0].code)  # code, not Markdown (which ate the brackets)


# -- Results and Compare ------------------------------------------------------------------------------------
@pytest.fixture
def results(lab, fill_synthetic):
    return fill_synthetic(240, seed=1)


def test_results_page_plots_tables_and_downloads(results):
    at = ok(page("results"))
    # the Speedup tab opens first, on its N-calls chart: one chart at a time; no other tab ran
    assert [t.label for t in at.tabs] == ["Speedup", "First call", "Repeats", "Roofline", "Failures", "Table"]
    assert at.segmented_control(key="chart").value == "N calls"
    assert [c.key for c in at.get("plotly_chart")] == ["plot_ncalls"]
    # the answer table above the tabs, as text the browser lays out at once; its grid with every column waits behind
    # a button (tests/dashboard/test_answer_page.py): no dataframe's code before the chart
    assert len(answer_table(at)) > 0 and len(at.dataframe) == 0
    assert {m.label for m in at.metric} >= {"Jobs shown", "Succeeded", "Did not succeed", "Median speedup"}
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


def test_compare_sets_one_sweep_under_two_torch_versions_side_by_side(worker):
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


def test_results_without_data_points_to_submit(lab):
    at = ok(page("results"))
    assert any("No finished jobs yet" in t for t in texts(at.info))


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
                                      "compiled_first_call_s"}
    assert "background-color" in at.dataframe[2].proto.arrow_data.styler.styles  # one model: changes are judged
    assert len(at.get("plotly_chart")) == 1
    at = ok(page("compare", kind="runs"))
    assert [s.value for s in at.subheader] == ["Spec and status", "Environment", "Numbers"]
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
    assert not at.get("plotly_chart")  # no empty plot with made-up axes


# -- Results: issue 5's views ----------------------------------------------------------------------------------
def trace_names(at, key: str) -> set[str]:
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)
    return {t.get("name") for t in spec["data"]}


@pytest.mark.slow  # several page runs over hundreds of jobs: seconds
def test_results_show_timing_spread_repeats_host_latency_and_the_roofline(results):
    at = ok(page("results", plot="complexnet"))  # the synthetic repeat sweep is complexnet's
    timing = next(t for t in texts(at.caption) if t.startswith("Timing: "))
    assert "cuda: latency = perf_counter around one synchronous call" in timing and "5%" in timing
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
def test_results_without_ceilings_repeats_or_cuda_say_so(lab, fill_synthetic):
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


def test_the_job_page_shows_kernels_caches_and_the_output_code(worker, tmp_path):
    from lab import artifact_files

    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    code = "cpp_fused_sin_0 = async_compile.cpp_pybinding(['float*'], '')\ndef call(args):\n    cpp_fused_sin_0(buf0)\n"
    report = io.BytesIO()
    with zipfile.ZipFile(report, "w") as z:  # the shape of tlparse's report: an index and a page per compile
        z.writestr("index.html", "<h2>Stack trie</h2>")
        z.writestr("-_0_0_0/inductor_output_code_1.html", "<pre>cpp_fused_sin_0</pre>")
    artifact_files.write_dir(tmp_path, {"output_code": code, "trace": "V1124 {\"dynamo_start\": {}}\n",
                                   "tlparse": report.getvalue()})
    layers = {"fxgraph": {"hit": 0, "miss": 1, "bypass": 0}, "aotautograd": {"hit": 0, "miss": 0, "bypass": 1,
                                                                             "bypass_reasons": ["Unsupported: hooks"]}}
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED, artifacts=artifact_files.read_dir(tmp_path),
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.5,
                         "eager_kernels": 3, "compiled_kernels": 1, "eager_host_ops": 3, "compiled_host_ops": 0,
                         "detail": {"cache_layers": layers}})
    queue_page = ok(page("queue", job=str(ids[0])))
    assert {m.label: m.value for m in queue_page.metric}["Kernels per call"] == "3 → 1"
    (link,) = [e for e in queue_page.get("page_link") if "output code" in e.proto.label]
    assert link.proto.page == "job" and link.proto.query_string == f"job={ids[0]}"
    at = ok(page("job", job=str(ids[0])))
    metrics = {m.label: m for m in at.metric}
    assert metrics["Kernels per call"].value == "3 → 1" and metrics["Host ops per call"].value == "3 → 0"
    caches = at.dataframe[0].value.set_index("bypass reason")
    assert caches.loc["Unsupported: hooks", "bypass"] == 1
    assert any("fxgraph: 1 miss" in c.value and "aotautograd: 0 miss, 1 bypass (Unsupported: hooks)" in c.value
               for c in at.caption)  # a cold job: why its first call compiled
    (shown,) = [c for c in at.code if "cpp_fused_sin_0(buf0)" in c.value]
    assert shown.language == "python"
    assert [b.proto.label for b in at.get("download_button")] == ["Download output_code", "Download report (zip)"]
    pages = at.selectbox(key="tlparse_page")
    assert pages.options == ["index.html", "-_0_0_0/inductor_output_code_1.html"]  # the index first
    (frame,) = at.get("iframe")  # the report's route serves the page, sandboxed (tests/unit/test_report.py)
    assert frame.proto.src == f"/tlparse/{ids[0]}/index.html" and not frame.proto.srcdoc
    assert [b.proto.url for b in at.get("link_button")] == [f"/tlparse/{ids[0]}/index.html"]
    shown_as_code = [o.content for o in at.get("button_group")[0].proto.options]
    assert shown_as_code == ["output_code", "trace"]  # the report's zip is no code to show


def test_the_job_page_says_when_cuda_graphs_were_skipped(worker):
    """The detail is what runner/cudagraphs.py writes on a GPU, written here by hand: this machine has none."""
    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    graphs = {"skipped": True, "skip_reasons": ["skipping cudagraphs due to mutated inputs (1 instances)"],
              "skips": 1, "rerecords_in_rounds": 0, "pool_mb": None}
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.9, "speedup": 1.05, "detail": {"cudagraphs": graphs}})
    at = ok(page("job", job=str(ids[0])))
    assert [w.value for w in at.warning] == ["CUDA graphs were skipped: this job ran without them."]
    assert any(c.value == graphs["skip_reasons"][0] for c in at.code)
    assert any("Re-recordings during the timed rounds: 0 · graph pool: –" in m.value for m in at.markdown)


def test_a_job_detail_draws_its_timeline_as_one_stacked_bar_with_phase_names_escaped(worker):
    from db.results import store_timeline
    from lab import timeline

    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 3.0,
                         "eager_first_call_s": 0.5, "detail": {}})
    iv = [{"phase": "claim", "start": 0, "end": 0.1}, {"phase": "eager first call", "start": 1, "end": 1.5},
          {"phase": "compiled first call", "start": 1.5, "end": 4.5}, {"phase": "<b>odd</b>", "start": 4.5, "end": 5},
          {"phase": "rounds", "start": 5, "end": 7}, {"phase": "store", "start": 7.5, "end": 8}]
    assert store_timeline(worker, claim.job_id, {}, timeline.assemble(iv, 0, 8))
    at = ok(page("queue", job=str(ids[0])))
    (chart,) = at.get("plotly_chart")
    import base64

    import numpy as np

    def values(v):  # plotly packs numeric arrays as {"dtype", "bdata"}
        return np.frombuffer(base64.b64decode(v["bdata"]), v["dtype"]).tolist() if isinstance(v, dict) else v

    data = json.loads(chart.proto.spec)["data"]
    bars = sorted(((x0, x, t["name"], txt) for t in data
                   for x0, x, txt in zip(values(t["base"]), values(t["x"]), t["text"])), key=lambda b: b[0])
    assert {y for t in data for y in t["y"]} == {"job"} and {t["orientation"] for t in data} == {"h"}  # one bar
    assert [b[2] for b in bars] == ["claim", "unaccounted", "eager first call", "compiled first call",
                                    "&lt;b&gt;odd&lt;/b&gt;", "rounds", "unaccounted", "store"]
    assert [b[2] for b in bars] == [b[3] for b in bars]  # each segment names its phase
    for a, b in zip(bars, bars[1:]):  # stacked end to end, in time order
        assert b[0] == pytest.approx(a[0] + a[1])
    assert sum(b[1] for b in bars) == pytest.approx(8)
    caption = " ".join(c.value for c in at.caption)
    assert "measurement (first calls, warm-up, rounds) 5.50 s (69%)" in caption and "measurement**" in caption
    picked = ok(page("queue", qsweep=["#1 q"]))  # a sweep picked: its share of wall time that was measurement
    assert any(c.value.startswith("Sweep \\#1 q: 5.5 s of measurement") and "measurement**" in c.value
               for c in picked.caption), [c.value for c in picked.caption]
