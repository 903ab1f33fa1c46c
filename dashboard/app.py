"""Compile Lab's dashboard server: `streamlit run dashboard/app.py` (or `make run`). Streamlit's ASGI app for the
pages of dashboard/main.py, plus a warm-up before it answers and two file routes (tlparse reports, downloads);
docs/dashboard-internals.md says why."""
import asyncio
import contextlib
import faulthandler
import signal
import sys
import threading
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from dashboard.server import downloads, page_base, tlparse_pages

# At most this long before the server answers anyway: a database that does not answer (PostgreSQL gives up after
# db.engine.CONNECT_TIMEOUT_S) must not keep the pages, which say what is wrong with it, from being served. Ctrl-C
# while the server starts waits for this too: uvicorn does not interrupt a lifespan's start.
WAIT_S = 15
# `kill -USR1 <pid>` writes every thread's stack to the server's log: what a server that does not stop is doing
with contextlib.suppress(AttributeError, ValueError, OSError):  # no such signal, or a stderr without a file
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)


def _warm(done: threading.Event) -> None:
    try:
        from dashboard.server import warmup
        warmup.run()
    finally:
        done.set()


@contextlib.asynccontextmanager
async def lifespan(_app):
    done = threading.Event()  # a daemon thread, not asyncio's executor: one left waiting on a database that does
    # not answer is not joined when the server exits
    threading.Thread(target=_warm, args=(done,), name="compile-lab-warmup", daemon=True).start()
    await asyncio.to_thread(done.wait, WAIT_S)
    yield
    from dashboard.state import embedded
    embedded.stop_started()  # the worker belongs to the app: uvicorn ends a stopped server by its signal, no atexit


app = st.App(Path(__file__).with_name("main.py"), lifespan=lifespan, routes=tlparse_pages.routes() + downloads.routes(),
             middleware=[Middleware(downloads.Serving), Middleware(page_base.PageBase)])
