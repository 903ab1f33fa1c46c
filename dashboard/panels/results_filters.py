"""The Results page's view: which jobs its filters keep (every filter in the link), what they are in words, the
counts and headline numbers of the view, and the model whose answer and plots the page shows."""
from __future__ import annotations

import streamlit as st

from dashboard.data import filters, plot_data
from dashboard.markup import md
from dashboard.state import resources, url_params

URL_KEYS = {"torch_version": "torch", "device_name": "gpu"}  # shorter query parameter names
FILTER_VALUES_SHOWN = 3  # per filter, in the line that names what is set
NOISY_NOTE = ("Spread: IQR / median over a job's rounds, of the speedup (each round's eager / compiled) and of each "
              "side's median: scatter, which widens the answer's interval. ⚠ noisy: a run disturbed by a cause measured "
              "during its rounds (another process on the GPU or the worker's cores, throttled clocks, memory "
              "pressure), named in noise_note, and left out of the answer where an undisturbed run exists (rows "
              "stored by older workers were flagged for scatter past 5%). Ringed or hollow points below are "
              "configurations with such a run.")


@st.cache_resource(max_entries=4, show_spinner=False)
def filter_choices(key: tuple, _df) -> dict:
    """Each filter's options (a pass over every row): built once per results table, not every rerun."""
    return {col: filters.filter_options(_df, col) for col in filters.FILTERS}


def _chosen(col: str, options: list) -> list:
    """A filter's current choice before its widget runs: the session's, else the URL's values that are
    among its options (the widget drops the others)."""
    key = URL_KEYS.get(col, col)
    if key in st.session_state:
        return st.session_state[key]
    return [v for v in st.query_params.get_all(key) if v in {str(o) for o in options}]


def chosen_filters(df) -> dict:
    """Every filter's choice, read before the filter row is drawn (filters_ui draws the same values)."""
    keys = [URL_KEYS.get(col, col) for col in filters.FILTERS]
    if not any(k in st.session_state or k in st.query_params for k in keys):
        return {col: [] for col in filters.FILTERS}  # nothing set: no options to check against
    choices = filter_choices(frame_key(df), df)
    _sweep_numbers(choices["sweep"])
    return {col: _chosen(col, choices[col]) for col in filters.FILTERS}


def _sweep_numbers(sweeps: list) -> None:
    """A link's sweep given by its number ("?sweep=3", what a person types) names the sweep the filter lists as
    "#3 ...": the filter starts with it (its widget then writes it to the link so), where every sweep the link
    names is found so (a first-hour walk's ?sweep=1 was refused as a sweep that is not here)."""
    if "sweep" in st.session_state:
        return
    values = st.query_params.get_all("sweep")
    labels = {str(o).split(" ", 1)[0]: str(o) for o in sweeps if str(o).startswith("#")}
    named = [labels.get(f"#{v.lstrip('#')}", v) if v.lstrip("#").isdigit() else v for v in values]
    if named != values and all(n in labels.values() for n in named):  # else said as not here (link_missing)
        st.session_state["sweep"] = named


LINK_MISSING = "results_link_missing"  # (what a link's filters named that is not here, the filters then chosen)


def link_missing(df, selected: dict) -> list[tuple[str, str]]:
    """What a link's filters name that no job in view has (("Sweep", "999"): a deleted sweep, a typo), read on the
    session's first run, before the widgets drop them; said for as long as the filters stay as the link set them."""
    keys = {col: URL_KEYS.get(col, col) for col in filters.FILTERS}
    if LINK_MISSING not in st.session_state and any(k in st.query_params and k not in st.session_state
                                                    for k in keys.values()):
        choices = filter_choices(frame_key(df), df)
        parts = []
        for col, key in keys.items():
            known = {str(o) for o in choices[col]}
            gone = [v for v in st.query_params.get_all(key) if v not in known]
            if gone and key not in st.session_state:
                parts.append((filters.FILTERS[col], ", ".join(v[:40] for v in gone)))
        st.session_state[LINK_MISSING] = (parts, selected)
    parts, then = st.session_state.get(LINK_MISSING, ([], None))
    return parts if then == selected else []


