"""What a team adds to a sweep after the numbers: tags (short words to find it by) and a note (why it ran), checked
here before anything is stored; and the baseline deltas (lab.team.delta) that Results, Compare and `runner report`
show against a model's pinned baseline."""
from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable, Mapping

from lab.checks import SpecError

MAX_TAGS, MAX_TAG, MAX_NOTE = 20, 64, 2000
# direction overrides and isolates: they make a note read otherwise than it is stored (and reach terminals)
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_TAG = re.compile(rf"[a-z0-9][a-z0-9._+:/-]{{0,{MAX_TAG - 1}}}")


def check_tag(value: Any, where: str = "tags") -> str:
    """A tag as typed, stripped and lower-cased: a letter or digit, then letters, digits and . _ + : / - (no
    spaces, no markup: a tag is a word to search by and a part of links)."""
    if not isinstance(value, str):
        raise SpecError(where, f"expected text, got {type(value).__name__}")
    tag = value.strip().lower()
    if not _TAG.fullmatch(tag):
        shown = repr(value[:24]) + ("..." if len(value) > 24 else "")
        raise SpecError(where, f"{shown} is not a tag: up to {MAX_TAG} letters, digits and . _ + : / -, starting "
                               "with a letter or digit")
    return tag


def check_tags(values: Any, where: str = "tags") -> tuple[str, ...]:
    """Tags from a list, or from one text with commas or spaces between them; repeats dropped, order kept."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, Iterable):
        raise SpecError(where, f"expected a list of tags, got {type(values).__name__}")
    # each item may hold several, commas or spaces between them (`--tag a,b`, the form's "a, b")
    words = [w for v in values for w in (re.split(r"[,\s]+", v) if isinstance(v, str) else [v]) if w != ""]
    tags = tuple(dict.fromkeys(check_tag(v, where) for v in words))
    if len(tags) > MAX_TAGS:
        raise SpecError(where, f"{len(tags)} tags; at most {MAX_TAGS}")
    return tags


def check_note(value: Any, where: str = "note") -> str:
    """A note: plain text of up to MAX_NOTE characters; line breaks and tabs kept, other control characters
    refused (they forge lines in logs and terminals)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SpecError(where, f"expected text, got {type(value).__name__}")
    value = value.replace("\r\n", "\n")  # a note pasted from Windows
    bad = next((c for c in value if c not in "\n\t" and (unicodedata.category(c) in ("Cc", "Cs")
                                                          or c in "\u2028\u2029" or c in BIDI)), None)
    if bad is not None:
        raise SpecError(where, f"contains the control character U+{ord(bad):04X}; use printable text only")
    text = value.strip()
    if len(text) > MAX_NOTE:
        raise SpecError(where, f"is {len(text):,} characters long; at most {MAX_NOTE:,}")
    return text


# -- baseline deltas -------------------------------------------------------------------------------------------
DELTA_COLUMNS = ("vs_baseline_latency_pct", "vs_baseline_first_call_s", "vs_baseline_break_even_calls")
SHAPE = ("model", "batch_size", "task", "dtype", "device")  # rows compared with a baseline row of the same shape


def delta(row: Mapping, base: Mapping | None) -> dict:
    """A row against its baseline row: the change in the caller's latency with compile (percent; negative is
    faster), in the cold first call (seconds) and in the break-even (calls). None where either side lacks it."""
    out = dict.fromkeys(DELTA_COLUMNS)
    if base is None:
        return out
    mine, theirs = row.get("compiled_ms"), base.get("compiled_ms")
    if mine and theirs:
        out["vs_baseline_latency_pct"] = round((mine / theirs - 1) * 100, 2)
    for key, name, digits in (("first_call_cold_s", "vs_baseline_first_call_s", 3),
                              ("break_even_calls", "vs_baseline_break_even_calls", None)):
        if row.get(key) is not None and base.get(key) is not None:
            out[name] = round(row[key] - base[key], digits) if digits else row[key] - base[key]
    return out
