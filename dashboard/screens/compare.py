"""Compare: two sweeps (or two runs, or the torch versions sweeps ran) side by side; what differs in spec,
environment and numbers is highlighted (dashboard.panels.compare_views). The choice lives in the URL
(?kind=sweeps&a=...&b=...)."""
import streamlit as st

from dashboard.data import sweeps
from dashboard.panels import compare_views
from dashboard.state import resources

st.title("Compare")
engine = resources.engine()
summaries = sweeps.sweeps(engine)
if not summaries:
    st.info("Nothing to compare yet: submit a sweep first.")
    resources.end_page()
kind = st.segmented_control("Compare", ["sweeps", "runs", "torch versions"], key="kind", bind="query-params",
                            default="sweeps", required=True)
# the team's record (db.team): archived sweeps out of the pickers unless asked for (or named in the link); each
# sweep's label ends with who submitted it and its tags, so typing a tag or a name in a picker finds it
metas = sweeps.meta(engine)
if any(m.archived_at for m in metas.values()):
    archived = st.toggle("Archived sweeps too", key="archived", bind="query-params")
    named = {st.query_params.get(k) for k in ("a", "b")}
    summaries = [s for s in summaries if archived or str(s.id) in named or metas.get(s.id) is None
                 or metas[s.id].archived_at is None]
suffix = {i: "".join([f" · {m.submitter}" if m.submitter else ""] + [f" #{t}" for t in m.tags])
          for i, m in metas.items()}
df = resources.results()
if kind == "sweeps":
    compare_views.compare_sweeps(df, summaries, suffix)
elif kind == "torch versions":
    compare_views.compare_versions(df, summaries)
elif df.empty:
    st.info("No finished runs yet.")
else:
    compare_views.compare_runs(df)
