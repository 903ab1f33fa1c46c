"""Compare's tables and pickers: A and B side by side with what differs marked, the changes coloured better or
worse (never between two models), and the A/B pickers, each choice in the URL."""
import pandas as pd
import streamlit as st

from dashboard.data import diff
from dashboard.markup import md
from dashboard.state import url_params

CHANGED = "background-color: rgba(255, 196, 0, 0.28)"
BETTER = "background-color: rgba(44, 160, 44, 0.25)"
WORSE = "background-color: rgba(214, 39, 40, 0.25)"


def highlight_rows(table: pd.DataFrame):
    """Rows whose A and B differ, marked; the `differs` column is only used for the marking."""
    differs = table["differs"]
    shown = table.drop(columns=["differs"])
    return shown.style.apply(lambda row: [CHANGED if differs[row.name] else ""] * len(row), axis=1)


def fit(rows: int) -> int:
    return 35 * (rows + 1) + 3


DIFFERENT_MODELS = ("A runs {a}, B runs {b}: the numbers sit side by side, but a difference between two models is "
                    "no better or worse, so nothing is coloured.")


def highlight_changes(table: pd.DataFrame, judge: bool = True):
    """The Δ% cell of each (metric) row coloured where B is notably better (green) or worse (red) than A
    (never when not `judge`: two different models). Numbers are shown as text: st.dataframe draws a missing
    number as "None" whatever the Styler says."""
    colours = [{"better": BETTER, "worse": WORSE}.get(diff.verdict(r["metric"], r["Δ%"], r.get("note", "")), "")
               if judge else "" for _, r in table.iterrows()]
    shown = table.assign(A=table["A"].map(_number_text), B=table["B"].map(_number_text),
                         **{"Δ%": table["Δ%"].map(lambda v: "–" if pd.isna(v) else f"{v:+.1f}%")})
    return shown.style.apply(lambda row: [colours[row.name] if col == "Δ%" else "" for col in row.index], axis=1)


def _number_text(value) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def pick(label: str, options: list, labels: dict, key: str, fallback):
    """A selectbox whose choice is always in the URL by id (?a=3), starting from `fallback`."""
    missing = url_params.url_choice(key, options, fallback)
    if missing is not None:  # a link to a sweep or run since deleted, or mistyped: said, then the fallback shown
        shown = st.session_state[key]
        st.warning(f"{label}: the link names {md(missing[:40])}, which is not here; showing "
                   f"{md(labels.get(shown, str(shown))) if shown is not None else 'none'}", icon=":material/warning:")
    value = st.selectbox(label, options, format_func=lambda v: labels.get(v, str(v)), key=key,
                         placeholder="choose one")
    url_params.write_url_choice(key, value)
    return value


def pick_pair(what: str, ids: list, labels: dict, keys: tuple[str, str], start: tuple) -> tuple:
    """Two pickers side by side, "{what} A" and "{what} B", each in the URL under its key (?a=3&b=5), starting from
    `start`; (a, b), with a line asking for both while either is missing."""
    c1, c2 = st.columns(2)
    with c1:
        a = pick(f"{what} A", ids, labels, keys[0], start[0])
    with c2:
        b = pick(f"{what} B", ids, labels, keys[1], start[1])
    if a is None or b is None:
        st.info(f"Choose two {what.lower()}s.")
    return a, b


def starting_pair(ids: list, model: dict, measured) -> tuple:
    """The pair Compare opens on (`ids` newest first, `model` by id): B the newest with results (a cancelled
    or still queued one has nothing to compare), A the newest earlier one with results of the same model
    (the same experiment run again, say), else the next newest with results."""
    with_results = [i for i in ids if i in measured] or ids
    if not with_results:
        return None, None
    b = with_results[0]
    rest = [i for i in with_results[1:] if model[i] == model[b]] or with_results[1:]
    return (rest[0] if rest else None), b


def judged(model_a: str, model_b: str) -> bool:
    """Whether changes between A and B may be called better or worse: not between two models (a warning
    says so)."""
    if model_a != model_b:
        st.warning(DIFFERENT_MODELS.format(a=md(model_a), b=md(model_b)))
    return model_a == model_b


def old_timing(rows_a: pd.DataFrame, rows_b: pd.DataFrame) -> None:
    """Say so when a side holds results timed before caller latency was (timing protocol 1): on CUDA their
    only clock was GPU time, so their speedup (latency) is empty and only gpu_speedup compares."""
    old = [name for name, rows in (("A", rows_a), ("B", rows_b))
           if "timing_protocol" in rows and (rows["timing_protocol"] == 1).any()]
    if old:
        st.caption(f"{' and '.join(old)} hold{'s' if len(old) == 1 else ''} results timed before caller latency was "
                   "measured (timing protocol 1): their CUDA numbers are GPU time only (gpu_speedup, compiled_gpu_ms), "
                   "never set against latency.")


def jobs(n: int) -> str:
    return f"{n} job{'s' if n != 1 else ''}"


def counts(counts: dict) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
