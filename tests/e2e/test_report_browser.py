"""A tampered tlparse report, opened in a real browser on the job's page and in a tab of its own, runs no script
and fetches nothing: its page cannot touch the app's page, ask the app's server for anything, or cancel a job.

tlparse writes failure text into its pages as it comes (a graph break whose message holds `<img src=x onerror=...>`
is that element); the report here is the worst such artifact, with a script that, given the app's origin, marks the
app's page, calls the server and cancels another job through the Queue page's form in a hidden frame."""
import io
import os
import re
import subprocess
import sys
import zipfile
from contextlib import contextmanager
from typing import Callable

import pytest

from db import queue
from db.database import get_engine
from db.models import JobStatus
from db.results import export_records
from lab import artifact_files
from lab.sweep import SweepRequest
from runner import zoo
from runner.child.capture import tlparse_report
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")
MARK = "data-report-script"


def attack(target: int) -> str:
    """What a script with the app's origin would do; each step leaves a trace the test looks for."""
    return f"""<script>
document.title = 'script ran';
fetch('/report-script-ran').catch(function () {{}});
new Image().src = 'http://tracker.invalid/report.png';
var app = window.parent.document;  /* throws where the report has an origin of its own */
app.body.setAttribute('{MARK}', 'ran');
var f = app.createElement('iframe');
f.src = '/queue';
f.style.cssText = 'width:1200px;height:900px';
app.body.appendChild(f);
var typed = false;
setInterval(function () {{
  var d = f.contentDocument;
  var box = d && d.querySelector('input[aria-label="Job ids"]');
  var button = d && Array.from(d.querySelectorAll('button')).find(function (b) {{
    return b.innerText.indexOf('Cancel jobs') >= 0; }});
  if (!box || !button) return;
  if (!typed) {{
    Object.getOwnPropertyDescriptor(f.contentWindow.HTMLInputElement.prototype, 'value').set.call(box, '{target}');
    box.dispatchEvent(new Event('input', {{bubbles: true}}));
    typed = true;
  }} else {{ button.click(); }}
}}, 500);
</script>"""


def tampered_report(target: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("index.html", f"<html><head><style>h2{{color:teal}}</style></head><body>{attack(target)}"
                                 "<h2>Tampered report</h2><p id=about>What the compiler did.</p>"
                                 "<img src=x onerror=\"window.parent.document.body.setAttribute('data-report-img','ran')\">"
                                 "<a href=\"failures_and_restarts.html\">1 restart(s)</a> "
                                 "<a href=\"-_0_0_0/dynamo_graph_break_reason_1.txt\">break</a></body></html>")
        z.writestr("failures_and_restarts.html", "<h2>Failures</h2><p>Graph break: <img src=x onerror=\"window.parent"
                                                 ".document.body.setAttribute('data-report-img','ran')\"></p>")
        z.writestr("-_0_0_0/dynamo_graph_break_reason_1.txt", "Message: <img src=x onerror=alert(1)>")
    return buf.getvalue()


@contextmanager
def lab_with(tmp_path, report: Callable[[int], bytes], *args: str):
    """A running app (with `args`) over a lab of two jobs: one finished with `report(the other's id)` as its tlparse
    artifact, the other queued (what a script in the report would cancel)."""
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    queue.register_worker(engine, "host:1:any:test", "host", 1, None, {"devices": ["cpu"], "torch_version": "2.13.0"})
    _, (done, target), _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[1, 2], device="cpu",
                                                          name="report"), zoo.model_infos(zoo.catalog()))
    claim = queue.claim_next(engine, "host:1:any:test", ["cpu"], ["simplenet"], 60)
    assert claim.job_id == done
    artifact_files.write_dir(tmp_path / "art", {"output_code": "def call(args):\n    pass\n", "tlparse": report(target)})
    queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, artifacts=artifact_files.read_dir(tmp_path / "art"),
                 result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "detail": {}})
    with running_app(tmp_path, url, None, *args) as port:
        yield {"url": f"http://localhost:{port}", "engine": engine, "job": done, "target": target}


@pytest.fixture
def lab(tmp_path):
    with lab_with(tmp_path, tampered_report) as it:
        yield it


def status(engine, job_id: int) -> str:
    (record,) = export_records(engine, job_ids=[job_id])
    return record["status"]


