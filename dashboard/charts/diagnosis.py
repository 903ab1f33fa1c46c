"""The diagnosis plots (plotly, no Streamlit): the recompile timeline, the roofline, where the compiled first call
goes, GPU time inside latency, and the spread of repeated runs."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.charts.styling import (
    FAIL_COLOR,
    NOISY_GREY,
    NOISY_LEGEND,
    NOISY_MARKER,
    as_text,
    colors,
    grey_rows,
    layout,
    log_y,
    mark_failures_on_y,
    rows_layout,
    seconds_text,
)
from dashboard.data.plot_data import NOISY
from dashboard.markup import plot


def schedule_frame(df: pd.DataFrame, calls: dict[int, list[dict]]) -> pd.DataFrame:
    """One row per schedule call of the jobs in view that ran a schedule."""
    rows = []
    series = dict(zip(df["job_id"], df["series"]))
    for job_id, job_calls in calls.items():
        for i, c in enumerate(job_calls, start=1):
            rows.append({"job_id": job_id, "series": series.get(job_id, f"#{job_id}"), "call": i,
                         "size": c.get("size"), "dim": c.get("dim", "batch"), "eager_s": c.get("eager_s"),
                         "compiled_s": c.get("compiled_s"), "recompiled": bool(c.get("recompiled")),
                         "reason": c.get("reason") or c.get("error") or ""})
    return pd.DataFrame(rows, columns=["job_id", "series", "call", "size", "dim", "eager_s", "compiled_s",
                                       "recompiled", "reason"])


def recompile_timeline(sched: pd.DataFrame) -> go.Figure:
    """Seed 004: the schedule's calls in order; a ringed point is a call that recompiled (hover: why)."""
    fig = go.Figure()
    palette = colors(sched["series"])
    for name, sub in sched.groupby("series", sort=True):
        sub = sub.sort_values("call")
        color = palette[name]
        text = [f"call {c}: {d} {s}" for c, d, s in zip(sub["call"], sub["dim"], sub["size"])]
        fig.add_trace(go.Scatter(x=sub["call"], y=sub["compiled_s"], name=name, mode="lines+markers",
                                 line=dict(color=color), marker=dict(size=8), legendgroup=name,
                                 customdata=list(zip(text, sub["reason"])),
                                 hovertemplate=f"<b>{name}</b><br>%{{customdata[0]}}<br>compiled %{{y:.4g}} s"
                                               "<br>%{customdata[1]}<extra></extra>"))
        fig.add_trace(go.Scatter(x=sub["call"], y=sub["eager_s"], name=f"{name} (eager)", mode="lines",
                                 line=dict(color=color, dash="dot", width=1), legendgroup=name, showlegend=False,
                                 hovertemplate=f"{name} eager: %{{y:.4g}} s<extra></extra>"))
        rec = sub[sub["recompiled"]]
        fig.add_trace(go.Scatter(x=rec["call"], y=rec["compiled_s"], mode="markers", legendgroup=name,
                                 name="recompiled", showlegend=False, hoverinfo="skip",
                                 marker=dict(size=18, symbol="circle-open", color=FAIL_COLOR, line=dict(width=2.5))))
    if not sched.empty:
        first = sched.sort_values("call").drop_duplicates("call")
        fig.update_xaxes(title="schedule call (size)", tickvals=first["call"],
                         ticktext=[f"{c}: {s}" for c, s in zip(first["call"], first["size"])])
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="recompiled (ringed)",
                             marker=dict(size=14, symbol="circle-open", color=FAIL_COLOR, line=dict(width=2.5))))
    log_y(fig, "seconds per call (log; dotted: eager)")
    return layout(fig, "Recompile timeline over the shape schedule")


PART_COLORS = {"dynamo tracing": "#4c78a8", "aot autograd": "#72b7b2", "inductor lowering": "#54a24b",
               "codegen + kernel compile": "#eeca3b", "autotuning": "#e45756", "other (run, guards)": "#bab0ac",
               "first call (no breakdown recorded)": "#ff7f0e", "eager first call": "#7f7f7f",
               "compiler imports (preloaded; a fresh process's cost)": "#b279a2"}  # runner.preload.COMPILE_PART
