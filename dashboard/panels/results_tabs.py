"""The Results page's tabs, each drawn only while open: the Speedup tab's one chart at a time (with its clock), where
the first call goes, the spread across repeats, the roofline, the failures with their reasons, and the table of every
export field."""
from __future__ import annotations

import streamlit as st

from dashboard.charts import speed_charts
from dashboard.data import answers, cachecompare, frame, plot_data, repeats
from dashboard.data.model_view import SCHEDULE_JOBS
from dashboard.markup import md
from dashboard.panels.results_figures import (
    REPEAT_GROUPS,
    LaunchFigures,
    RepeatFigures,
    SpeedFigures,
    roofline_figure,
    roofline_view,
)
from dashboard.state import resources, url_params
from lab import axes
from lab.spec import job_label
from lab.wording import count

WIDE_PAST = 4  # rows: past this many, the First call tab's two plots each take the page's width
PAGE_ROWS = 500  # st.dataframe sends every row it gets to the browser: the table is paged, downloads are not
FAIL_ROWS = 1000
# the table's first columns: what a job is, its result, and how far that result can be trusted
FRONT = ["job_id", "sweep", "status", "model", *axes.FIELDS, "speedup",
         "throughput_speedup", "gpu_speedup", "noisy", "host_bound", "speedup_spread", "eager_spread", "compiled_spread",
         "noise_note",
         "eager_ms", "compiled_ms", "timing_protocol", "roofline_pct", "roofline_bound"]
CALIBRATE = ("`python -m runner calibrate --device {device} --db URL` on a host with that device measures them "
             "(a GPU worker calibrates its GPU when it starts)")
CLOCK_HELP = ("latency: one synchronous call as your program sees it (host clock, Python, guards and launches "
              "included), the headline. throughput: back-to-back calls, one sync per block, per call, as a training "
              "loop sees it. GPU time: the kernels alone from a cold L2 (CUDA only): how good the generated code "
              "is, not what a caller waits for.")
CLOCK_NAMES = {"latency": "latency", "throughput": "throughput", "GPU time": "gpu"}  # shown (and in ?clock=) -> clock
# the Speedup tab's charts, drawn one at a time; the labels are the URL's `chart` values (renaming one breaks
# links to it). N calls first: the chart that answers "what should I use" for the number of calls a program makes
CHARTS = ["N calls", "Speedup", "Latency", "Warmup", "Break-even", "Recompiles"]
CLOCKED = ("Speedup", "Latency")  # the charts the clock changes
CHART_HELP = ("N calls: the total time of N calls (first call + N × latency) of every configuration, the lowest "
              "highlighted. Speedup and Latency per batch size in the chosen clock; Warmup: the compiled first call; "
              "Break-even: the calls after which compiling has paid for itself; Recompiles: the shape schedule's "
              "recompile timeline.")


def clocks(gpu: bool) -> list[str]:
    """The clocks to offer: GPU time only where a job in view ran on a GPU (on the CPU it has no samples: an empty
    chart)."""
    return [c for c in CLOCK_NAMES if gpu or CLOCK_NAMES[c] != "gpu"]


def chart_in_view(gpu: bool = True) -> tuple[str, str]:
    """The Speedup tab's chart and clock, read before their pickers are drawn (chart_ui). One chart at a time: a
    browser draws every plotly chart it is sent before it shows the first, so six charts kept the first
    waiting for the other five."""
    chart = url_params.peek("chart", CHARTS, CHARTS[0], bound=True)
    clock = url_params.peek("clock", clocks(gpu), "latency", bound=True)
    return chart, CLOCK_NAMES[clock] if chart in CLOCKED else "latency"


def chart_ui(chart: str, model_ok: bool, gpu: bool = True) -> None:
    """The chart picker, and the clock beside it on the charts the clock changes (elsewhere it would be one more
    control to draw before the chart, greyed out)."""
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    left.segmented_control("Chart", CHARTS, key="chart", bind="query-params", default=CHARTS[0], required=True,
                           disabled=not model_ok, help=CHART_HELP)
    if chart in CLOCKED:
        if st.session_state.get("clock", "latency") not in clocks(gpu):  # GPU time picked, then CPU jobs only left
            st.session_state["clock"] = "latency"
        right.segmented_control("Clock", clocks(gpu), key="clock", bind="query-params", default="latency",
                                required=True, help=CLOCK_HELP)


