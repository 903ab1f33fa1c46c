"""A new user's first hour (issue 27), in a real browser over a real app: a job without a tlparse report says why
on its page; the N-calls sentence for a configuration slower per call, at the N a copied link carries; the model a
link names on Submit; no GPU clock on CPU-only data. The lab's data is stored through the queue as a worker
stores it (the measuring itself is tests/integration's)."""
import os
import re
import urllib.parse
from pathlib import Path

import pytest

from db import queue
from db.database import get_engine
from db.models import JobStatus
from lab.sweep import SweepRequest
from runner import zoo
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")
WORKER = "host:1:any:first-hour"
WHY = ("tlparse was not found on the worker (not on its PATH, nor beside its Python): install it in the worker's "
       "environment (pip install tlparse) or name it with COMPILE_LAB_TLPARSE, then run the job again")


@pytest.fixture
def lab(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    infos = zoo.model_infos(zoo.catalog())
    queue.register_worker(engine, WORKER, "host", 1, None, {
        "devices": ["cpu"], "torch_version": "2.13.0", "models": [i.to_dict() for i in infos.values()]})
    _, ids, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[32], device="cpu",
                                                  dynamics=[True, False], process_repeats=1, name="first hour"), infos)
    for _ in ids:  # compiled slower per call than eager (0.8x): no N repays the compile
        claim = queue.claim_next(engine, WORKER, ["cpu"], ["simplenet"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED, result={
            "eager_ms": 1.0, "compiled_ms": 1.25, "speedup": 0.8, "round_speedup": 0.8, "round_speedup_se": 0.002,
            "eager_first_call_s": 0.01, "compiled_first_call_s": 4.0, "device_name": "cpu",
            "detail": {"tlparse_note": WHY}})
    with running_app(tmp_path, url) as port:
        yield {"url": f"http://localhost:{port}", "engine": engine, "jobs": ids}


def test_a_new_users_first_hour_reads_right_in_a_browser(lab, browser, tmp_path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.set_default_timeout(60_000)
    shots = Path(os.environ.get("COMPILE_LAB_SHOTS") or tmp_path)  # the docs' screenshots: COMPILE_LAB_SHOTS=docs/...

    page.goto(f"{lab['url']}/job?job={lab['jobs'][0]}")
    page.get_by_text("No tlparse report for this job: tlparse was not found on the worker").wait_for()
    said = page.locator('[data-testid="stAlertContentInfo"]').filter(has_text="No tlparse report").inner_text()
    assert "pip install tlparse" in said

    page.goto(f"{lab['url']}/results?chart=N+calls&calls_n=100000")
    said = page.get_by_text("For 100,000 calls at bs 32, stay eager")
    said.wait_for()
    assert "no number of calls repays its first call" in said.inner_text()
    assert "not repaid yet" not in page.locator("body").inner_text()
    page.get_by_role("button", name="Calls your program makes: N = 100,000").wait_for()  # the link's N
    page.screenshot(path=str(shots / "results-ncalls-slower-cpu.png"), full_page=True)

    page.goto(f"{lab['url']}/results?chart=Speedup&clock=GPU+time")  # a link made on a GPU lab's data
    page.get_by_text("Clock").first.wait_for()
    clock = page.locator('[data-testid="stButtonGroup"]').filter(has_text="throughput")
    assert clock.inner_text().split() == ["Clock", "latency", "throughput"]  # no GPU time to pick

    page.goto(f"{lab['url']}/?model=mlp")  # Submit is the app's first page
    page.get_by_text("What to run").wait_for()
    page.get_by_text("seed 002's benchmark MLP").wait_for()  # the picked model's description, under the picker
    picker = page.get_by_role("combobox", name="Model")
    picker.wait_for()
    assert picker.input_value() == "mlp"
    page.screenshot(path=str(shots / "submit-model-from-link-cpu.png"))
    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert query.get("model") == ["mlp"]

    page.goto(f"{lab['url']}/queue")  # a row picked in the jobs table opens its job
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for()
    page.get_by_text("Pick a row (its left edge) to open that job.").wait_for()
    # the grid draws its rows on a canvas after the frame: its accessibility table holds them once they are there
    grid.locator('td[role="gridcell"]').first.wait_for(state="attached")
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 14, box["y"] + 35 + 17)  # the first row's marker, under the header
    link = page.get_by_role("link", name=re.compile(r"Open job #\d+"))
    link.wait_for()
    # where the eye is: above the table, not below a tall one and off-screen
    assert link.bounding_box()["y"] < grid.bounding_box()["y"]
    page.screenshot(path=str(shots / "queue-row-opens-job-cpu.png"), full_page=True)
    shown = int(re.search(r"#(\d+)", link.inner_text()).group(1))
    assert shown in lab["jobs"]
    link.click()
    page.get_by_text("No tlparse report for this job").wait_for()  # on that job's page
    assert f"job={shown}" in page.url
