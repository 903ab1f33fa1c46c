"""Compile Lab's dashboard server: `streamlit run dashboard/app.py` (or `make run`).

Streamlit serves the pages of dashboard/main.py (the frame: sidebar and navigation) as an ASGI app, the same
server `streamlit run` starts for any script, with one addition: before it answers, it warms what a first visit
needs (dashboard.warmup), so the first person to open a restarted lab server does not wait for imports and the
results table. This file imports streamlit only; the work happens in that thread."""
import asyncio
import contextlib
import threading

import streamlit as st

WAIT_S = 60  # at most this long before the server answers anyway: a database that hangs must not keep the pages,
# which say what is wrong with it, from being served


def _warm(done: threading.Event) -> None:
    try:
        from dashboard import warmup
        warmup.run()
    finally:
        done.set()


@contextlib.asynccontextmanager
async def lifespan(_app):
    done = threading.Event()  # a daemon thread, not asyncio's executor: one stuck on the database never blocks exit
    threading.Thread(target=_warm, args=(done,), name="compile-lab-warmup", daemon=True).start()
    await asyncio.to_thread(done.wait, WAIT_S)
    yield
    from dashboard import embedded
    embedded.stop_started()  # the worker belongs to the app: uvicorn ends a stopped server by its signal, no atexit


app = st.App("main.py", lifespan=lifespan)