HOST_COLORS = {"eager: GPU time": "#7f7f7f", "eager: latency": "#c7c7c7",
               "compiled: GPU time": "#1f77b4", "compiled: latency": "#aec7e8"}


DTYPE_DASH = {"float32": "solid", "bfloat16": "dash", "float16": "dot"}
DEVICE_LINE_COLORS = ("#222222", "#8c564b", "#17becf", "#9467bd")
DEVICE_SYMBOLS = ("circle", "diamond", "square", "triangle-up")


def roofline(pts: pd.DataFrame, lines: pd.DataFrame, color_by: str = "model") -> go.Figure:
    """Achieved TFLOP/s of each configuration's compiled call vs its arithmetic intensity, under its
    device's measured roofline per dtype (hollow: a disturbed run left out)."""
    fig = go.Figure()
    devices = sorted(lines["device_name"].unique())
    for (device, dtype), sub in lines.groupby(["device_name", "dtype"], sort=True):
        c = sub.iloc[0]
        fig.add_trace(go.Scatter(
            x=sub["ai"], y=sub["tflops"], mode="lines", name=f"{device} · {dtype}: {c.matmul_tflops:.3g} TFLOP/s, "
                                                              f"{c.copy_gbps:,.0f} GB/s",
            line=dict(color=DEVICE_LINE_COLORS[devices.index(device) % len(DEVICE_LINE_COLORS)],
                      dash=DTYPE_DASH.get(dtype, "dashdot"), width=2),
            hovertemplate=f"<b>{device} · {dtype}</b> (measured on {c.hostname})<br>matmul {c.matmul_tflops:.3g} "
                          f"TFLOP/s, copy {c.copy_gbps:,.0f} GB/s<br>ridge at {c.ridge:.3g} FLOP/byte<extra></extra>"))
    placed = pts[pts["on_plot"]].copy()
    placed["where"] = (placed["roofline_pct"].map("{:.0f}% of the roofline".format) + " ("
                       + placed["roofline_bound"].fillna("?") + "-bound)").where(placed["roofline_pct"].notna(),
                                                                                 "no ceiling measured")
    placed["mfu_text"] = ("<br>MFU " + placed["mfu"].map("{:.1%}".format)).where(placed["mfu"].notna(), "")
    only = placed["only_noisy"].eq(True) if "only_noisy" in placed else pd.Series(False, index=placed.index)
    placed["noisy_text"] = (" · ⚠ " + placed["noisy_runs"].astype(int).astype(str) + " disturbed, left out").where(
        placed["noisy_runs"] > 0, "").where(~only, f"<br>{NOISY}: every run disturbed, so these are their numbers")
    if "rates_disturbed" in placed:  # a GPU's rates: its GPU clock, kept by first runs only
        placed["noisy_text"] = placed["noisy_text"].where(
            ~placed["rates_disturbed"].eq(True),
            " · ⚠ its rates read on its disturbed first run: the runs that answer (their compiled time here) keep no "
            "GPU clock")
    palette = colors(as_text(placed[color_by]))
    names = sorted(placed["device_name"].dropna().unique())
    symbol = {d: DEVICE_SYMBOLS[i % len(DEVICE_SYMBOLS)] if len(names) > 1 else "circle" for i, d in enumerate(names)}
    hover = ("<b>%{customdata[0]}</b><br>%{x:,.3~r} FLOP/byte · %{y:,.3~r} TFLOP/s · %{customdata[1]:,.0f} GB/s"
             "<br>%{customdata[2]}%{customdata[3]}<br>compiled %{customdata[4]:.4g} ms · runs: %{customdata[5]}"
             "%{customdata[6]}<extra></extra>")
    for key, sub in placed.groupby(as_text(placed[color_by]), sort=True):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=key, legendgroup=key,  # its legend entry
                                 marker=dict(size=11, color=palette[key])))
        for (device, noisy, grey), part in sub.groupby([sub["device_name"], sub["noisy_runs"] > 0, only[sub.index]],
                                                       sort=True):
            colour, hollow = palette[key], bool(noisy or grey)  # disturbed: its own colour, hollow, as on every plot
            fig.add_trace(go.Scatter(
                x=part["ai"], y=part["achieved_tflops"], mode="markers", name=key, legendgroup=key, showlegend=False,
                marker=dict(size=11, color=colour, symbol=symbol[device] + ("-open" if hollow else ""),
                            line=dict(width=2 if hollow else 0.5, color=colour if hollow else "white")),
                customdata=part[["label", "achieved_gbps", "where", "mfu_text", "compiled_ms", "runs", "noisy_text"]],
                hovertemplate=hover))
            if grey:  # every run disturbed: ringed, the answer's numbers all the same
                fig.add_trace(go.Scatter(x=part["ai"], y=part["achieved_tflops"], mode="markers", showlegend=False,
                                         marker=NOISY_MARKER, hoverinfo="skip", legendgroup=key))
    for device in names if len(names) > 1 else []:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{symbol[device]}: {device}",
                                 marker=dict(size=11, symbol=symbol[device], color="#555")))
    if ((placed["noisy_runs"] > 0) & ~only).any():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="hollow: a disturbed run left out",
                                 marker=dict(size=11, symbol="circle-open", color="#555", line=dict(width=2))))
    if only.any():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=NOISY_LEGEND, marker=NOISY_MARKER))
    fig.update_xaxes(type="log", dtick=1, title="arithmetic intensity (FLOPs / minimum bytes per call)",
                     range=log_range(pd.concat([placed["ai"], lines["ai"]])))
    fig.update_layout(hoverlabel=dict(bgcolor="white", font=dict(color="#222"), align="left"))
    ys = pd.concat([placed["achieved_tflops"], lines["tflops"]])
    ys = ys[ys > 0]
    if len(ys) and ys.max() / ys.min() >= 100:
        log_y(fig, "achieved TFLOP/s (compiled call)")
    else:  # within two decades, decade ticks alone leave the axis nearly bare
        fig.update_yaxes(type="log", title="achieved TFLOP/s (compiled call)")
    fig.update_yaxes(range=log_range(ys))
    return layout(fig, "Roofline: the compiled call against the device's measured ceilings", height=460)


