"""The sidebar every page shows: the database, the live workers (GPU or CPU) and the embedded worker, which it
(re)starts when none is alive."""
from __future__ import annotations

import streamlit as st

from dashboard.data import jobs
from dashboard.data.connection import describe
from dashboard.markup import md
from dashboard.panels import cluster_panel
from dashboard.state import quiet, resources


@quiet.live("5s")
def show() -> None:
    """Database, workers alive, GPU or CPU; also (re)starts the embedded worker when none is alive."""
    with resources.database_errors():  # the page says it too; the sidebar must not hide the page
        _sidebar_status()


def _sidebar_status() -> None:
    eng = resources.engine()
    status = resources.embedded_worker(resources.url()).ensure()
    workers = jobs.live_workers(eng)
    st.caption("Database")
    st.text(describe(resources.url()))  # plain text: a code block would load the syntax highlighter on every page
    devices = sorted({d for w in workers for d in w.capabilities.get("devices", [])})
    gpus = sorted({w.capabilities.get("device_name") for w in workers if w.capabilities.get("device_name")})
    st.metric("Workers alive", len(workers))
    if gpus:
        st.markdown("**GPU:** " + ", ".join(md(g) for g in gpus))  # a worker's own words, as text
    elif workers:
        st.markdown("**CPU only**: no live worker sees a GPU")
    if workers:
        busy = sum(1 for w in workers if w.state == "busy")
        paused = [w for w in workers if w.state == "paused"]
        st.caption(f"{busy} busy, {len(workers) - busy - len(paused)} idle" + (f", {len(paused)} paused" if paused
                   else "") + f"; devices: {', '.join(md(d) for d in devices)}")
        for w in paused:  # its home's disk is full (runner.diskpause): where, how much is free, when it goes on
            st.warning(f"Worker {md(w.id)} {md(w.capabilities.get('paused') or 'paused')}", icon=":material/pause:")
    cluster_panel.sidebar_line(eng)  # scheduler jobs not started yet, with the scheduler's reason
    if status.state == "starting":
        st.info(f"Embedded worker: {status.detail}", icon=":material/hourglass_top:")
    elif status.state == "failed":
        st.error(f"Embedded worker: {status.detail}. Log: `{status.log}`")
    elif status.state == "ours":
        st.caption(f"Embedded worker pid {status.pid}; log `{status.log}`")
    elif status.state == "disabled":
        st.caption(status.detail)
