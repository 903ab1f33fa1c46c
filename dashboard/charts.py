"""The Results plots (plotly), each answering one of the seed notes' questions. No streamlit here.

Every figure takes what dashboard.tables.summarize makes of one model's labelled rows: `agg`, medians
over repeated runs per (config, batch size), and `fails`, the jobs that did not succeed. Failures are
drawn too, as red ✕ notes with their reasons on hover, so a failed configuration is never silently
missing from a plot.
"""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


FAIL_COLOR = "#d62728"
CALLS = {"eager_first_call_s": "eager first call", "compiled_first_call_s": "compiled first call (compile + run)",
         "compiled_second_call_s": "compiled second call"}
CALL_COLORS = {"eager first call": "#7f7f7f", "compiled first call (compile + run)": "#ff7f0e",
               "compiled second call": "#1f77b4"}


def colors(labels) -> dict:
    palette = px.colors.qualitative.D3 + px.colors.qualitative.Set2 + px.colors.qualitative.Pastel
    return {label: palette[i % len(palette)] for i, label in enumerate(sorted(set(labels)))}


def _layout(fig: go.Figure, title: str, height: int = 380) -> go.Figure:
    fig.update_layout(title=dict(text=title, font=dict(size=15)), height=height, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, title=None),
                      hoverlabel=dict(namelength=-1))
    return fig


def _reasons(bad: pd.DataFrame, label_col: str) -> str:
    lines = [f"#{r.job_id} {getattr(r, label_col)}: {r.status}: {str(r.error)[:160]}"
             for r in bad.head(8).itertuples()]
    more = f"<br>… and {len(bad) - 8} more" if len(bad) > 8 else ""
    return "<br>".join(lines) + more


def _mark_failures_on_x(fig: go.Figure, fails: pd.DataFrame, x_col: str, label_col: str) -> None:
    """A red ✕ note at the bottom of the plot at each x that has failed jobs; hover shows the reasons."""
    for x, group in fails.groupby(x_col, sort=True):
        configs = group[label_col].unique()
        what = f"{configs[0]}: {group['status'].iloc[0]}" if len(configs) == 1 and len(group) == 1 \
            else f"{len(group)} did not succeed"
        fig.add_annotation(x=x, y=0, xref="x", yref="y domain", yanchor="bottom", showarrow=False,
                           text=f"✕ {what}", font=dict(color=FAIL_COLOR, size=12),
                           hovertext=_reasons(group, label_col), bgcolor="rgba(255,255,255,0.8)")


def _categories(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame, x_col: str) -> list:
    """Every category in view on the x axis, failed-only ones included, ordered by config then batch
    size; tick labels break at " · " so long labels stay readable."""
    both = pd.concat([agg[["config", "batch_size", x_col]], fails[["config", "batch_size", x_col]]])
    cats = both.sort_values(["config", "batch_size"])[x_col].astype(str).drop_duplicates().tolist()
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=cats, tickvals=cats,
                     ticktext=[c.replace(" · ", "<br>") for c in cats], tickangle=0, tickfont=dict(size=10))
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


def latency(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure:
    """Steady-state latency per call vs batch size: medians with p10–p90 bands, eager and compiled
    (each job measures its own eager baseline; the eager line is the median over the configs)."""
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
    values = pd.concat([agg["eager_ms"], agg["compiled_ms"]]).dropna()
    if len(values) and values.min() > 0 and values.max() / values.min() > 20:
        _log_y(fig, "ms per call (log; median, p10–p90)")
    else:
        fig.update_yaxes(title="ms per call (median, p10–p90)", rangemode="tozero")
    _mark_failures_on_x(fig, fails, "batch_size", "config")
    return _layout(fig, "Steady-state latency vs batch size (dashed: eager)")


def _x_batches(fig: go.Figure, agg: pd.DataFrame, fails: pd.DataFrame) -> None:
    sizes = sorted(set(agg["batch_size"].dropna().astype(int)) | set(fails["batch_size"].dropna().astype(int)))
    log = len(sizes) > 1 and sizes[-1] / max(sizes[0], 1) >= 16
    fig.update_xaxes(title="batch size", type="log" if log else "linear", tickvals=sizes)


def speedup(agg: pd.DataFrame, fails: pd.DataFrame) -> go.Figure:
    """Seed 004: speedup (eager_ms / compiled_ms) vs batch size; above the 1.0× line compile wins."""
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
    return _layout(fig, "Speedup vs batch size")


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
