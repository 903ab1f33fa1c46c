"""The frame every page is drawn in: sign-in first (dashboard.state.auth, off by default), the navigation, the page,
then the sidebar (who is signed in, database, workers). Experiments run in worker processes, never here."""
import logging
import os

import streamlit as st

from dashboard.panels import sidebar_status
from dashboard.server import downloads, page_base
from dashboard.state import auth, quiet, resources

st.set_page_config(page_title="Compile Lab", page_icon=":material/science:", layout="wide")  # an emoji icon
# would load streamlit's emoji catalogue before a restarted server's first page

# .streamlit/config.toml binds localhost with XSRF protection, but Streamlit reads it from the current
# folder only: started from elsewhere, the server would listen on every interface. Serve no page then,
# unless the lab says it runs behind its own authentication.
LOOPBACK = ("localhost", "127.0.0.1", "::1")
if os.environ.get("COMPILE_LAB_ALLOW_REMOTE") != "1" and (
        st.get_option("server.address") not in LOOPBACK or not st.get_option("server.enableXsrfProtection")
        or not st.get_option("server.allowedHosts")):
    st.error("This server listens beyond this machine, has XSRF protection off or accepts any Host name "
             "(started outside the project folder, whose .streamlit/config.toml binds localhost?). Run `make run` "
             "from the project folder (docs/operations.md), or "
             "set COMPILE_LAB_ALLOW_REMOTE=1 if it is behind your own authentication.")
    st.stop()
who = auth.gate()  # with sign-in on, nobody gets past this without it: no page, no sidebar, no data, no submit

PAGES = [
    st.Page("screens/submit.py", title="Submit", icon=":material/send:", url_path=page_base.DEFAULT),  # at the base
    st.Page("screens/queue.py", title="Queue", icon=":material/list:", url_path="queue"),
    st.Page("screens/job.py", title="Job", icon=":material/description:", url_path="job"),
    st.Page("screens/results.py", title="Results", icon=":material/monitoring:", url_path="results"),
    st.Page("screens/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
]


def sidebar() -> None:
    """Drawn after the page (its place on screen is the same): the page's first chart is not sent behind the
    sidebar's elements and its queries."""
    with st.sidebar:
        st.markdown("### :material/science: Compile Lab")
        auth.sidebar(who)
        sidebar_status.show()


page = st.navigation(PAGES)
quiet.begin()  # a job timed on this host: live refresh pauses (dashboard.state.quiet)
quiet.wait_for_timing(page.url_path)  # and on a small host a page opened waits for its timing to end to draw
resources.warm_results()  # the first visit to Results finds the table loaded (or loading)
with downloads.drawing():  # downloads wait while pages are drawn (dashboard.server.downloads)
    try:  # st.stop() and reruns end a page by raising (not an Exception): no sidebar for a run that is thrown away
        try:
            with resources.database_errors():
                quiet.notice()
                page.run()
        except resources.PageEnd:  # a page's early end (resources.end_page; st.stop() would forbid the sidebar)
            pass
        except Exception:  # a page that failed still has its frame; the page's error is the one shown
            try:
                sidebar()
            except Exception:
                logging.getLogger("compile_lab.dashboard").exception("the sidebar under a failed page")
            raise
        sidebar()
    finally:  # the snapshot is still written, unless a job here is timed
        if not quiet.paused():
            resources.save_results_snapshot()
