"""A job's timeline as one horizontal bar (plotly, no Streamlit): each phase from the claim to the stored result where
it happened, measurement in blues, the lab's own steps in warm colours, time no phase explains in grey (lab.timeline);
and the sentence that goes under it."""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from dashboard.markup import md, plot
from lab import timeline as tl_math

MEASURED_COLORS = ["#1f77b4", "#4c9bd6", "#6baed6", "#2a5d8f", "#7fb8e6", "#08519c", "#9ecae1"]  # MEASURED phases, in order


def _warm(color: str) -> bool:
    """Neither grey (unaccounted's) nor blue (measurement's)."""
    r, g, b = (int(x) for x in color[4:-1].split(","))
    return not (max(r, g, b) - min(r, g, b) < 16 or (b > r and b >= g))


OVERHEAD_COLORS = [c for c in px.colors.qualitative.Set2 + px.colors.qualitative.Set3 + px.colors.qualitative.Pastel1
                   if _warm(c)]
UNACCOUNTED_COLOR = "#b0b0b0"


def frame(timeline: list[dict]) -> pd.DataFrame:
    """One row per entry: phase (escaped for plotly), start, seconds, share of the whole, kind."""
    total = tl_math.total_s(timeline) or 1.0
    rows = []
    for e in timeline:
        kind = ("measurement" if e["phase"] in tl_math.MEASURED else
                "unaccounted" if e["phase"] == tl_math.UNACCOUNTED else "overhead")
        rows.append({"phase": plot(e["phase"]), "start": e["start"], "seconds": e["seconds"],
                     "share": e["seconds"] / total, "kind": kind, "row": "job"})
    return pd.DataFrame(rows, columns=["phase", "start", "seconds", "share", "kind", "row"])


def colors(df: pd.DataFrame) -> dict[str, str]:
    out, overhead = {}, iter(OVERHEAD_COLORS * 4)
    for i, phase in enumerate(tl_math.MEASURED):
        out[plot(phase)] = MEASURED_COLORS[i]
    for phase, kind in df[["phase", "kind"]].drop_duplicates().itertuples(index=False):
        if phase not in out:
            out[phase] = UNACCOUNTED_COLOR if kind == "unaccounted" else next(overhead)
    return out


LEGEND_OVERHEAD = 6  # the lab's steps named in the legend, the longest first; the rest share one entry
OTHER_STEPS = "other lab steps (hover for each)"
OTHER_COLOR = "#e8d9c0"


def legend_groups(df: pd.DataFrame) -> pd.Series:
    """Each entry's legend entry: its phase, except the lab's shorter steps, which share OTHER_STEPS (a job's
    timeline has 25-30 phases: a legend of each read as noise)."""
    overhead = df[df["kind"] == "overhead"].groupby("phase")["seconds"].sum().sort_values(ascending=False)
    named = set(overhead.index[:LEGEND_OVERHEAD])
    return df["phase"].where((df["kind"] != "overhead") | df["phase"].isin(named), OTHER_STEPS)


def bar(timeline: list[dict], title: str = "Where this job's time went, claim to stored") -> go.Figure:
    """One stacked horizontal bar: each entry at its own start (so a phase that comes back, like accuracy after
    each first call, sits where it happened), its name written on it where it fits, seconds on hover. The legend
    names the measurement, the longest lab steps and unaccounted time; the shorter steps share one entry."""
    df = frame(timeline)
    df["label"] = df["phase"]
    df["group"] = legend_groups(df)
    fig = px.bar(df, x="seconds", y="row", base="start", color="group", orientation="h", text="label",
                 color_discrete_map={**colors(df), OTHER_STEPS: OTHER_COLOR},
                 custom_data=["start", "share", "kind", "phase"])
    fig.update_traces(textposition="inside", insidetextanchor="middle", textangle=0,
                      hovertemplate="<b>%{customdata[3]}</b> (%{customdata[2]})<br>%{x:.3g} s, "
                                    "%{customdata[1]:.1%} of the job<br>from %{customdata[0]:.3f} s<extra></extra>")
    fig.update_layout(barmode="overlay", uniformtext=dict(minsize=9, mode="hide"), height=300, title=title,
                      margin=dict(l=10, r=10, t=50, b=10), bargap=0.15,
                      legend=dict(orientation="h", yanchor="top", y=-0.45, x=0, title=None, traceorder="normal"))
    fig.update_yaxes(visible=False)
    fig.update_xaxes(title="seconds from the claim")
    return fig


def summary(timeline: list[dict]) -> str:
    """One sentence in Markdown: measurement, overhead and the largest overhead phases."""
    total, measured = tl_math.total_s(timeline), tl_math.measured_s(timeline)
    phases = tl_math.by_phase(timeline)
    parts = sorted(((s, p) for p, s in phases.items() if p not in tl_math.MEASURED), reverse=True)[:3]
    largest = ", ".join(f"{md(p)} {s:.2f} s" for s, p in parts if s > 0)
    asked = [p for p in ("schedule", "traffic") if p in phases]  # calls the job was asked to make
    retimed = ["launch settings re-timed"] if tl_math.RETIMED in phases else []  # a repeat's: a fresh process's
    what = ", ".join(["first calls", *retimed, "warm-up", "rounds", *asked])
    return (f"Claim to stored **{total:.2f} s**: measurement ({what}) {measured:.2f} s "
            f"({measured / total:.0%}), overhead {total - measured:.2f} s" + (f"; largest: {largest}" if largest else ""))
