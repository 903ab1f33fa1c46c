"""How an error reads in one line, wherever the lab reports one: a log line, the CLI's message, a schedule call's
recorded reason, the page that says a database is down."""
from __future__ import annotations

import textwrap


def first_line(e: BaseException, blank: str | None = None) -> str:
    """The first line of an error's message; for one that says nothing, `blank` (by default the error's type name)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else (type(e).__name__ if blank is None else blank)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut at a word boundary with an ellipsis, never mid-word (a status
    line; the job's page and `runner export` hold it whole)."""
    return text if len(text) <= width else textwrap.shorten(text, width, placeholder=" …")