def plots(chart: str, parts: SpeedFigures) -> None:
    """One of the Speedup tab's charts (not N calls: dashboard.panels.answer_table.calls), with the notes that read it."""
    clock = parts.clock
    if parts.common:
        st.caption("Every configuration here: " + md(parts.common) + ". The labels name only what differs.")
    if parts.noisy_note:
        st.caption(md(parts.noisy_note))
    for note in parts.folded:
        st.caption(":material/info: " + md(note))
    if chart in CLOCKED:
        if clock != "latency":
            st.caption(f"Showing **{plot_data.CLOCKS[clock]['label']}**. The headline speedup everywhere else is latency.")
        if clock == "latency" and parts.gpu_only:
            st.caption(f"{count(parts.gpu_only, 'configuration')} {_have(parts.gpu_only)} GPU time only: CUDA results "
                       "timed before caller "
                       "latency was measured (timing protocol 1). Choose **GPU time** to see them; they are never "
                       "drawn as latency.")
        if clock != "latency" and parts.clock_missing:
            st.caption(f"{count(parts.clock_missing, 'configuration')} {_have(parts.clock_missing)} no "
                       f"{speed_charts.CLOCK_WORDS[clock]}"
                       + (" (a CPU job has no GPU clock)" if clock == "gpu" else " (timed before it was measured)")
                       + ".")
    if chart == "Speedup":
        st.plotly_chart(parts.speedup, key="plot_speedup")
        if parts.recompiled:
            st.caption(f"↻ {count(parts.recompiled, 'configuration')} recompiled inside the timed rounds (a graph break "
                       "or a guard on data, like seed 004's ConvNetMix): those calls were dropped from the samples, "
                       "but the steady state switches between graphs. The Table has recompiles, measure_recompiles "
                       "and graph_breaks.")
    elif chart == "Latency":
        st.plotly_chart(parts.latency, key="plot_latency")
        drift = parts.eager_drift
        if drift:
            st.caption(f"⚠ Eager moved between jobs: at bs {drift['batch_size']} it took {drift['low_ms']:.3g} ms in "
                       f"the jobs of *{drift['low']}* and {drift['high_ms']:.3g} ms in those of *{drift['high']}* "
                       f"(+{drift['gap']:.0%}). Eager runs no compiled code, so the machine changed (load, clocks) "
                       "between those jobs: read these lines against each other with care; the speedup plot (eager "
                       "and compiled timed in the same job) is not affected.")
    elif chart == "Warmup":
        st.plotly_chart(parts.warmup, key="plot_warmup")
    elif chart == "Break-even":
        if parts.break_even is not None:
            st.plotly_chart(parts.break_even, key="plot_break_even")
        if parts.break_even_note:
            st.caption(md(parts.break_even_note))
    elif parts.timeline is not None:
        st.plotly_chart(parts.timeline, key="plot_recompiles")
        if parts.scheduled > SCHEDULE_JOBS:
            st.caption(f"The timeline shows the newest {SCHEDULE_JOBS} of {parts.scheduled} jobs with a schedule.")
    else:
        st.caption("No job in view ran a shape schedule; submit one with a schedule (e.g. 32, 64) to see recompiles.")