def log_range(values: pd.Series, pad: float = 0.25) -> list[float] | None:
    """A log axis's range (in decades) holding every value with a quarter decade to spare: plotly's own autorange
    put a ceiling line on the frame and markers half outside it."""
    v = values[values > 0].dropna()
    if v.empty:
        return None
    lo, hi = math.log10(v.min()), math.log10(v.max())
    return [lo - pad, hi + pad]




def warmup_breakdown(frame: pd.DataFrame, fails: pd.DataFrame, noisy: set = frozenset()) -> go.Figure:
    """Per series, the compiled first call as stacked compile phases (plot_data.breakdown_frame: one real
    job's compile_breakdown_s) beside the eager first call; hatched: warm compile cache. Linear seconds,
    so the parts' lengths compare; the totals are written at the bar ends. `noisy`: series whose runs were all
    noisy (plot_data.noisy_series), greyed and marked."""
    fig = go.Figure()
    cats = breakdown_rows(frame, fails)
    comp = frame[frame["bar"] == "compiled"].copy()
    comp["base"] = comp.groupby("series")["seconds"].cumsum() - comp["seconds"]
    comp["total"] = comp.groupby("series")["seconds"].transform("sum")
    comp["share"] = comp["seconds"] / comp["total"]
    last = comp.groupby("series").cumcount(ascending=False) == 0
    # the drawn job's total; where the row's median lies between two runs (the answer table's figure), both
    comp["end_text"] = [
        "" if not end else seconds_text(total) if not (median > 0 and first > 0 and abs(median / first - 1) > 0.005)
        else f"{seconds_text(total)} (job {job:.0f}; median of {runs:.0f} runs {seconds_text(median)})"
        for end, total, median, first, job, runs in zip(last, comp["total"], comp["median_s"], comp["drawn_s"],
                                                        comp["job_id"], comp["runs"])]
    hover = ("<b>%{y}</b><br>%{fullData.name}: %{x:.3g} s (%{customdata[0]:.0%} of the first call, "
             "%{customdata[1]:.3g} s)<br>job #%{customdata[2]} (the run at the median, runs: %{customdata[3]}); "
             "%{customdata[4]} cache %{customdata[5]}<extra></extra>")
    for part in list(PART_COLORS) + sorted(set(comp["part"]) - set(PART_COLORS)):
        sub = comp[comp["part"] == part]
        if sub.empty or part == "eager first call":
            continue
        fig.add_trace(go.Bar(
            y=sub["series"], x=sub["seconds"], base=sub["base"], orientation="h", name=part, offsetgroup="compiled",
            marker=dict(color=PART_COLORS.get(part, "#9edae5"),
                        pattern=dict(shape=["/" if c == "warm" else "" for c in sub["cache"]], solidity=0.25)),
            text=sub["end_text"], textposition="outside", cliponaxis=False,
            customdata=sub[["share", "total", "job_id", "runs", "cache"]].assign(
                hits=sub["cache_hits"].fillna("").astype(str).str.slice(0, 120)),
            hovertemplate=hover))
    eager = frame[frame["bar"] == "eager"]
    if not eager.empty:
        fig.add_trace(go.Bar(
            y=eager["series"], x=eager["seconds"], orientation="h", name="eager first call", offsetgroup="eager",
            marker_color=PART_COLORS["eager first call"], text="eager " + eager["seconds"].map(seconds_text),
            textposition="outside", cliponaxis=False, customdata=eager[["runs"]],
            hovertemplate="<b>%{y}</b><br>eager first call %{x:.3g} s (median, runs: %{customdata[0]})"
                          "<extra></extra>"))
    if (comp["cache"] == "warm").any():
        fig.add_trace(go.Bar(x=[None], y=[None], name="hatched: warm compile cache", orientation="h",
                             marker=dict(color="#ffffff", line=dict(color="#555", width=1),
                                         pattern=dict(shape="/", fgcolor="#555"))))
    fig.update_layout(barmode="group", bargap=0.3, bargroupgap=0.05)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=cats, autorange="reversed", title=None,
                     tickfont=dict(size=10))
    ends = pd.concat([comp.groupby("series")["seconds"].sum(), frame.loc[frame["bar"] == "eager", "seconds"]])
    fig.update_xaxes(title="seconds", range=[0, 1.2 * ends.max()] if len(ends) else None)  # room for the totals
    mark_failures_on_y(fig, fails, "series")
    grey_rows(fig, noisy)
    return rows_layout(fig, "Warmup: where the compiled first call goes (beside the eager first call)", len(cats))


