"""The Results page's team filters (db.team): tags, who submitted, and whether archived sweeps are shown. They narrow
the results table before the other filters, once per choice and results table (the narrowed frame is kept, so the
view's caches, keyed by the frame, hold across reruns). Every choice is in the link."""
from __future__ import annotations

import streamlit as st

from dashboard.data import sweeps
from dashboard.markup import md
from dashboard.state import resources


@st.cache_resource(max_entries=8, show_spinner=False)
def _narrowed(frame_key: tuple, keep: tuple, _df):
    return _df[_df["sweep_id"].isin(keep)]


def apply(engine, df, frame_key: tuple) -> tuple:
    """The rows of the sweeps the team filters keep (archived sweeps out unless asked for), `df` itself when they
    keep every sweep; and every sweep's record (sweeps.meta), read once for the page."""
    metas = sweeps.meta(engine)
    tags = sorted({t for m in metas.values() for t in m.tags})
    people = sorted({m.submitter for m in metas.values() if m.submitter})
    any_archived = any(m.archived_at for m in metas.values())
    if not (tags or len(people) > 1 or any_archived):
        return df, metas  # nothing to narrow by: no widgets, no cost
    unknown = [t for t in st.query_params.get_all("tag") if t not in tags]
    if unknown and "tag" not in st.session_state:  # a link's tag this lab has no more (or never had): say so
        st.caption(f"The link's tag{'s' if len(unknown) > 1 else ''} {', '.join(md(t) for t in unknown[:5])}: no sweep "
                   "carries it now, so it is not applied.")
    cols = st.columns([2, 2, 1], vertical_alignment="bottom")
    chosen_tags = cols[0].multiselect("Tags", tags, key="tag", bind="query-params", placeholder="any tag",
                                      help="Sweeps carrying every tag chosen") if tags else []
    chosen_people = cols[1].multiselect("Submitted by", people, key="by", bind="query-params",
                                        placeholder="anyone") if len(people) > 1 else []
    archived = cols[2].toggle("Archived too", key="archived", bind="query-params",
                              help="Archived sweeps are left out unless this is on") if any_archived else False
    keep = tuple(sorted(i for i, m in metas.items()
                        if set(chosen_tags) <= set(m.tags) and (not chosen_people or m.submitter in chosen_people)
                        and (archived or m.archived_at is None)))
    if len(keep) == len(metas):
        return df, metas
    return _narrowed(frame_key + (resources.url(),), keep, df), metas


def who_line(metas: dict, shown) -> None:
    """Who submitted the sweeps in view (`metas`: every sweep's record), each with how many: a caption under the
    counts."""
    count: dict[str, int] = {}
    for m in (metas[i] for i in shown["sweep_id"].unique().tolist() if i in metas):
        count[m.submitter or "unknown"] = count.get(m.submitter or "unknown", 0) + 1
    if count:
        people = sorted(count.items(), key=lambda kv: -kv[1])
        st.caption("Submitted by " + ", ".join(f"{md(who)} ({n} sweep{'s' if n > 1 else ''})" for who, n in people[:6])
                   + (f" and {len(people) - 6} more" if len(people) > 6 else ""))
    record_lines(metas, shown)


SHOWN_RECORDS = 3  # sweeps whose tags and note Results lists under its counts; Queue's record panel has every one


def record_lines(metas: dict, shown) -> None:
    """The tags and note of the sweeps in view that have either, as typed (text, never Markdown)."""
    ids = [int(i) for i in sorted(shown["sweep_id"].unique().tolist()) if i in metas]
    told = [i for i in ids if metas[i].tags or metas[i].note]
    for i in told[:SHOWN_RECORDS]:
        m = metas[i]
        st.caption(f"Sweep {i}" + (": tags " + ", ".join(md(t) for t in m.tags) if m.tags else "")
                   + (" · note:" if m.note else ""))
        if m.note:
            st.text(m.note)
    if len(told) > SHOWN_RECORDS:
        st.caption(f"{len(told) - SHOWN_RECORDS} more sweeps in view have tags or a note (Queue lists them).")
