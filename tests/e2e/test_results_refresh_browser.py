"""Results updates itself in a real browser: a result that lands for the model in view shows up without a reload,
and the page says how many landed and when."""
import os

import pytest
from playwright.sync_api import expect

from bench.synthetic import fill
from db.database import get_engine
from tests.dashboard.test_results_refresh import finish_one
from tests.e2e.test_browser import CHROMIUM, browser, metric  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


def test_a_new_result_shows_up_without_a_reload(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    fill(engine, 24, seed=2, device="cpu", ceilings=False, models=("simplenet",))
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/results")
        page.get_by_text("This page updates itself").wait_for()
        assert metric(page, "Jobs shown") == "24"
        finish_one(engine, "simplenet")
        page.get_by_text("1 new result, updated").wait_for()  # the fragment's next tick, no reload
        # the count is another element than the line waited for: read until it says 25 (or times out)
        jobs_shown = page.locator('[data-testid="stMetric"]').filter(has_text="Jobs shown")
        expect(jobs_shown.locator('[data-testid="stMetricValue"]')).to_have_text("25", use_inner_text=True, timeout=60_000)
