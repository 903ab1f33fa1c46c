"""The Results plots (plotly), each answering one of the seed notes' questions. No streamlit here.

Every figure takes what dashboard.stats.summarize makes of one model's labelled rows: `agg`, medians
over repeated runs per (config, batch size), and `fails`, the jobs that did not succeed, or a frame
built from them (stats.breakdown_frame, stats.gpu_latency_frame, dashboard.repeats, dashboard.roofline).
Failures are drawn too, as red ✕ notes with their reasons on hover, so a failed configuration is never
silently missing from a plot.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from dashboard import stats
from dashboard.markup import plot

FAIL_COLOR = "#d62728"
CALLS = {"eager_first_call_s": "eager first call", "compiled_first_call_s": "compiled first call (compile + run)",
         "compiled_second_call_s": "compiled second call"}
CALL_COLORS = {"eager first call": "#7f7f7f", "compiled first call (compile + run)": "#ff7f0e",
               "compiled second call": "#1f77b4"}


def _text(series: pd.Series) -> pd.Series:
    """Values as text, a missing one as "(none)" (astype(str) keeps it missing: no colour, no group)."""
    return series.astype(object).where(series.notna(), "(none)").astype(str)


def colors(labels) -> dict:
    palette = px.colors.qualitative.D3 + px.colors.qualitative.Set2 + px.colors.qualitative.Pastel
    return {label: palette[i % len(palette)] for i, label in enumerate(sorted(set(labels)))}


def _layout(fig: go.Figure, title: str, height: int = 380) -> go.Figure:
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
    lines = [f"#{r.job_id} {plot(getattr(r, label_col))}: {r.status}: {_wrap(str(r.error)[:400])}"
             for r in bad.head(8).itertuples()]
    more = f"<br>… and {len(bad) - 8} more" if len(bad) > 8 else ""
    return "<br>".join(lines) + more


def _wrap(text: str, width: int = 90) -> str:
    """Hover text on several lines: one long line is cut off at the plot's edge."""
    return "<br>".join(plot(text[i:i + width]) for i in range(0, len(text), width))


def _mark_failures_on_x(fig: go.Figure, fails: pd.DataFrame, x_col: str, label_col: str) -> None:
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
    _add_notes(fig, notes)


def _add_notes(fig: go.Figure, notes: list[dict]) -> None:
    """Add annotations in one assignment: add_annotation re-validates every earlier one (quadratic)."""
    if notes:
        fig.update_layout(annotations=list(fig.layout.annotations) + notes)


def _categories(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame, x_col: str) -> list:
    """Every category in view on the x axis, failed-only ones included, ordered by config then batch
    size; tick labels break at " · " so long labels stay readable."""
    both = pd.concat([agg[["config", "batch_size", x_col]], fails[["config", "batch_size", x_col]]])
    cats = both.sort_values(["config", "batch_size"])[x_col].astype(str).drop_duplicates().tolist()
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=cats, tickvals=cats,
                     ticktext=[c.replace(" · ", "<br>") for c in cats], tickfont=dict(size=10),
                     tickangle=0 if len(cats) <= 4 else -30)  # many labels side by side would run together
    return cats


def _log_y(fig: go.Figure, title: str) -> None:
    fig.update_yaxes(type="log", dtick=1, title=title)  # decades only: minor ticks clutter a small plot


