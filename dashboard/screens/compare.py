"""Compare: two sweeps (or two runs, or the torch versions sweeps ran) side by side; what differs in spec,
environment and numbers is highlighted (dashboard.panels.compare_views). The choice lives in the URL
(?kind=sweeps&a=...&b=...)."""
import streamlit as st

from dashboard.panels import compare_views
from dashboard.state import resources
from db import views

st.title("Compare")
engine = resources.engine()
summaries = views.sweeps(engine)
if not summaries:
    st.info("Nothing to compare yet: submit a sweep first.")
    st.stop()
kind = st.segmented_control("Compare", ["sweeps", "runs", "torch versions"], key="kind", bind="query-params",
                            default="sweeps", required=True)
df = resources.results()
if kind == "sweeps":
    compare_views.compare_sweeps(df, summaries)
elif kind == "torch versions":
    compare_views.compare_versions(df, summaries)
elif df.empty:
    st.info("No finished runs yet.")
else:
    compare_views.compare_runs(df)
