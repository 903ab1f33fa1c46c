"""The Results page's speed plots (plotly, no Streamlit): speedup and ms per call against batch size in one clock, the
first calls' cost, and the calls after which compiling pays off. Each takes plot_data.summarize's `agg` and
`fails` of one model."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from dashboard.charts.styling import (
    HOST_BOUND_COLOR,
    NOISY_COLOR,
    NOISY_EDGE,
    NOISY_LEGEND,
    NOISY_MARKER,
    RECOMPILED_COLOR,
    add_notes,
    colors,
    dodged,
    grey_rows,
    hollow_points,
    layout,
    log_y,
    mark_failures_on_x,
    mark_failures_on_y,
    ring,
    rows_layout,
    seconds_text,
    series_rows,
    values_on_points,
    wrap,
    x_batches,
)
from dashboard.data import plot_data
from dashboard.markup import plot
from lab import noise
from lab.break_even import shown_ends

CALLS = {"eager_first_call_s": "eager first call",
         "first_call_cold_s": "compiled first call: cold (an empty cache)",
         "first_call_warm_s": "compiled first call: warm (a cache that held it)",
         "first_call_portable_s": "compiled first call: portable (a colleague's bundle)",
         "compiled_second_call_s": "compiled second call"}
CALL_COLORS = dict(zip(CALLS.values(), ("#7f7f7f", "#d62728", "#ff7f0e", "#2ca02c", "#1f77b4")))


def warmup(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure:
    """Seed 001/004: what the first calls cost: eager first call, the compiled first call (compile + run) cold,
    warm and portable apart as the answer table counts them (plot_data.first_calls: lab.first_call), and the
    compiled second call, per series. Horizontal bars, one row per series with its label on the y axis (readable
    at a dozen series), each bar's value at its end, its runs in the hover."""
    present = [c for c in CALLS if c in agg]
    runs = {"first_call_cold_s": "cold_runs", "first_call_warm_s": "warm_runs", "first_call_portable_s": "portable_runs"}
    low, high = (agg[c] if c in agg else pd.Series(np.nan, index=agg.index) for c in plot_data.COLD_BOUNDS)

    def one(c: str) -> pd.DataFrame:
        rows = agg[["series"]].assign(call=CALLS[c], seconds=agg[c], n=agg[runs[c]] if runs.get(c) in agg else agg["runs"],
                                      plus=np.nan, minus=np.nan, held="–")
        if c == "first_call_cold_s":  # its 95% interval (the answer's, plot_data.answered_cold), where it has one
            known = pd.notna(low) & pd.notna(high)
            rows = rows.assign(plus=high - agg[c], minus=agg[c] - low,
                               held=[f"{lo:.3g}-{hi:.3g} s" if k else "–" for lo, hi, k in zip(low, high, known)])
        return rows

    long = pd.concat([one(c) for c in present], ignore_index=True).dropna(subset=["seconds"])
    long["text"] = long["seconds"].map(seconds_text)
    bracketed = bool(long["plus"].notna().any())
    fig = px.bar(long, y="series", x="seconds", color="call", barmode="group", orientation="h", text="text",
                 color_discrete_map=CALL_COLORS, category_orders={"call": [CALLS[c] for c in present]},
                 error_x="plus" if bracketed else None, error_x_minus="minus" if bracketed else None,
                 hover_data={"n": True, "text": False, "plus": False, "minus": False, "held": bracketed},
                 labels={"series": "", "call": "", "n": "runs", "held": "95% interval"})
    fig.update_traces(textposition="outside", cliponaxis=False, textfont=dict(size=10))
    if bracketed:  # the cold bars' values inside, at their start: at their end the interval's whisker runs through them
        fig.update_traces(selector=dict(name=CALLS["first_call_cold_s"]), textposition="inside", insidetextanchor="start",
                          error_x=dict(color="#444", thickness=1.2, width=5))
    cats = series_rows(fig, agg, fails)
    values = long["seconds"][long["seconds"] > 0]
    # decades, with room on the right for the values written past the longest bar
    span = [np.log10(values.min() / 2), np.log10(values.max() * 8)] if len(values) else None
    fig.update_xaxes(type="log", dtick=1, title="seconds (log)", range=span)
    fig.update_layout(bargap=0.25, bargroupgap=0.05)
    mark_failures_on_y(fig, fails, "series")
    grey_rows(fig, plot_data.noisy_series(agg))
    return rows_layout(fig, "Warmup cost: first calls (log scale)", len(cats), bars=max(3, long["call"].nunique()))


