"""Text files others open as data: every CSV and JSON the lab writes (the CLI's `export` and `report`, the
pages' downloads) goes through here, so that a spreadsheet never runs a cell as a formula and a strict JSON
parser never meets NaN or Infinity. No SQLAlchemy, no torch."""
from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any, Iterable, TextIO

# a download's export (`runner export`, started by dashboard/server/downloads.py) is given the server's pid under
# this name, and ends itself when that process is gone (runner/cli/export.py)
EXPORT_PARENT_ENV = "COMPILE_LAB_EXPORT_PARENT"

# a spreadsheet reads a text cell beginning with one of these as a formula (OWASP "CSV injection"); a tab or a
# carriage return first is refused as well, since some spreadsheets strip it and read what follows
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# text that is a plain number is left as it is: a spreadsheet reads it as that number, never as a formula
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """One CSV cell: text a spreadsheet would run as a formula gets a leading single quote (shown as text, the
    spreadsheets' own convention); numbers, negative ones included, and all other text are left as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_csv(rows: Iterable[dict], columns: Iterable[str]) -> str:
    """CSV with a header of `columns`, a row per dict (csv_into), as text."""
    buf = io.StringIO()
    csv_into(buf, rows, columns)
    return buf.getvalue()


def csv_into(out: TextIO, rows: Iterable[dict], columns: Iterable[str]) -> int:
    """CSV into `out`, a row written as each dict comes: a header of `columns`, a row per dict (keys outside
    `columns` left out); dicts and lists as JSON text; every text cell through csv_cell. Returns the rows written."""
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    n = 0
    for r in rows:
        writer.writerow({k: csv_cell(json_text(v, indent=None) if isinstance(v, (dict, list)) else v)
                         for k, v in r.items()})
        n += 1
    return n


def json_list_into(out: TextIO, items: Iterable[Any]) -> int:
    """A strict JSON list into `out`, an item written as each comes: the same text as json_text(list(items)), without
    holding the list. Returns the items written."""
    n = 0
    for item in items:
        # json_text(list) indents each item's lines one step more than json_text(item) does
        out.write(("[\n " if n == 0 else ",\n ") + json_text(item).replace("\n", "\n "))
        n += 1
    out.write("\n]" if n else "[]")
    return n


def finite(value: Any) -> Any:
    """`value` with every NaN and infinity, however deeply nested, replaced by None (JSON's null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_text(value: Any, indent: int | None = 1) -> str:
    """Strict JSON (RFC 8259): a number that is not finite is written as null; anything else JSON lacks
    (a datetime) as its text."""
    try:  # a value holds no NaN or infinity nearly always: the json module checks that in C, finite() in Python
        return json.dumps(value, indent=indent, default=str, allow_nan=False)
    except ValueError:
        return json.dumps(finite(value), indent=indent, default=str, allow_nan=False)
