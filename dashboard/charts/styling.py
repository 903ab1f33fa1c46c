"""The plots' shared look (plotly, no Streamlit): colours, the layout and legend, rows of bars, failures drawn as red
✕ notes with their reasons on hover (a failed configuration is never silently missing from a plot), configurations
disturbed in every run greyed, and rings around points that need a second look."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from dashboard.data import plot_data
from dashboard.markup import plot

FAIL_COLOR = "#d62728"


def as_text(series: pd.Series) -> pd.Series:
    """Values as text, a missing one as "(none)" (astype(str) keeps it missing: no colour, no group)."""
    return series.astype(object).where(series.notna(), "(none)").astype(str)


def colors(labels) -> dict:
    palette = px.colors.qualitative.D3 + px.colors.qualitative.Set2 + px.colors.qualitative.Pastel
    return {label: palette[i % len(palette)] for i, label in enumerate(sorted(set(labels)))}


def layout(fig: go.Figure, title: str, height: int = 380) -> go.Figure:
    """The shared look: the legend under the plot, never on the data, and the figure taller by the legend's
    rows (estimated for a half-width column) so that many long entries do not squeeze the plot."""
    rows = legend_rows([t.name for t in fig.data if t.name and t.showlegend is not False])
    fig.update_layout(title=dict(text=title, font=dict(size=15)), height=height + 22 * max(0, rows - 1),
                      margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.24, x=0, title=None, font=dict(size=11)),
                      hoverlabel=dict(namelength=-1))
    return fig


def legend_rows(names: list[str], width_px: int = 430) -> int:
    """How many rows a horizontal legend of these entries takes in a plot about `width_px` wide (11 px text:
    ~6 px a character, plus the symbol and the gap)."""
    rows, used = (1 if names else 0), 0
    for name in dict.fromkeys(names):
        w = 45 + 6 * len(name)
        if used and used + w > width_px:
            rows, used = rows + 1, 0
        used += w
    return rows


def _reasons(bad: pd.DataFrame, label_col: str) -> str:
    lines = [f"#{r.job_id} {plot(getattr(r, label_col))}: {r.status}: {wrap(str(r.error)[:400])}"
             for r in bad.head(8).itertuples()]
    more = f"<br>… and {len(bad) - 8} more" if len(bad) > 8 else ""
    return "<br>".join(lines) + more


def wrap(text: str, width: int = 90) -> str:
    """Hover text on several lines: one long line is cut off at the plot's edge."""
    return "<br>".join(plot(text[i:i + width]) for i in range(0, len(text), width))


def mark_failures_on_x(fig: go.Figure, fails: pd.DataFrame, x_col: str, label_col: str) -> None:
    """A red ✕ note at the bottom of the plot at each x that has failed jobs; hover shows the reasons."""
    notes = []
    log = fig.layout.xaxis.type == "log"  # annotations on a log axis take log10(x), or they stretch the range
    for x, group in fails.groupby(x_col, sort=True):
        # short: notes at neighbouring x sit side by side; the hover names the configurations and the reasons
        what = str(group["status"].iloc[0]) if len(group) == 1 else f"{len(group)} did not succeed"
        if fig.layout.xaxis.type == "category":  # annotations on a category axis take its serial number
            at = list(fig.layout.xaxis.tickvals).index(x)
        else:
            at = float(np.log10(x)) if log else x
        notes.append(dict(x=at, y=0, xref="x", yref="y domain", yanchor="bottom", showarrow=False,
                          text=f"✕ {what}", font=dict(color=FAIL_COLOR, size=12),
                          hovertext=_reasons(group, label_col), bgcolor="rgba(255,255,255,0.8)"))
    add_notes(fig, notes)


def add_notes(fig: go.Figure, notes: list[dict]) -> None:
    """Add annotations in one assignment: add_annotation re-validates every earlier one (quadratic)."""
    if notes:
        fig.update_layout(annotations=list(fig.layout.annotations) + notes)


