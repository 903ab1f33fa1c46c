"""The Results page's figures, built once per view and shared by every session (st.cache_resource): building plotly
figures is most of what a rerun costs. Each tab gets its own small record of what it draws. The cached functions
read what a tab needs through dashboard.data (model_view, the answer rows); the `*_parts` functions build the
figures from those values alone."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.charts import diagnosis, speed_charts
from dashboard.data import cachecompare, plot_data, repeats, roofline_points, series_labels
from dashboard.data import model_view as model_data
from dashboard.data.model_view import ModelView
from dashboard.panels import answer_table

REPEAT_GROUPS = 6  # the spread plot draws the newest sweeps' comparison groups


@st.cache_resource(max_entries=16, show_spinner=False)
def model_view(key: tuple, _shown, model: str, _store) -> ModelView:
    """One model's rows in view, ready to draw (dashboard.data.model_view.build). Built once per `key` and shared by
    all sessions; nothing here is modified after it is built."""
    return model_data.build(_store, _shown, model)


@dataclass(frozen=True)
class SpeedFigures:
    """The Speedup tab's charts in one clock, and the numbers their captions read."""

    clock: str
    speedup: go.Figure
    latency: go.Figure
    warmup: go.Figure
    break_even: go.Figure | None  # None: break_even_note says why in a line
    break_even_note: str
    timeline: go.Figure | None  # the shape schedule's recompile timeline; None: no job in view ran a schedule
    scheduled: int  # jobs in view that ran a schedule (the timeline draws the newest SCHEDULE_JOBS)
    series: int
    # configurations measured in latency but not in this clock (GPU time on the CPU, say), and those with GPU time
    # only (CUDA results timed before caller latency was: timing protocol 1)
    clock_missing: int
    gpu_only: int
    recompiled: int  # configurations that recompiled inside the timed rounds
    eager_drift: dict | None  # plot_data.eager_drift: eager moved between jobs
    noisy_note: str
    common: str  # what every configuration in view shares (the labels name only what differs)
    folded: list[str]  # the modes shown under another off CUDA (series_labels.folded_notes)


@st.cache_resource(max_entries=16, show_spinner=False)
def speed_figures(key: tuple, _shown, model: str, _store, clock: str = "latency") -> SpeedFigures:
    """Speedup and ms per call in the chosen clock, warmup, break-even and the recompile timeline, per view and
    clock."""
    v = model_view(key, _shown, model, _store)
    answer_rows = answer_table.rows(key, model, _store.engine, answer_table.model_rows(key, model, _shown))
    return speed_parts(v, answer_rows, model_data.schedule_calls(_store, v.view), clock)


def speed_parts(v: ModelView, answer_rows: list[dict], schedule_calls: dict[int, list[dict]],
                clock: str = "latency") -> SpeedFigures:
    """The Speedup tab's figures of one model's view, its answer rows (lab.answer's: break-even is counted as the
    answer table counts it) and the shape schedules' calls of its newest jobs that ran one."""
    view, agg, fails = v.view, v.agg, v.fails
    timed = plot_data.on_clock(agg, clock)
    if clock == "latency":  # the answer's numbers and intervals are latency's: its points, bracketed
        timed = plot_data.answered_speedup(timed, view, answer_rows)
    paid = plot_data.answered_break_even(agg, view, answer_rows)  # the answer table's counts, not a second estimate
    with_schedule = model_data.scheduled(view)
    timeline = None
    if len(with_schedule):
        timeline = diagnosis.recompile_timeline(diagnosis.schedule_frame(view, schedule_calls))
    return SpeedFigures(
        clock=clock, speedup=speed_charts.mark_noisy(speed_charts.speedup(timed, fails, clock),
                                                     speed_charts.placed(timed, fails), x="at"),
        latency=speed_charts.latency(timed, fails, clock),
        warmup=speed_charts.warmup(plot_data.answered_cold(plot_data.first_calls(view), view, answer_rows), fails),
        break_even=speed_charts.break_even(paid, fails), break_even_note=speed_charts.break_even_note(paid),
        timeline=timeline, scheduled=len(with_schedule), series=int(agg["series"].nunique()),
        clock_missing=int((agg["speedup"].notna() & timed["speedup"].isna()).sum()),
        gpu_only=int((agg["speedup"].isna() & agg["gpu_speedup"].notna()).sum()),
        recompiled=(agg.loc[agg["recompiled_runs"].fillna(0) > 0, "config"].nunique()
                    if "recompiled_runs" in agg else 0),
        eager_drift=plot_data.eager_drift(agg), noisy_note=plot_data.noisy_note(agg),
        common=view.attrs.get("common", ""), folded=series_labels.folded_notes(view))


@dataclass(frozen=True)
class LaunchFigures:
    """The First call tab: where the compiled first call goes, beside GPU time inside latency."""

    breakdown: go.Figure
    host: go.Figure | None  # None: no CUDA job in view has GPU time
    rows: int  # the breakdown's rows (past a few, each plot takes the page's width)
    empty: bool  # no job of the model in view succeeded
    no_breakdown: bool  # some jobs were stored before the compile breakdown was recorded
    caches: pd.DataFrame  # cold, warm and portable first calls side by side (cachecompare)
    noisy_note: str


