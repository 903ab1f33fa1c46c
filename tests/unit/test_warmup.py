"""A starting dashboard server warms what a first visit needs (dashboard/app.py's lifespan, dashboard.server.warmup):
the pages' modules and the results table the pages then use, on a real SQLite file; a database that fails or hangs
never keeps the server from answering."""
import asyncio
import sys
import threading
import time

import pytest
from streamlit.web.server.app_discovery import discover_asgi_app

from dashboard.server import warmup
from dashboard.state import resources
from tests.conftest import ROOT


def app_module(monkeypatch):
    """dashboard/app.py, imported: the first st.App a process makes sets Streamlit's main script for the process."""
    from streamlit import config
    monkeypatch.setattr(config, "_main_script_path", config._main_script_path)
    from dashboard import app
    return app


def test_streamlit_run_serves_the_app_with_its_lifespan_and_the_pages_of_main(monkeypatch):
    found = discover_asgi_app(ROOT / "dashboard" / "app.py")  # what `streamlit run dashboard/app.py` checks
    assert found.is_asgi_app and found.import_string == "app:app"
    assert not discover_asgi_app(ROOT / "dashboard" / "main.py").is_asgi_app  # the pages' script: AppTest runs it
    app = app_module(monkeypatch)
    assert app.app._resolve_script_path() == ROOT / "dashboard" / "main.py"  # from any working folder
    assert app.app._user_lifespan is app.lifespan


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_warmup_loads_the_results_table_the_pages_then_use(fill_synthetic, db_url, monkeypatch):
    engine = fill_synthetic(60)
    with engine.connect() as conn:
        finished = conn.exec_driver_sql("SELECT count(*) FROM jobs WHERE finished_at IS NOT NULL").scalar()
    monkeypatch.setenv("DATABASE_URL", db_url)
    done = warmup.run()
    assert done["error"] is None and done["jobs"] == finished > 0
    assert ({"dashboard.panels.answer_table", "dashboard.charts.speed_charts", "dashboard.state.resources"}
            <= set(warmup.modules()) <= set(sys.modules))
    assert "dashboard.main" not in warmup.modules()  # a script: importing it would draw the frame
    store = resources.store()  # what every page asks for: the same store, its table in memory, read from the database once
    assert len(store.frame_) == finished and store.frame(page=False) is store.frame_ and store.full_loads == 1
    # the first load's snapshot is written before the server answers, not while a first visitor's page draws
    assert store.snapshot_path.exists() and not store.saving.is_alive()
    assert not store.claim_warming()  # the pages' warm_results() starts no second load
    # the database's spreads between processes, read before the server answers: a page's answer reads them no more
    from dashboard.panels import answer_table
    from db import reports

    monkeypatch.setattr(reports, "spreads", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read again")))
    assert answer_table.priors(store.version, engine).devices


def test_a_database_that_fails_is_left_to_the_pages(tmp_path, monkeypatch):
    (tmp_path / "lab.db").write_bytes(b"this is not a SQLite file" * 100)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'lab.db'}")
    done = warmup.run()  # logged, not raised: the page says what is wrong with the database
    assert done["jobs"] is None and done["error"]


def test_the_server_answers_when_warmup_hangs(monkeypatch):
    app = app_module(monkeypatch)
    release = threading.Event()
    monkeypatch.setattr(warmup, "run", lambda: release.wait(60))  # a database that does not answer
    monkeypatch.setattr(app, "WAIT_S", 0.5)

    async def serve() -> float:
        start = time.perf_counter()
        async with app.lifespan(None):
            return time.perf_counter() - start

    try:
        assert 0.5 <= asyncio.run(serve()) < 10  # the lifespan gave up waiting: the server starts answering
    finally:
        release.set()
