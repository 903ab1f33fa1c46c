"""A job's traffic replay on its page (lab.traffic): the answer under the stream, when the compiled stream paid for its
compiles, recompiles and fallback calls, and each side's running total over the call index."""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from dashboard.markup import md, plot
from lab.traffic import words

NUMBERS = ("compiled_total_s", "eager_total_s", "calls_compared")
COUNTS = ("recompiles", "limit_hits", "fallback_calls", "graphs")
SERIES = ("size", "padded", "eager_s", "compiled_s", "compiles", "fallback")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def well_formed(t: dict) -> bool:
    """Whether a stored replay has what the section draws (a hand-made row may hold anything)."""
    stream = t.get("stream")
    return (all(_number(t.get(k)) for k in NUMBERS + COUNTS) and isinstance(stream, dict)
            and all(isinstance(stream.get(k), list) for k in SERIES)
            and len({len(stream[k]) for k in SERIES}) == 1)


def answer_line(t: dict) -> str:
    """The stream's answer in a sentence (Markdown; `t` is an export record's `traffic`)."""
    ratio = t.get("ratio")
    if not _number(ratio) or ratio <= 0:
        return f"No answer under this traffic: {md(t.get('error') or 'no call ran on both sides')}."
    verdict = f"**{1 / ratio:.3g}× faster** ({ratio:.3g}× eager's time)" if ratio < 1 else f"**{ratio:.3g}× slower**"
    even = t.get("break_even_call")
    paid = (f"paid for its compiles by call {int(even) + 1} of {t['calls_compared']}" if _number(even)
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
                          "seconds": pd.to_numeric(pd.Series(s["eager_s"] + s["compiled_s"], dtype=object),
                                                   errors="coerce"),  # numbers only reach the hovers
                          "size": pd.to_numeric(pd.Series(s["size"] + s["padded"], dtype=object), errors="coerce")})
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
                                     hovertext=[plot(f"call {i + 1}: size {compiled.loc[i, 'size']}") for i in at],
                                     hoverinfo="text"))
    fig.update_layout(height=380, margin={"t": 30, "b": 10}, legend_title_text="",
                      xaxis_title="call in the stream", yaxis_title="running total (s)")
    return fig


def show(record: dict, follow_up_of: int | None = None) -> None:
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
    if "calls_compared" not in t:  # the spec asks for a replay the result does not hold
        st.caption(f"A follow-up run replays no traffic: its configuration's first run, job #{follow_up_of}, did."
                   if follow_up_of is not None else "No replay stored: the job ended before it.")
        return
    if not well_formed(t):
        st.caption("The stored replay is malformed: it is not drawn (the export carries it as stored).")
        return
    st.markdown(answer_line(t))
    c = st.columns(4)
    c[0].metric("Recompiles", int(t["recompiles"]), help="compiles after the stream's first, each with torch's reason")
    c[1].metric("Recompile-limit hits", int(t["limit_hits"]),
                help="frames torch stopped compiling at torch._dynamo.config.recompile_limit: new shapes run eagerly")
    c[2].metric("Fallback calls", int(t["fallback_calls"]),
                help="calls in which a frame's guards matched no graph and nothing was compiled: it ran eagerly")
    c[3].metric("Graphs at the end", int(t["graphs"]))
    st.plotly_chart(figure(t), width="stretch")
    counters = t.get("torch_counters") if isinstance(t.get("torch_counters"), dict) else {}
    shown = {k: str(int(v)) if _number(v) else "–" for k, v in
             {**{k: counters.get(k) for k in ("frames_ok", "limit_refusals", "unique_graphs")},
              "misses": t.get("guard_misses")}.items()}
    st.caption(f"torch._dynamo counters over the stream: {shown['frames_ok']} frames compiled, "
               f"{shown['limit_refusals']} refused at the recompile limit, {shown['unique_graphs']} graphs; the guard "
               f"hook saw {shown['misses']} cache misses.")
    reasons = [r for r in t.get("reasons") or [] if isinstance(r, dict) and _number(r.get("call"))]
    if reasons:
        with st.expander(f"Why each recompile happened ({len(reasons)})"):
            st.dataframe([{"call": int(r["call"]) + 1, "reason": str(r.get("reason"))} for r in reasons],
                         hide_index=True, width="stretch")
