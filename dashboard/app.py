"""Compile Lab's dashboard: `streamlit run dashboard/app.py` (or `make run`).

The entry page frames every view: the sidebar (database, workers, embedded worker) and the navigation.
It imports db/ only; experiments run in worker processes, never here.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `streamlit run` puts only dashboard/ on the path

import streamlit as st  # noqa: E402

from dashboard import state  # noqa: E402

st.set_page_config(page_title="Compile Lab", page_icon="🔬", layout="wide")

PAGES = [
    st.Page("screens/submit.py", title="Submit", icon=":material/send:", url_path="submit"),
    st.Page("screens/queue.py", title="Queue", icon=":material/list:", url_path="queue"),
    st.Page("screens/results.py", title="Results", icon=":material/monitoring:", url_path="results"),
    st.Page("screens/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
]

page = st.navigation(PAGES)
with st.sidebar:
    st.markdown("### :material/science: Compile Lab")
    state.sidebar_status()
state.warm_results()  # the first visit to Results finds the table loaded (or loading)
page.run()
