"""ETAs in a real browser over a real app: the lab's history (finished jobs of one configuration, stored through the
queue as a worker stores them, with their timelines), then the same configuration again, compiling for 25 s, with
jobs queued behind it (one of the same model at another batch size: the model's history; one of another model: no
history). Queue says how long that compile usually takes, how long it has run and what is left, when the queued jobs
start and when the queue is done; the job's page says the same. COMPILE_LAB_SHOTS=DIR keeps its screenshots (the
docs show a real CPU run's instead)."""
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from db import queue
from db.database import get_engine
from db.engine import atomic
from db.models import Job, utcnow
from lab.sweep import SweepRequest
from runner import zoo
from tests.e2e.test_browser import CHROMIUM, browser  # noqa: F401 (browser is a fixture)
from tests.e2e.test_server_handshake import running_app
from tests.unit.test_estimates import WORKER
from tests.unit.test_eta import timeline

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} missing")


def transformer(bs: list[int], name: str) -> SweepRequest:
    return SweepRequest(model="transformer", model_args={"layers": 32, "d_model": 64, "seq_len": 32}, batch_sizes=bs,
                        device="cpu", process_repeats=1, repeat=1, name=name)


def test_queue_and_job_page_say_how_long_a_compile_usually_takes_and_what_is_left(db_url, tmp_path, browser):  # noqa: F811
    engine = get_engine(db_url)
    infos = zoo.model_infos(zoo.catalog())
    queue.register_worker(engine, WORKER, "lab-host", 1, None, {
        "devices": ["cpu"], "torch_version": "2.13.0", "models": [i.to_dict() for i in infos.values()]})
    for compile_s in (48.0, 55.0, 61.0, 70.0):  # the history: four runs of the configuration
        queue.submit(engine, transformer([1], "history"), infos)
        claim = queue.claim_next(engine, WORKER, ["cpu"], ["transformer"], 60)
        queue.finish(engine, claim.job_id, claim.token, *_succeeded(compile_s))
        _took(engine, claim.job_id, compile_s + 20.0)
    (watched,), (same_model,), (other,) = (queue.submit(engine, r, infos)[1] for r in (
        transformer([1], "again"), transformer([2], "another batch size"),
        SweepRequest(model="sincos", batch_sizes=[8], device="cpu", process_repeats=1, repeat=1, name="no history")))
    claim = queue.claim_next(engine, WORKER, ["cpu"], ["transformer"], 600)
    assert claim.job_id == watched
    queue.heartbeat_job(engine, claim.job_id, claim.token, 600, "compiling", None)
    now = utcnow()
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.id == watched).values(phase_at=now - timedelta(seconds=25),
                                                              claimed_at=now - timedelta(seconds=31)))

    def so_far(said: str) -> bool:
        """The compile's time so far as the page said it: 25 s when it was set, and what has passed since (a loaded
        host takes seconds to start the app and draw), never less or more."""
        found = re.search(r"(\d+) s so far; about [\d a-z]+ left", said)
        return found is not None and 25 <= int(found.group(1)) <= 26 + (utcnow() - now).total_seconds()

    shots = Path(os.environ.get("COMPILE_LAB_SHOTS") or tmp_path)
    with running_app(tmp_path, db_url) as port:
        page = browser.new_page(viewport={"width": 1800, "height": 1100})
        page.set_default_timeout(60_000)
        page.goto(f"http://localhost:{port}/queue")
        bar = page.locator('[data-testid="stProgress"]').filter(has_text=f"#{watched}")
        bar.get_by_text(re.compile(r"usually .* so far; about .* left")).wait_for()
        said = bar.inner_text()
        assert re.search(r"compiling.* · \d+ s since its claim · usually \d+-\d+ s, \d+ s so far; about [\d a-z]+ left",
                         said) and so_far(said), said
        line = page.get_by_text(re.compile(r"Queue: done in")).inner_text()
        assert "history of similar jobs" in line
        # the table draws on a canvas; its accessibility table holds the cells of the columns in view alone: at a
        # 1400 px window, the queued job's row says when it starts, with no scrolling sideways
        page.set_viewport_size({"width": 1400, "height": 1100})
        grid = page.locator('[data-testid="stDataFrame"]').first
        row = grid.locator('tr[role="row"]').filter(has=page.locator('td[role="gridcell"]', has_text=re.compile(
            rf"^{same_model}$")))
        eta = row.locator('td[role="gridcell"]').filter(has_text=re.compile(r"^starts in \d"))
        eta.wait_for(state="attached")
        assert re.fullmatch(r"starts in [\d a-z]+", eta.inner_text()), eta.inner_text()  # its model's history
        page.screenshot(path=str(shots / "queue-eta-long-compile-cpu.png"), full_page=True)  # the table drawn

        page.goto(f"http://localhost:{port}/job?job={watched}")
        info = page.get_by_text(re.compile(r"Running: compiling, usually"))
        info.wait_for()
        assert so_far(info.inner_text()), info.inner_text()
        page.screenshot(path=str(shots / "job-eta-long-compile-cpu.png"))
        page.goto(f"http://localhost:{port}/job?job={other}")
        page.get_by_text(re.compile("no history of similar jobs to say how long it takes")).wait_for()
        page.goto(f"http://localhost:{port}/job?job={same_model}")
        page.get_by_text(re.compile(r"Starts in .*; done in")).wait_for()


def _succeeded(compile_s: float):
    from db.models import JobStatus
    return JobStatus.SUCCEEDED, None, {"eager_ms": 30.0, "compiled_ms": 20.0, "speedup": 1.5,
                                       "compiled_first_call_s": compile_s, "first_call_cache": "cold",
                                       "detail": {"timeline": timeline(compile_s)}}


def _took(engine, job_id: int, seconds: float) -> None:
    now = utcnow()
    with atomic(engine) as s:
        s.execute(update(Job).where(Job.id == job_id).values(claimed_at=now - timedelta(seconds=seconds),
                                                             finished_at=now))