def filters_ui(df, row, chosen: dict) -> dict:
    """Every filter in one popover, whose label says how many are set; the line beside it names them (a copied
    link may set any). Closed, the popover's widgets cost the browser nothing: four open multiselects (the
    sweeps' one with every sweep of the lab as options) delayed the first chart."""
    choices = filter_choices(frame_key(df), df)
    active = {col: values for col, values in chosen.items() if values}
    popover = row[0].popover("Filters" + (f" ({len(active)} set)" if active else ""), key="more_filters",
                             icon=":material/filter_list:", width="stretch")
    row[1].caption(filters_line(active))
    return {col: popover.multiselect(label, choices[col], key=URL_KEYS.get(col, col), bind="query-params",
                                     placeholder="all") for col, label in filters.FILTERS.items()}


def filters_line(active: dict) -> str:
    """What the filters keep, in words: "Every job in the database", or each filter set and its values."""
    if not active:
        return "Every job in the database. **Filters** narrow it (sweep, model, mode, …); they are in the link."
    parts = []
    for col, values in active.items():
        shown = ", ".join(md(str(v)) for v in values[:FILTER_VALUES_SHOWN])
        more = f" and {len(values) - FILTER_VALUES_SHOWN} more" if len(values) > FILTER_VALUES_SHOWN else ""
        parts.append(f"{filters.FILTERS[col]}: {shown}{more}")
    return "Jobs with " + " · ".join(parts)


@st.cache_resource(max_entries=16, show_spinner=False)
def view_facts(key: tuple, _shown) -> dict:
    """The counts, headline numbers, timing methods and models of a view: built once per view (`key`),
    not on every rerun (each is a pass over up to 100k rows)."""
    ok = _shown["status"] == "succeeded"
    cancelled = _shown["status"] == "cancelled"
    measured = _shown[~cancelled]  # a cancelled sweep has nothing to plot
    pool = measured if len(measured) else _shown
    pool = pool[pool["model"].notna()]  # a spec stored without a model (the job failed on it) names none
    return {"jobs": len(_shown), "succeeded": int(ok.sum()), "failed": int((~ok & ~cancelled).sum()),
            "cancelled": int(cancelled.sum()), "methods": plot_data.timing_methods(_shown),
            "models": sorted(_shown["model"].dropna().unique()), "plottable": set(measured["model"].dropna()),
            "newest": pool.loc[pool["job_id"].idxmax(), "model"] if len(pool) else None}  # no sort per rerun


def summary(facts: dict) -> list:
    c = st.columns([0.9, 0.9, 1.0, 1.6, 2.0])  # the speedups' labels name their model, the best its configuration
    c[0].metric("Jobs shown", f"{facts['jobs']:,}")
    c[1].metric("Succeeded", f"{facts['succeeded']:,}")
    c[2].metric("Did not succeed", f"{facts['failed']:,}",
                delta=f"+ {facts['cancelled']:,} cancelled" if facts["cancelled"] else None, delta_color="off",
                delta_arrow="off", help="Failed, timed out or crashed. Cancelled jobs are not counted: a person "
                                        "stopped them, so they say nothing about their configuration.")
    if facts["methods"]:
        st.caption("Timing: " + "; ".join(facts["methods"]) + ".", help=NOISY_NOTE)  # the note: when hovered
    return c[3:]  # the speedup metrics: filled for one model, once it is chosen (dashboard.panels.answer_table.header)


def frame_key(df) -> tuple:
    """Names one results table: resources.results hands out the same frame until new results arrive."""
    last = df["finished_at"].max() if len(df) else None
    return resources.url(), id(df), len(df), str(last)


def view_key(df, selected: dict) -> tuple:
    """What the plots of a view depend on: the results table and the filters."""
    return frame_key(df) + (tuple((k, tuple(v)) for k, v in sorted(selected.items())),)


def model_in_view(facts: dict) -> str:
    """The model whose answer and plots the page shows: the newest job's at first; the URL's `plot` names the
    one shown, so a copied link keeps showing it. Read before its picker is drawn (model_ui)."""
    models, newest = facts["models"], facts["newest"]
    if len(models) == 1:
        return newest
    url_params.url_choice("plot", models, newest)
    return st.session_state.get("plot") or newest


def model_ui(facts: dict, per_model: bool) -> None:
    """The model picker, greyed out on the tabs that show every model in view."""
    models, newest = facts["models"], facts["newest"]
    if len(models) == 1:
        url_params.write_url_choice("plot", None)  # a link's ?plot= names no choice here: not left in the URL
        return
    model = st.segmented_control("Plots for model", models, key="plot", disabled=not per_model,
                                 help=None if per_model else "This tab shows every model in view") or newest
    url_params.write_url_choice("plot", model)
