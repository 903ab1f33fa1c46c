"""What every page shares: the database engine, the embedded worker, the live catalog, the sidebar."""
from __future__ import annotations

import logging
import re
import sqlite3
import sys
from contextlib import contextmanager
from typing import Iterator

import streamlit as st
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from dashboard import snapshot
from dashboard.embedded import EmbeddedWorker
from dashboard.markup import md
from dashboard.store import ResultStore
from db import queue
from db.database import get_engine
from db.engine import DatabaseError, describe, resolve_url

STATUS_ICONS = {"queued": "⏳", "running": "▶️", "succeeded": "✅", "failed": "❌", "timed_out": "⌛",
                "cancelled": "🚫", "crashed": "💥"}


def url() -> str:
    return resolve_url(None)  # DATABASE_URL, else sqlite:///data/compile_lab.db


@st.cache_resource(show_spinner=False)
def _engine(db_url: str) -> Engine:
    return get_engine(db_url)


def engine() -> Engine:
    """The engine for this app's database; a bad URL stops the page with the reason."""
    try:
        return _engine(url())
    except DatabaseError as e:
        st.error(f"Cannot open the database: {e}")
        st.stop()


def driver_errors() -> tuple[type[Exception], ...]:
    """What a failing database raises. SQLAlchemy wraps what its own queries meet; a raw driver cursor (db.views
    reads the results table with one) raises the driver's errors unwrapped. psycopg's are among them once it is
    loaded: a SQLite lab never imports it (~0.05 s before a restarted server's first page)."""
    psycopg = sys.modules.get("psycopg")
    return (DBAPIError, sqlite3.Error) + ((psycopg.Error,) if psycopg is not None else ())


@contextmanager
def database_errors(stop: bool = True) -> Iterator[None]:
    """A database that fails under a page (the server stopped, a SQLite page damaged) becomes one
    readable message on the page (which then stops, unless told not to); the traceback goes to the
    server's log."""
    try:
        yield
    except driver_errors() as e:
        logging.getLogger("compile_lab.dashboard").exception("database error under a page")
        st.error(database_message(e), icon=":material/database:")
        if stop:
            st.stop()


def database_message(e: Exception) -> str:
    orig = getattr(e, "orig", None) or e
    why = md(str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__)
    where = md(describe(url()))
    if (isinstance(e, OperationalError) or type(orig).__name__ == "OperationalError") and "malformed" not in why:
        return (f"The database {where} is not answering ({why}). Jobs and results are safe in it; this page comes "
                "back by itself once it answers again (is the PostgreSQL server running?).")
    return (f"The database {where} answered with an error ({why}). If it is a SQLite file, it may be damaged: "
            "check it with `sqlite3 FILE 'PRAGMA integrity_check'` and restore it from a backup.")


@st.cache_resource(show_spinner=False)
def embedded_worker(db_url: str) -> EmbeddedWorker:
    """One manager per server process and database (every browser session shares it)."""
    return EmbeddedWorker(db_url, _engine(db_url))


@st.cache_resource(show_spinner=False)
def _store(db_url: str) -> ResultStore:
    return ResultStore(_engine(db_url), snapshot.path_for(db_url))


def warm_results() -> None:
    """Start loading the results table in the background when the app first runs (any page), unless the server's
    warm-up (dashboard.warmup) did."""
    try:
        _store(url()).start_warming()
    except DatabaseError:  # the page says why, through engine()
        pass


def save_results_snapshot() -> None:
    """After a page has run: write the results snapshot if a load asked for it (dashboard.store.ResultStore)."""
    try:
        _store(url()).save_if_due()
    except (DatabaseError, *driver_errors()):
        pass


def store() -> ResultStore:
    """This database's results store (dashboard.store.ResultStore), shared by every session."""
    return _store(url())