def gpu_in_latency(frame: pd.DataFrame, fails: pd.DataFrame, cats: list[str]) -> go.Figure:
    """CUDA: per series, eager and compiled, GPU time (kernels only; solid) drawn inside latency (one
    synchronous call as the caller sees it; light): what sticks out is what the host adds per call (Python,
    dispatch, dynamo's guards, kernel launches), which CUDA graphs (reduce-overhead) shrink. Rows as in
    warmup_breakdown (`cats`), so the two plots read across; log ms."""
    fig = go.Figure()
    hover = ("<b>%{y}</b> · %{fullData.name}<br>GPU time %{customdata[0]:.4g} ms · latency %{customdata[1]:.4g} ms"
             "<br>host adds %{customdata[2]:.4g} ms: the GPU idles %{customdata[3]:.0%} of the call"
             "<br>median, runs: %{customdata[4]}<extra></extra>")
    # latency first, so each GPU-time bar is drawn on top of its latency bar
    for what in sorted(HOST_COLORS, key=lambda w: not w.endswith("latency")):
        sub, color = frame[frame["what"] == what], HOST_COLORS[what]
        side, outer = what.split(":")[0], what.endswith("latency")
        # overlaid, by hand: eager in the row's upper half, compiled in the lower; GPU time inside latency
        width = 0.38 if outer else 0.2
        offset = (-0.4 if side == "eager" else 0.02) + (0.38 - width) / 2
        fig.add_trace(go.Bar(
            y=sub["series"], x=sub["ms"], name=what, orientation="h", marker_color=color, width=width, offset=offset,
            legendrank=list(HOST_COLORS).index(what),
            text=("+" + sub["overhead_ms"].map("{:.2g}".format) + " ms host") if outer else None,
            textposition="outside", textfont=dict(size=9), cliponaxis=False,
            customdata=sub[["gpu_ms", "latency_ms", "overhead_ms", "idle", "runs"]], hovertemplate=hover))
    fig.update_layout(barmode="overlay")
    values = frame["ms"][frame["ms"] > 0]
    span = [np.log10(values.min() / 1.5), np.log10(values.max() * 3)] if len(values) else None  # room for the labels
    fig.update_xaxes(type="log", dtick=1, title="ms per call (log)", range=span)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=cats, autorange="reversed", title=None,
                     tickfont=dict(size=10))
    mark_failures_on_y(fig, fails, "series")
    grey_rows(fig, set(frame.loc[frame["only_noisy"].eq(True), "series"]) if "only_noisy" in frame else set())
    return rows_layout(fig, "GPU time inside latency (what sticks out: what the host adds per call)", len(cats))


