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
from plotly.subplots import make_subplots

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
    lines = [f"#{r.job_id} {getattr(r, label_col)}: {r.status}: {_wrap(str(r.error)[:400])}"
             for r in bad.head(8).itertuples()]
    more = f"<br>… and {len(bad) - 8} more" if len(bad) > 8 else ""
    return "<br>".join(lines) + more


def _wrap(text: str, width: int = 90) -> str:
    """Hover text on several lines: one long line is cut off at the plot's edge."""
    return "<br>".join(text[i:i + width] for i in range(0, len(text), width))


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
    _log_y(fig, "seconds per call (log; dotted: eager)")
    return _layout(fig, "Recompile timeline over the shape schedule")


# -- issue 5: noisy numbers, the roofline, where the first call goes, device vs host, repeats ----------
NOISY_COLOR = "#ff7f0e"
RECOMPILED_COLOR = "#222222"  # near black: not one of the series palette's colours
PART_COLORS = {"dynamo tracing": "#4c78a8", "aot autograd": "#72b7b2", "inductor lowering": "#54a24b",
               "codegen + kernel compile": "#eeca3b", "autotuning": "#e45756", "other (run, guards)": "#bab0ac",
               "first call (no breakdown recorded)": "#ff7f0e", "eager first call": "#7f7f7f"}
HOST_COLORS = {"eager: GPU time": "#7f7f7f", "eager: latency": "#c7c7c7",
               "compiled: GPU time": "#1f77b4", "compiled: latency": "#aec7e8"}
HOST_BOUND_COLOR = "#9467bd"
DTYPE_DASH = {"float32": "solid", "bfloat16": "dash", "float16": "dot"}
DEVICE_LINE_COLORS = ("#222222", "#8c564b", "#17becf", "#9467bd")
DEVICE_SYMBOLS = ("circle", "diamond", "square", "triangle-up")


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
    _ring(fig, noisy.assign(noise_note=noisy["noise_note"].fillna("").map(_wrap)), x, y, "noisy",
          "⚠ noisy run (spread > 5%, or host-sensitive)",
          dict(size=20, symbol="circle-open", color=NOISY_COLOR, line=dict(width=2.5)),
          ["config", "noisy_runs", "runs", "max_spread", "noise_note"],
          "<b>⚠ %{customdata[0]}</b><br>%{customdata[1]} noisy run(s), left out of this point beside %{customdata[2]} "
          "quiet one(s); largest spread %{customdata[3]:.1%}<br>%{customdata[4]}<extra></extra>")
    if "only_noisy" in agg:  # every run noisy: the point is theirs, greyed, and out of the answer and the header
        only = noisy[noisy["only_noisy"].eq(True)]
        _ring(fig, only.assign(noise_note=only["noise_note"].fillna("").map(_wrap)), x, y, "only-noisy",
              "▒ noisy runs only: greyed, not in the answer", dict(size=13, symbol="circle", color="#c8c8c8",
              line=dict(color="#888888", width=1)), ["config", "noise_note"],
              "<b>▒ %{customdata[0]}</b><br>every run noisy: left out of the answer and the header<br>"
              "%{customdata[1]}<extra></extra>")
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


