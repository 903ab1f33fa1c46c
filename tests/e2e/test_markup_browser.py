"""User text stays text in a real browser: a sweep named with Markdown and HTML (an image, a link, bold)
is shown literally on Queue's "Sweep … on Results" link, in Compare's plot legend and in Submit's
message; a worker row's texts (model description, folder, parameter names and help, torch version, GPU name) are
shown literally on Submit, in captions, labels, pills and tooltips. The browser never requests the images they
point at, and no URL in them becomes a link."""
import os
import re

import pytest
from sqlalchemy import update

from bench.synthetic import fill
from dashboard.markup import WORD_JOINER
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


def shown(locator) -> str:
    """What a person reads: md() keeps URLs from becoming links with an invisible word joiner."""
    return locator.inner_text().replace(WORD_JOINER, "")


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
    assert f"![px]({PIXEL})" in shown(link) and "**strong**" in shown(link)
    assert link.locator("img, strong").count() == 0 and link.locator("a").count() == 1, link.inner_html()  # its own

    page.goto(f"{lab['url']}/compare?a={a}&b={b}")
    legend = page.locator('[data-testid="stVegaLiteChart"] .role-legend-label text')
    legend.first.wait_for()
    texts = legend.all_text_contents()
    assert any("<b>bold</b>" in t for t in texts), texts
    page.locator('[data-testid="stVegaLiteChart"] .mark-rect path').first.hover()  # a bar's tooltip names its sweep
    tip = page.locator("#vg-tooltip-element")
    tip.filter(has_text="<b>bold</b>").wait_for()
    assert tip.locator("b, img").count() == 0, tip.inner_html()

    register_worker(lab["engine"])  # Submit offers the models of live workers
    page.goto(f"{lab['url']}/?preset=modes")
    name = page.get_by_role("textbox", name="Sweep name")
    name.fill(EVIL)
    name.press("Enter")
    # the name's rerun has drawn what it causes before the click: a click while that rerun ran was lost once on CI
    # (the page still read "2 jobs will be created" a minute later)
    page.get_by_text("sweeps are already named").wait_for()
    page.get_by_role("button", name=re.compile(r"^Submit \d+ jobs?$")).click()
    done = page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="queued")
    done.wait_for()
    assert f"![px]({PIXEL})" in shown(done) and ":red[red]" in shown(done)
    assert done.locator("img, a").count() == 0

    page.wait_for_load_state("networkidle")
    assert not [u for u in requested if "tracker.invalid" in u], requested


TRACKER = "http://tracker.invalid"
ROW = {  # what a worker publishes, each text a trap: an image, a link, bold, a tag, a Streamlit directive
    "description": f"![px]({TRACKER}/desc.png) <b>desc</b> [site]({TRACKER}/d) **strong** :red[red]",
    "source": f"**/models** ![src]({TRACKER}/src.png)",
    "size_dim": f"[rows]({TRACKER}/dim)",
    "params": [{"name": "**depth**", "default": 2, "help": f"![h]({TRACKER}/help.png) [docs]({TRACKER}/h) **bold**"},
               {"name": "head", "default": "a", "choices": ["a", f"[b]({TRACKER}/choice)"], "help": "_pick_"}],
}
TORCH = f"![t]({TRACKER}/torch.png) **2.13**"
GPU = f"<b>GPU</b> ![g]({TRACKER}/gpu.png)"


def test_a_worker_rows_texts_show_literally_on_submit_and_fetch_nothing(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    queue.register_worker(engine, "host:1:0:test", "host", 1, "0", {
        "devices": ["cpu"], "device_name": GPU, "torch_version": TORCH, "models": [{"name": "evilnet", **ROW}]})
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        requested = []
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"http://localhost:{port}/")
        main = page.locator('[data-testid="stMain"]')
        caption = main.locator('[data-testid="stCaptionContainer"]').filter(has_text="desc")
        caption.wait_for()
        assert ROW["description"] in shown(caption) and ROW["source"] in shown(caption)
        depth = main.locator('[data-testid="stNumberInput"]').filter(has_text="depth")
        assert shown(depth.locator("label")).startswith("**depth**")
        buttons = main.locator('[data-testid="stButtonGroup"] button')
        buttons.filter(has_text="choice").first.wait_for()  # the page draws on: read the pills once both are there
        buttons.filter(has_text="torch.png").first.wait_for()
        pills = [shown(b) for b in buttons.all()]
        assert f"[b]({TRACKER}/choice)" in pills and TORCH in pills, pills
        tips = []  # a tooltip shows on hover only: each one's text, read while it shows
        for widget in (depth, main.locator('[data-testid="stTextInput"]').filter(has_text="Batch sizes")):
            widget.locator('[data-testid="stTooltipHoverTarget"]').hover()
            tip = page.locator('[data-testid="stTooltipContent"]')
            tip.wait_for()
            tips.append(shown(tip))
            assert tip.locator("img, a, strong").count() == 0, tip.inner_html()
            page.mouse.move(0, 0)
            tip.wait_for(state="hidden")
        assert ROW["params"][0]["help"] in tips[0] and ROW["size_dim"] in tips[1], tips
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_text("gpu.png").wait_for()  # the frame draws the sidebar after the page: read it with the GPU's line
        assert GPU in shown(sidebar)
        page.screenshot(path=os.environ.get("COMPILE_LAB_SHOT", str(tmp_path / "submit-worker-row.png")))
        assert main.locator(f'a[href^="{TRACKER}"], img[src^="{TRACKER}"]').count() == 0
        assert sidebar.locator(f'a[href^="{TRACKER}"], img[src^="{TRACKER}"]').count() == 0
        assert main.locator("strong").filter(has_text=re.compile("strong|depth|2.13")).count() == 0
        assert not [u for u in requested if "tracker.invalid" in u], requested
