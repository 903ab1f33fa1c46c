"""The answer on Results, first thing for a model: lab.answer's rows (the same rows `python -m runner report`
prints, from the same export records) as a table, and the header's speedup numbers for that model alone (a
median across unrelated models answers nothing)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import markup
from dashboard.charts import ncalls
from dashboard.data import answers, filters
from dashboard.markup import md
from dashboard.panels import baseline_table, versiondiff
from dashboard.state import resources, url_params
from lab import answer, labels, noise
from lab.verdict import Said

NOTE = ("speedup: for each process of a configuration, the median of its per-round eager / compiled latency "
        "ratios; the configuration's number averages its processes (on a log scale), and its 95% interval holds the "
        "spread between fresh processes: what its own processes showed (and, where other sweeps ran it on this "
        "device, what all of its processes showed, never less than its own), with the spread this device's other "
        "configurations showed (a configuration measured in one process says so). \"A re-run reads\": where a new sweep "
        "of as many processes should land, 95 times in 100 (wider than the interval for the true speedup: a re-run "
        "has its own processes). Scatter widens the interval; "
        "only a run disturbed by a measured cause (another process on its cores or GPU, throttled clocks, memory "
        "pressure) is left out, and re-run (noisy_runs counts them). runs: the processes that answer (each "
        "configuration runs in 2 by default, `--process-repeats`; the later ones compile from the first's cache); "
        "first call cold / warm / portable: the compiled first call from an empty cache, from a cache that held it "
        "(a process repeat's), and from a fresh cache loaded with a cold job's artifacts. A cold compile's time moves "
        "between fresh processes, and only a configuration's first process compiles cold: its 95% interval [low, high] "
        "comes from every process that compiled it cold on this device, over every sweep of it, once 4 have (3 in view: "
        "`--repeat`); until then the cell says from how many processes it comes. Break-even: calls after "
        "which compiling has paid for its first call. Same rows: `python -m runner report` (which also names each "
        "row's jobs: job_ids).")


N_DEFAULT = 1000
N_MAX = 10 ** 12  # calls: past this the chart's N axis (and any program) has no use

# what the configurations' labels leave out when every one of them shares it (lab.labels.common)
SHARED = ("backend", "mode", "dynamic", "fullgraph", "scope", "task", "device", "dtype", "variant", "torch_version",
          "device_name")


def show(header_slots, table_slot, key: tuple, model: str, engine, shown: pd.DataFrame) -> None:
    """The header's speedups and the answer table for `model`'s jobs in view (`shown`)."""
    mine = model_rows(key, model, shown)
    answer_rows = rows(key, model, engine, mine)
    header(header_slots, answer_rows, model)
    with table_slot:
        table(answer_rows, model, shared(key, model, shown))
        baseline_table.show(engine, answer_rows, model)  # deltas against the model's pinned baseline, if any
        # the diff computes the answer twice more (lab.versions): only where there are two versions to set apart
        several = "torch_version" in mine and mine["torch_version"].dropna().nunique() > 1
        diff = version_rows(key, model, engine, mine["job_id"].tolist()) if several else []
        if diff:
            st.subheader(f"Torch versions: {md(model)}")
            versiondiff.show(diff, key="answer_versions")


@st.cache_resource(max_entries=16, show_spinner=False)
def shared(key: tuple, model: str, _shown: pd.DataFrame) -> str:
    """What every configuration of the model in view shares, for the caption under its table (once per view)."""
    cols = [c for c in SHARED if c in _shown.columns]
    mine = _shown.loc[_shown["model"] == model, cols]
    return labels.common(mine.astype(str).drop_duplicates().to_dict(orient="records"), cols)


@st.cache_resource(max_entries=16, show_spinner=False)
def model_rows(key: tuple, model: str, _shown: pd.DataFrame) -> pd.DataFrame:
    """The model's jobs in view (`key` names the view): once per view, not per rerun."""
    return _shown.loc[_shown["model"] == model]