def log_y(fig: go.Figure, title: str) -> None:
    fig.update_yaxes(type="log", dtick=1, title=title)  # decades only: minor ticks clutter a small plot


def series_rows(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame) -> list:
    """Every series in view as a row, failed-only ones included, ordered by config then batch size, top down."""
    both = pd.concat([agg[["config", "batch_size", "series"]], fails[["config", "batch_size", "series"]]])
    cats = both.sort_values(["config", "batch_size"])["series"].astype(str).drop_duplicates().tolist()
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=cats, autorange="reversed", title=None,
                     tickfont=dict(size=11), automargin=True)
    return cats


def rows_layout(fig: go.Figure, title: str, rows: int, bars: int = 1) -> go.Figure:
    """A plot with one bar row per series (`bars` bars in a row): its height grows with the rows, and the legend
    sits a fixed distance under the x axis (a fraction of the plot's height would sit on the axis title of a short
    plot, or far below a tall one)."""
    height = max(300, 170 + (22 + 12 * bars) * rows)
    layout(fig, title, height=height)
    fig.update_layout(legend=dict(y=-80 / (height - 120), yanchor="top"))
    return fig


def mark_failures_on_y(fig: go.Figure, fails: pd.DataFrame, y_col: str) -> None:
    """A red ✕ note at the right end of each row that has jobs that did not succeed (hover: the reasons)."""
    notes = []
    for y, group in fails.groupby(y_col, sort=True):
        first = group.iloc[0]
        what = f"{first['status']}: {str(first['error'])[:40]}…" if len(group) == 1 else f"{len(group)} did not succeed"
        notes.append(dict(x=1, y=y, xref="x domain", yref="y", xanchor="right", showarrow=False,
                          text=f"✕ {plot(what)}", font=dict(color=FAIL_COLOR, size=11), hovertext=_reasons(group, y_col),
                          bgcolor="rgba(255,255,255,0.85)"))
    add_notes(fig, notes)


def _sizes(agg: pd.DataFrame, fails: pd.DataFrame) -> list[int]:
    return sorted(set(agg["batch_size"].dropna().astype(int)) | set(fails["batch_size"].dropna().astype(int)))


def _log_x(sizes: list[int]) -> bool:
    return len(sizes) > 1 and sizes[-1] / max(sizes[0], 1) >= 16


DODGE, DODGE_SPAN = 0.02, 0.12  # a configuration's step from the next at one batch size, and all of them: axis shares


def dodged(agg: pd.DataFrame, fails: pd.DataFrame) -> pd.Series:
    """Each row's x on a chart by batch size (x_batches' axis) with its configuration set a little apart from the others
    at the same batch size, in one order at every size, so their whiskers (intervals) do not hide one another: by a
    share of the axis, or on a log axis by a factor. The batch size itself where one configuration is drawn, or one
    batch size (x_batches then sets them side by side)."""
    sizes, configs = _sizes(agg, fails), sorted(agg["config"].dropna().unique())
    batch = agg["batch_size"].astype(float)
    if len(sizes) < 2 or len(configs) < 2:
        return batch
    log = _log_x(sizes)
    span = np.log10(sizes[-1] / max(sizes[0], 1)) if log else sizes[-1] - sizes[0]
    step = min(DODGE, DODGE_SPAN / (len(configs) - 1)) * span
    offset = agg["config"].map({c: (i - (len(configs) - 1) / 2) * step for i, c in enumerate(configs)}).astype(float)
    return batch * 10 ** offset if log else batch + offset


def x_batches(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame) -> None:
    sizes = _sizes(agg, fails)
    log = _log_x(sizes)
    # no axis title: the plot's title says "vs batch size", and a title here collides with the legend below
    fig.update_xaxes(title=None, type="log" if log else "linear", tickvals=sizes)
    if len(sizes) == 1:  # every configuration at one x: set them side by side, or close values hide each other
        fig.update_xaxes(type="category")
        fig.update_layout(scattermode="group", scattergap=0.3)
        fig.for_each_trace(lambda t: t.update(offsetgroup=t.name))  # what is drawn later for a series joins it


