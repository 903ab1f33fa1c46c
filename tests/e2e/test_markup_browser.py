"""User text stays text in a real browser: a sweep named with Markdown and HTML (an image, a link, bold)
is shown literally on Queue's "Sweep … on Results" link, in Compare's plot legend and in Submit's
message, and the browser never requests the image the name points at."""
import os
import re

import pytest
from sqlalchemy import update

from bench.synthetic import fill
from db import queue
from db.database import get_engine
from db.engine import atomic
from db.models import Sweep
from db.results import export_records
from runner import zoo
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")
PIXEL = "http://tracker.invalid/pixel.png"
EVIL = f"![px]({PIXEL}) <b>bold</b> [link](http://tracker.invalid/x) **strong** :red[red]"


def register_worker(engine) -> None:
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()]
    queue.register_worker(engine, "host:1:any:test", "host", 1, None,
                          {"devices": ["cpu"], "device_name": None, "torch_version": "2.13.0", "models": models})


@pytest.fixture
def lab(tmp_path):
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    fill(engine, 96, seed=1, device="cpu", ceilings=False)
    with atomic(engine) as s:
        s.execute(update(Sweep).values(name=EVIL))
    with running_app(tmp_path, url) as port:
        yield {"url": f"http://localhost:{port}", "engine": engine}


def test_a_markdown_and_html_sweep_name_is_shown_literally_and_fetches_nothing(lab, browser):  # noqa: F811
    recs = export_records(lab["engine"])
    job = next(r for r in recs if r["status"] == "succeeded")
    by_model: dict = {}
    for r in recs:
        by_model.setdefault(r["model"], set()).add(r["sweep_id"])
    a, b = sorted(next(ids for ids in by_model.values() if len(ids) >= 2))[:2]

    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.set_default_timeout(60_000)
    requested = []
    page.on("request", lambda request: requested.append(request.url))

    page.goto(f"{lab['url']}/queue?job={job['job_id']}")
    link = page.locator('[data-testid="stPageLink"]').filter(has_text="on Results")
    link.wait_for()
    assert f"![px]({PIXEL})" in link.inner_text() and "**strong**" in link.inner_text()
    assert link.locator("img").count() == 0 and link.locator("strong").count() == 0

    page.goto(f"{lab['url']}/compare?a={a}&b={b}")
    legend = page.locator('[data-testid="stPlotlyChart"] .legendtext')
    legend.first.wait_for()
    texts = legend.all_text_contents()
    assert any("<b>bold</b>" in t for t in texts), texts

    register_worker(lab["engine"])  # Submit offers the models of live workers
    page.goto(f"{lab['url']}/?preset=modes")
    name = page.get_by_role("textbox", name="Sweep name")
    name.fill(EVIL)
    name.press("Enter")
    page.get_by_role("button", name=re.compile(r"^Submit \d+ jobs?$")).click()
    done = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="queued")
    done.wait_for()
    assert f"![px]({PIXEL})" in done.inner_text() and ":red[red]" in done.inner_text()
    assert done.locator("img").count() == 0

    page.wait_for_load_state("networkidle")
    assert not [u for u in requested if "tracker.invalid" in u], requested