def _band(fig: go.Figure, sub: pd.DataFrame, lo: str, hi: str, color: str, group: str) -> None:
    if len(sub) < 2:
        return
    xs = list(sub["batch_size"]) + list(sub["batch_size"])[::-1]
    ys = list(sub[hi]) + list(sub[lo])[::-1]
    fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", fillcolor=color, opacity=0.18, line=dict(width=0),
                             hoverinfo="skip", showlegend=False, legendgroup=group))


def latency(agg: pd.DataFrame, fails: pd.DataFrame, clock: str = "latency") -> go.Figure:
    """Steady-state ms per call vs batch size in one clock (plot_data.on_clock; latency by default, with
    p10–p90 bands): eager and compiled (each job measures its own eager baseline; the eager line is the
    median over the configs). A configuration disturbed in every run is drawn as the answer counts it: its own line,
    its points hollow and ringed."""
    fig = go.Figure()
    noisy = plot_data.only_noisy(agg)
    # a configuration disturbed in every run answers with their numbers: on its line, hollow
    # eager: the rows that count at each batch size (lab.noise: the undisturbed ones, or all where none is)
    counted = agg[np.array(noise.counting(noisy.tolist(), zip(agg["baseline"], agg["batch_size"])), dtype=bool)]
    eager = counted.groupby(["baseline", "batch_size"], as_index=False)[
        ["eager_ms", "eager_p10_ms", "eager_p90_ms", "runs"]].agg(
        {"eager_ms": "median", "eager_p10_ms": "median", "eager_p90_ms": "median", "runs": "sum"})
    series = [(f"{b}", sub, "eager_ms", "eager_p10_ms", "eager_p90_ms", "dash") for b, sub in eager.groupby("baseline")]
    series += [(f"{c}", sub, "compiled_ms", "compiled_p10_ms", "compiled_p90_ms", "solid")
               for c, sub in agg.groupby("config")]
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
                          "p90 %{customdata[1]:.4g} ms<br>runs: %{customdata[2]}<extra></extra>"))
    values_on_points(fig, "%.3g")
    hollow_points(fig, agg)
    x_batches(fig, agg, fails)
    only = agg[noisy].dropna(subset=["compiled_ms"])
    if "noise_note" not in only:
        only = only.assign(noise_note="")
    ring(fig, only.assign(noise_note=only["noise_note"].fillna("").map(wrap), name=only["config"].map(plot)),
          "batch_size", "compiled_ms", "only-noisy", NOISY_LEGEND, NOISY_MARKER, ["name", "eager_ms", "runs", "noise_note"],
          f"<b>{plot_data.NOISY} · %{{customdata[0]}}</b><br>batch %{{x}}: compiled %{{y:.4g}} ms, eager "
          "%{customdata[1]:.4g} ms<br>every run disturbed (runs: %{customdata[2]}): the answer's numbers, marked<br>"
          "%{customdata[3]}"
          "<extra></extra>")
    # the p10-p90 whiskers count: one noisy run's p90 at 100x its median would press every median flat
    values = pd.concat([agg[c] for c in ("eager_ms", "compiled_ms", "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms",
                                         "compiled_p90_ms") if c in agg]).dropna()
    if len(values) and values.min() > 0 and values.max() / values.min() > 20:
        log_y(fig, "ms per call (log; median" + (", p10–p90)" if clock == "latency" else ")"))
    else:
        fig.update_yaxes(title="ms per call (median" + (", p10–p90)" if clock == "latency" else ")"), rangemode="tozero")
    mark_failures_on_x(fig, fails, "batch_size", "config")
    return layout(fig, f"Steady-state {CLOCK_WORDS[clock]} vs batch size (dashed: eager)")


CLOCK_WORDS = {"latency": "latency", "throughput": "throughput", "gpu": "GPU time"}


REACH = 1.6  # how far above the highest point the Speedup chart's axis reaches for a whisker