def warmup(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure:
    """Seed 001/004: what the first calls cost: eager first call vs compiled first call (compile + run)
    vs compiled second call, per series (cold vs warm cache when both are in view). Horizontal bars, one row
    per series with its label on the y axis (readable at a dozen series), each bar's value at its end."""
    long = agg.melt(id_vars=["series", "runs"], value_vars=list(CALLS), var_name="call", value_name="seconds")
    long["call"] = long["call"].map(CALLS)
    long = long.dropna(subset=["seconds"])
    long["text"] = long["seconds"].map(_seconds)
    fig = px.bar(long, y="series", x="seconds", color="call", barmode="group", orientation="h", text="text",
                 color_discrete_map=CALL_COLORS, category_orders={"call": list(CALLS.values())},
                 hover_data={"runs": True, "text": False}, labels={"series": "", "call": ""})
    fig.update_traces(textposition="outside", cliponaxis=False, textfont=dict(size=10))
    cats = _rows(fig, agg, fails)
    values = long["seconds"][long["seconds"] > 0]
    # decades, with room on the right for the values written past the longest bar
    span = [np.log10(values.min() / 2), np.log10(values.max() * 8)] if len(values) else None
    fig.update_xaxes(type="log", dtick=1, title="seconds (log)", range=span)
    fig.update_layout(bargap=0.25, bargroupgap=0.05)
    mark_failures_on_y(fig, fails, "series")
    grey_rows(fig, stats.noisy_series(agg))
    return rows_layout(fig, "Warmup cost: first calls (log scale)", len(cats), bars=3)


def _rows(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame) -> list:
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
    _layout(fig, title, height=height)
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
    _add_notes(fig, notes)


def _band(fig: go.Figure, sub: pd.DataFrame, lo: str, hi: str, color: str, group: str) -> None:
    if len(sub) < 2:
        return
    xs = list(sub["batch_size"]) + list(sub["batch_size"])[::-1]
    ys = list(sub[hi]) + list(sub[lo])[::-1]
    fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", fillcolor=color, opacity=0.18, line=dict(width=0),
                             hoverinfo="skip", showlegend=False, legendgroup=group))


def latency(agg: pd.DataFrame, fails: pd.DataFrame, clock: str = "latency") -> go.Figure:
    """Steady-state ms per call vs batch size in one clock (stats.on_clock; latency by default, with
    p10–p90 bands): eager and compiled (each job measures its own eager baseline; the eager line is the
    median over the configs). A configuration disturbed in every run is no line: its points are grey, marked."""
    fig = go.Figure()
    noisy = stats.only_noisy(agg)
    comp = agg[~noisy]
    eager = comp.groupby(["baseline", "batch_size"], as_index=False)[
        ["eager_ms", "eager_p10_ms", "eager_p90_ms", "runs"]].agg(
        {"eager_ms": "median", "eager_p10_ms": "median", "eager_p90_ms": "median", "runs": "sum"})
    series = [(f"{b}", sub, "eager_ms", "eager_p10_ms", "eager_p90_ms", "dash") for b, sub in eager.groupby("baseline")]
    series += [(f"{c}", sub, "compiled_ms", "compiled_p10_ms", "compiled_p90_ms", "solid")
               for c, sub in comp.groupby("config")]
    palette = colors(agg["config"])  # the same colours as the speedup plot; eager in greys
    greys = ["#555555", "#8c8c8c", "#b0b0b0", "#3a3a3a"]
    palette.update({b: greys[i % len(greys)] for i, b in enumerate(sorted(eager["baseline"].unique()))})
    for name, sub, mid, lo, hi, dash in series:
        sub = sub.dropna(subset=[mid]).sort_values("batch_size")
        if sub.empty:
            continue
        color = palette[name]
        _band(fig, sub, lo, hi, color, name)
        fig.add_trace(go.Scatter(
            x=sub["batch_size"], y=sub[mid], name=name, mode="lines+markers", legendgroup=name,
            line=dict(color=color, dash=dash), marker=dict(size=8),
            error_y=dict(type="data", symmetric=False, array=sub[hi] - sub[mid], arrayminus=sub[mid] - sub[lo],
                         thickness=1, width=4),
            customdata=sub[[lo, hi, "runs"]],
            hovertemplate=f"<b>{name}</b><br>batch %{{x}}: %{{y:.4g}} ms<br>p10 %{{customdata[0]:.4g}} – "
                          "p90 %{customdata[1]:.4g} ms<br>%{customdata[2]} run(s)<extra></extra>"))
    _values_on_points(fig, "%.3g")
    _x_batches(fig, agg, fails)
    only = agg[noisy].dropna(subset=["compiled_ms"])
    if "noise_note" not in only:
        only = only.assign(noise_note="")
    _ring(fig, only.assign(noise_note=only["noise_note"].fillna("").map(_wrap), name=only["config"].map(plot)),
          "batch_size", "compiled_ms", "only-noisy", NOISY_LEGEND, NOISY_MARKER, ["name", "eager_ms", "runs", "noise_note"],
          f"<b>{stats.NOISY} · %{{customdata[0]}}</b><br>batch %{{x}}: compiled %{{y:.4g}} ms, eager "
          "%{customdata[1]:.4g} ms<br>all %{customdata[2]} run(s) noisy: left out of the answer<br>%{customdata[3]}"
          "<extra></extra>")
    # the p10-p90 whiskers count: one noisy run's p90 at 100x its median would press every median flat
    values = pd.concat([agg[c] for c in ("eager_ms", "compiled_ms", "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms",
                                         "compiled_p90_ms") if c in agg]).dropna()
    if len(values) and values.min() > 0 and values.max() / values.min() > 20:
        _log_y(fig, "ms per call (log; median" + (", p10–p90)" if clock == "latency" else ")"))
    else:
        fig.update_yaxes(title="ms per call (median" + (", p10–p90)" if clock == "latency" else ")"), rangemode="tozero")
    _mark_failures_on_x(fig, fails, "batch_size", "config")
    return _layout(fig, f"Steady-state {CLOCK_WORDS[clock]} vs batch size (dashed: eager)")


