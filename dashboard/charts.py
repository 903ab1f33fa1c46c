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
    fig.update_layout(title=dict(text=title, font=dict(size=15)), height=height, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.24, x=0, title=None),
                      hoverlabel=dict(namelength=-1))
    return fig


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
        configs = group[label_col].unique()
        what = f"{configs[0]}: {group['status'].iloc[0]}" if len(configs) == 1 and len(group) == 1 \
            else f"{len(group)}"  # short: one note per x, side by side; the hover has the reasons
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
    vs compiled second call, per configuration (cold vs warm cache when both are in view)."""
    long = agg.melt(id_vars=["series", "runs"], value_vars=list(CALLS), var_name="call", value_name="seconds")
    long["call"] = long["call"].map(CALLS)
    fig = px.bar(long.dropna(subset=["seconds"]), x="series", y="seconds", color="call", barmode="group",
                 color_discrete_map=CALL_COLORS, category_orders={"call": list(CALLS.values())},
                 hover_data={"runs": True}, labels={"series": "", "call": ""})
    _log_y(fig, "seconds (log)")
    _categories(fig, agg, fails, "series")
    _mark_failures_on_x(fig, fails, "series", "series")
    return _layout(fig, "Warmup cost: first calls (log scale)")


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
    median over the configs)."""
    fig = go.Figure()
    comp = agg
    eager = agg.groupby(["baseline", "batch_size"], as_index=False)[
        ["eager_ms", "eager_p10_ms", "eager_p90_ms", "runs"]].agg(
        {"eager_ms": "median", "eager_p10_ms": "median", "eager_p90_ms": "median", "runs": "sum"})
    series = [(f"{b}", sub, "eager_ms", "eager_p10_ms", "eager_p90_ms", "dash") for b, sub in eager.groupby("baseline")]
    series += [(f"{c}", sub, "compiled_ms", "compiled_p10_ms", "compiled_p90_ms", "solid")
               for c, sub in comp.groupby("config")]
    palette = colors(comp["config"])  # the same colours as the speedup plot; eager in greys
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
    _x_batches(fig, agg, fails)
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
    fig = px.line(agg.dropna(subset=["speedup"]), x="batch_size", y="speedup", color="config", markers=True,
                  color_discrete_map=colors(agg["config"]), hover_data={"runs": True, "eager_ms": ":.4g",
                                                                        "compiled_ms": ":.4g"},
                  labels={"speedup": "speedup (eager / compiled)", "config": ""})
    fig.update_traces(marker=dict(size=9))
    fig.add_hline(y=1.0, line=dict(color="#444", dash="dot"), annotation_text="1.0× (no gain)",
                  annotation_position="top left")
    _x_batches(fig, agg, fails)
    top = max(1.2, float(agg["speedup"].max()) * 1.1) if agg["speedup"].notna().any() else 2.0
    fig.update_yaxes(range=[0, top])
    _mark_failures_on_x(fig, fails, "batch_size", "config")
    return _layout(fig, "Speedup vs batch size" + ("" if clock == "latency" else f" ({CLOCK_WORDS[clock]})"))


def break_even(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure:
    """After how many calls compiling has paid for itself (both first calls counted)."""
    paid = agg.dropna(subset=["break_even_calls"])
    fig = px.bar(paid, x="series", y="break_even_calls", color="config", color_discrete_map=colors(agg["config"]),
                 text="break_even_calls", hover_data={"speedup": ":.3g", "runs": True}, labels={"series": ""})
    fig.update_traces(texttemplate="%{text:,.0f}", textposition="outside", showlegend=False)
    _log_y(fig, "calls (log)")
    _categories(fig, agg, fails, "series")
    never = agg[agg["break_even_calls"].isna()]
    if paid.empty and not never.empty:  # one note instead of an empty log axis
        fig.update_yaxes(visible=False)
        fig.add_annotation(x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=14),
                           text="Compiled is not faster in any configuration here:<br>compiling never pays off.")
        never = never.iloc[0:0]
    for row in never.itertuples():
        fig.add_annotation(x=row.series, y=0.5, xref="x", yref="y domain", showarrow=False, textangle=-90,
                           text="never: compiled not faster", font=dict(color="#555"))
    _mark_failures_on_x(fig, fails, "series", "series")
    return _layout(fig, "Break-even: calls until compile pays off")


# -- issue 5: noisy numbers, the roofline, where the first call goes, device vs host, repeats ----------
NOISY_COLOR = "#ff7f0e"
RECOMPILED_COLOR = "#222222"  # near black: not one of the series palette's colours
HOST_BOUND_COLOR = "#9467bd"
def _seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def mark_noisy(fig: go.Figure, agg: pd.DataFrame, x: str = "batch_size", y: str = "speedup") -> go.Figure:
    """Ring the points of configurations with a noisy run (its own spread past 5%): read them with care.
    Square the points of configurations that recompiled inside the timed rounds (graph breaks, guards on
    data): those calls were dropped from the samples, but the steady state switches between graphs. A
    diamond marks host-bound configurations (CUDA: the GPU idles half of each call or more)."""
    noisy = agg[agg["noisy_runs"].fillna(0) > 0].dropna(subset=[y])
    if "noise_note" not in noisy:
        noisy = noisy.assign(noise_note="")
    # a configuration with noisy runs only is the grey point below, not a ring "beside quiet ones"
    ringed = noisy[~noisy["only_noisy"].eq(True)] if "only_noisy" in noisy else noisy
    _ring(fig, ringed.assign(noise_note=ringed["noise_note"].fillna("").map(_wrap)), x, y, "noisy",
          "⚠ noisy run (spread > 5%, or host-sensitive)",
          dict(size=20, symbol="circle-open", color=NOISY_COLOR, line=dict(width=2.5)),
          ["config", "noisy_runs", "runs", "max_spread", "noise_note"],
          "<b>⚠ %{customdata[0]}</b><br>%{customdata[1]} noisy run(s), left out of this point beside %{customdata[2]} "
          "quiet one(s); largest spread %{customdata[3]:.1%}<br>%{customdata[4]}<extra></extra>")
    if "only_noisy" in agg:  # every run noisy: the point is theirs, greyed, and out of the answer and the header
        only = noisy[noisy["only_noisy"].eq(True)]
        _ring(fig, only.assign(noise_note=only["noise_note"].fillna("").map(_wrap)), x, y, "only-noisy",
              "▒ noisy runs only: greyed, not in the answer", dict(size=13, symbol="circle", color="#c8c8c8",
              line=dict(color="#888888", width=1)), ["config", "noise_note", "runs"],
              "<b>▒ %{customdata[0]}</b><br>all %{customdata[2]} run(s) noisy, re-runs included: left out of the "
              "answer and the header<br>%{customdata[1]}<extra></extra>")
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
        fig.add_trace(go.Scatter(x=sub[x], y=sub[y], mode="markers", name=name, offsetgroup=config,
                                 legendgroup=group, showlegend=i == 0, marker=marker, customdata=sub[data],
                                 hovertemplate=hover))