@st.cache_resource(max_entries=16, show_spinner=False)
def launch_figures(key: tuple, _shown, model: str, _store) -> LaunchFigures:
    v = model_view(key, _shown, model, _store)
    return launch_parts(v, model_data.first_calls(_store, v.view))


def launch_parts(v: ModelView, view: pd.DataFrame) -> LaunchFigures:
    """The First call tab's figures of one model's view, from its rows with their first-call numbers (`view`)."""
    parts = plot_data.breakdown_frame(view)  # a warm-cache run that missed is a cold first call there
    noisy = plot_data.noisy_series(plot_data.first_calls(view))
    noisy |= set(parts.loc[parts["of"].isin(noisy), "series"])  # its rows of one kind of first call each
    # a configuration split into a cold and a warm row: its failures and its GPU time go on its cold row (the first),
    # not on a row of their own, so both plots read across row by row
    on_row = plot_data.first_rows(parts)
    fails = v.fails.assign(series=v.fails["series"].map(on_row).fillna(v.fails["series"])) if len(v.fails) else v.fails
    host = plot_data.gpu_latency_frame(v.agg)
    host = host.assign(series=host["series"].map(on_row).fillna(host["series"])) if len(host) else host
    rows = diagnosis.breakdown_rows(parts, fails)
    return LaunchFigures(breakdown=diagnosis.warmup_breakdown(parts, fails, noisy),
                         host=None if host.empty else diagnosis.gpu_in_latency(host, fails, rows),
                         rows=len(rows), empty=parts.empty,
                         no_breakdown=bool((parts["part"] == plot_data.NO_BREAKDOWN).any()),
                         caches=cachecompare.side_by_side(view), noisy_note=plot_data.noisy_note(v.agg))


@dataclass(frozen=True)
class RepeatFigures:
    """The Repeats tab: the spread plot of the newest groups, each group's order of configurations, the pairs their
    ranges keep apart, and every repeated configuration's numbers."""

    figure: go.Figure
    groups: list[str]
    chains: dict[str, str]
    pairs: pd.DataFrame
    summary: pd.DataFrame


@st.cache_resource(max_entries=16, show_spinner=False)
def repeat_figures(key: tuple, _shown, model: str, _store, _answer_rows: list[dict] = ()) -> RepeatFigures | None:
    return repeat_parts(model_view(key, _shown, model, _store).view, _answer_rows)


def repeat_parts(view, answer_rows: list[dict] = ()) -> RepeatFigures | None:
    """The spread-across-repeats plot, order chains and tables of a view (None: nothing was repeated). Against eager,
    each configuration is judged by its answer row (`answer_rows`: lab.answer's for this model), as the answer
    table and Compare judge it."""
    rep = repeats.repeated(view)
    if rep.empty:
        return None
    runs = repeats.candidates(rep)
    spans = repeats.ranges(runs)
    groups = rep.sort_values(["sweep_id", "batch_size"], ascending=[False, True])["group"].drop_duplicates().tolist()
    by_job = {int(j): r for r in answer_rows for j in str(r.get("job_ids") or "").split()}
    answers = {(g, c): by_job[j] for g, c, j in zip(rep["group"], rep["config"], rep["job_id"]) if j in by_job}
    pairs = repeats.against_eager(repeats.separability(spans), answers)
    chains = repeats.chains(spans, pairs)
    pairs["verdict"] = pairs["verdict"].map({repeats.SEPARATED: "✅ separated", repeats.NOT_SEPARABLE: "≈ not separable"})
    return RepeatFigures(figure=diagnosis.repeat_spread(runs, spans, groups[:REPEAT_GROUPS]), groups=groups,
                         chains=chains, pairs=pairs, summary=repeats.summary(rep))


@st.cache_resource(max_entries=16, show_spinner=False)
def roofline_view(key: tuple, _shown, _store) -> pd.DataFrame:
    """One point per configuration in view, with the numbers the roofline needs read for these jobs."""
    return roofline_points.points(_store.complete(_shown, roofline_points.READ))


@st.cache_resource(max_entries=16, show_spinner=False)
def roofline_figure(key: tuple, _pts, _ceilings: list, color_by: str) -> dict:
    """The roofline of every model in view (`key` names the data, filters, ceilings and colour): the figure, the
    devices without measured ceilings, and the points it cannot draw (0 FLOPs) in words."""
    lines = roofline_points.lines(roofline_points.ceilings_in_view(_ceilings, _pts), _pts)
    return {"figure": diagnosis.roofline(_pts, lines, color_by),
            "missing": roofline_points.missing_ceilings(_ceilings, _pts), "off": roofline_points.off_plot(_pts)}


@st.cache_resource(max_entries=16, show_spinner=False)
def folded_notes(key: tuple, model: str, _mine) -> list[str]:
    """The model's jobs in view (`_mine`) stored under a mode they did not run as (reduce-overhead on the CPU): the
    N-calls chart's lines, like the answer's rows, count them under the mode that ran (series_labels.fold_modes). Two
    columns of the model's rows: no numbers read."""
    return series_labels.folded_notes(series_labels.fold_modes(_mine[["mode", "device"]]))
