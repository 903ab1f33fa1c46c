"""The queue's estimates in words (dashboard.data.estimates over lab.eta): the Queue's line for the queue and its
unfinished sweeps, and the Job page's line for a queued or running job, which refreshes itself."""
from __future__ import annotations

import streamlit as st

from dashboard.data import estimates, jobs
from dashboard.markup import md
from dashboard.state import quiet, resources
from lab import eta

HOW = ("from the lab's history of similar jobs: the same settings, else the same model on the same device kind; the "
       "process repeats a sweep's settings plan are counted before they are queued (more or fewer where the "
       "configuration's earlier processes on the workers' device disagreed or agreed), the re-runs and extra "
       "processes a run calls for once it has ended and queued them")


def queue_line(est: estimates.Estimates, sweep_ids: list[int]) -> None:
    """"Queue: done in about 14 min · sweep 3 in about 5 min" (the picked sweeps, else every unfinished one)."""
    shown = {s: at for s, at in est.sweeps.items() if not sweep_ids or s in sweep_ids}
    if est.queue is None and not shown and not est.starts and not est.left:
        return
    parts = []
    if not sweep_ids:
        parts.append("Queue: " + ("done " + eta.in_words(est.queue) if est.queue is not None else
                                  "no end to estimate while a queued job has no live worker to take it"))
    parts += [f"sweep {s} done {eta.in_words(at)}" + (f" ({est.planned[s]} process repeat{'s' if est.planned[s] > 1 else ''}"
                                                     " to come)" if est.planned.get(s) else "")
              for s, at in sorted(shown.items())[:8]]
    if parts:
        st.caption(f":material/schedule: {' · '.join(parts)} ({HOW}).")


@quiet.live("5s")
def job_line(job_id: int) -> None:
    """The Job page's estimate for a queued or running job; nothing for a finished one."""
    with resources.database_errors():
        engine = resources.engine()
        status, est, basis = estimates.job_estimate(engine, job_id, jobs.live_workers(engine))
        if status == "running":
            st.info(f"Running: {md(est.words())}" + (f" ({HOW})." if basis else "."), icon=":material/timer:")
        elif status == "queued":
            when = eta.in_words((est.start_s, est.starts_at_least))
            start = ("Starts as soon as a live worker that offers it is free" if when == "now" else
                     f"Starts {when}, after the queue ahead on the live workers")
            end = (f"; done {eta.in_words((est.end_s, est.at_least))}" if basis else
                   "; no history of similar jobs to say how long it takes")
            st.info(f"{start}{end} ({HOW}).", icon=":material/schedule:")
