"""Compare's charts (Vega-Lite through Altair, lighter to load than plotly: docs/dashboard-internals.md): A's and
B's speedups side by side, speedups per torch version, every kept latency sample of two runs. Text is drawn as typed."""
import altair as alt
import pandas as pd

A_COLOUR, B_COLOUR = "#1f77b4", "#ff7f0e"
NOISY_GREY = "#c8c8c8"
NOISY_ENTRY = "⚠ noisy runs only: grey, dashed outline (out of the answer)"
NOISY_NOTE = "⚠ noisy runs only: out of the answer"
HEIGHT = 320  # the samples' boxes
# one bar's band: a combination's row holds a bar per side (or torch version). A step, not a height: Streamlit fits
# the title, axis and legend inside a fixed height, which left one combination's bars 1 px high
BAR_PX = 15
# drawn as SVG (Streamlit's default is a canvas): its text is text in the page, to read, select and check
SVG = {"embedOptions": {"renderer": "svg"}}


def _one() -> alt.Chart:
    """The 1.0× line: no change against eager."""
    return alt.Chart(pd.DataFrame({"speedup": [1.0]})).mark_rule(strokeDash=[3, 3], color="#444").encode(
        x="speedup:Q")


def _rows(labels: pd.Series) -> alt.Y:
    """One row per combination, in the order given, its label whole at the left: horizontal bars, as Results' warmup
    and break-even draw them (long labels under upright bars were turned and cut)."""
    return alt.Y("label:N", sort=list(dict.fromkeys(labels)), title=None, axis=alt.Axis(labelLimit=0))


def sweeps_speedup(plot: pd.DataFrame) -> alt.LayerChart:
    """A's and B's speedup per matched combination (`plot`: one row per side and combination, `sweep` naming the
    side), the bars of a side whose every run was noisy greyed, with a dashed outline and a legend entry of their
    own: each side's entry keeps its colour."""
    sides = sorted(dict.fromkeys(plot["sweep"]))  # "A: …" before "B: …"
    noisy = plot["noisy"].astype(bool)
    data = pd.DataFrame({"label": plot["combination"], "sweep": plot["sweep"], "speedup": plot["speedup"],
                         "noisy": noisy, "bar": plot["sweep"].where(~noisy, NOISY_ENTRY),
                         "note": noisy.map({True: NOISY_NOTE, False: ""})})
    domain = sides + ([NOISY_ENTRY] if noisy.any() else [])
    colours = [A_COLOUR, B_COLOUR][:len(sides)] + ([NOISY_GREY] if noisy.any() else [])
    bars = alt.Chart(data).mark_bar().encode(
        y=_rows(data["label"]), yOffset=alt.YOffset("sweep:N", sort=sides),
        x=alt.X("speedup:Q", title="speedup (×): eager / compiled latency"),
        color=alt.Color("bar:N", scale=alt.Scale(domain=domain, range=colours),
                        legend=alt.Legend(orient="bottom", title=None, labelLimit=0, direction="vertical")),
        stroke=alt.condition(alt.datum.noisy, alt.value("#555"), alt.value(None)),
        strokeDash=alt.condition(alt.datum.noisy, alt.value([4, 2]), alt.value([1, 0])),
        tooltip=[alt.Tooltip("sweep:N"), alt.Tooltip("label:N", title="combination"),
                 alt.Tooltip("speedup:Q", format=".3f"), alt.Tooltip("note:N", title=" ")])
    return (bars + _one()).properties(height=alt.Step(BAR_PX), title="Speedup (latency), A vs B",
                                   usermeta=SVG)


def versions_speedup(plot: pd.DataFrame) -> alt.LayerChart:
    """The speedup of each configuration under each torch version (`plot`: configuration, torch, speedup)."""
    data = plot.rename(columns={"configuration": "label"})
    versions = sorted(dict.fromkeys(data["torch"]))
    bars = alt.Chart(data).mark_bar().encode(
        y=_rows(data["label"]), yOffset=alt.YOffset("torch:N", sort=versions),
        x=alt.X("speedup:Q", title="speedup (×): eager / compiled latency"),
        color=alt.Color("torch:N", sort=versions, legend=alt.Legend(orient="bottom", title="torch", labelLimit=0)),
        tooltip=[alt.Tooltip("label:N", title="configuration"), alt.Tooltip("torch:N"),
                 alt.Tooltip("speedup:Q", format=".3f")])
    return (bars + _one()).properties(height=alt.Step(BAR_PX),
                                   title="Speedup (latency) per torch version", usermeta=SVG)


def samples_box(samples: list[dict]) -> alt.Chart:
    """Every kept latency sample of two runs ({run, side, ms}), as boxes (whiskers at 1.5 IQR, the samples past them
    drawn); on a log axis when a few slow outliers would flatten every box."""
    data = pd.DataFrame(samples)
    ms = data["ms"]
    log = bool((ms > 0).all() and ms.max() / ms.min() > 20)
    return alt.Chart(data).mark_boxplot(size=28).encode(
        x=alt.X("run:N", title=None, sort=list(dict.fromkeys(data["run"])), axis=alt.Axis(labelAngle=0, labelLimit=0)),
        xOffset=alt.XOffset("side:N", sort=["eager", "compiled"]),
        y=alt.Y("ms:Q", title="ms per call (log)" if log else "ms per call",
                scale=alt.Scale(type="log") if log else alt.Undefined),
        color=alt.Color("side:N", scale=alt.Scale(domain=["eager", "compiled"], range=["#7f7f7f", A_COLOUR]),
                        legend=alt.Legend(orient="bottom", title=None)),
    ).properties(height=HEIGHT, title="Every kept latency sample (ms per synchronous call)", usermeta=SVG)
