"""A second reference page for bench/browser_first_plot.py (`--reference bench/one_chart_in_frame.py`): the one-chart
page (bench/one_chart.py) drawn inside a frame like the app's own: a navigation of five pages and a sidebar of the
same kinds of elements as dashboard/main.py's (a heading, a caption, a label and a text, a metric, a caption).
Results against it is the page's own cost; this against bench/one_chart.py is the frame's."""
import streamlit as st

st.set_page_config(page_title="One chart in a frame", layout="wide")
HERE = "frame_pages"  # beside this file, as st.Page reads paths
pages = [st.Page(f"{HERE}/chart.py", title="Results", icon=":material/monitoring:", url_path="results", default=True)]
pages += [st.Page(f"{HERE}/empty.py", title=name, icon=icon, url_path=name.lower())
          for name, icon in (("Submit", ":material/send:"), ("Queue", ":material/list:"), ("Job", ":material/description:"),
                             ("Compare", ":material/compare_arrows:"))]
page = st.navigation(pages)
with st.sidebar:
    st.markdown("### :material/science: Compile Lab")
    st.caption(":material/lock_open: Sign-in is off: anyone who opens this page may submit sweeps and cancel any job.")
    st.caption("Database")
    st.text("sqlite:////tmp/results.db")
    st.metric("Workers alive", 0)
    st.caption("embedded worker off; start one with `python -m runner work`")
page.run()