def _bracketed(agg: pd.DataFrame) -> bool:
    """Whether any point has the answer's 95% interval (plot_data.answered_speedup) to draw as a whisker."""
    return all(c in agg for c in plot_data.SPEEDUP_BOUNDS) and bool(
        (agg[plot_data.SPEEDUP_BOUNDS[0]].notna() & agg[plot_data.SPEEDUP_BOUNDS[1]].notna()).any())


def placed(agg: pd.DataFrame, fails: pd.DataFrame) -> pd.DataFrame:
    """`agg` with `at`, where the Speedup chart draws each row: where its points have whiskers, the configurations at
    one batch size set a little apart (styling.dodged), else at the batch size. mark_noisy rings them there too."""
    return agg.assign(at=dodged(agg, fails) if _bracketed(agg) else agg["batch_size"].astype(float))


def speedup(agg: pd.DataFrame, fails: pd.DataFrame, clock: str = "latency") -> go.Figure:
    """Seed 004: speedup (eager_ms / compiled_ms) vs batch size, in one clock (plot_data.on_clock; latency, what
    a caller waits for, by default); above the 1.0× line compile wins. Where the answer stands for a point
    (plot_data.answered_speedup), the point is its number with its 95% interval as a whisker."""
    # a configuration disturbed in every run answers with their numbers: its own line, hollow (mark_noisy rings them)
    drawn = placed(agg, fails).dropna(subset=["speedup"])  # set apart among every row, as mark_noisy's rings are
    lo, hi = (drawn[c] if c in drawn else pd.Series(np.nan, index=drawn.index) for c in plot_data.SPEEDUP_BOUNDS)
    bracketed = _bracketed(drawn)
    drawn = drawn.assign(plus=hi - drawn["speedup"], minus=drawn["speedup"] - lo,
                         held=[f"{a:.2f}× – {b:.2f}×" if pd.notna(a) and pd.notna(b) else "–" for a, b in zip(lo, hi)])
    fig = px.line(drawn, x="at", y="speedup", color="config", markers=True,
                  color_discrete_map=colors(agg["config"]),
                  error_y="plus" if bracketed else None, error_y_minus="minus" if bracketed else None,
                  hover_data={"batch_size": True, "runs": True, "eager_ms": ":.4g", "compiled_ms": ":.4g", "plus": False,
                              "minus": False, "held": bracketed},
                  labels={"speedup": "speedup (eager / compiled; dotted: 1.0×, no gain)", "config": "",
                          "held": "95% interval"})
    for trace in fig.data:  # the hover gives the batch size, not where the point was set
        trace.hovertemplate = (trace.hovertemplate or "").replace("at=%{x}<br>", "")
    if bracketed:
        fig.update_traces(error_y=dict(thickness=1.2, width=5))
    # each point's value beside it, while they are few enough to be read (the answer table has them all)
    fig.update_traces(marker=dict(size=9), textposition="middle right", textfont=dict(size=10))
    hollow_points(fig, drawn, x="at")
    # the line named on the axis, not beside it: a value written beside its group near 1.0x would sit on its label
    fig.add_hline(y=1.0, line=dict(color="#444", dash="dot"))
    x_batches(fig, agg, fails)
    values_on_points(fig, "%.2f×", at=dict(zip(drawn["at"], drawn["batch_size"].astype(float))))  # the axis set
    # the whiskers' tops count up to REACH times the highest point: one very wide interval would press every point
    # flat; one that runs past the top says so, its ends in its hover
    most = float(agg["speedup"].max()) if agg["speedup"].notna().any() else 2.0 / 1.1
    top = max(1.2, min(float(np.nanmax([most, hi.max() if bracketed else np.nan])), REACH * most)) * 1.1
    fig.update_yaxes(range=[0, top])
    past = int((hi > top).sum()) if bracketed else 0
    if past:
        fig.add_annotation(text=f"↑ {past} interval{'s' if past > 1 else ''} run{'' if past > 1 else 's'} past the top: "
                           "hover its point for its ends", xref="paper", yref="paper", x=0, y=1.0, xanchor="left",
                           yanchor="bottom", showarrow=False, font=dict(size=11, color="#555"))
    mark_failures_on_x(fig, fails, "batch_size", "config")
    return layout(fig, "Speedup vs batch size" + ("" if clock == "latency" else f" ({CLOCK_WORDS[clock]})"))


