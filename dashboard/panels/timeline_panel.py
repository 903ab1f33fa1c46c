"""A job's timeline on its page: the bar (dashboard.charts.timeline_bar), a sentence, and the share of its sweep's
wall time that was measurement."""
from __future__ import annotations

import streamlit as st

from dashboard.charts.timeline_bar import bar, summary
from dashboard.markup import md
from lab.wording import count


def show(timeline: list[dict] | None, sweep: dict | None = None) -> None:
    """The job detail's timeline: the bar, a sentence, and the sweep's share of wall time that was measurement."""
    if not timeline:
        st.caption("No timeline: this result was stored before timelines were recorded.")
        return
    st.plotly_chart(bar(timeline), width="stretch", config={"displayModeBar": False})
    st.caption(summary(timeline))
    sweep_caption(None, sweep)


def sweep_caption(label: str | None, sweep: dict | None) -> None:
    """The share of a sweep's wall time (first claim to last stored result) that was measurement."""
    if not sweep or sweep.get("share") is None:
        return
    st.caption(f"{'Its sweep' if label is None else 'Sweep ' + md(label)}: {sweep['measured_s']:.1f} s of measurement "
               f"in {sweep['wall_s']:.1f} s of wall time (first claim to last stored result, {count(sweep['jobs'], 'job')} "
               f"with a timeline): **{sweep['share']:.0%} measurement**.")
