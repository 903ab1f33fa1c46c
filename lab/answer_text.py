"""The answer's rows as a person reads them: the headline columns, each cell as text (the cold first call with its
95% interval, or from how many processes it comes, and the compiles left out), and a Markdown table of them. The
answer page, the job page and `runner report --format md` write the same figures the same way. No torch or pandas."""
from __future__ import annotations

from typing import Iterable, Mapping

# the columns a person reads: the answer page's table and `report --format md` (the CSV and JSON have every column)
HEADLINE = {"model": "model", "batch_size": "bs", "config": "configuration", "verdict": "verdict",
            "eager_ms": "eager ms", "compiled_ms": "compiled ms", "first_call_cold_s": "first call cold s",
            "first_call_warm_s": "warm s", "first_call_portable_s": "portable s",
            "recompiles": "recompiles", "graph_breaks": "breaks",
            "peak_mem_compiled_mb": "peak MB compiled", "peak_mem_eager_mb": "peak MB eager", "accuracy_ok": "accurate",
            "runs": "runs"}


def headline_cell(v) -> str:
    """One headline cell as text: a dash where there is no number, four significant digits."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def headline_value(row: Mapping, column: str, told_here: bool = False) -> str:
    """A row's headline cell: headline_cell, but the cold first call with its 95% interval ("2.71 [2.10, 3.50]"), or,
    where too few processes compiled it cold on this device to give one, from how many it comes ("2.71 (one process)").
    `told_here`: the page it is on already says what disturbed this compile (a disturbed job's own page)."""
    return "".join(headline_parts(row, column, told_here))


def headline_parts(row: Mapping, column: str, told_here: bool = False) -> tuple[str, str]:
    """headline_value as (the value, a note on where it comes from: " (one process)"), the note "" where it has none:
    a page may draw the note quieter, and let it wrap."""
    v = row.get(column)
    if column != "first_call_cold_s" or v is None:
        return headline_cell(v), ""
    lo, hi = row.get("first_call_cold_low"), row.get("first_call_cold_high")
    shaken = row.get("cold_disturbed") or 0
    left = f"{shaken} disturbed compile{'s' if shaken > 1 else ''} left out"
    if lo is not None and hi is not None:  # the number as every page writes it, its ends to 3 digits
        return f"{headline_cell(v)} [{lo:.3g}, {hi:.3g}]", f" ({left})" if shaken else ""
    n = row.get("cold_processes") or 1
    if row.get("cold_all_disturbed"):  # every cold compile in view was disturbed: the number is theirs, and says so
        said = (f"its compile disturbed: {'the warning above' if told_here else 'its job'} says by what" if n == 1
                else f"all {n} compiles disturbed: their jobs say by what")
        return headline_cell(v), f" ({said})"
    return headline_cell(v), f" ({'one process' if n == 1 else f'{n} processes'}" + (f"; {left})" if shaken else ")")


def rows_markdown(rows: Iterable[Mapping], headline: Mapping[str, str] = HEADLINE) -> str:
    """A Markdown table of the rows' headline columns (the CSV and JSON have every column)."""
    lines = ["| " + " | ".join(headline.values()) + " |", "|" + "---|" * len(headline)]
    lines += ["| " + " | ".join(headline_value(r, c).replace("|", "\\|") for c in headline) + " |" for r in rows]
    return "\n".join(lines) + "\n"
