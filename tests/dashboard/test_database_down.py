"""The dashboard over a database that fails under it, through Streamlit's AppTest: a PostgreSQL server
that stops answering (a TCP proxy in front of the real server, closed mid-session) and a SQLite file
with damaged pages. Every page shows one readable message instead of a traceback."""
import os

import pytest
from sqlalchemy.engine import make_url
from streamlit.testing.v1 import AppTest

from bench.synthetic import fill
from db.database import dispose_engine, get_engine
from tests.conftest import ROOT
from tests.faults.outage import Proxy

PAGES = ["submit", "queue", "results", "compare"]


def run(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=60)
    at.switch_page(f"screens/{name}.py")
    return at.run()


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error] + [e.value for e in at.sidebar.error]


def test_postgresql_stopping_under_the_pages_gives_a_readable_message(pg_url, monkeypatch):
    real = make_url(pg_url)
    proxy = Proxy((real.host or "localhost", real.port or 5432))
    url = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("COMPILE_LAB_EMBEDDED_WORKER", "0")
    monkeypatch.setenv("COMPILE_LAB_RESULTS_CACHE", "0")
    fill(get_engine(url), 48, seed=1, device="cpu", ceilings=False)
    try:
        at = run("results")
        assert not at.exception and not errors(at)
        proxy.close()  # the server is gone from here on
        for name in PAGES:
            at = run(name)
            assert not at.exception, (name, [e.value for e in at.exception])
            assert any("is not answering" in t for t in errors(at)), (name, errors(at))
            assert not any("Traceback" in t or "lab:lab@" in t for t in errors(at))
    finally:
        proxy.close()
        dispose_engine(url)


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_damaged_sqlite_file_gives_a_readable_message(tmp_path, monkeypatch):
    path = tmp_path / "lab.db"
    url = f"sqlite:///{path}"
    fill(get_engine(url), 240, seed=1, device="cpu", ceilings=False)
    with get_engine(url).connect() as c:
        c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    dispose_engine(url)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # the second half (results, written last): garbage; the schema still opens
        for offset in range(size // 2 // 4096 * 4096, size, 4096):
            f.seek(offset)
            f.write(b"\xa5" * 4096)
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("COMPILE_LAB_EMBEDDED_WORKER", "0")
    monkeypatch.setenv("COMPILE_LAB_RESULTS_CACHE", "0")
    try:
        damaged = []
        for name in PAGES:
            at = run(name)
            assert not at.exception, (name, [e.value for e in at.exception])
            damaged += [name for t in errors(at) if "may be damaged" in t]
        assert "results" in damaged, damaged  # the page that reads every result says what is wrong
    finally:
        dispose_engine(url)
