"""What every page and session shares, one per server process and database (st.cache_resource): the engine, the
results store (dashboard.data.store), the embedded worker, the catalog of live workers' models, and a database that
fails under a page turned into one readable message."""
from __future__ import annotations

import logging
import sqlite3
import sys
from contextlib import contextmanager
from typing import Iterator, NoReturn

import streamlit as st
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from dashboard.data import jobs, snapshot
from dashboard.data.connection import DatabaseError, default_url, describe, open_engine
from dashboard.data.store import ResultStore
from dashboard.markup import md
from dashboard.state.embedded import EmbeddedWorker
from lab.errors import first_line


def url() -> str:
    return default_url()


@st.cache_resource(show_spinner=False)
def _engine(db_url: str) -> Engine:
    return open_engine(db_url)


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
    loaded: a SQLite lab never imports it."""
    psycopg = sys.modules.get("psycopg")
    return (DBAPIError, sqlite3.Error) + ((psycopg.Error,) if psycopg is not None else ())


class PageEnd(Exception):
    """A page that has said all it has (end_page). The frame (dashboard/main.py) ends the page and draws the
    sidebar after it, which st.stop() would forbid: once a run is stopped, every element it draws raises."""


def end_page() -> NoReturn:
    """The rest of this page is not drawn (a page script's early end, in place of st.stop())."""
    raise PageEnd


@contextmanager
def database_errors() -> Iterator[None]:
    """A database that fails under a page (the server stopped, a SQLite page damaged) becomes one
    readable message where it failed, and what was inside the block ends; the traceback goes to the
    server's log."""
    try:
        yield
    except driver_errors() as e:
        logging.getLogger("compile_lab.dashboard").exception("database error under a page")
        st.error(database_message(e), icon=":material/database:")


def database_message(e: Exception) -> str:
    orig = getattr(e, "orig", None) or e
    why = md(first_line(orig))
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
    warm-up (dashboard.server.warmup) did."""
    try:
        _store(url()).start_warming()
    except DatabaseError:  # the page says why, through engine()
        pass


def save_results_snapshot() -> None:
    """After a page has run: write the results snapshot if a load asked for it (dashboard.data.store.ResultStore)."""
    try:
        _store(url()).save_if_due()
    except (DatabaseError, *driver_errors()):
        pass


def store() -> ResultStore:
    """This database's results store (dashboard.data.store.ResultStore), shared by every session."""
    return _store(url())


def results():
    """Every finished job as a DataFrame (read-only), shared by all sessions and kept current by
    appending newly finished jobs (dashboard.data.store.ResultStore)."""
    store = _store(url())
    first = store.frame_ is None  # nothing in memory yet: the snapshot on disk, or every row from the database
    with st.spinner("Loading the results table (the first time a server reads a large database this takes a few "
                    "seconds; later visits and restarts read only what finished since)…" if first else "Loading results…"):
        return store.frame()


def catalog(eng: Engine) -> dict:
    return jobs.published_catalog(eng)