def test_a_tampered_tlparse_report_runs_no_script_and_reaches_nothing(lab, browser, tmp_path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    page.set_default_timeout(60_000)
    requested = []
    page.on("request", lambda request: requested.append(request.url))

    page.goto(f"{lab['url']}/job?job={lab['job']}")
    page.get_by_role("heading", name="tlparse report").wait_for()
    report = page.frame_locator('[data-testid="stIFrame"]')
    report.get_by_role("heading", name="Tampered report").wait_for()  # the report is there to read
    assert report.locator("#about").inner_text() == "What the compiler did."
    frame = page.locator('[data-testid="stIFrame"]').element_handle().content_frame()
    frame.wait_for_load_state("load")  # after its images failed (their error handlers first) and its scripts ran
    page.get_by_role("heading", name="tlparse report").scroll_into_view_if_needed()
    page.screenshot(path=os.environ.get("COMPILE_LAB_SHOT", str(tmp_path / "job-tlparse.png")))
    body = page.locator("body")
    assert body.get_attribute(MARK) is None and body.get_attribute("data-report-img") is None
    assert not [u for u in requested if "report-script-ran" in u or "tracker.invalid" in u], requested
    assert page.locator("iframe").count() == 1  # no hidden Queue page was opened under the job's
    assert status(lab["engine"], lab["target"]) == "queued"

    # the report's links work inside its frame, and the page they open is as tame
    report.get_by_role("link", name="1 restart(s)").click()
    report.get_by_role("heading", name="Failures").wait_for()
    frame.wait_for_load_state("load")
    assert body.get_attribute("data-report-img") is None

    # opened whole, in a tab of its own: the same page, the same rules
    tab = browser.new_page()
    tab.on("request", lambda request: requested.append(request.url))
    tab.goto(f"{lab['url']}/tlparse/{lab['job']}/index.html")
    tab.get_by_role("heading", name="Tampered report").wait_for()  # goto waited for its load
    assert tab.title() != "script ran" and tab.locator("body").get_attribute(MARK) is None
    tab.get_by_role("link", name="break").click()
    tab.wait_for_url(re.compile(r"dynamo_graph_break_reason_1\.txt$"))
    assert "<img src=x onerror=alert(1)>" in tab.locator("body").inner_text()  # text, as written
    assert not [u for u in requested if "report-script-ran" in u or "tracker.invalid" in u], requested
    assert status(lab["engine"], lab["target"]) == "queued"


# a graph break whose message is HTML, as a model could hold one: tlparse writes it into its pages unescaped
GRAPH_BREAK = """
import torch
def f(x):
    x = x.sin()
    torch._dynamo.graph_break(msg="<img src=x onerror=\\"window.parent.document.body.setAttribute('data-report-img','ran')\\">")
    return x.cos()
torch.compile(f)(torch.randn(4))
"""


@pytest.mark.skipif(not tlparse_report.executable(), reason=f"no tlparse (pip install tlparse, or {tlparse_report.ENV})")
def test_tlparses_own_report_of_a_graph_break_holding_html_is_read_without_running_it(tmp_path, browser):  # noqa: F811
    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "trace")}
    subprocess.run([sys.executable, "-c", GRAPH_BREAK], env=env, check=True, timeout=300, capture_output=True)
    (log,) = (tmp_path / "trace").glob("*.log")
    data, why = tlparse_report.report(log.read_text())
    assert why is None
    with zipfile.ZipFile(io.BytesIO(data)) as z:  # what makes this a test: tlparse wrote the element as it came
        assert "<img src=x onerror=" in z.read("failures_and_restarts.html").decode()
    with lab_with(tmp_path, lambda _: data) as lab:
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        page.set_default_timeout(60_000)
        page.goto(f"{lab['url']}/job?job={lab['job']}")
        report = page.frame_locator('[data-testid="stIFrame"]')
        report.get_by_role("heading", name="Stack trie").wait_for()
        picker = page.get_by_role("combobox", name=re.compile("Page"))  # the page picker, then its failures page
        picker.click()
        picker.press_sequentially("failures_and")  # typed: the list opens filtered to it
        page.get_by_role("option", name="failures_and_restarts.html").click()
        report.get_by_role("heading", name=re.compile("Failures")).wait_for()
        frame = page.locator('[data-testid="stIFrame"]').element_handle().content_frame()
        frame.wait_for_load_state("load")
        assert page.locator("body").get_attribute("data-report-img") is None
        page.get_by_role("heading", name="tlparse report").scroll_into_view_if_needed()
        page.screenshot(path=os.environ.get("COMPILE_LAB_SHOT_TLPARSE", str(tmp_path / "job-tlparse-real.png")))


def test_under_a_base_path_the_report_and_its_frame_are_served_there(tmp_path, browser):  # noqa: F811
    """Behind a proxy at /lab (server.baseUrlPath): Streamlit serves its pages there, and the report's route and the
    job page's frame follow (they were at /tlparse, which the proxy never forwards)."""
    with lab_with(tmp_path, tampered_report, "--server.baseUrlPath", "lab") as lab:
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        page.set_default_timeout(60_000)
        page.goto(f"{lab['url']}/lab/job?job={lab['job']}")
        page.frame_locator('[data-testid="stIFrame"]').get_by_role("heading", name="Tampered report").wait_for()
        assert page.locator("iframe").get_attribute("src").startswith(f"/lab/tlparse/{lab['job']}/")
        tab = browser.new_page()
        response = tab.goto(f"{lab['url']}/lab/tlparse/{lab['job']}/failures_and_restarts.html")
        assert response.status == 200 and response.headers["content-security-policy"].startswith("sandbox")
