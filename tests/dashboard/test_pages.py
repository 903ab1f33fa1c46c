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

from dashboard.markup import md
from dashboard.state import quiet
from dashboard.state.embedded import ENV_SWITCH
from db import queue, views
from db.engine import reading
from db.models import JobStatus, WorkerRow
from db.results import export_records
from runner import zoo
from tests.conftest import ROOT

APP = str(ROOT / "dashboard" / "main.py")


@pytest.fixture
def lab(db_url, engine, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv(ENV_SWITCH, "0")  # no worker process: these tests are about the pages
    monkeypatch.setenv(quiet.WAIT_ENV, "0")  # a page drawn beside a job timed here does not wait (test_quiet_pages)
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


def test_sidebar_says_which_worker_is_paused_for_disk_space_and_why(worker):
    why = "paused: no space left on device under /data (0.0 MB free; claims again above 256 MB)"  # runner.worker.diskpause
    with reading(worker) as s:
        caps = dict(s.get(WorkerRow, "host:1:any:test").capabilities)
    queue.publish_capabilities(worker, "host:1:any:test", {**caps, "paused": why})
    queue.heartbeat_worker(worker, "host:1:any:test", "paused")
    at = ok(page("submit"))
    assert any(t.startswith("0 busy, 0 idle, 1 paused;") for t in texts(at.sidebar.caption))
    assert [w for w in texts(at.sidebar.warning) if "host" in w and "no space left on device under" in w]


def test_submit_waits_for_a_worker_instead_of_an_empty_form(lab):
    at = ok(page("submit"))
    assert any("No worker is alive yet" in t for t in texts(at.info)) and not at.selectbox


def test_submit_form_has_every_field_and_a_live_count(worker):
    at = ok(page("submit"))
    assert {s.label for s in at.selectbox} == {"Model", "Task", "Device", "dtype"}
    assert {t.label for t in at.text_input} == {"Batch sizes", "Schedule", "Traffic", "Calls", "Bucket", "Sweep name", "Tags"}
    assert {n.label for n in at.number_input} == {"Rounds", "Timeout (s)", "Repeat", "Re-runs", "Processes"}
    assert {p.label for p in at.button_group} >= {"Backends", "Modes", "Dynamic", "Fullgraph"}
    assert at.selectbox(key="f_model").value == "simplenet" and at.selectbox(key="f_device").value == "cpu"
    assert any(t.startswith("#### 1 job will be created") for t in texts(at.markdown))
    at.text_input(key="f_batch").input("8, 16, 32").run()
    at.button_group(key="f_dynamics").set_value(["false", "true"]).run()
    assert any(t.startswith("#### 6 jobs will be created") for t in texts(at.markdown))
    assert at.button(key="f_submit").label == "Submit 6 jobs"


def test_the_model_picked_on_submit_is_in_the_link(worker):
    at = ok(page("submit", model="mlp"))  # a copied link's model
    assert at.selectbox(key="f_model").value == "mlp"
    ok(at.selectbox(key="f_model").set_value("sincos").run())
    assert at.query_params["model"] == "sincos"
    assert ok(page("submit", model="no-such-model")).selectbox(key="f_model").value == "simplenet"


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
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
    assert any(": 4 jobs queued (ids 1–4)." in t for t in texts(at.success))
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
    assert not any("jobs queued" in t for t in texts(at.success))  # the queued line is the sent form's, not this one's


def test_a_job_picked_before_a_submit_is_not_what_watching_the_new_sweep_opens(worker):
    """A job id picked on Job or Queue's detail (?job=) stays in the session; a submitted sweep's "Watch them on Queue"
    opens Queue on that sweep, not pinned to the old job's detail."""
    at = ok(page("submit"))
    at.session_state["job"] = "1"
    at.text_input(key="f_batch").input("8").run()
    ok(at.button(key="f_submit").click().run())
    assert "job" not in at.session_state and any(" queued (id" in t for t in texts(at.success))


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


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
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
@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
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
    assert {m.label for m in at.metric} >= {":material/hourglass_empty: queued", ":material/play_arrow: running"}
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
    counts = {m.label.split(": ")[-1]: m.value for m in at.metric}
    assert (counts["queued"], counts["cancelled"]) == ("2", "0") and len(at.dataframe[0].value) == len(other)


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
    assert any(md("fxgraph: 1 miss") in c.value and md("aotautograd: 0 miss, 1 bypass (Unsupported: hooks)") in c.value
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
    """The detail is what runner/child/capture/cudagraphs.py writes on a GPU, written here by hand: this machine has none."""
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


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
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


def test_a_job_without_a_tlparse_report_says_why_and_a_follow_up_names_its_first_run(worker):
    from lab.sweep import SweepRequest

    ids = queue.submit(worker, SweepRequest(model="simplenet", batch_sizes=[1], device="cpu", process_repeats=2),
                       zoo.model_infos(zoo.catalog()))[1]
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    why = "tlparse was not found on the worker (not on its PATH, nor beside its Python): install it [here](x)"
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "detail": {"tlparse_note": why}})
    at = ok(page("job", job=str(ids[0])))
    (said,) = [i.value for i in at.info if "No tlparse report" in i.value]
    assert said == md(f"No tlparse report for this job: {why}.")  # the worker's words as text: no link made of them
    assert not at.get("iframe")
    (repeat,) = [j for j, _, _ in views.job_detail(worker, ids[0])["follow_ups"]]
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    assert claim.job_id == repeat
    queue.finish(worker, repeat, claim.token, JobStatus.SUCCEEDED, result={"eager_ms": 2.0, "compiled_ms": 1.0,
                                                                         "speedup": 2.0, "detail": {}})
    at = ok(page("job", job=str(repeat)))
    assert any(f"its first run, job #{ids[0]}, has the tlparse report" in c.value for c in at.caption)
    assert not [i for i in at.info if "No tlparse report" in i.value]


def test_a_running_compile_says_what_its_configurations_last_cold_compile_took(worker):
    from lab.sweep import SweepRequest

    ids = queue.submit(worker, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", repeat=2,
                                            process_repeats=1), zoo.model_infos(zoo.catalog()))[1]
    first = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(worker, first.job_id, first.token, JobStatus.SUCCEEDED, result={
        "eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 17.2, "first_call_cache": "cold"})
    second = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    assert second.job_id == ids[1]
    queue.heartbeat_job(worker, second.job_id, second.token, 60, "compiling", None)
    at = ok(page("queue"))
    (bar,) = [p.proto.text for p in at.get("progress") if f"#{ids[1]}" in p.proto.text]
    assert "compiling" in bar and "its configuration's last cold compile took 17.2 s" in bar


@pytest.mark.parametrize("name, query", [("submit", {}), ("results", {}), ("compare", {}), ("job", {}),
                                         ("job", {"job": "99"}), ("queue", {})])
@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_page_that_ends_early_still_has_the_sidebar(lab, name, query):
    """The frame draws the sidebar after the page (dashboard/main.py: the page's first chart is not sent behind
    it). A page that ends early (no worker, no results, no such job) ends with resources.end_page: an st.stop()
    there would leave the sidebar undrawn, as every element drawn after it raises."""
    at = ok(page(name, **query))
    assert "Workers alive" in [m.label for m in at.sidebar.metric], (name, query)
    assert at.sidebar.markdown and "Compile Lab" in at.sidebar.markdown[0].value
