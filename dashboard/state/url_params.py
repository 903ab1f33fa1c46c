"""A page's choices kept in its link (?key=value), so that a copied link opens the same view: single choices
seeded from the URL before their widget is drawn, read ahead of it, and written back; the job-id field."""
from __future__ import annotations

import re

import streamlit as st

from dashboard.markup import md


def url_choice(key: str, options: list, fallback) -> str | None:
    """Seed a single-choice widget's state from ?key= (else `fallback`), before the widget is drawn; returns the
    link's value where it named none of `options` (a deleted sweep, a typo) and the widget still holds the fallback
    put in its place, for the page to say so; else None.

    For choices whose default depends on the data (the newest sweep, the newest model): a bound widget
    leaves its default out of the URL, so a copied link would later open another view. Call
    `write_url_choice` after the widget to put the value in the URL every run."""
    by_text = {str(o): o for o in options}
    if key not in st.session_state:
        linked = st.query_params.get(key)
        st.session_state[key] = by_text.get(linked, fallback)
        if linked is not None and linked not in by_text:
            st.session_state[f"{MISSING}{key}"] = (linked, st.session_state[key])
    elif st.session_state[key] not in options:  # the options changed under it (new filters)
        st.session_state[key] = fallback
    missing = st.session_state.get(f"{MISSING}{key}")
    return missing[0] if missing and st.session_state[key] == missing[1] else None


MISSING = "link_missing_"  # + a widget's key: (what its link named, the fallback shown instead)


def peek(key: str, options: list, default, bound: bool = False):
    """The value a single-choice widget keyed `key`, drawn later in this run, will have: the session's, else
    (`bound` to the URL) the URL's, else `default`; a value no longer among `options` falls back to `default`,
    as the widget does. For pages that send a chart before the widgets drawn above it."""
    if key in st.session_state:
        value = st.session_state[key]
        return value if value in options else default
    if bound:
        return {str(o): o for o in options}.get(st.query_params.get(key), default)
    return default


def peek_int(key: str, default: int, minimum: int, maximum: int) -> int:
    """peek for a number field bound to the URL (bind="query-params"): the session's value, else the link's ?key=
    when it is a whole number in range, else `default` (a link naming 1e309 or "abc" opens the default view)."""
    if st.session_state.get(key) is not None:
        return int(st.session_state[key])
    text = st.query_params.get(key, "")
    if re.fullmatch(r"[0-9]{1,16}", text) and minimum <= int(text) <= maximum:
        return int(text)
    return default


MAX_JOB_ID = 2 ** 53 - 1  # past this, a browser's numbers are not whole numbers exactly


def job_id_input(label: str, placeholder: str) -> int | None:
    """The job-id field bound to ?job=: text, parsed here, so that a link naming inf, 1e309, 1.5 or a 5,000-digit
    number shows an error under the field (a number input would fail the whole page parsing it); None if empty."""
    text = (st.text_input(label, key="job", bind="query-params", placeholder=placeholder) or "").strip()
    if not text:
        return None
    digits = text.removeprefix("#")
    if re.fullmatch(r"[0-9]{1,16}", digits) and 1 <= int(digits) <= MAX_JOB_ID:
        return int(digits)
    shown = text[:24] + ("..." if len(text) > 24 else "")
    st.error(f"Job id: {md(repr(shown))} is not a job id (a whole number from 1)", icon=":material/error:")
    return None


def write_url_choice(key: str, value) -> None:
    if value is None:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
