"""Queue: every job with its status, attempts, elapsed time and worker; running jobs' phase and progress; cancel and
re-submit; one job's detail (dashboard.panels.queue_tables, a fragment that refreshes itself)."""
import streamlit as st

from dashboard.data import jobs, sweeps
from dashboard.panels import cluster_panel, queue_tables, sweep_record, timeline_panel
from dashboard.state import resources

st.title("Queue")
engine = resources.engine()
summaries = sweeps.sweeps(engine)
labels = {s.id: s.label for s in summaries}  # as Submit's "Watch them on Queue" link names them (?qsweep=)
f1, f2 = st.columns([2, 3])
sweep_ids = f1.multiselect("Sweep", list(labels), format_func=lambda i: labels[i], key="qsweep",
                           bind="query-params", placeholder="all sweeps")
statuses = f2.pills("Status", queue_tables.STATUSES, selection_mode="multi", key="qstatus", bind="query-params",
                    wrap=True)  # plain names: a bound widget's URL holds the shown text (?qstatus=failed)
with st.container():  # one place whatever is picked: the live table below keeps its own (see advice_panel)
    for sid in sweep_ids:  # where the picked sweeps' time went (lab.timeline)
        timeline_panel.sweep_caption(labels.get(sid, f"#{sid}"), jobs.sweep_measurement(engine, sid))
# a link naming a job (?job=12) opens its detail first; the bound widget fills session state only once drawn
named = bool(st.session_state.get("job")) or bool(st.query_params.get("job"))
top = st.container()
queue_tables.live_queue(sweep_ids, statuses)
cluster_panel.section()  # scheduler jobs, placed workers, the launch control (where configured)
queue_tables.actions_form()
sweep_record.panel(engine)
with top if named else st.container(), st.expander("Job detail", expanded=named):
    queue_tables.job_detail()