@st.cache_resource(max_entries=16, show_spinner=False)
def rows(key: tuple, model: str, _engine, _mine: pd.DataFrame) -> list[dict]:
    """The answer rows of one model's jobs in view (`_mine`; `key` names the view). Kept across restarts by the
    results store (dashboard.data.store.ResultStore.answer)."""
    jobs = _mine[["job_id", "finished_at"]]
    store = resources.store()
    known = priors(store.version, _engine)  # another sweep of a configuration in view changes its interval
    return store.answer(jobs, lambda: answers.report(_engine, job_ids=jobs["job_id"].tolist(), priors=known),
                        also=known.digest)


@st.cache_resource(max_entries=2, show_spinner=False)
def priors(version: tuple | None, _engine) -> answers.Spreads:
    """Every device's and configuration's spread between processes (answers.spreads), once per version of the
    results: each model's answer is widened by it, and reading it again for every model was most of a model
    switch."""
    return answers.spreads(_engine)


@st.cache_resource(max_entries=16, show_spinner=False)
def version_rows(key: tuple, model: str, _engine, _job_ids: list[int]) -> list[dict]:
    """The version diff of one model's jobs in view: [] unless they ran under two torch versions or more."""
    return answers.version_report(_engine, job_ids=_job_ids)


# job_ids stay out of the page's table: past a few runs the cell is a wall of numbers the browser decodes and
# measures before it draws the page; `runner report` and the downloads have them
SHOWN = [c for c in answer.COLUMNS if c != "job_ids"]


def frame(answer_rows: list[dict]) -> pd.DataFrame:
    """The table's rows: report's rows, its columns less job_ids."""
    return pd.DataFrame(answer_rows, columns=SHOWN)


# the page's table: the headline columns (`report --format md`'s), less the model its heading names
PAGE_COLUMNS = [c for c in answer.HEADLINE if c != "model"]
KINDS = {"config": "name", "verdict": "wide", "accuracy_ok": ""}  # markup.COLUMN_KINDS; the rest are numbers


def page_columns(answer_rows: list[dict]) -> list[str]:
    """The headline columns that hold a value in some row: a column of dashes only (no portable runs, no memory
    measured) would push the table past the page's width; every column stays one click away."""
    return [c for c in PAGE_COLUMNS if c in ALWAYS or any(r.get(c) is not None for r in answer_rows)]


ALWAYS = {"config", "verdict", "batch_size", "eager_ms", "compiled_ms"}  # the answer itself, shown even as dashes


def table_html(answer_rows: list[dict]) -> str:
    """The answer as an HTML table of text (the same cells as `runner report --format md`), a configuration with
    no answer faded; verdicts wrap instead of being cut at a cell's edge."""
    columns = page_columns(answer_rows)
    return markup.table([answer.HEADLINE[c] for c in columns],
                        [[_verdict(r) if c == "verdict" else answer.headline_parts(r, c) for c in columns]
                         for r in answer_rows],
                        kinds=[KINDS.get(c, "num") for c in columns],
                        grey=[bool(r["noisy"]) for r in answer_rows])


def _verdict(row) -> tuple[str, str] | str:
    """The verdict cell: what it answers, then its notes (the processes, what was left out, the host's pace: lab.verdict
    .Said) drawn quieter; the text as it is where the row holds no such split (a row read back as plain text)."""
    said = row.get("verdict")
    return said.parts if isinstance(said, Said) else answer.headline_value(row, "verdict")


def table(answer_rows: list[dict], model: str, common: str = "") -> None:
    """The headline columns as a table the browser draws at once; every column, sortable, one click away (a dialog:
    its grid's code is loaded when it is opened, not before the page's chart)."""
    # how to read it: in the heading's tooltip, drawn when hovered (1,300 characters of text drawn before the page's
    # first chart held that chart back)
    st.subheader(f"The answer for {md(model)}", help=NOTE)
    if common:
        st.caption(f"Every configuration here: {md(common)}. Each row names what sets it apart; within a batch size, "
                   "the fastest first.")
    st.html(table_html(answer_rows))
    every_column_button(answer_rows, model)


