"""Compare's plots (plotly, no Streamlit): A's and B's speedups side by side, speedups per torch version, and every
kept latency sample of two runs."""
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


def sweeps_speedup(plot: pd.DataFrame) -> go.Figure:
    """A's and B's speedup per matched combination (`plot`: one row per side and combination, `sweep` naming the
    side), the bars of a side whose every run was noisy greyed."""
    fig = px.bar(plot, x="combination", y="speedup", color="sweep", barmode="group",
                 color_discrete_sequence=["#1f77b4", "#ff7f0e"],
                 labels={"combination": "", "sweep": ""})
    grey_noisy(fig, plot)
    fig.add_hline(y=1.0, line=dict(dash="dot", color="#444"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), title="Speedup (latency), A vs B",
                      legend=dict(orientation="h", y=-0.3))
    return fig


def grey_noisy(fig, plot: pd.DataFrame) -> None:
    """Grey and hatch the bars of combinations whose runs on that side were all noisy (lab.noise): drawn, so
    nothing disappears, but not as a number to read."""
    greyed = False
    for trace in list(fig.data):
        noisy = plot.loc[plot["sweep"] == trace.name, "noisy"].tolist()
        if any(noisy) and len(noisy) == len(trace.y):
            own = trace.marker.color
            trace.marker.color = [NOISY_GREY if n else own for n in noisy]
            trace.marker.pattern.shape = ["/" if n else "" for n in noisy]
            trace.hovertemplate = (trace.hovertemplate or "") + "<br>%{customdata[0]}"
            trace.customdata = [["⚠ noisy runs only: out of the answer" if n else ""] for n in noisy]
            # a legend swatch takes the first bar's look: A and B both read grey-hatched when both began greyed.
            # Each side's entry keeps its own colour, and the greyed bars get one entry of their own
            trace.showlegend = False
            fig.add_scatter(x=[None], y=[None], mode="markers", name=trace.name, legendgroup=trace.name,
                            marker=dict(color=own, symbol="square", size=12))  # a marker: no bar slot of its own
            greyed = True
    if greyed:
        fig.add_scatter(x=[None], y=[None], mode="markers", name="⚠ noisy runs only: grey, hatched (out of the answer)",
                        marker=dict(color=NOISY_GREY, symbol="square", size=12))


NOISY_GREY = "#c8c8c8"


def versions_speedup(plot: pd.DataFrame) -> go.Figure:
    """The speedup of each configuration under each torch version (`plot`: configuration, torch, speedup)."""
    fig = px.bar(plot, x="configuration", y="speedup", color="torch", barmode="group",
                 labels={"configuration": "", "torch": "torch"})
    fig.add_hline(y=1.0, line=dict(dash="dot", color="#444"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), title="Speedup (latency) per torch version",
                      legend=dict(orientation="h", y=-0.3))
    return fig


def samples_box(samples: list[dict]) -> go.Figure:
    """Every kept latency sample of two runs ({run, side, ms}), as boxes; on a log axis when a few slow outliers
    would flatten every box."""
    fig = px.box(pd.DataFrame(samples), x="run", y="ms", color="side", points="outliers",
                 color_discrete_map={"eager": "#7f7f7f", "compiled": "#1f77b4"},
                 title="Every kept latency sample (ms per synchronous call)")
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10))
    ms = pd.Series([x["ms"] for x in samples])
    if (ms > 0).all() and ms.max() / ms.min() > 20:
        fig.update_yaxes(type="log", title="ms per call (log)", dtick=1)  # decades only: "5" read as 0.5
    return fig
