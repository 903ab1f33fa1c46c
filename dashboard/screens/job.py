"""The job's page: one result read whole, beside what the compiler did to get it (kernels, caches, graph breaks,
recompiles, and its artifacts: dashboard.panels.job_parts)."""
import streamlit as st

from dashboard.data import jobs, story
from dashboard.markup import md
from dashboard.panels import eta_view, job_parts, queue_tables, timeline_panel, traffic_view
from dashboard.state import resources, url_params
from lab import noise
from lab.traffic import words

st.title("Job")
job_id = url_params.job_id_input("Job id", placeholder="a job id")
if job_id is None:
    st.info("Type a job id, or open a job from the Queue page.")
    resources.end_page()
detail = jobs.job_detail(resources.engine(), int(job_id))
if detail is None:
    st.warning(f"No job #{job_id}.")
    resources.end_page()
(record,) = jobs.export_records(resources.engine(), job_ids=[int(job_id)])
st.markdown(f"**#{detail['job_id']}** {queue_tables.STATUS_ICONS.get(detail['status'], '')} {detail['status']}")
st.page_link("screens/results.py", label=f"of sweep {md(detail['sweep_label'])}: its results",  # the user's name: text
             icon=":material/monitoring:", query_params={"sweep": [detail["sweep_label"]]})
if detail["status"] in ("queued", "running"):  # when it starts, how long its phase usually takes, the time left
    eta_view.job_line(int(job_id))
st.code(", ".join(f"{k}={words(v) if k == 'traffic' else v}" for k, v in detail["spec"].items()
                  if k != "traffic" or v), language=None, wrap_lines=True)
queue_tables.follow_ups(detail)
if detail["error"]:
    st.code(detail["error"], language=None, wrap_lines=True)
if record["status"] == "succeeded" and record.get("disturbed") is True:
    st.warning(f"Disturbed: {md(record.get('noise_note') or 'a cause from outside')}. The answer on Results leaves "
               "this run out while an undisturbed run of its configuration exists (else it answers, marked disturbed); "
               f"{noise.rerun_outcome(*jobs.reruns_of(resources.engine(), int(job_id)))}.",
               icon=":material/warning:")
elif record["status"] == "succeeded" and record.get("noisy") is True:  # flagged by an older worker, for its scatter
    st.caption(f"Stored as noisy by an older worker ({md(record.get('noise_note') or 'spread past 5%')}): scatter "
               "alone is no cause, so this run answers, and its scatter widens the interval.")
if record["status"] == "succeeded" and record.get("first_call_disturbed") is True:
    job_parts.compile_disturbed(record)
if record["status"] == "succeeded":
    job_parts.headline(record)
    line = story.kernels_line(record)
    if line:
        st.caption(f"Fusion: {line}.")
    job_parts.pace(record)
    job_parts.first_calls(record)
    for line in story.accuracy_lines(record):
        st.text(line)  # tensor names are the model's: text, never markup
    traffic_view.show(record, detail.get("follow_up_of"))
    st.subheader("Timeline")
    timeline_panel.show(record["timeline"])
    job_parts.compiler(record)
job_parts.artifact_view(int(job_id), record["artifacts"])
job_parts.tlparse_view(int(job_id), record["artifacts"], record.get("tlparse_note"), detail.get("follow_up_of"))
with st.expander("Log tail"):
    st.code(detail["log_tail"] or "(no log)", language=None)