def values_on_points(fig: go.Figure, fmt: str, room: float = 0.08, at: dict | None = None) -> None:
    """Each point's value beside it, where it can be read: a point within `room` (a share of the y range) of one
    already labelled at the same x keeps its value in the hover only, so no two values are drawn over each other.
    `at`: a drawn x -> the x it stands for, where points were set apart (dodged)."""
    lines = [i for i, t in enumerate(fig.data) if t.fill is None and "markers" in (t.mode or "lines+markers")]
    at = at or {}
    points = [(at.get(x, x), y, i, k) for i in lines for k, (x, y) in enumerate(zip(fig.data[i].x, fig.data[i].y))
              if y is not None]
    if not points:
        return
    ys = [p[1] for p in points]
    gap = room * ((max(ys) - min(ys)) or 1.0)
    shown = {i: [""] * len(fig.data[i].x) for i in lines}
    first = min(p[0] for p in points)  # values at the first x go left of their point, clear of the lines leaving it
    placed: dict = {}
    for x, y, i, k in sorted(points, key=lambda p: -p[1]):
        if all(abs(y - other) >= gap for other in placed.get(x, [])):
            placed.setdefault(x, []).append(y)
            shown[i][k] = fmt % y
    if any(at.get(x, x) != x for i in lines for x in fig.data[i].x):  # set apart: beside the group, not in it
        _values_beside(fig, lines, shown, at, first)
        return
    for i in lines:
        t = fig.data[i]
        t.update(text=shown[i], mode="lines+markers+text", texttemplate=None, cliponaxis=False, textfont=dict(size=10),
                 textposition=["middle left" if at.get(x, x) == first else "middle right" for x in t.x])


def _values_beside(fig: go.Figure, lines: list[int], shown: dict, at: dict, first) -> None:
    """values_on_points where the points at one x were set apart (dodged): each value written in its line's colour at
    the group's outer edge (left of the first x's, right of the others'), where no neighbour's whisker runs through
    it. Call after the x axis's type is set: on a log axis plotly places annotations by log10(x)."""
    edges: dict = {}
    for i in lines:
        for x in fig.data[i].x:
            low, high = edges.get(at.get(x, x), (x, x))
            edges[at.get(x, x)] = (min(low, x), max(high, x))
    log = fig.layout.xaxis.type == "log"
    for i in lines:
        t = fig.data[i]
        color = t.line.color or t.marker.color
        for x, y, text in zip(t.x, t.y, shown[i]):
            if not text:
                continue
            left = at.get(x, x) == first
            edge = edges[at.get(x, x)][0 if left else 1]
            fig.add_annotation(x=float(np.log10(edge)) if log else edge, y=y, text=text, showarrow=False,
                               xanchor="right" if left else "left", xshift=-7 if left else 7,
                               font=dict(size=10, color=color))


NOISY_COLOR = "#ff7f0e"
# a configuration whose runs were all disturbed (plot_data.only_noisy) answers with their numbers (lab.noise): every
# plot draws it in its own colour, marked NOISY: hollow points on a line, hatched bars, and a legend entry saying so
NOISY_GREY, NOISY_EDGE = "#c8c8c8", "#888888"
NOISY_LEGEND = f"{plot_data.NOISY}: every run disturbed (hollow, hatched)"
NOISY_MARKER = dict(size=17, symbol="circle-open", color=NOISY_EDGE, line=dict(width=1.5))
NOISY_HOVER = f"<br>{plot_data.NOISY}: every run disturbed, so these are their numbers"
NOISY_PATTERN = dict(shape="x", fgcolor=NOISY_EDGE, solidity=0.35)  # "/" is the warm cache's (diagnosis)


