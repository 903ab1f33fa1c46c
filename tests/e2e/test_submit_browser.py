"""Submit's number fields in a real browser: Rounds 0 and Timeout -1, typed, each show their error under the
field, Submit is disabled, and nothing is stored."""
import os

import pytest
from sqlalchemy import func, select

from db.database import get_engine
from db.engine import reading
from db.models import Job
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_markup_browser import register_worker
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


def test_rounds_0_and_timeout_minus_1_show_two_errors_and_disable_submit(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    register_worker(engine)  # Submit offers the models of live workers
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/")
        submit = page.get_by_role("button", name="Submit 1 job")
        submit.wait_for()
        assert submit.is_enabled()
        errors = page.locator('[data-testid="stAlertContentError"]')
        for name, value in (("Rounds", "0"), ("Timeout (s)", "-1")):
            box = page.get_by_role("spinbutton", name=name)
            box.fill(value)
            box.press("Tab")  # typed, then left: what a person does
            errors.filter(has_text=f"{name}:").first.wait_for()  # its rerun has drawn before the next field is typed
        errors.filter(has_text="Timeout (s): must be between 1 and 86,400 seconds, got -1").wait_for()
        texts = [t.replace("\\", "") for t in errors.all_inner_texts()]
        assert any("Rounds: must be between 1 and 10,000, got 0" in t for t in texts), texts
        button = page.get_by_role("button", name="Submit", exact=True)
        assert button.is_disabled()
        # each its own message, under the row of number fields (the boxes are too narrow for one beneath each)
        for name, text in (("Rounds", "Rounds:"), ("Timeout (s)", "Timeout (s):")):
            field = page.get_by_role("spinbutton", name=name).bounding_box()
            error = errors.filter(has_text=text).bounding_box()
            assert error["y"] > field["y"] + field["height"], (name, field, error)
            assert error["x"] - 20 <= field["x"] <= error["x"] + error["width"], (name, field, error)  # the same column
        page.screenshot(path=os.environ.get("COMPILE_LAB_SHOT", str(tmp_path / "submit-numbers.png")))
        button.click(force=True)  # a disabled button does nothing, however it is clicked
        page.wait_for_timeout(500)
    with reading(engine) as s:
        assert s.execute(select(func.count()).select_from(Job)).scalar() == 0