def roofline(pts: pd.DataFrame, lines: pd.DataFrame, color_by: str = "model") -> go.Figure:
    """Achieved TFLOP/s of each configuration's compiled call vs its arithmetic intensity, under its
    device's measured roofline per dtype (hollow: a noisy run)."""
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
    placed["noisy_text"] = (" · ⚠ " + placed["noisy_runs"].astype(int).astype(str) + " noisy").where(
        placed["noisy_runs"] > 0, "")
    palette = colors(_text(placed[color_by]))
    names = sorted(placed["device_name"].dropna().unique())
    symbol = {d: DEVICE_SYMBOLS[i % len(DEVICE_SYMBOLS)] if len(names) > 1 else "circle" for i, d in enumerate(names)}
    hover = ("<b>%{customdata[0]}</b><br>%{x:,.3~r} FLOP/byte · %{y:,.3~r} TFLOP/s · %{customdata[1]:,.0f} GB/s"
             "<br>%{customdata[2]}%{customdata[3]}<br>compiled %{customdata[4]:.4g} ms · %{customdata[5]} run(s)"
             "%{customdata[6]}<extra></extra>")
    for key, sub in placed.groupby(_text(placed[color_by]), sort=True):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=key, legendgroup=key,  # its legend entry
                                 marker=dict(size=11, color=palette[key])))
        for (device, noisy), part in sub.groupby([sub["device_name"], sub["noisy_runs"] > 0], sort=True):
            fig.add_trace(go.Scatter(
                x=part["ai"], y=part["achieved_tflops"], mode="markers", name=key, legendgroup=key, showlegend=False,
                marker=dict(size=11, color=palette[key], symbol=symbol[device] + ("-open" if noisy else ""),
                            line=dict(width=2 if noisy else 0.5, color=palette[key] if noisy else "white")),
                customdata=part[["label", "achieved_gbps", "where", "mfu_text", "compiled_ms", "runs", "noisy_text"]],
                hovertemplate=hover))
    for device in names if len(names) > 1 else []:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{symbol[device]}: {device}",
                                 marker=dict(size=11, symbol=symbol[device], color="#555")))
    if (placed["noisy_runs"] > 0).any():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="hollow: a noisy run (spread > 5%)",
                                 marker=dict(size=11, symbol="circle-open", color="#555", line=dict(width=2))))
    fig.update_xaxes(type="log", dtick=1, title="arithmetic intensity (FLOPs / minimum bytes per call)")
    fig.update_layout(hoverlabel=dict(bgcolor="white", font=dict(color="#222"), align="left"))
    ys = pd.concat([placed["achieved_tflops"], lines["tflops"]])
    ys = ys[ys > 0]
    if len(ys) and ys.max() / ys.min() >= 100:
        _log_y(fig, "achieved TFLOP/s (compiled call)")
    else:  # within two decades, decade ticks alone leave the axis nearly bare
        fig.update_yaxes(type="log", title="achieved TFLOP/s (compiled call)")
    return _layout(fig, "Roofline: the compiled call against the device's measured ceilings", height=460)


def _mark_failures_on_y(fig: go.Figure, fails: pd.DataFrame, y_col: str) -> None:
    """A red ✕ note at the right end of each row that has jobs that did not succeed (hover: the reasons)."""
    notes = []
    for y, group in fails.groupby(y_col, sort=True):
        first = group.iloc[0]
        what = f"{first['status']}: {str(first['error'])[:40]}…" if len(group) == 1 else f"{len(group)} did not succeed"
        notes.append(dict(x=1, y=y, xref="x domain", yref="y", xanchor="right", showarrow=False, text=f"✕ {what}",
                          font=dict(color=FAIL_COLOR, size=11), hovertext=_reasons(group, y_col),
                          bgcolor="rgba(255,255,255,0.85)"))
    _add_notes(fig, notes)


