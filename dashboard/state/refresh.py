"""Results refreshes itself: a fragment asks every few seconds whether jobs finished since the page was drawn
(jobs.data_version, one query), and reruns the page, saying so, only when results landed that its filters keep."""
from __future__ import annotations

from datetime import datetime

import pandas as pd
import streamlit as st

from dashboard.data import filters, jobs
from dashboard.state import quiet, resources

EVERY_S = 10
SEEN, NEWS = "results_seen", "results_news"  # session keys: (data version, newest finished_at) drawn; the news
JUST_DRAWN = "results_just_drawn"


def drawn(df: pd.DataFrame, selected: dict) -> None:
    """The page draws `df` with these filters: count what landed in view since it last drew (the news), and
    remember its data version and newest finish, what the next tick compares with."""
    seen, version = st.session_state.get(SEEN), resources.store().version
    if seen is not None and seen[0] != version:
        n = fresh_in_view(df, seen[1], selected)
        if n:
            st.session_state[NEWS] = (n, datetime.now().strftime("%H:%M:%S"))
    newest = df["finished_at"].max() if len(df) else None
    st.session_state[SEEN] = (version, None if pd.isna(newest) else newest)
    st.session_state[JUST_DRAWN] = True  # the watch in this same run has nothing to ask the database


def fresh_in_view(df: pd.DataFrame, since, selected: dict) -> int:
    """How many results in `df` finished after `since` and pass the page's filters (only the new rows are
    filtered: a few, not the whole table)."""
    new = df if since is None else df[df["finished_at"] > since]
    return len(filters.apply_filters(new, selected)) if len(new) else 0


@quiet.live(f"{EVERY_S}s")
def watch(selected: dict) -> None:
    """Check for new results; rerun the page when some land in view. Draws one caption line."""
    seen, tick = st.session_state.get(SEEN), not st.session_state.pop(JUST_DRAWN, False)
    with resources.database_errors():
        if tick and seen is not None and jobs.data_version(resources.engine()) != seen[0]:
            df = resources.results()  # appends only the rows finished since (dashboard.data.store)
            if fresh_in_view(df, seen[1], selected):
                st.rerun(scope="app")  # the page's run counts them (drawn) and says so
            drawn(df, selected)  # landed out of view: taken in quietly
            st.session_state.pop(JUST_DRAWN, None)  # the next tick asks again
    news = st.session_state.get(NEWS)
    if news:
        st.caption(f":material/autorenew: {news[0]:,} new result{'s' * (news[0] != 1)}, updated {news[1]}. "
                   f"This page updates itself as results land (checked every {EVERY_S} s).")
    else:
        st.caption(f":material/autorenew: This page updates itself as results land (checked every {EVERY_S} s).")
