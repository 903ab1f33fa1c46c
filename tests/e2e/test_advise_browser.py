"""Find the best settings in a real browser: the search started from Submit's form, a real worker running its
rounds, the recommendation and the dropped setting (with why and when) on Submit as the search ends, and on Results
through its link."""
import os
import re
import signal

import pytest
from playwright.sync_api import expect

from db import advice
from db.database import get_engine
from tests.conftest import start_worker, wait_until
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


def choose_only(page, label: str, values: list[str]) -> None:
    """Empty a multiselect, then pick these values by typing each one (what a person does)."""
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text=label)
    box.get_by_role("button", name="Clear all").click()
    for value in values:
        box.get_by_role("combobox").fill(value)
        page.get_by_role("option", name=value, exact=True).click()
    page.keyboard.press("Escape")


def test_a_search_started_on_submit_shows_its_recommendation_and_what_it_dropped(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    worker = start_worker(url, tmp_path / "home")
    try:
        with running_app(tmp_path, url) as port:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.set_default_timeout(60_000)
            page.goto(f"http://localhost:{port}/")
            page.get_by_role("button", name="Find the best settings").click(timeout=120_000)  # once models are offered
            form = page.locator('[data-testid="stForm"]')
            model = form.locator('[data-testid="stSelectbox"]').filter(has_text="Model")
            model.click()
            page.get_by_role("option", name="chain", exact=True).click()
            form.get_by_role("textbox", name="Batch size").fill("4")
            choose_only(page, "Backends", ["inductor", "aot_eager"])
            choose_only(page, "Modes", ["default"])
            choose_only(page, "Dynamic", ["false"])
            choose_only(page, "Scope", ["model"])
            form.get_by_role("spinbutton", name="Rounds").fill("10")
            form.get_by_role("button", name="Start the search").click()
            page.get_by_text("Search started as sweep #1: 2 settings").wait_for()

            wait_until(lambda: (st := advice.load(engine, 1)) is not None and st.finished, 300,
                       "the worker to run the search to its end", interval=1)
            st = advice.load(engine, 1)
            worse = next(m for m in st.measured.values() if m.settings["backend"] == "aot_eager")
            assert st.dropped_at(worse.key)[0] == 1
            # Submit's progress refreshes itself: the recommendation and the dropped setting arrive without a reload
            main = page.locator('[data-testid="stMain"]')
            main.get_by_text(re.compile(r"^(use backend=inductor|don't compile)")).first.wait_for()
            main.get_by_text(re.compile(r"backend=aot_eager: dropped after round 1")).wait_for()
            page.screenshot(path=str(tmp_path / "advise-submit.png"))

            page.get_by_role("link", name="Its results").click()
            page.wait_for_url(re.compile(r"/results\?sweep="))
            main = page.locator('[data-testid="stMain"]')
            main.get_by_text(re.compile(r"^Search #1 advise chain")).wait_for()
            main.get_by_text(re.compile(r"backend=aot_eager: dropped after round 1")).wait_for()  # drawn after it
            expect(main).to_contain_text("CPU-seconds; the full sweep of these 2 settings", timeout=60_000)  # its last line
            text = main.inner_text()
            first = next(line for line in text.splitlines() if line.startswith(("use ", "don't compile")))
            assert first.startswith(("use backend=inductor", "don't compile")), first
            dropped = [line for line in text.splitlines() if line.startswith("backend=aot_eager")]
            runs = r"[0-9]+ process(es)?(, [0-9]+ in its answer, [0-9]+ disturbed and left out)?"  # disturbed: said
            assert len(dropped) == 1 and re.match(r"backend=aot_eager: dropped after round 1; [0-9.]+x \[[0-9.]+, "
                                                  rf"[0-9.]+\] \({runs}\): (below the leader|slower than eager)",
                                                  dropped[0]), dropped
            assert "CPU-seconds; the full sweep of these 2 settings" in text
            page.screenshot(path=str(tmp_path / "advise-results.png"))
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