def warmup_breakdown(frame: pd.DataFrame, fails: pd.DataFrame) -> go.Figure:
    """Per series, the compiled first call as stacked compile phases (stats.breakdown_frame: one real
    job's compile_breakdown_s) beside the eager first call; hatched: warm compile cache. Linear seconds,
    so the parts' lengths compare; the totals are written at the bar ends."""
    fig = go.Figure()
    cats = breakdown_rows(frame, fails)
    comp = frame[frame["bar"] == "compiled"].copy()
    comp["base"] = comp.groupby("series")["seconds"].cumsum() - comp["seconds"]
    comp["total"] = comp.groupby("series")["seconds"].transform("sum")
    comp["share"] = comp["seconds"] / comp["total"]
    last = comp.groupby("series").cumcount(ascending=False) == 0
    comp["end_text"] = comp["total"].map(_seconds).where(last, "")
    hover = ("<b>%{y}</b><br>%{fullData.name}: %{x:.3g} s (%{customdata[0]:.0%} of the first call, "
             "%{customdata[1]:.3g} s)<br>job #%{customdata[2]} (median of %{customdata[3]} run(s)); "
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
            marker_color=PART_COLORS["eager first call"], text="eager " + eager["seconds"].map(_seconds),
            textposition="outside", cliponaxis=False, customdata=eager[["runs"]],
            hovertemplate="<b>%{y}</b><br>eager first call %{x:.3g} s (median of %{customdata[0]} run(s))"
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
    _mark_failures_on_y(fig, fails, "series")
    return _rows_layout(fig, "Warmup: where the compiled first call goes (beside the eager first call)", len(cats))


def gpu_in_latency(frame: pd.DataFrame, fails: pd.DataFrame, cats: list[str]) -> go.Figure:
    """CUDA: per series, eager and compiled, GPU time (kernels only; solid) drawn inside latency (one
    synchronous call as the caller sees it; light): what sticks out is what the host adds per call (Python,
    dispatch, dynamo's guards, kernel launches), which CUDA graphs (reduce-overhead) shrink. Rows as in
    warmup_breakdown (`cats`), so the two plots read across; log ms."""
    fig = go.Figure()
    hover = ("<b>%{y}</b> · %{fullData.name}<br>GPU time %{customdata[0]:.4g} ms · latency %{customdata[1]:.4g} ms"
             "<br>host adds %{customdata[2]:.4g} ms: the GPU idles %{customdata[3]:.0%} of the call"
             "<br>median of %{customdata[4]} run(s)<extra></extra>")
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
    _mark_failures_on_y(fig, fails, "series")
    return _rows_layout(fig, "GPU time inside latency (what sticks out: what the host adds per call)", len(cats))


def _rows_layout(fig: go.Figure, title: str, rows: int) -> go.Figure:
    """A plot with one bar row per series: 38 px a row, and the legend a fixed distance under the x axis
    (a fraction of the plot's height would sit on the axis title of a short plot)."""
    height = max(300, 170 + 38 * rows)
    _layout(fig, title, height=height)
    fig.update_layout(legend=dict(y=-95 / (height - 120)))
    return fig


def breakdown_rows(frame: pd.DataFrame, fails: pd.DataFrame) -> list[str]:
    """The rows of warmup_breakdown and gpu_in_latency: every series in view, failed-only ones included."""
    both = pd.concat([frame[["config", "batch_size", "series"]], fails[["config", "batch_size", "series"]]])
    return both.sort_values(["config", "batch_size"])["series"].astype(str).drop_duplicates().tolist()


def repeat_spread(runs: pd.DataFrame, spans: pd.DataFrame, groups: list[str]) -> go.Figure:
    """Per comparison group (one sweep, one size), every run's ms per configuration and eager, with the
    min–max range as a bar: ranges that do not overlap are separated. Hollow: a noisy run."""
    rows = len(groups)
    titles = [f"<b>{g}</b>" for g in groups]
    heights = [spans.loc[spans["group"] == g, "candidate"].nunique() for g in groups]
    height = 110 + sum(70 + 30 * h for h in heights)
    fig = make_subplots(rows=rows, cols=1, subplot_titles=titles, row_heights=[30 * h + 20 for h in heights],
                        vertical_spacing=min(0.3, 85 / (height - 150)) if rows > 1 else 0)  # of the plot area
    palette = colors(spans.loc[spans["candidate"] != "eager", "candidate"])
    palette["eager"] = "#7f7f7f"
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
                hovertemplate="<b>%{y}</b> job #%{customdata[0]}: %{x:.4g} ms" + (" ⚠ noisy" if noisy else "")
                              + "<extra></extra>"), row=i, col=1)
        fig.update_yaxes(type="category", categoryorder="array", categoryarray=order, autorange="reversed",
                         row=i, col=1, tickfont=dict(size=10))
        fig.update_xaxes(title="ms per call" if i == rows else None, row=i, col=1)
    fig.update_annotations(font=dict(size=12))
    fig = _layout(fig, "Each dot one run (compiled ms; eager: every job's eager ms); bars span min–max", height=height)
    fig.update_layout(margin=dict(t=80))  # the first group's title sits under the figure's
    return fig