def breakdown_rows(frame: pd.DataFrame, fails: pd.DataFrame) -> list[str]:
    """The rows of warmup_breakdown and gpu_in_latency: every series in view, failed-only ones included."""
    both = pd.concat([frame[["config", "batch_size", "series"]], fails[["config", "batch_size", "series"]]])
    return both.sort_values(["config", "batch_size"])["series"].astype(str).drop_duplicates().tolist()


def repeat_spread(runs: pd.DataFrame, spans: pd.DataFrame, groups: list[str]) -> go.Figure:
    """Per comparison group (one sweep, one size), every run's ms per configuration and eager, with the
    min–max range as a bar: ranges that do not overlap are separated. Hollow: a noisy run."""
    rows = len(groups)
    titles = [f"<b>{plot(g)}</b>" for g in groups]  # a group names its sweep: the user's text, shown as typed
    heights = [spans.loc[spans["group"] == g, "candidate"].nunique() for g in groups]
    height = 110 + sum(70 + 30 * h for h in heights)
    fig = make_subplots(rows=rows, cols=1, subplot_titles=titles, row_heights=[30 * h + 20 for h in heights],
                        vertical_spacing=min(0.3, 85 / (height - 150)) if rows > 1 else 0)  # of the plot area
    palette = colors(spans.loc[spans["candidate"] != "eager", "candidate"])
    palette["eager"] = "#7f7f7f"
    palette.update({c: NOISY_GREY for c in palette if c.startswith(NOISY)})  # no run of it answers: greyed
    for i, group in enumerate(groups, start=1):
        span = spans[spans["group"] == group]
        order = span["candidate"].tolist()  # fastest first
        for c in span.itertuples():
            color = palette.get(c.candidate, "#555")
            fig.add_trace(go.Scatter(x=[c.min, c.max], y=[c.candidate] * 2, mode="lines", showlegend=False,
                                     line=dict(color=color, width=12), opacity=0.3, hoverinfo="skip"), row=i, col=1)
        sub = runs[runs["group"] == group]
        for noisy, part in sub.groupby("noisy_run", sort=True):
            fig.add_trace(go.Scatter(
                x=part["ms"], y=part["candidate"], mode="markers", showlegend=False,
                marker=dict(size=9, color=[palette.get(c, "#555") for c in part["candidate"]],
                            symbol="circle-open" if noisy else "circle", line=dict(width=2 if noisy else 0)),
                customdata=part[["job_id"]],
                hovertemplate="<b>%{y}</b> job #%{customdata[0]}: %{x:.4g} ms" + (" ⚠ disturbed" if noisy else "")
                              + "<extra></extra>"), row=i, col=1)
        fig.update_yaxes(type="category", categoryorder="array", categoryarray=order, autorange="reversed",
                         row=i, col=1, tickfont=dict(size=10))
        fig.update_xaxes(title="ms per call" if i == rows else None, row=i, col=1)
    fig.update_annotations(font=dict(size=12))
    fig = layout(fig, "Each dot one run (compiled ms; eager: every job's eager ms); bars span min–max", height=height)
    fig.update_layout(margin=dict(t=80))  # the first group's title sits under the figure's
    return fig
