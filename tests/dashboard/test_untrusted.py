"""The pages over what no worker vouches for. The job's page over rows no worker wrote: an artifact and a tlparse
report that unpack past their limits, each refused with a message naming it and the limit, the rest of the page
shown. The Submit form when no live worker holds the key that portable bundles need."""
import gzip

import pytest

from bench.bombs import gzip_bomb, zip_bomb
from dashboard.markup import md
from db import queue
from db.models import JobStatus
from lab import artifact_files
from runner import zoo
from tests.dashboard.test_pages import lab, ok, page, submit_some, worker  # noqa: F401 (fixtures)


def test_the_job_page_refuses_bombs_and_shows_the_rest(worker):  # noqa: F811
    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    report = zip_bomb({"index.html": 40 << 20, "-_0_0_0/a.html": b"<pre>fine</pre>"})  # 40 MiB of index page
    rows = [{"name": "output_code", "bytes": 10, "truncated": False, "data": gzip_bomb(64 << 20)},
            {"name": "trace", "bytes": 4, "truncated": False, "data": artifact_files.pack("tiny")[0]},
            {"name": "tlparse", "bytes": len(report), "truncated": False, "data": gzip.compress(report)}]
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED, artifacts=rows,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "compiled_first_call_s": 9.5})
    at = ok(page("job", job=str(ids[0])))
    assert {m.label: m.value for m in at.metric}["Speedup"] == "2.000×"  # the rest of the page is there
    errors = [e.value for e in at.error]
    assert errors == [md(f"job {ids[0]}'s artifact 'output_code' unpacks to more than 4,198,400 bytes, the limit: refused"),
                      md(f"The tlparse report cannot be shown: job {ids[0]}'s tlparse report: index.html unpacks to more "
                         "than 16,777,216 bytes, the limit: refused")], errors  # as text: the names come from the row
    assert at.selectbox(key="tlparse_page").options == ["index.html", "-_0_0_0/a.html"]
    assert not at.get("iframe")
    at.selectbox(key="tlparse_page").set_value("-_0_0_0/a.html").run()
    (frame,) = at.get("iframe")  # the page that fits, served by the report's route (dashboard.server.tlparse_pages)
    assert frame.proto.src == "/tlparse/1/-_0_0_0/a.html" and len(at.error) == 1
    assert [e.label for e in at.expander] == ["Log tail"]


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_submit_says_a_portable_job_runs_cold_where_no_worker_holds_the_key(worker):  # noqa: F811
    at = ok(page("submit"))
    at.radio(key="f_cache").set_value("portable").run()
    assert [w.value for w in at.warning] == [
        "No live worker holds the cache signing key (`work --cache-key-file`): a portable job runs as a cold run, "
        "loading no bundle and keeping none."]
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(worker, "host:2:any:test", "host", 2, None, {"devices": ["cpu"], "torch_version": "2.13.0",
                                                                       "models": models, "signs_bundles": True})
    at = ok(page("submit"))
    at.radio(key="f_cache").set_value("portable").run()
    assert not at.warning and any(c.value == "1 of 2 live workers hold the cache signing key; a portable job that "
                                              "another one claims runs as a cold run." for c in at.caption)


def test_the_job_page_says_what_the_accuracy_check_compared_with_names_as_text(worker):  # noqa: F811
    ids = submit_some(worker, 1)
    claim = queue.claim_next(worker, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    worst = {"tensor": "grad **bold**.weight", "rel_error": 0.5, "max_abs_error": 0.01, "ok": False,
             "compiled_rmse_vs_float64": 0.02, "eager_rmse_vs_float64": 1e-7, "allowed_rmse": 1.2e-5}
    check = {"compared": "the loss and 2 parameter gradients", "tensors": 3, "failing": ["grad **bold**.weight"],
             "reference": "float64", "tolerance": 1e-4, "multiplier": 2.0, "worst": worst}
    queue.finish(worker, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "accuracy_ok": False,
                         "detail": {"accuracy_check": check}})
    at = ok(page("job", job=str(ids[0])))
    lines = [t.value for t in at.text]
    assert lines[0] == ("Accuracy: the compiled result differs. Compared the loss and 2 parameter gradients "
                        "(3 tensors) with tolerance 0.0001, against a float64 run of the same call.")
    assert lines[1].startswith("Worst: grad **bold**.weight: compiled vs eager, relative error 0.5, max |diff| 0.01; "
                               "root mean square distance from the float64 run: compiled 0.02, eager 1e-07 (compiled "
                               "may reach 1.2e-05")
    assert lines[2] == "Differ: grad **bold**.weight"