def first_call_and_launch(parts: LaunchFigures) -> None:
    """Where the compiled first call's seconds go; and, on CUDA, the launch overhead on top of device time.
    Both plots have one row per series, in the same order, so they read across."""
    if parts.empty:
        st.info("No job of this model in view succeeded: there is no first call to break down (the failures are "
                "under **Failures**).", icon=":material/info:")
        return
    if not parts.caches.empty:
        st.markdown("**Cold, warm and portable first calls** (the median compiled first call of each, as the answer "
                    "table separates them)")
        st.dataframe(parts.caches, hide_index=True, width="stretch", column_config={
            **{c: st.column_config.NumberColumn(format="%.2f") for c in cachecompare.COLUMNS.values()},
            "portable vs cold": st.column_config.NumberColumn(format="%.1f×", help="cold / portable first call")})
        st.caption("portable: a fresh cache directory plus the bundle a cold job of the same settings kept (torch's "
                   "mega-cache and the compiled kernel libraries): the first call a colleague on another host pays. "
                   "Each job's page says what it loaded and which cache layers hit.")
    if parts.noisy_note:
        st.caption(md(parts.noisy_note))
    wide = parts.host is None or parts.rows > WIDE_PAST  # many rows: each plot takes the page's width
    left, right = (st.container(), st.container()) if wide else st.columns(2)
    left.plotly_chart(parts.breakdown, key="plot_breakdown")
    if parts.no_breakdown:
        left.caption("Some jobs carry no compile breakdown (stored before it was recorded): their first call is one bar.")
    if parts.host is None:  # the breakdown takes the full width
        right.info("GPU time inside latency is for CUDA jobs, and none in view has it. On the CPU latency "
                   "(perf_counter per call) already measures what a caller waits for.", icon=":material/memory:")
    else:
        right.plotly_chart(parts.host, key="plot_host")
        right.caption("GPU time: CUDA events around the call's kernels alone (a host head start, L2 flushed). "
                      "Latency: one synchronous call as the caller sees it (sync, clock, call, sync, clock), Python, "
                      "dynamo's guards and kernel launches included. CUDA graphs (reduce-overhead) shrink the gap; "
                      "a configuration whose GPU idles half of a call or more is host-bound (◇ on the speedup plot).")


def repeat_spread(rep: RepeatFigures | None) -> None:
    """Per repeated configuration: median and min–max; which configurations their ranges keep apart."""
    if rep is None:
        st.caption("No configuration of this model was repeated in view. Submit with **Repeat** 2 or more "
                   "(`--repeat N`) to see how far its numbers move from run to run, and which modes that leaves "
                   "apart.")
        return
    runs, noisy = int(rep.summary["runs"].sum()), int(rep.summary["noisy runs"].sum())
    if noisy * 2 > runs:
        st.warning(f"{noisy} of {runs} repeated runs were disturbed from outside (named on each job): a *separated* or "
                   "*not separable* verdict may rest on the machine's business more than on the compile. Repeat "
                   "when nothing else runs on it before reading much into these.", icon=":material/warning:")
    left, right = st.columns([3, 2])
    left.plotly_chart(rep.figure, key="plot_repeats")
    if len(rep.groups) > REPEAT_GROUPS:
        left.caption(f"The plot shows the newest {REPEAT_GROUPS} of {len(rep.groups)} groups; the tables hold all.")
    right.markdown("**Can they be told apart?** Against eager, as the answer says: by the configuration's 95% "
                   "interval over its runs' paired rounds (*separated* when it leaves out 1×). Two compiled "
                   "configurations are *separated* when the faster one's slowest run beats the slower one's "
                   "fastest; inside each other's range they are *not separable*: that difference is run-to-run "
                   "noise, not a finding. Fastest first (`<` separated, `≈` not):")
    right.markdown("\n".join(f"- **{md(g)}**: {md(rep.chains[g])}" for g in rep.groups))  # sweep names: text
    st.dataframe(rep.pairs, hide_index=True, width="stretch", column_config={
        "ratio": st.column_config.NumberColumn("slower / faster", format="%.3f×"),
        "gap %": st.column_config.NumberColumn(format="%+.1f%%", help="(slower's min − faster's max) / faster's "
                                               "median; negative: the ranges overlap by that much. Empty against "
                                               "eager: judged by the answer's interval, its ratio the answer's")})
    numbers = {f"{m}{end}": st.column_config.NumberColumn(format="%.4g") for m in repeats.METRICS
               for end in ("", " min", " max")}
    st.dataframe(rep.summary, hide_index=True, width="stretch", column_config={
        **numbers, **{f"{m} spread %": st.column_config.NumberColumn(format="%.2f%%", help="(max − min) / median "
                                                                     "over the repeats") for m in repeats.METRICS}})


def roofline_plot(shown, key: tuple, engine) -> None:
    """Every model in view against its device's measured ceilings."""
    pts = roofline_view(key, shown, resources.store())
    if pts.empty:
        st.caption("No succeeded job in view has a FLOP count (results stored before the roofline was recorded).")
        return
    ceilings = answers.newest_ceilings(engine, shown["device_name"].dropna().unique())
    color_by = st.segmented_control("Colour by", ["model", "mode", "batch_size", "dtype"], key="rcolor",
                                    default="model", bind="query-params") or "model"
    calibrations = tuple((c["device_name"], c["dtype"], str(c["measured_at"])) for c in ceilings)
    roof = roofline_figure(key + calibrations, pts, ceilings, color_by)
    st.plotly_chart(roof["figure"], key="plot_roofline")
    for m in roof["missing"].itertuples():
        st.caption(f"No measured ceilings for **{m.device_name}** ({m.dtype}): no roofline to draw, and its jobs "
                   f"have no roofline %. " + CALIBRATE.format(device=m.device))
    if roof["off"]:
        st.caption("Not on the log axes, with 0 counted FLOPs (FlopCounterMode counts matmul-like ops; elementwise "
                   "work is all bytes, so its roofline is the copy bandwidth): " + roof["off"])


