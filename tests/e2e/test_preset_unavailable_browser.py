"""A preset whose model no live worker offers (GPT-2 with no hf: worker), picked after another preset in a real
browser: the page says what it needs and no Submit button is left enabled on the previous preset's values; nothing
is stored."""
import os
import re

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from db.database import get_engine
from db.engine import reading
from db.models import Job
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_markup_browser import register_worker
from tests.e2e.test_server_handshake import running_app

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


def test_gpt2_preset_without_an_hf_worker_cannot_submit_the_previous_presets_values(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    register_worker(engine)  # the zoo's models on the CPU: no hf: or timm: family
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/?preset=whole-vs-functions")
        page.get_by_role("button", name="Submit 2 jobs").wait_for()  # localopt, max-autotune: two sweeps
        page.locator('[data-testid="stButtonGroup"] button').filter(has_text="a real LM: GPT-2 small").click()
        page.locator('[data-testid="stAlertContentWarning"]').filter(
            has_text="hf:GPT2LMHeadModel").wait_for()
        page.get_by_text("GPT-2 small (Hugging Face transformers").wait_for()  # the preset's own question
        # the previous preset's form is the last run's, shown faded until this run ends (the frame draws the sidebar
        # after the page): once it has, no Submit button is enabled
        expect(page.get_by_role("button", name=re.compile(r"^Submit"), disabled=False)).to_have_count(0, timeout=60_000)
        assert page.get_by_role("combobox", name="Model").count() == 0  # no form holding localopt's values
        page.screenshot(path=os.environ.get("COMPILE_LAB_SHOT", str(tmp_path / "preset-unavailable.png")))
    with reading(engine) as s:
        assert s.execute(select(func.count()).select_from(Job)).scalar() == 0