def _x_batches(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame) -> None:
    sizes = sorted(set(agg["batch_size"].dropna().astype(int)) | set(fails["batch_size"].dropna().astype(int)))
    log = len(sizes) > 1 and sizes[-1] / max(sizes[0], 1) >= 16
    # no axis title: the plot's title says "vs batch size", and a title here collides with the legend below
    fig.update_xaxes(title=None, type="log" if log else "linear", tickvals=sizes)
    if len(sizes) == 1:  # every configuration at one x: set them side by side, or close values hide each other
        fig.update_xaxes(type="category")
        fig.update_layout(scattermode="group", scattergap=0.3)
        fig.for_each_trace(lambda t: t.update(offsetgroup=t.name))  # what is drawn later for a series joins it


CLOCK_WORDS = {"latency": "latency", "throughput": "throughput", "gpu": "GPU time"}


def speedup(agg: pd.DataFrame, fails: pd.DataFrame, clock: str = "latency") -> go.Figure:
    """Seed 004: speedup (eager_ms / compiled_ms) vs batch size, in one clock (stats.on_clock; latency, what
    a caller waits for, by default); above the 1.0× line compile wins."""
    # a configuration disturbed in every run is no line: mark_noisy draws its points greyed
    fig = px.line(agg[~stats.only_noisy(agg)].dropna(subset=["speedup"]), x="batch_size", y="speedup", color="config",
                  markers=True,
                  color_discrete_map=colors(agg["config"]), hover_data={"runs": True, "eager_ms": ":.4g",
                                                                        "compiled_ms": ":.4g"},
                  labels={"speedup": "speedup (eager / compiled)", "config": ""})
    # each point's value beside it, while they are few enough to be read (the answer table has them all)
    fig.update_traces(marker=dict(size=9), textposition="middle right", textfont=dict(size=10))
    _values_on_points(fig, "%.2f×")
    fig.add_hline(y=1.0, line=dict(color="#444", dash="dot"), annotation_text="1.0× (no gain)",
                  annotation_position="bottom right")
    _x_batches(fig, agg, fails)
    top = max(1.2, float(agg["speedup"].max()) * 1.1) if agg["speedup"].notna().any() else 2.0
    fig.update_yaxes(range=[0, top])
    _mark_failures_on_x(fig, fails, "batch_size", "config")
    return _layout(fig, "Speedup vs batch size" + ("" if clock == "latency" else f" ({CLOCK_WORDS[clock]})"))


