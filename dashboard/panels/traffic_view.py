"""A job's traffic replay on its page (issue 29, lab.traffic): the answer under the stream (compiled total / eager
total, compiles included), when the compiled stream had paid for its compiles, recompiles, recompile-limit hits and
calls the eager fallback served, and the time per call over the stream: each side's running total over the call
index, recompiles and fallback calls marked."""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from dashboard.markup import md, plot
from lab.traffic import words


def answer_line(t: dict) -> str:
    """The stream's answer in a sentence (Markdown; `t` is an export record's `traffic`)."""
    if t.get("ratio") is None:
        return f"No answer under this traffic: {md(t.get('error') or 'no call ran on both sides')}."
    ratio, faster = t["ratio"], 1 / t["ratio"]
    verdict = f"**{faster:.3g}× faster** ({ratio:.3g}× eager's time)" if ratio < 1 else f"**{ratio:.3g}× slower**"
    even = t.get("break_even_call")
    paid = (f"paid for its compiles by call {even + 1} of {t['calls_compared']}" if even is not None
            else "had not paid for its compiles by the stream's end")
    cut = "" if t.get("complete", True) else f" (the first {t['calls_compared']} calls: then {md(t.get('error'))})"
    return (f"Under this traffic the compiled stream took **{t['compiled_total_s']:.3g} s** against eager's "
            f"**{t['eager_total_s']:.3g} s**, compiles included: {verdict}; it "
            f"{paid}{cut}.")


def figure(t: dict) -> go.Figure:
    """Each side's running total over the call index; recompiles (x) and fallback calls (o) on the compiled line."""
    s = t["stream"]
    n = len(s["size"])
    frame = pd.DataFrame({"call": list(range(1, n + 1)) * 2,
                          "side": ["eager"] * n + ["compiled"] * n,
                          "seconds": [v if v is not None else float("nan") for v in s["eager_s"] + s["compiled_s"]],
                          "size": s["size"] + s["padded"]})
    frame["running total (s)"] = frame.groupby("side")["seconds"].cumsum()
    fig = px.line(frame, x="call", y="running total (s)", color="side", hover_data=["size", "seconds"],
                  color_discrete_map={"eager": "#7f7f7f", "compiled": "#1f77b4"})
    compiled = frame[frame["side"] == "compiled"].reset_index(drop=True)
    for key, name, symbol, color, size in (("compiles", "compiled a graph", "x", "#d62728", 9),
                                           ("fallback", "served by eager fallback", "circle-open", "#ff7f0e", 5)):
        at = [i for i, v in enumerate(s[key]) if v]
        if at:
            fig.add_trace(go.Scatter(x=[i + 1 for i in at], y=compiled.loc[at, "running total (s)"], mode="markers",
                                     name=plot(name), marker={"symbol": symbol, "size": size, "color": color},
                                     hovertext=[plot(f"call {i + 1}: size {s['padded'][i]}") for i in at],
                                     hoverinfo="text"))
    fig.update_layout(height=380, margin={"t": 30, "b": 10}, legend_title_text="",
                      xaxis_title="call in the stream", yaxis_title="running total (s)")
    return fig


def show(record: dict) -> None:
    t = record.get("traffic")
    if not t:
        return
    st.subheader("Under your traffic")
    cold = record.get("compiled_first_call_s")
    st.caption(md(words(t)) + "; each call eager, then compiled, in the stream's order, on the caller's clock. The "
               "compiled side starts from an empty dynamo cache, as a fresh server would, but its compiles run in a "
               "process whose compiler is already warm (libraries loaded, this job's kernels built)"
               + (f": a fresh server's first compile costs more, as this job's own cold first call did ({cold:.3g} s)"
                  if cold is not None else "") + ".")
    if "calls_compared" not in t:  # the job's spec asked for a replay its result does not hold (it failed first)
        st.caption("No replay stored: the job ended before it.")
        return
    st.markdown(answer_line(t))
    c = st.columns(4)
    c[0].metric("Recompiles", t["recompiles"], help="compiles after the stream's first, each with torch's reason")
    c[1].metric("Recompile-limit hits", t["limit_hits"],
                help="frames torch stopped compiling at torch._dynamo.config.recompile_limit: new shapes run eagerly")
    c[2].metric("Fallback calls", t["fallback_calls"],
                help="calls in which a frame's guards matched no graph and nothing was compiled: it ran eagerly")
    c[3].metric("Graphs at the end", t["graphs"])
    st.plotly_chart(figure(t), width="stretch")
    counters = t.get("torch_counters") or {}
    st.caption(f"torch._dynamo counters over the stream: {counters.get('frames_ok', '–')} frames compiled, "
               f"{counters.get('limit_refusals', '–')} refused at the recompile limit, "
               f"{counters.get('unique_graphs', '–')} graphs; the guard hook saw {t.get('guard_misses', '–')} cache "
               "misses.")
    if t.get("reasons"):
        with st.expander(f"Why each recompile happened ({len(t['reasons'])})"):
            st.dataframe([{"call": r["call"] + 1, "reason": r["reason"]} for r in t["reasons"]], hide_index=True,
                         width="stretch")
