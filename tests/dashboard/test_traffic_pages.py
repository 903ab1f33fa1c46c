"""Traffic replay on the pages (issue 29; AppTest, real SQLite): the Submit form's Traffic, Calls and Bucket fields
store the stream the CLI would, a bad one is named under its field with nothing stored; a finished traffic job's
page gives the stream's answer, its counts, the running-total chart, and torch's recompile reasons as text."""
import json

from dashboard.markup import md
from db import queue
from db.models import JobStatus
from db.results import export_records
from lab import traffic
from tests.dashboard.test_pages import lab, ok, page, texts, worker  # noqa: F401 (fixtures)

EVIL = "<b>bold</b> ![x](http://tracker.invalid/x.png)"  # a reason text is torch's, but it is shown as text


def test_the_form_stores_the_stream_and_names_a_bad_field(worker):  # noqa: F811
    at = ok(page("submit"))
    at.text_input(key="f_traffic").input("uniform:1..64").run()
    at.text_input(key="f_calls").input("many").run()
    assert texts(at.error) == [md("Calls: expected an integer, got 'many'")] and at.button(key="f_submit").disabled
    at.text_input(key="f_calls").input("30").run()
    at.text_input(key="f_bucket").input("16").run()
    ok(at.button(key="f_submit").click().run())
    (rec,) = export_records(worker)
    assert rec["traffic"] == traffic.make("uniform:1..64", 30, 16)
    assert len(rec["traffic"]["sizes"]) == 30 and rec["traffic"]["bucket"] == 16


def finished_traffic_job(engine) -> int:
    from lab.sweep import SweepRequest
    from runner import zoo

    request = SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", traffic=traffic.make("8, 16, 24, 8"),
                           process_repeats=1)
    _, (job_id,), _ = queue.submit(engine, request, zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    calls = [{"size": s, "padded": s, "eager_s": 0.01, "compiled_s": c, "compiles": k, "recompiles": r,
              "limit_hit": False, "fallback": False}
             for s, c, k, r in ((8, 2.0, 1, 0), (16, 1.5, 1, 1), (24, 1.5, 1, 1), (8, 0.005, 0, 0))]
    out = traffic.summarize(calls) | {
        "graphs": 3, "torch_counters": {"frames_ok": 3, "limit_refusals": 0, "unique_graphs": 3, "frames_total": 3},
        "guard_misses": 2, "error": None, "reasons": [{"call": 1, "reason": EVIL}, {"call": 2, "reason": "size"}],
        "stream": {k: [c[k] for c in calls] for k in ("size", "padded", "eager_s", "compiled_s", "compiles",
                                                      "recompiles", "limit_hit", "fallback")}}
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 10.0, "compiled_ms": 5.0, "speedup": 2.0, "eager_first_call_s": 0.01,
                         "compiled_first_call_s": 2.0, "first_call_cache": "cold", "device_name": "cpu-x",
                         "detail": {"traffic": out}})
    return job_id


def test_a_traffic_jobs_page_answers_under_the_stream(worker):  # noqa: F811
    job_id = finished_traffic_job(worker)
    at = ok(page("job", job=str(job_id)))
    assert "Under your traffic" in texts(at.subheader)
    answer = next(t for t in texts(at.markdown) if t.startswith("Under this traffic"))
    assert "**5 s**" in answer and "**125× slower**" in answer and "**0.04 s**" in answer
    assert "had not paid" in answer
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Recompiles"], metrics["Recompile-limit hits"], metrics["Fallback calls"],
            metrics["Graphs at the end"]) == ("2", "0", "0", "3")
    assert any("4 calls, 4 sizes as given" in t for t in texts(at.caption))
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = {trace.get("name") for trace in chart["data"]}
    assert {"eager", "compiled", "compiled a graph"} <= names
    (reasons,) = [d for d in at.dataframe if "reason" in d.value.columns]
    assert list(reasons.value["reason"]) == [EVIL, "size"]  # a table cell: text, never markup
    assert not any("tracker.invalid" in t and "\\" not in t for t in texts(at.markdown) + texts(at.caption))


def _finish_next(engine, detail: dict) -> int:
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 10.0, "compiled_ms": 5.0, "speedup": 2.0, "eager_first_call_s": 0.01,
                         "compiled_first_call_s": 2.0, "first_call_cache": "cold", "device_name": "cpu-x",
                         "detail": detail})
    return claim.job_id


def test_a_follow_up_says_where_the_replay_is_and_a_malformed_one_is_not_drawn(worker):  # noqa: F811
    from lab.sweep import SweepRequest
    from runner import zoo

    queue.submit(worker, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu", process_repeats=2,
                                      traffic=traffic.make("8, 16")), zoo.model_infos(zoo.catalog()))
    first = _finish_next(worker, {"traffic": {"calls_compared": 2, "ratio": "<b>x</b>", "stream": "no"}})
    repeat = _finish_next(worker, {})  # a process repeat: the headline only, no replay
    at = ok(page("job", job=str(repeat)))
    assert any(f"its configuration's first run, job #{first}, did" in t for t in texts(at.caption))
    at = ok(page("job", job=str(first)))  # a hand-made replay: said, not drawn, nothing of it as markup
    assert any("The stored replay is malformed" in t for t in texts(at.caption)) and not at.get("plotly_chart")
