"""The cluster's scheduler on the dashboard: pending scheduler jobs and why (sidebar, Queue), where each live worker
runs, and, with COMPILE_LAB_CLUSTER_CONFIG set, a button that starts as many workers as the queue needs."""
from __future__ import annotations

from datetime import datetime

import pandas as pd
import streamlit as st

from dashboard.data import jobs
from dashboard.markup import md
from dashboard.state import cluster_launch, quiet, resources
from lab import scheduler
from lab.wording import count


def sidebar_line(engine) -> None:
    pending = jobs.pending_jobs(engine)
    if pending:
        st.caption(f":material/schedule: {md(scheduler.pending_line(pending))}")


@quiet.live("5s")
def section() -> None:
    """Queue's part: pending scheduler jobs with the scheduler's reasons, placed workers, the launch control."""
    engine = resources.engine()
    pending = jobs.pending_jobs(engine)
    placed = [w for w in jobs.live_workers(engine) if w.capabilities.get("scheduler")]
    config = cluster_launch.configured()
    if not (pending or placed or config):
        return
    title = scheduler.pending_line(pending) or f"{count(len(placed), 'worker')} placed by the scheduler"
    with st.expander(f"Cluster scheduler: {md(title)}", expanded=bool(pending), icon=":material/dns:"):
        if pending:
            st.dataframe(pd.DataFrame([{
                "scheduler job": f"{scheduler.NAMES.get(p.get('kind'), p.get('kind'))} {p.get('job_id')}",
                "pool": p.get("pool"), "state": p.get("state"), "why it waits (the scheduler's reason)": p.get("reason"),
                "submitted": scheduler.utc_text(p.get("submitted")),
                "as of": scheduler.utc_text(p.get("seen_at"))} for p in pending]),
                hide_index=True, width="stretch")
            odd = sorted({p.get("reason") for p in pending} - scheduler.WAITING_TURN - {None})
            if odd:
                st.warning(f"The scheduler may not start these as asked ({md(', '.join(odd))}): check the launcher's "
                           "partition, account, time limit and --gres against the cluster (`scontrol show job`).")
        if placed:
            st.dataframe(pd.DataFrame([{"worker": w.id, "state": w.state, "job": w.current_job_id,
                                        "where": scheduler.allocation(w.capabilities["scheduler"])} for w in placed]),
                         hide_index=True, width="stretch")
        if config:
            _launch_control(config)
        st.caption(f"Updated {datetime.now():%H:%M:%S}.")


def _launch_control(config: str) -> None:
    st.caption(f"Launcher config: `{md(config)}`. Workers exit by themselves once idle.")
    if st.button("Start workers for the queue (Slurm)", icon=":material/rocket_launch:", key="cluster_launch"):
        with st.spinner("Asking Slurm…"):
            ok, said = cluster_launch.launch(resources.url(), config)
        (st.success if ok else st.error)(md(said))
