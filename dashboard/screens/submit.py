"""Submit: a sweep from the models live workers offer, with a live job count and each error next to its field. The
form is a fragment (not an st.form) so the count follows every click (dashboard.panels.submit_form)."""
import streamlit as st

from dashboard.data import jobs
from dashboard.data.presets import PRESETS
from dashboard.markup import md
from dashboard.panels import advice_panel, submit_form
from dashboard.state import resources

st.title("Submit a sweep")
engine = resources.engine()
catalog = resources.catalog(engine)
if not catalog:
    submit_form.wait_for_workers()
    resources.end_page()
live = jobs.live_workers(engine)
devices = {d for w in live for d in w.capabilities.get("devices", [])}
# model files a worker's folder holds that do not read (runner.model_offer.PROBLEMS), each with where and why: the
# folder's other models are offered, and a file missing from the picker says why here, not only in the worker's log
for problem in sorted({p for w in live for p in w.capabilities.get("model_file_problems", [])}):
    st.warning(f"Not offered: {md(problem)}", icon=":material/error:")
submit_form.init_form(catalog, devices)
advice_panel.search_form(engine, catalog, devices)  # "Find the best settings": a racing search

# the preset is in the URL by its short name (?preset=modes), so a link opens the filled form
if "preset" not in st.session_state and st.query_params.get("preset") in PRESETS:
    st.session_state["preset"] = st.query_params["preset"]
st.pills("Presets: a ready experiment, one click fills the form", list(PRESETS), format_func=lambda k: PRESETS[k].title,
         key="preset")
if st.session_state.get("preset"):
    st.query_params["preset"] = st.session_state["preset"]
elif "preset" in st.query_params:
    del st.query_params["preset"]
chosen = st.session_state.get("preset")
problem = chosen and submit_form.preset_problem(chosen, catalog)
if problem:  # the form would still hold the previous preset's values, submittable under this one's heading
    st.caption(PRESETS[chosen].question)
    st.warning(problem, icon=":material/block:")
    resources.end_page()
gpu_sizes = submit_form.preset_sizes_ui(chosen, devices)
if not chosen:
    st.session_state.pop("preset_applied", None)
elif st.session_state.get("preset_applied") != chosen or st.session_state.get("preset_sizes") != gpu_sizes:
    submit_form.apply_preset(chosen, catalog, devices, gpu_sizes)
if chosen:
    st.caption(PRESETS[chosen].question)
submit_form.sweep_form(catalog, devices)