def _values_on_points(fig: go.Figure, fmt: str, room: float = 0.08) -> None:
    """Each point's value beside it, where it can be read: a point within `room` (a share of the y range) of one
    already labelled at the same x keeps its value in the hover only, so no two values are drawn over each other."""
    lines = [i for i, t in enumerate(fig.data) if t.fill is None and "markers" in (t.mode or "lines+markers")]
    points = [(x, y, i, k) for i in lines for k, (x, y) in enumerate(zip(fig.data[i].x, fig.data[i].y)) if y is not None]
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
    for i in lines:
        t = fig.data[i]
        t.update(text=shown[i], mode="lines+markers+text", texttemplate=None, cliponaxis=False, textfont=dict(size=10),
                 textposition=["middle left" if x == first else "middle right" for x in t.x])


def break_even(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure | None:
    """After how many calls compiling has paid for itself (both first calls counted): one horizontal bar per
    series that pays off, its count written at its end; a series that never does says so in its row. None when
    the chart has nothing to say (break_even_note says it in a line instead): no series pays off, or only one
    series is in view. A series disturbed in every run is greyed and marked (grey_rows): never a result, never the
    shortest bar to read."""
    if break_even_note(agg):
        return None
    noisy = stats.only_noisy(agg)
    view = agg.assign(text=agg["break_even_calls"].map(lambda n: f"{n:,.0f} calls", na_action="ignore"))
    view["text"] = view["text"].where(~noisy, view["text"] + f" · {stats.NOISY}: every run disturbed")
    paid = view.dropna(subset=["break_even_calls"])
    fig = px.bar(paid, y="series", x="break_even_calls", orientation="h", color="config",
                 color_discrete_map=colors(agg["config"]), text="text",
                 hover_data={"speedup": ":.3g", "runs": True, "text": False, "config": False},
                 labels={"series": "", "break_even_calls": "calls"})
    fig.update_traces(textposition="outside", cliponaxis=False, showlegend=False, textfont=dict(size=11))
    cats = _rows(fig, agg, fails)
    top = float(paid["break_even_calls"].max())
    fig.update_xaxes(type="log", dtick=1, title="calls until compile pays off (log)",
                     range=[0, np.log10(max(top, 10) * 20)])  # from 1 call, with room for the counts
    never = view[view["break_even_calls"].isna() & view["speedup"].notna()]
    _add_notes(fig, [dict(x=0, y=row.series, xref="x domain", yref="y", xanchor="left", showarrow=False,
                          text=f"{stats.NOISY}: every run disturbed" if is_noisy else
                          f"never: compiled is slower ({row.speedup:.2f}×)",
                          font=dict(color=NOISY_EDGE if is_noisy else "#555", size=11))
                     for row, is_noisy in zip(never.itertuples(), noisy[never.index])])
    mark_failures_on_y(fig, fails, "series")
    grey_rows(fig, stats.noisy_series(agg))
    return rows_layout(fig, "Break-even: calls until compile pays off", len(cats))


def break_even_note(agg: pd.DataFrame) -> str:
    """Why the break-even chart is not drawn, in one line; "" when it is. Judged on the configurations that answer:
    one disturbed in every run says nothing either way (the line counts them)."""
    noisy = stats.only_noisy(agg)
    measured = agg[~noisy].dropna(subset=["speedup"])
    paid = measured.dropna(subset=["break_even_calls"])
    left_out = int(noisy.sum())
    aside = (f" {left_out} configuration{'s' * (left_out != 1)} disturbed in every run "
             f"{'are' if left_out != 1 else 'is'} not counted.") if left_out else ""
    if measured.empty:
        return "Break-even: no configuration in view has a steady state to repay its first call (no chart)." + aside
    if paid.empty:
        return ("Break-even: compiled is not faster than eager in any configuration in view, so compiling never "
                "pays off here (no chart)." + aside)
    if measured["series"].nunique() == 1:
        row = measured.iloc[0]
        return (f"Break-even: one configuration in view ({row['series']}), paying off after "
                f"{row['break_even_calls']:,.0f} calls." + aside)
    return ""


# -- noisy numbers, the roofline, where the first call goes, device vs host, repeats -------------------
NOISY_COLOR = "#ff7f0e"
# a configuration whose runs were all noisy (stats.only_noisy) is drawn in these greys on every plot, marked NOISY
NOISY_GREY, NOISY_EDGE = "#c8c8c8", "#888888"
NOISY_LEGEND = f"{stats.NOISY}: every run disturbed, greyed"
NOISY_MARKER = dict(size=13, symbol="circle", color=NOISY_GREY, line=dict(color=NOISY_EDGE, width=1))
NOISY_HOVER = f"<br>{stats.NOISY} runs only: out of the answer"


def grey_rows(fig: go.Figure, noisy: set) -> go.Figure:
    """On a plot with one row of bars per series: the rows whose runs were all noisy (stats.noisy_series) greyed
    and hatched, their tick labels marked NOISY (in grey), their hovers saying so. Every bar plot of a model's
    configurations calls this, so such a row never reads as a result (or as the shortest break-even). Each trace's
    noisy bars move to a grey copy of it (same slot, no legend entry), so the legend keeps the trace's own colour."""
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
                    marker=dict(color=NOISY_GREY, pattern=dict(shape="/", fgcolor=NOISY_EDGE, solidity=0.3),
                                line=dict(width=0)),
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
    if greyed and any(t.showlegend is not False for t in fig.data if t.type == "bar" and t.x is not None
                      and any(x is not None for x in t.x)):
        fig.add_trace(go.Bar(x=[None], y=[None], orientation="h", name=NOISY_LEGEND, marker=dict(
            color=NOISY_GREY, pattern=dict(shape="/", fgcolor=NOISY_EDGE, solidity=0.3))))
    fig.update_yaxes(tickvals=cats, ticktext=[f"<span style='color:{NOISY_EDGE}'>{stats.NOISY} · {plot(c)}</span>"
                                              if c in noisy else plot(c) for c in cats])
    return fig
    for t in fig.data:
        if t.type != "bar" or t.y is None:
            continue
        flags = [y in noisy for y in t.y]
        if not any(flags):
            continue
        colour = t.marker.color
        colours = list(colour) if isinstance(colour, (list, tuple)) else [colour] * len(flags)
        shape = t.marker.pattern.shape
        shapes = list(shape) if isinstance(shape, (list, tuple)) else [shape or ""] * len(flags)
        t.marker.color = [NOISY_GREY if f else c for f, c in zip(flags, colours)]
        t.marker.pattern.shape = ["/" if f else p for f, p in zip(flags, shapes)]
        t.marker.pattern.fgcolor = NOISY_EDGE
        t.hovertext = [NOISY_HOVER if f else "" for f in flags]
        template = t.hovertemplate or "<b>%{y}</b>: %{x:.4g}<extra></extra>"
        t.hovertemplate = template.replace("<extra>", "%{hovertext}<extra>") if "<extra>" in template \
            else template + "%{hovertext}"
    fig.update_yaxes(tickvals=cats, ticktext=[f"<span style='color:{NOISY_EDGE}'>{stats.NOISY} · {plot(c)}</span>"
                                              if c in noisy else plot(c) for c in cats])
    return fig
RECOMPILED_COLOR = "#222222"  # near black: not one of the series palette's colours
HOST_BOUND_COLOR = "#9467bd"
def _seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def mark_noisy(fig: go.Figure, agg: pd.DataFrame, x: str = "batch_size", y: str = "speedup") -> go.Figure:
    """Ring the points of configurations with a disturbed run (a measured cause: left out of the point).
    Square the points of configurations that recompiled inside the timed rounds (graph breaks, guards on
    data): those calls were dropped from the samples, but the steady state switches between graphs. A
    diamond marks host-bound configurations (CUDA: the GPU idles half of each call or more)."""
    noisy = agg[(agg["noisy_runs"].fillna(0) > 0) | stats.only_noisy(agg)].dropna(subset=[y])
    if "noise_note" not in noisy:
        noisy = noisy.assign(noise_note="")
    # a configuration disturbed in every run is the grey point below, not a ring "beside undisturbed ones"
    ringed = noisy[~noisy["only_noisy"].eq(True)] if "only_noisy" in noisy else noisy
    _ring(fig, ringed.assign(noise_note=ringed["noise_note"].fillna("").map(_wrap)), x, y, "noisy",
          "⚠ disturbed run left out (a measured cause)",
          dict(size=20, symbol="circle-open", color=NOISY_COLOR, line=dict(width=2.5)),
          ["config", "noisy_runs", "runs", "max_spread", "noise_note"],
          "<b>⚠ %{customdata[0]}</b><br>%{customdata[1]} disturbed run(s), left out of this point beside "
          "%{customdata[2]} undisturbed one(s)<br>%{customdata[4]}<extra></extra>")
    if "only_noisy" in agg:  # every run disturbed: the point is theirs, greyed, and out of the header
        only = noisy[noisy["only_noisy"].eq(True)]
        _ring(fig, only.assign(noise_note=only["noise_note"].fillna("").map(_wrap), name=only["config"].map(plot)),
              x, y, "only-noisy", NOISY_LEGEND, NOISY_MARKER, ["name", "noise_note", "runs"],
              f"<b>{stats.NOISY} · %{{customdata[0]}}</b><br>%{{y:.3g}}: all %{{customdata[2]}} run(s) disturbed, "
              "re-runs included: their numbers, out of the header<br>%{customdata[1]}<extra></extra>")
    if "recompiled_runs" in agg:
        _ring(fig, agg[agg["recompiled_runs"].fillna(0) > 0].dropna(subset=[y]), x, y, "recompiled",
              "↻ recompiled while timed (those calls dropped)",
              dict(size=26, symbol="square-open", color=RECOMPILED_COLOR, line=dict(width=2)),
              ["config", "recompiled_runs", "runs", "dropped_calls"],
              "<b>↻ %{customdata[0]}</b><br>%{customdata[1]} of %{customdata[2]} run(s) recompiled inside the timed "
              "rounds; %{customdata[3]:.0f} timed call(s) dropped from the samples<extra></extra>")
    if "host_bound_runs" in agg:
        bound = agg[agg["host_bound_runs"].fillna(0) > 0].dropna(subset=[y])
        _ring(fig, bound.assign(host_note=bound["host_note"].fillna("").map(_wrap)), x, y, "host-bound",
              "◇ host-bound (the GPU idles half of a call or more)",
              dict(size=23, symbol="diamond-open", color=HOST_BOUND_COLOR, line=dict(width=2)),
              ["config", "host_bound_runs", "runs", "host_note"],
              "<b>◇ %{customdata[0]}</b><br>%{customdata[1]} of %{customdata[2]} run(s) host-bound: "
              "%{customdata[3]}<extra></extra>")
    return fig


def _ring(fig: go.Figure, rows: pd.DataFrame, x: str, y: str, group: str, name: str, marker: dict, data: list,
          hover: str) -> None:
    # side by side at one batch size (_x_batches), a ring must take its configuration's slot, not its own
    groups = rows.groupby("config", sort=False) if fig.layout.scattermode == "group" else [(None, rows)]
    for i, (config, sub) in enumerate(groups):
        if sub.empty:
            continue
        custom = sub[data].assign(config=sub["config"].map(plot)) if "config" in data else sub[data]  # as text
        fig.add_trace(go.Scatter(x=sub[x], y=sub[y], mode="markers", name=name, offsetgroup=config,
                                 legendgroup=group, showlegend=i == 0, marker=marker, customdata=custom,
                                 hovertemplate=hover))
