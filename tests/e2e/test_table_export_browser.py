"""The tables' own CSV export is off (.streamlit/config.toml client.disableDataExport): Streamlit's dataframe toolbar
writes cells as they are, so a sweep named `=HYPERLINK(...)` would be a live formula in a spreadsheet. Checked in a
real browser on the Queue's table, against the same page with the option on, where the toolbar offers the CSV."""
import os

import pytest

from db import queue
from db.database import get_engine
from lab.sweep import SweepRequest
from runner import zoo
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")
FORMULA = '=HYPERLINK("http://tracker.invalid/x","open")'


def toolbar_labels(browser, port: int) -> list[str]:  # noqa: F811
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.set_default_timeout(60_000)
    page.goto(f"http://localhost:{port}/queue")
    table = page.locator('[data-testid="stDataFrame"]').first
    table.wait_for()
    table.hover()
    page.locator('[data-testid="stElementToolbar"]').first.wait_for(state="attached")
    labels = [b.get_attribute("aria-label") or "" for b in page.locator('[data-testid="stElementToolbar"] button').all()]
    page.close()
    return labels


def test_the_tables_offer_no_csv_of_their_cells(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    queue.register_worker(engine, "host:1:any:test", "host", 1, None, {"devices": ["cpu"], "torch_version": "2.13.0"})
    queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[1], device="cpu", name=FORMULA),
                 zoo.model_infos(zoo.catalog()))
    with running_app(tmp_path, url, None, "--client.disableDataExport", "false") as port:
        assert any("Download" in label for label in toolbar_labels(browser, port))  # the check sees the button
    with running_app(tmp_path, url) as port:
        labels = toolbar_labels(browser, port)
        assert labels and not any("Download" in label for label in labels), labels
