"""The tlparse report's route (dashboard.server.tlparse_pages): each file of a job's zip, looked up by its exact name, goes out
sandboxed with no allowances (no script, an opaque origin, nothing loaded); text stays text; a host name outside
the server's allowed ones, a missing job, report or file get a plain answer, never a page."""
import io
import zipfile

import pytest
from starlette.requests import Request
from streamlit import config

from dashboard.server import tlparse_pages
from db import artifacts, queue
from db.models import JobStatus
from lab import artifact_files
from lab.sweep import SweepRequest
from runner import zoo

EVIL = "<img src=x onerror=alert(1)><script>parent.document.body.remove()</script>"


@pytest.fixture
def lab(engine, db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", db_url)  # the route opens the app's database, as the pages do
    before = config.get_option("server.allowedHosts")
    config.set_option("server.allowedHosts", ["localhost", "127.0.0.1"])
    queue.register_worker(engine, "host:1:any:test", "host", 1, None, {"devices": ["cpu"]})
    _, (job, other), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[1, 2], device="cpu"),
                                      zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("index.html", f"<h2>Stack trie</h2>{EVIL}")
        z.writestr("-_0_0_0/dynamo_graph_break_reason_1.txt", f"Message: {EVIL}")
    artifact_files.write_dir(tmp_path / "art", {"tlparse": buf.getvalue()})
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, artifacts=artifact_files.read_dir(tmp_path / "art"),
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "detail": {}})
    yield {"job": job, "other": other}
    config.set_option("server.allowedHosts", before)


def get(path: str, host: str = "localhost:8501"):
    (route,) = tlparse_pages.routes()
    _, scope = route.matches({"type": "http", "method": "GET", "path": path})
    request = Request({"type": "http", "method": "GET", "path": path, "headers": [(b"host", host.encode())],
                       "query_string": b"", **scope})
    return tlparse_pages.serve(request)


def test_a_page_is_served_as_written_under_a_sandbox_with_no_allowances(lab):
    for path in (tlparse_pages.url(lab["job"]), f"/tlparse/{lab['job']}/"):
        r = get(path)
        assert r.status_code == 200 and r.body.decode() == f"<h2>Stack trie</h2>{EVIL}"
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        policy = [p.strip() for p in r.headers["content-security-policy"].split(";")]
        assert "sandbox" in policy and "default-src 'none'" in policy  # sandbox alone: no allow-* token
        assert r.headers["x-content-type-options"] == "nosniff"


def test_a_text_file_is_text_and_a_name_is_looked_up_not_walked(lab):
    r = get(tlparse_pages.url(lab["job"], "-_0_0_0/dynamo_graph_break_reason_1.txt"))
    assert r.status_code == 200 and r.headers["content-type"] == "text/plain; charset=utf-8"
    assert "sandbox" in r.headers["content-security-policy"]
    for name in ("../../etc/passwd", "nosuch.html", "%2e%2e/index.html"):
        r = get(f"/tlparse/{lab['job']}/{name}")
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/plain"), name


def test_no_report_no_job_and_a_foreign_host_get_a_plain_answer(lab):
    assert get(tlparse_pages.url(lab["other"])).status_code == 404  # queued: no artifacts
    assert get(tlparse_pages.url(99_999)).status_code == 404
    r = get(tlparse_pages.url(lab["job"]), host="evil.example:8501")  # DNS rebinding onto the route
    assert r.status_code == 403 and b"Stack trie" not in r.body


def test_the_pages_list_puts_the_index_first(lab, engine):
    data = artifacts.data(engine, lab["job"], "tlparse")
    assert artifacts.report_pages(data, "the report") == ["index.html"]
    assert tlparse_pages.url(3, "-_0_0_0/a b.html") == "/tlparse/3/-_0_0_0/a%20b.html"


def test_tlparse_is_found_beside_the_interpreter_when_the_path_lacks_it(monkeypatch, tmp_path):
    """`make run` starts the app and its worker as .venv/bin/python without .venv/bin on the PATH."""
    from runner.child.capture import tlparse_report

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").touch()
    (fake / "tlparse").write_text("#!/bin/sh\n")
    (fake / "tlparse").chmod(0o755)
    monkeypatch.delenv(tlparse_report.ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setattr("sys.executable", str(fake / "python"))
    assert tlparse_report.executable() == str(fake / "tlparse")
    (fake / "tlparse").unlink()
    assert tlparse_report.executable() is None