def failures_section(bad) -> None:
    """Every job in view that did not succeed, newest first, with its reason."""
    if bad.empty:
        st.success("Every job in view succeeded.")
        return
    cancelled = int((bad["status"] == "cancelled").sum())
    st.subheader(f"Did not succeed ({len(bad) - cancelled:,})" + (f" and cancelled ({cancelled:,})" if cancelled else ""))
    st.dataframe(bad.drop(columns=[c for c in ("config", "series") if c in bad.columns]).iloc[::-1].head(FAIL_ROWS),
                 hide_index=True, width="stretch", column_config={"error": st.column_config.TextColumn(
                     "reason", width="large"), "job_id": st.column_config.NumberColumn(format="%d")})
    if len(bad) > FAIL_ROWS:
        st.caption(f"The newest {FAIL_ROWS:,} of {len(bad):,}; all of them are in the table and the downloads.")
    with st.expander("Full reasons (newest 20)", expanded=len(bad) <= 3):
        for row in bad.iloc[::-1].head(20).itertuples():
            st.markdown(f"**#{row.job_id}** {md(job_label(row._asdict()))}: **{row.status}**")
            st.code(row.error, language=None, wrap_lines=True)


def export_table(shown, engine) -> None:
    """Every export field of the shown rows, newest first, a page of PAGE_ROWS at a time."""
    st.subheader("Every export field")
    pages = max(1, -(-len(shown) // PAGE_ROWS))
    if st.session_state.get("page", 1) > pages:  # fewer rows than the page a link or an earlier filter named
        st.session_state["page"] = 1
    newest_first = shown.iloc[::-1]
    table_slot = st.empty()
    page = st.pagination(pages, key="page", bind="query-params") if pages > 1 else 1
    st.caption(f"Rows {(page - 1) * PAGE_ROWS + 1:,}–{min(page * PAGE_ROWS, len(shown)):,} of {len(shown):,}, "
               "newest first")
    rows = frame.complete(newest_first.iloc[(page - 1) * PAGE_ROWS:page * PAGE_ROWS], engine)[list(answers.RECORD_FIELDS)]
    rows = rows.assign(noisy=rows["noisy"].map({True: "⚠ noisy", False: "ok"}))  # shown only; downloads keep the bool
    table_slot.dataframe(
        rows, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(rows)),
        column_order=FRONT + [c for c in rows.columns if c not in FRONT],
        column_config={"job_id": st.column_config.NumberColumn(format="%d"),
                       "speedup": st.column_config.NumberColumn(format="%.3f×", help="latency: what a caller waits "
                                                                "for per call (the headline)"),
                       "throughput_speedup": st.column_config.NumberColumn(format="%.3f×", help="back-to-back calls"),
                       "gpu_speedup": st.column_config.NumberColumn(format="%.3f×", help="kernels only (CUDA): a "
                                                                    "diagnosis of the generated code"),
                       "noisy": st.column_config.TextColumn(help="Disturbed by a cause measured during its rounds "
                                                                 "(noise_note names it: another process on the GPU "
                                                                 "or the cores, throttled clocks); older workers "
                                                                 "flagged a speedup's spread past 5%"),
                       "speedup_spread": st.column_config.NumberColumn(
                           format="percent", help="IQR / median of the per-round eager / compiled ratios: drift that "
                                                  "slows both sides of a round alike cancels"),
                       "eager_spread": st.column_config.NumberColumn(format="percent",
                                                                     help="IQR / median of per-round medians"),
                       "compiled_spread": st.column_config.NumberColumn(format="percent",
                                                                        help="IQR / median of per-round medians"),
                       "roofline_pct": st.column_config.NumberColumn(format="%.0f%%")})


def _have(n: int) -> str:
    return "has" if n == 1 else "have"