def break_even(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure | None:
    """After how many calls compiling has paid for itself (both first calls counted): one horizontal bar per
    series that pays off, its count written on it and the answer's range for it as a whisker (its intervals' ends:
    plot_data.answered_break_even), or, where the answer's interval reaches 1x, a note that it may never; a series
    that never does says so in its row. None when
    the chart has nothing to say (break_even_note says it in a line instead): no series pays off, or only one
    series is in view. A series disturbed in every run is greyed and marked (grey_rows): never a result, never the
    shortest bar to read."""
    if break_even_note(agg):
        return None
    noisy = plot_data.only_noisy(agg)
    view = agg.assign(text=agg["break_even_calls"].map(lambda n: f"{n:,.0f} calls", na_action="ignore"))
    view["text"] = view["text"].where(~noisy, view["text"] + f" · {plot_data.NOISY}")  # the label and legend say why
    if "speedup_ci_low" in view:  # the answer's interval reaches 1x: its count is at its headline, and it may never pay off
        open_ended = view["speedup_ci_low"] <= 1
        view["text"] = view["text"].where(~open_ended, view["text"] + " · may never: its interval reaches 1×")
    paid = view.dropna(subset=["break_even_calls"])
    low, high = (paid[c] if c in paid else pd.Series(np.nan, index=paid.index) for c in plot_data.PAID_BOUNDS)
    # the range as the verdict writes it (its ends rounded outwards: lab.break_even.range_words), none where they meet
    ends = [shown_ends(lo, hi) for lo, hi in zip(low, high)]
    known = pd.Series([e is not None for e in ends], index=paid.index)
    paid = paid.assign(plus=(high - paid["break_even_calls"]).where(known),
                       minus=(paid["break_even_calls"] - low).where(known),
                       held=[f"{e[0]:,}-{e[1]:,}" if e else "–" for e in ends])
    bracketed = bool(known.any())
    fig = px.bar(paid, y="series", x="break_even_calls", orientation="h", color="config",
                 color_discrete_map=colors(agg["config"]), text="text",
                 error_x="plus" if bracketed else None, error_x_minus="minus" if bracketed else None,
                 hover_data={"speedup": ":.3g", "runs": True, "text": False, "config": False, "plus": False,
                             "minus": False, "held": bracketed},
                 labels={"series": "", "break_even_calls": "calls", "held": "at its intervals' ends"})
    fig.update_traces(textposition="outside", cliponaxis=False, showlegend=False, textfont=dict(size=11))
    for trace in fig.data:  # the hover names the row and gives the count as written (no %{x}: plotly would add the
        # whisker's raw lengths to it), the range as the verdict rounds it
        trace.hovertemplate = (trace.hovertemplate or "").replace("calls=%{x}<br>=%{y}", "%{y}<br>%{text}").replace(
            "at its intervals' ends=", "at its intervals' ends: ")
    if bracketed:  # a bracketed count inside its bar, at its start: at its end the range's whisker runs through it
        inside = dict(zip(paid["series"], known))
        for trace in fig.data:
            trace.update(textposition=["inside" if inside.get(y) else "outside" for y in trace.y],
                         insidetextanchor="start", error_x=dict(color="#444", thickness=1.2, width=5))
    cats = series_rows(fig, agg, fails)
    top = float(np.nanmax([paid["break_even_calls"].max(), high.max()]))
    # from 1 call, with room past the longest bar for the longest count written outside a bar (~0.055 decades a
    # character at these sizes: "157,190 calls · ⚠ noisy · may never: ..." needs 3.2 decades, "33,810 calls" 1.3)
    outside = [len(t) for t, k in zip(paid["text"], known) if not k]
    room = max(1.3, 0.055 * max(outside, default=0))
    fig.update_xaxes(type="log", dtick=1, title="calls until compile pays off (log)",
                     range=[0, np.log10(max(top, 10)) + room])
    never = view[view["break_even_calls"].isna() & view["speedup"].notna()]
    add_notes(fig, [dict(x=0, y=row.series, xref="x domain", yref="y", xanchor="left", showarrow=False,
                          text=f"{plot_data.NOISY}: every run disturbed" if is_noisy else
                          f"never: compiled is slower ({row.speedup:.2f}×)",
                          font=dict(color=NOISY_EDGE if is_noisy else "#555", size=11))
                     for row, is_noisy in zip(never.itertuples(), noisy[never.index])])
    mark_failures_on_y(fig, fails, "series")
    grey_rows(fig, plot_data.noisy_series(agg))
    return rows_layout(fig, "Break-even: calls until compile pays off", len(cats))


def break_even_note(agg: pd.DataFrame) -> str:
    """Why the break-even chart is not drawn, in one line; "" when it is. Judged on the configurations that answer
    (lab.noise.answering over them): one disturbed in every run beside undisturbed ones is not counted (the line
    counts them); where every one was disturbed, they all are."""
    noisy = plot_data.only_noisy(agg)
    counts = np.array(noise.answering(noisy.tolist()), dtype=bool)  # every configuration disturbed: all answer
    measured = agg[counts].dropna(subset=["speedup"])
    paid = measured.dropna(subset=["break_even_calls"])
    left_out = int((noisy.to_numpy() & ~counts).sum())
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


def mark_noisy(fig: go.Figure, agg: pd.DataFrame, x: str = "batch_size", y: str = "speedup") -> go.Figure:
    """Ring the points of configurations with a disturbed run (a measured cause: left out of the point).
    Square the points of configurations that recompiled inside the timed rounds (graph breaks, guards on
    data): those calls were dropped from the samples, but the steady state switches between graphs. A
    diamond marks host-bound configurations (CUDA: the GPU idles half of each call or more)."""
    noisy = agg[(agg["noisy_runs"].fillna(0) > 0) | plot_data.only_noisy(agg)].dropna(subset=[y])
    if "noise_note" not in noisy:
        noisy = noisy.assign(noise_note="")
    # a configuration disturbed in every run is the grey point below, not a ring "beside undisturbed ones"
    ringed = noisy[~noisy["only_noisy"].eq(True)] if "only_noisy" in noisy else noisy
    ring(fig, ringed.assign(noise_note=ringed["noise_note"].fillna("").map(wrap)), x, y, "noisy",
          "⚠ disturbed run left out (a measured cause)",
          dict(size=20, symbol="circle-open", color=NOISY_COLOR, line=dict(width=2.5)),
          ["config", "noisy_runs", "runs", "max_spread", "noise_note"],
          "<b>⚠ %{customdata[0]}</b><br>disturbed runs left out of this point: %{customdata[1]}; "
          "undisturbed runs in it: %{customdata[2]}<br>%{customdata[4]}<extra></extra>")
    if "only_noisy" in agg:  # every run disturbed: the point is theirs, as the answer's, ringed
        only = noisy[noisy["only_noisy"].eq(True)]
        ring(fig, only.assign(noise_note=only["noise_note"].fillna("").map(wrap), name=only["config"].map(plot)),
              x, y, "only-noisy", NOISY_LEGEND, NOISY_MARKER, ["name", "noise_note", "runs"],
              f"<b>{plot_data.NOISY} · %{{customdata[0]}}</b><br>%{{y:.3g}}: every run disturbed (runs: %{{customdata[2]}}), "
              "re-runs included: the answer's numbers, marked<br>%{customdata[1]}<extra></extra>")
    if "recompiled_runs" in agg:
        ring(fig, agg[agg["recompiled_runs"].fillna(0) > 0].dropna(subset=[y]), x, y, "recompiled",
              "↻ recompiled while timed (those calls dropped)",
              dict(size=26, symbol="square-open", color=RECOMPILED_COLOR, line=dict(width=2)),
              ["config", "recompiled_runs", "runs", "dropped_calls"],
              "<b>↻ %{customdata[0]}</b><br>runs that recompiled inside the timed rounds: %{customdata[1]} of "
              "%{customdata[2]}; timed calls dropped from the samples: %{customdata[3]:.0f}<extra></extra>")
    if "host_bound_runs" in agg:
        bound = agg[agg["host_bound_runs"].fillna(0) > 0].dropna(subset=[y])
        ring(fig, bound.assign(host_note=bound["host_note"].fillna("").map(wrap)), x, y, "host-bound",
              "◇ host-bound (the GPU idles half of a call or more)",
              dict(size=23, symbol="diamond-open", color=HOST_BOUND_COLOR, line=dict(width=2)),
              ["config", "host_bound_runs", "runs", "host_note"],
              "<b>◇ %{customdata[0]}</b><br>host-bound runs: %{customdata[1]} of %{customdata[2]}: "
              "%{customdata[3]}<extra></extra>")
    return fig