def results():
    """Every finished job as a DataFrame (read-only), shared by all sessions and kept current by
    appending newly finished jobs (dashboard.store.ResultStore)."""
    store = _store(url())
    first = store.frame_ is None  # nothing in memory yet: the snapshot on disk, or every row from the database
    with st.spinner("Loading the results table (the first time a server reads a large database this takes a few "
                    "seconds; later visits and restarts read only what finished since)…" if first else "Loading results…"):
        return store.frame()


def catalog(eng: Engine) -> dict:
    return queue.published_catalog(eng)


@st.fragment(run_every="5s")
def sidebar_status() -> None:
    """Database, workers alive, GPU or CPU; also (re)starts the embedded worker when none is alive."""
    with database_errors(stop=False):  # the page says it too; the sidebar must not hide the page
        _sidebar_status()


def _sidebar_status() -> None:
    eng = engine()
    status = embedded_worker(url()).ensure()
    workers = queue.live_workers(eng)
    st.caption("Database")
    st.text(describe(url()))  # plain text: a code block would load the syntax highlighter on every page
    devices = sorted({d for w in workers for d in w.capabilities.get("devices", [])})
    gpus = sorted({w.capabilities.get("device_name") for w in workers if w.capabilities.get("device_name")})
    st.metric("Workers alive", len(workers))
    if gpus:
        st.markdown("**GPU:** " + ", ".join(md(g) for g in gpus))  # a worker's own words, as text
    elif workers:
        st.markdown("**CPU only**: no live worker sees a GPU")
    if workers:
        busy = sum(1 for w in workers if w.state == "busy")
        st.caption(f"{busy} busy, {len(workers) - busy} idle; devices: {', '.join(md(d) for d in devices)}")
    if status.state == "starting":
        st.info(f"Embedded worker: {status.detail}", icon=":material/hourglass_top:")
    elif status.state == "failed":
        st.error(f"Embedded worker: {status.detail}. Log: `{status.log}`")
    elif status.state == "ours":
        st.caption(f"Embedded worker pid {status.pid}; log `{status.log}`")
    elif status.state == "disabled":
        st.caption(status.detail)


def url_choice(key: str, options: list, fallback):
    """Seed a single-choice widget's state from ?key= (else `fallback`), before the widget is drawn.

    For choices whose default depends on the data (the newest sweep, the newest model): a bound widget
    leaves its default out of the URL, so a copied link would later open another view. Call
    `write_url_choice` after the widget to put the value in the URL every run."""
    by_text = {str(o): o for o in options}
    if key not in st.session_state:
        st.session_state[key] = by_text.get(st.query_params.get(key), fallback)
    elif st.session_state[key] not in options:  # the options changed under it (new filters)
        st.session_state[key] = fallback


def peek(key: str, options: list, default, bound: bool = False):
    """The value a single-choice widget keyed `key`, drawn later in this run, will have: the session's, else
    (`bound` to the URL) the URL's, else `default`; a value no longer among `options` falls back to `default`,
    as the widget does. For pages that send a chart before the widgets drawn above it."""
    if key in st.session_state:
        value = st.session_state[key]
        return value if value in options else default
    if bound:
        return {str(o): o for o in options}.get(st.query_params.get(key), default)
    return default


MAX_JOB_ID = 2 ** 53 - 1  # past this, a browser's numbers are not whole numbers exactly


def job_id_input(label: str, placeholder: str) -> int | None:
    """The job-id field bound to ?job=: text, parsed here, so that a link naming inf, 1e309, 1.5 or a 5,000-digit
    number shows an error under the field (a number input would fail the whole page parsing it); None if empty."""
    text = (st.text_input(label, key="job", bind="query-params", placeholder=placeholder) or "").strip()
    if not text:
        return None
    digits = text.removeprefix("#")
    if re.fullmatch(r"[0-9]{1,16}", digits) and 1 <= int(digits) <= MAX_JOB_ID:
        return int(digits)
    shown = text[:24] + ("..." if len(text) > 24 else "")
    st.error(f"Job id: {md(repr(shown))} is not a job id (a whole number from 1)", icon=":material/error:")
    return None


def write_url_choice(key: str, value) -> None:
    if value is None:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