@st.fragment
def every_column_button(answer_rows: list[dict], model: str) -> None:
    """The button that opens every column, and the dialog while open: a fragment, so the click reruns these two, not
    the whole page."""
    st.button(f"Every column ({len(SHOWN) - 1}), sortable", icon=":material/table_view:", key="answer_every",
              on_click=_open_every)
    if st.session_state.get(EVERY_OPEN):  # open until dismissed: a rerun as results land keeps it open
        every_column(answer_rows, model)


EVERY_OPEN = "answer_every_open"  # session state: the dialog with every column is open


def _open_every() -> None:
    st.session_state[EVERY_OPEN] = True


def _close_every() -> None:
    st.session_state[EVERY_OPEN] = False


@st.dialog("Every column of the answer", width="large", on_dismiss=_close_every)
def every_column(answer_rows: list[dict], model: str) -> None:
    """The answer's rows with every column, sortable, and their CSV and JSON: drawn only when asked for, so the
    grid's code never delays the page's first chart."""
    st.caption(f"{md(model)}: the rows of `python -m runner report`; its CSV and JSON add the jobs behind each row.")
    left, right = st.columns(2)
    left.download_button("CSV", data=answer.rows_csv(answer_rows), mime="text/csv",
                         file_name=filters.download_name({"model": [model]}, "csv", kind="answer"),
                         on_click="ignore", icon=":material/download:", width="stretch")
    right.download_button("JSON", data=answer.rows_json(answer_rows),
                          file_name=filters.download_name({"model": [model]}, "json", kind="answer"),
                          mime="application/json", on_click="ignore", icon=":material/download:", width="stretch")
    df = frame(answer_rows)
    num = st.column_config.NumberColumn
    st.dataframe(
        df, hide_index=True, width="stretch", height=min(560, 38 + 35 * len(df)), placeholder="–",
        column_order=[c for c in SHOWN if c != "model"], column_config={
            "batch_size": num("bs", format="%d"), "config": st.column_config.TextColumn("configuration"),
            "verdict": st.column_config.TextColumn(width="large"),
            "speedup": num(format="%.2f×", help="latency: what a caller waits for per call"),
            "speedup_ci_low": num("95% low", format="%.2f×"), "speedup_ci_high": num("95% high", format="%.2f×"),
            "rerun_low": num("re-run low", format="%.2f×", help="a re-run (a new sweep of as many processes) reads "
                             "between re-run low and re-run high, 95 times in 100"),
            "rerun_high": num("re-run high", format="%.2f×"),
            "eager_ms": num(format="%.4g"), "compiled_ms": num(format="%.4g"),
            "eager_first_call_s": num(format="%.3g"), "first_call_cold_s": num(format="%.3g"),
            "first_call_cold_low": num("cold 95% low", format="%.3g"),
            "first_call_cold_high": num("cold 95% high", format="%.3g"),
            "cold_processes": num("cold processes", format="%d", help="with a cold interval, the processes that compiled "
                                  "it cold on this device, over every sweep of it (its spread); without, its cold runs "
                                  "in view"),
            "first_call_warm_s": num(format="%.3g"), "first_call_portable_s": num(format="%.3g"),
            "break_even_calls": num(format="localized"),
            "break_even_low": num("break-even low", format="localized", help="the calls it pays off after at the ends of "
                                  "its intervals: the speedup's high end and the cold first call's low end"),
            "break_even_high": num("break-even high", format="localized", help="likewise at the speedup's low end and "
                                   "the cold first call's high end"),
            "noisy": st.column_config.CheckboxColumn(help="every run was disturbed by a measured cause: these are "
                                                            "their numbers")})


