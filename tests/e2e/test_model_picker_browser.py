"""The Submit page's model picker in a real browser (issue 26): among the ~1,800 models a worker with transformers and
timm offers, typing "vit" finds timm's vit_base_patch16_224; its size parameter shows with its default; submitting
queues it and the Queue shows it. The worker row publishes what a real listing child printed (runner.zoo.families,
run with the second interpreter that has timm: .venv/extras)."""
import json
import os
import subprocess

import pytest

from db import queue
from db.database import get_engine
from lab.spec import ModelInfo
from runner import zoo
from tests.conftest import EXTRAS_PYTHON, ROOT
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app

pytestmark = [pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing"), pytest.mark.extras,
              pytest.mark.skipif(not EXTRAS_PYTHON.exists(), reason=f"{EXTRAS_PYTHON} missing (make test makes it)")]
VIT = "timm:vit_base_patch16_224"


def listed(tmp_path) -> list[dict]:
    out = tmp_path / "listing.json"
    families = ["--family", "timm"] + (["--family", "hf"] if _has(EXTRAS_PYTHON, "transformers") else [])
    subprocess.run([str(EXTRAS_PYTHON), "-m", "runner.zoo.families", "list", *families, "--out", str(out)],
                   cwd=ROOT, check=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    got = json.loads(out.read_text())
    assert not got["refused"], got["refused"]
    return got["models"]


def _has(python, module: str) -> bool:
    return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True).returncode == 0


def test_typing_vit_finds_vit_base_submits_it_and_the_queue_shows_it(tmp_path, browser):  # noqa: F811
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    engine = get_engine(url)
    models = [info.to_dict() for info in zoo.model_infos(zoo.catalog()).values()] + listed(tmp_path)
    assert VIT in {m["name"] for m in models} and len(models) > 1000
    assert ModelInfo.from_dict(next(m for m in models if m["name"] == VIT)).params[0].default == 64  # CPU-sized
    queue.register_worker(engine, "host:1:any:test", "host", 1, None,
                          {"devices": ["cpu"], "device_name": None, "torch_version": "2.14.1", "models": models})
    with running_app(tmp_path, url) as port:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/")
        page.get_by_role("button", name="Submit 1 job").wait_for()
        picker = page.get_by_role("combobox", name="Model")
        picker.click()
        page.keyboard.type("vit")
        options = page.get_by_role("option")
        options.first.wait_for()
        shown = options.all_inner_texts()
        assert shown and all("vit" in t.lower() for t in shown), shown[:10]
        assert shown[0] == "vit_base_patch16_224 · timm", shown[:10]  # the suites' ViT first among ~200 ViTs
        options.first.click()
        page.get_by_text("timm vit_base_patch16_224, random weights").wait_for()
        size = page.locator('[data-testid="stNumberInput"]').filter(has_text="image_size").locator("input")
        assert size.input_value() == "64"
        page.screenshot(path=str(tmp_path / "submit-vit.png"))
        page.get_by_role("button", name="Submit 1 job").click()
        # the confirmation itself: "queued" alone also matches the page's other texts, and going on before the
        # click's rerun has stored the sweep leaves it unsent
        page.locator('[data-testid="stAlertContentSuccess"]').filter(has_text="1 job queued (id ").wait_for()
        page.goto(f"http://localhost:{port}/queue")
        page.get_by_text("Jobs (1)").wait_for()  # its table is drawn on a canvas: the row's text is checked below
        page.locator('[data-testid="stDataFrame"]').first.wait_for()
        page.screenshot(path=os.environ.get("COMPILE_LAB_SHOT", str(tmp_path / "queue-vit.png")))
    jobs = queue.jobs_overview(engine)
    assert [j["spec"]["model"] for j in jobs] == [VIT]
    assert jobs[0]["spec"]["model_args"] == {"image_size": 64}