def hollow_points(fig: go.Figure, agg: pd.DataFrame, x: str = "batch_size") -> go.Figure:
    """On a plot with one line per configuration: the points of rows whose every run was disturbed drawn hollow in
    their line's colour (a line of such points only, dotted), so two such configurations stay two colours."""
    noisy = {(c, b) for c, b in zip(agg.loc[plot_data.only_noisy(agg), "config"], agg.loc[plot_data.only_noisy(agg), x])}
    if not noisy:
        return fig
    for t in fig.data:
        if t.type != "scatter" or t.x is None or "markers" not in (t.mode or "") or t.fill is not None:
            continue
        flags = [(t.name, b) in noisy for b in t.x]
        if any(flags):
            t.marker.symbol = ["circle-open" if f else "circle" for f in flags]
            t.marker.line = dict(width=2)
            if all(flags):
                t.line.dash = "dot"
    return fig


def grey_rows(fig: go.Figure, noisy: set) -> go.Figure:
    """On a plot with one row of bars per series: the rows whose runs were all disturbed (plot_data.noisy_series)
    hatched in their own colour, their tick labels marked NOISY (in grey), their hovers saying so, and one legend
    entry for the hatching. Every bar plot of a model's configurations calls this, so such a row never reads as a
    clean result, nor loses the colour that tells its bars apart. Each trace's disturbed bars move to a hatched copy
    of it (same slot, no legend entry of its own)."""
    cats = list(fig.layout.yaxis.categoryarray or [])
    if not noisy or not cats:
        return fig
    greyed = []
    for t in fig.data:
        if t.type != "bar" or t.y is None or not any(y in noisy for y in t.y):
            continue
        flags = [y in noisy for y in t.y]
        copy = go.Bar(t.to_plotly_json())
        copy.update(showlegend=False, x=[x if f else None for f, x in zip(flags, t.x)],
                    marker=dict(color=t.marker.color, line=dict(width=0),  # its own colour under white hatching
                                pattern={**NOISY_PATTERN, "fgcolor": "white", "bgcolor": t.marker.color}),
                    hovertext=[NOISY_HOVER] * len(flags))
        if isinstance(t.text, (list, tuple)):
            copy.text = [v if f else "" for f, v in zip(flags, t.text)]
            t.text = [v if not f else "" for f, v in zip(flags, t.text)]
        template = t.hovertemplate or "<b>%{y}</b>: %{x:.4g}<extra></extra>"
        copy.hovertemplate = template.replace("<extra>", "%{hovertext}<extra>") if "<extra>" in template \
            else template + "%{hovertext}"
        t.x = [None if f else x for f, x in zip(flags, t.x)]
        greyed.append(copy)
    fig.add_traces(greyed)
    if greyed:
        fig.add_trace(go.Bar(x=[None], y=[None], orientation="h", name=NOISY_LEGEND,
                             marker=dict(color="white", pattern=NOISY_PATTERN, line=dict(color=NOISY_EDGE, width=1))))
    fig.update_yaxes(tickvals=cats, ticktext=[f"<span style='color:{NOISY_EDGE}'>{plot_data.NOISY} · {plot(c)}</span>"
                                              if c in noisy else plot(c) for c in cats])
    return fig


RECOMPILED_COLOR = "#222222"  # near black: not one of the series palette's colours
HOST_BOUND_COLOR = "#9467bd"


def seconds_text(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def ring(fig: go.Figure, rows: pd.DataFrame, x: str, y: str, group: str, name: str, marker: dict, data: list,
          hover: str) -> None:
    # side by side at one batch size (x_batches), a ring must take its configuration's slot, not its own
    groups = rows.groupby("config", sort=False) if fig.layout.scattermode == "group" else [(None, rows)]
    for i, (config, sub) in enumerate(groups):
        if sub.empty:
            continue
        custom = sub[data].assign(config=sub["config"].map(plot)) if "config" in data else sub[data]  # as text
        fig.add_trace(go.Scatter(x=sub[x], y=sub[y], mode="markers", name=name, offsetgroup=config,
                                 legendgroup=group, showlegend=i == 0, marker=marker, customdata=custom,
                                 hovertemplate=hover))