def header(slots, answer_rows: list[dict], model: str) -> None:
    """The header's speedup metrics, for `model` only, from the configurations that count (lab.noise.answering:
    those not disturbed in every run, or all of them where every one was, marked so)."""
    measured = [r for r in answer_rows if r["speedup"] is not None]
    measured = [r for r, c in zip(measured, noise.answering(bool(r["noisy"]) for r in measured)) if c]
    disturbed = "⚠ every run disturbed" if measured and all(r["noisy"] for r in measured) else ""
    med = pd.Series([r["speedup"] for r in measured]).median() if measured else None
    best = max(measured, key=lambda r: r["speedup"]) if measured else None
    slots[0].metric(f"Median speedup · {md(model)}", "–" if med is None else f"{med:.2f}×",
                    delta=disturbed or None, delta_color="off", delta_arrow="off",
                    help=f"{md(model)}: the median over its configurations in view (disturbed runs left out where an "
                         "undisturbed one exists); never a "
                         "median across models")
    slots[1].metric(f"Best speedup · {md(model)}", "–" if best is None else f"{best['speedup']:.2f}×",
                    delta=None if best is None else md(f"{best['config']} · bs {best['batch_size']}"), delta_color="off",
                    delta_arrow="off", help=f"{md(model)}'s fastest configuration in view; its interval and verdict are "
                                            "in the answer table")


@st.cache_resource(max_entries=32, show_spinner=False)
def calls_figure(key: tuple, batch_size, n: int, _lines: list[dict]):
    """The N-calls chart of one view, model (`key`), batch size and N: built once (plotly is slow to build), not on
    every visit or rerun."""
    return ncalls.figure(_lines, batch_size, n)


def calls(answer_rows: list[dict], notes: list[str] = (),
          key: tuple | None = None) -> None:
    """What to use for N calls at one batch size: the total-time chart, then its batch size and N, and a one-line
    recommendation. The chart comes before its widgets: a browser fetches each kind of element's code in page
    order, and the chart's (plotly) waited behind the widgets'. `notes`: the lines that
    read it (the modes folded off CUDA: dashboard.data.series_labels.folded_notes), under it. `key` names the view and model
    the rows are of: the figure is then built once for them (calls_figure)."""
    sizes = sorted({r["batch_size"] for r in answer_rows if r["speedup"] is not None})
    if not sizes:
        st.caption("No configuration in view has a speedup (failed runs only): no N-calls chart to draw.")
        return
    bs = url_params.peek("calls_bs", sizes, sizes[-1])  # the widgets' values, read before they are drawn
    n = url_params.peek_int("calls_n", N_DEFAULT, 1, N_MAX)  # in the link: a copied link opens the same N
    ls = ncalls.lines([r for r in answer_rows if r["batch_size"] == bs])
    if ls:
        fig = ncalls.figure(ls, bs, n) if key is None else calls_figure(key, bs, n, ls)
        st.plotly_chart(fig, key="plot_ncalls")
        if ncalls.noisy_note(ls):
            st.caption(md(ncalls.noisy_note(ls)))
        for note in notes:
            st.caption(":material/info: " + md(note))
    # a segmented control (the page's pickers' kind) and N in a popover (closed, its field is not drawn): a select
    # box and a number field each made the browser load and run their code before it drew the chart
    if st.session_state.get("calls_bs") not in sizes:  # another model's sizes, or none chosen yet
        st.session_state["calls_bs"] = bs
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    left.segmented_control("Batch size", sizes, key="calls_bs", required=True)
    st.session_state.setdefault("calls_n", n)  # a link's N: the field starts at it
    url_params.write_url_choice("calls_n", n if n != N_DEFAULT else None)  # and the N typed goes into the link
    right.popover(f"Calls your program makes: N = {n:,}", icon=":material/edit:", width="stretch").number_input(
        "Calls your program makes (N)", min_value=1, max_value=N_MAX, step=1000, key="calls_n",
        help="How many calls one process makes after compiling: compile pays off only over enough calls")
    st.markdown(ncalls.recommend(ls, n, bs))  # configuration names escaped there
