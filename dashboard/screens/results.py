"""Results: filters (all in the URL) and CSV / JSON of what they keep, the counts, the answer for one model, then
tabs: the plots that answer the seed notes, one chart at a time (what to use for N calls first; speedup and
latency in the clock chosen: latency by default, throughput or GPU time); where the first call goes and GPU time
inside latency; the spread across repeats; the roofline; failures with their reasons; the table of every export
field.

Only the open tab runs (st.tabs bound to the URL's `view`), and the Speedup tab draws only its chosen chart (`chart`),
so a visit pays for the plot it shows, and a copied link opens the same view."""
import streamlit as st

from dashboard import (
    answer,
    cachecompare,
    charts,
    diagnosis,
    filters,
    frame,
    labels,
    refresh,
    repeats,
    roofline,
    state,
    stats,
)
from dashboard import downloads as exports
from dashboard.markup import md
from db import device_ceilings, views
from db.results import RECORD_FIELDS
from lab import axes

URL_KEYS = {"torch_version": "torch", "device_name": "gpu"}  # shorter query parameter names
SCHEDULE_JOBS = 40  # the recompile timeline draws the newest jobs that ran a schedule
WIDE_PAST = 4  # rows: past this many, the First call tab's two plots each take the page's width
PAGE_ROWS = 500  # st.dataframe sends every row it gets to the browser: the table is paged, downloads are not
FAIL_ROWS = 1000
REPEAT_GROUPS = 6  # the spread plot draws the newest sweeps' comparison groups
# the tabs; their labels are the URL's `view` values (renaming one breaks links to it)
TABS = ["Speedup", "First call", "Repeats", "Roofline", "Failures", "Table"]
# the table's first columns: what a job is, its result, and how far that result can be trusted
FRONT = ["job_id", "sweep", "status", "model", *axes.FIELDS, "speedup",
         "throughput_speedup", "gpu_speedup", "noisy", "host_bound", "speedup_spread", "eager_spread", "compiled_spread",
         "noise_note",
         "eager_ms", "compiled_ms", "timing_protocol", "roofline_pct", "roofline_bound"]
NOISY_NOTE = ("Spread: IQR / median over a job's rounds, of the speedup (each round's eager / compiled) and of each "
              "side's median; ⚠ noisy when the speedup's spread is past 5%, or when "
              "host-sensitive (the GPU idles a quarter of a call or more: its latency moves from process to process); noise_note says why. Ringed or hollow points below are "
              "configurations with a noisy run.")
CALIBRATE = ("`python -m runner calibrate --device {device} --db URL` on a host with that device measures them "
             "(a GPU worker calibrates its GPU when it starts)")

FILTER_VALUES_SHOWN = 3  # per filter, in the line that names what is set


@st.cache_resource(max_entries=4, show_spinner=False)
def filter_choices(key: tuple, _df) -> dict:
    """Each filter's options (~0.25 s at 100k rows): built once per results table, not every rerun."""
    return {col: filters.filter_options(_df, col) for col in filters.FILTERS}


def _chosen(col: str, options: list) -> list:
    """A filter's current choice before its widget runs: the session's, else the URL's values that are
    among its options (the widget drops the others)."""
    key = URL_KEYS.get(col, col)
    if key in st.session_state:
        return st.session_state[key]
    return [v for v in st.query_params.get_all(key) if v in {str(o) for o in options}]


def chosen_filters(df) -> dict:
    """Every filter's choice, read before the filter row is drawn (filters_ui draws the same values)."""
    keys = [URL_KEYS.get(col, col) for col in filters.FILTERS]
    if not any(k in st.session_state or k in st.query_params for k in keys):
        return {col: [] for col in filters.FILTERS}  # nothing set: no options to check against (0.25 s at 100k)
    choices = filter_choices(frame_key(df), df)
    return {col: _chosen(col, choices[col]) for col in filters.FILTERS}


def filters_ui(df, row, chosen: dict) -> dict:
    """Every filter in one popover, whose label says how many are set; the line beside it names them (a copied
    link may set any). Closed, the popover's widgets cost the browser nothing: four open multiselects (the
    sweeps' one with every sweep of the lab as options) kept it ~0.2 s longer from the first chart."""
    choices = filter_choices(frame_key(df), df)
    active = {col: values for col, values in chosen.items() if values}
    popover = row[0].popover("Filters" + (f" ({len(active)} set)" if active else ""), key="more_filters",
                             icon=":material/filter_list:", width="stretch")
    row[1].caption(filters_line(active))
    return {col: popover.multiselect(label, choices[col], key=URL_KEYS.get(col, col), bind="query-params",
                                     placeholder="all") for col, label in filters.FILTERS.items()}


def filters_line(active: dict) -> str:
    """What the filters keep, in words: "Every job in the database", or each filter set and its values."""
    if not active:
        return "Every job in the database. **Filters** narrow it (sweep, model, mode, …); they are in the link."
    parts = []
    for col, values in active.items():
        shown = ", ".join(md(str(v)) for v in values[:FILTER_VALUES_SHOWN])
        more = f" and {len(values) - FILTER_VALUES_SHOWN} more" if len(values) > FILTER_VALUES_SHOWN else ""
        parts.append(f"{filters.FILTERS[col]}: {shown}{more}")
    return "Jobs with " + " · ".join(parts)


@st.cache_resource(max_entries=16, show_spinner=False)
def view_facts(key: tuple, _shown) -> dict:
    """The counts, headline numbers, timing methods and models of a view: built once per view (`key`),
    not on every rerun (each is a pass over up to 100k rows)."""
    ok = _shown["status"] == "succeeded"
    cancelled = _shown["status"] == "cancelled"
    measured = _shown[~cancelled]  # a cancelled sweep has nothing to plot
    pool = measured if len(measured) else _shown
    pool = pool[pool["model"].notna()]  # a spec stored without a model (the job failed on it) names none
    return {"jobs": len(_shown), "succeeded": int(ok.sum()), "failed": int((~ok & ~cancelled).sum()),
            "cancelled": int(cancelled.sum()), "methods": stats.timing_methods(_shown),
            "models": sorted(_shown["model"].dropna().unique()), "plottable": set(measured["model"].dropna()),
            "newest": pool.loc[pool["job_id"].idxmax(), "model"] if len(pool) else None}  # no sort per rerun


def summary(facts: dict) -> list:
    c = st.columns(5)
    c[0].metric("Jobs shown", f"{facts['jobs']:,}")
    c[1].metric("Succeeded", f"{facts['succeeded']:,}")
    c[2].metric("Did not succeed", f"{facts['failed']:,}",
                delta=f"+ {facts['cancelled']:,} cancelled" if facts["cancelled"] else None, delta_color="off",
                delta_arrow="off", help="Failed, timed out or crashed. Cancelled jobs are not counted: a person "
                                        "stopped them, so they say nothing about their configuration.")
    if facts["methods"]:
        st.caption("Timing: " + "; ".join(facts["methods"]) + ". " + NOISY_NOTE)
    return c[3:]  # the speedup metrics: filled for one model, once it is chosen (dashboard.answer.header)


def frame_key(df) -> tuple:
    """Names one results table: state.results hands out the same frame until new results arrive."""
    last = df["finished_at"].max() if len(df) else None
    return state.url(), id(df), len(df), str(last)


def view_key(df, selected: dict) -> tuple:
    """What the plots of a view depend on: the results table and the filters."""
    return frame_key(df) + (tuple((k, tuple(v)) for k, v in sorted(selected.items())),)


@st.cache_resource(max_entries=16, show_spinner=False)
def model_view(key: tuple, _shown, model: str, _store) -> dict:
    """One model's rows with every number its plots draw (read for its jobs only: frame.complete), series
    labels, their medians and failures: what every per-model tab draws. Built once per `key` and shared
    by all sessions; nothing here is modified after it is built."""
    rows = _store.complete(_shown[_shown["model"] == model], views.VIEW_FIELDS)
    view = labels.label_series(rows)
    agg, fails = stats.summarize(view)
    return {"view": view, "agg": stats.with_noise(agg, view), "fails": fails}


@st.cache_resource(max_entries=16, show_spinner=False)
def speed_figures(key: tuple, _shown, model: str, _store, clock: str = "latency") -> dict:
    """Speedup and ms per call in the chosen clock, warmup, break-even and the recompile timeline (building
    plotly figures is most of what a rerun costs, so they are cached per view and clock)."""
    v = model_view(key, _shown, model, _store)
    view, agg, fails = v["view"], v["agg"], v["fails"]
    timed = stats.on_clock(agg, clock)
    out = {"speedup": charts.mark_noisy(charts.speedup(timed, fails, clock), timed),
           "latency": charts.latency(timed, fails, clock), "clock": clock,
           # configurations measured in latency but not in this clock (GPU time on the CPU, say), and those with
           # GPU time only (CUDA results timed before caller latency was: timing protocol 1)
           "clock_missing": int((agg["speedup"].notna() & timed["speedup"].isna()).sum()),
           "gpu_only": int((agg["speedup"].isna() & agg["gpu_speedup"].notna()).sum()),
           "warmup": charts.warmup(stats.first_calls(view), fails), "series": int(agg["series"].nunique()),
           "noisy_note": stats.noisy_note(agg),
           "common": view.attrs.get("common", ""), "folded": labels.folded_notes(view), "timeline": None}
    answer_rows = answer.rows(key, model, _store.engine, answer.model_rows(key, model, _shown))
    paid = stats.answered_break_even(agg, view, answer_rows)  # the answer table's counts, not a second estimate
    out["break_even"], out["break_even_note"] = charts.break_even(paid, fails), charts.break_even_note(paid)
    with_schedule = view[view["has_schedule"].fillna(False).astype(bool) & (view["status"] == "succeeded")]
    out["scheduled"] = len(with_schedule)
    out["recompiled"] = (agg.loc[agg["recompiled_runs"].fillna(0) > 0, "config"].nunique()
                         if "recompiled_runs" in agg else 0)
    out["eager_drift"] = stats.eager_drift(agg)
    if len(with_schedule):
        newest = with_schedule.sort_values("job_id").tail(SCHEDULE_JOBS)
        sched = diagnosis.schedule_frame(view, views.schedule_calls(_store.engine, newest["job_id"].tolist()))
        out["timeline"] = diagnosis.recompile_timeline(sched)
    return out


@st.cache_resource(max_entries=16, show_spinner=False)
def launch_figures(key: tuple, _shown, model: str, _store) -> dict:
    """Where the compiled first call goes, beside GPU time inside latency."""
    v = model_view(key, _shown, model, _store)
    view = _store.complete(v["view"], views.FIRST_CALL_FIELDS)
    parts = stats.breakdown_frame(labels.split_by_graph_cache(view))
    host = stats.gpu_latency_frame(v["agg"])
    noisy = stats.noisy_series(stats.first_calls(view))  # the breakdown's rows: hits and misses apart
    return {"breakdown": diagnosis.warmup_breakdown(parts, v["fails"], noisy), "empty": parts.empty,
            "noisy_note": stats.noisy_note(v["agg"]),
            "rows": len(diagnosis.breakdown_rows(parts, v["fails"])),
            "caches": cachecompare.side_by_side(view),
            "no_breakdown": bool((parts["part"] == stats.NO_BREAKDOWN).any()),
            "host": None if host.empty else diagnosis.gpu_in_latency(host, v["fails"], diagnosis.breakdown_rows(parts, v["fails"]))}


@st.cache_resource(max_entries=16, show_spinner=False)
def repeat_figures(key: tuple, _shown, model: str, _store) -> dict | None:
    return repeat_parts(model_view(key, _shown, model, _store)["view"])


def repeat_parts(view) -> dict | None:
    """The spread-across-repeats plot, order chains and tables of a view (None: nothing was repeated)."""
    rep = repeats.repeated(view)
    if rep.empty:
        return None
    runs = repeats.candidates(rep)
    spans = repeats.ranges(runs)
    groups = rep.sort_values(["sweep_id", "batch_size"], ascending=[False, True])["group"].drop_duplicates().tolist()
    pairs = repeats.separability(spans)
    pairs["verdict"] = pairs["verdict"].map({repeats.SEPARATED: "✅ separated", repeats.NOT_SEPARABLE: "≈ not separable"})
    return {"figure": diagnosis.repeat_spread(runs, spans, groups[:REPEAT_GROUPS]), "groups": groups,
            "chains": repeats.chains(spans), "pairs": pairs, "summary": repeats.summary(rep)}


@st.cache_resource(max_entries=16, show_spinner=False)
def roofline_points(key: tuple, _shown, _store):
    """One point per configuration in view, with the numbers the roofline needs read for these jobs."""
    return roofline.points(_store.complete(_shown, roofline.READ))


@st.cache_resource(max_entries=16, show_spinner=False)
def roofline_figure(key: tuple, _pts, _ceilings: list, color_by: str) -> dict:
    """The roofline of every model in view (`key` names the data, filters, ceilings and colour)."""
    lines = roofline.lines(roofline.ceilings_in_view(_ceilings, _pts), _pts)
    return {"figure": diagnosis.roofline(_pts, lines, color_by), "missing": roofline.missing_ceilings(_ceilings, _pts),
            "off": roofline.off_plot(_pts)}


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


def chart_in_view() -> tuple[str, str]:
    """The Speedup tab's chart and clock, read before their pickers are drawn (chart_ui). One chart at a time: a
    browser draws every plotly chart it is sent before it shows the first, so six charts kept the first
    waiting for the other five."""
    chart = state.peek("chart", CHARTS, CHARTS[0], bound=True)
    clock = state.peek("clock", list(CLOCK_NAMES), "latency", bound=True)
    return chart, CLOCK_NAMES[clock] if chart in CLOCKED else "latency"


def chart_ui(chart: str, model_ok: bool) -> None:
    """The chart picker, and the clock beside it on the charts the clock changes (elsewhere it would be one more
    control to draw before the chart, greyed out)."""
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    left.segmented_control("Chart", CHARTS, key="chart", bind="query-params", default=CHARTS[0], required=True,
                           disabled=not model_ok, help=CHART_HELP)
    if chart in CLOCKED:
        right.segmented_control("Clock", list(CLOCK_NAMES), key="clock", bind="query-params", default="latency",
                                required=True, help=CLOCK_HELP)


def plots(chart: str, parts: dict) -> None:
    """One of the Speedup tab's charts (not N calls: dashboard.answer.calls), with the notes that read it."""
    clock = parts["clock"]
    if parts["common"]:
        st.caption("Every configuration here: " + md(parts["common"]) + ". The labels name only what differs.")
    if parts["noisy_note"]:
        st.caption(md(parts["noisy_note"]))
    for note in parts["folded"]:
        st.caption(":material/info: " + md(note))
    if chart in CLOCKED:
        if clock != "latency":
            st.caption(f"Showing **{stats.CLOCKS[clock]['label']}**. The headline speedup everywhere else is latency.")
        if clock == "latency" and parts["gpu_only"]:
            st.caption(f"{parts['gpu_only']} configuration(s) have GPU time only: CUDA results timed before caller "
                       "latency was measured (timing protocol 1). Choose **GPU time** to see them; they are never "
                       "drawn as latency.")
        if clock != "latency" and parts["clock_missing"]:
            st.caption(f"{parts['clock_missing']} configuration(s) have no {charts.CLOCK_WORDS[clock]}"
                       + (" (a CPU job has no GPU clock)" if clock == "gpu" else " (timed before it was measured)")
                       + ".")
    if chart == "Speedup":
        st.plotly_chart(parts["speedup"], key="plot_speedup")
        if parts.get("recompiled"):
            st.caption(f"↻ {parts['recompiled']} configuration(s) recompiled inside the timed rounds (a graph break "
                       "or a guard on data, like seed 004's ConvNetMix): those calls were dropped from the samples, "
                       "but the steady state switches between graphs. The Table has recompiles, measure_recompiles "
                       "and graph_breaks.")
    elif chart == "Latency":
        st.plotly_chart(parts["latency"], key="plot_latency")
        drift = parts.get("eager_drift")
        if drift:
            st.caption(f"⚠ Eager moved between jobs: at bs {drift['batch_size']} it took {drift['low_ms']:.3g} ms in "
                       f"the jobs of *{drift['low']}* and {drift['high_ms']:.3g} ms in those of *{drift['high']}* "
                       f"(+{drift['gap']:.0%}). Eager runs no compiled code, so the machine changed (load, clocks) "
                       "between those jobs: read these lines against each other with care; the speedup plot (eager "
                       "and compiled timed in the same job) is not affected.")
    elif chart == "Warmup":
        st.plotly_chart(parts["warmup"], key="plot_warmup")
    elif chart == "Break-even":
        if parts["break_even"] is not None:
            st.plotly_chart(parts["break_even"], key="plot_break_even")
        if parts["break_even_note"]:
            st.caption(md(parts["break_even_note"]))
    elif parts["timeline"] is not None:
        st.plotly_chart(parts["timeline"], key="plot_recompiles")
        if parts["scheduled"] > SCHEDULE_JOBS:
            st.caption(f"The timeline shows the newest {SCHEDULE_JOBS} of {parts['scheduled']} jobs with a schedule.")
    else:
        st.caption("No job in view ran a shape schedule; submit one with a schedule (e.g. 32, 64) to see recompiles.")


@st.cache_resource(max_entries=16, show_spinner=False)
def folded_notes(key: tuple, model: str, _mine) -> list[str]:
    """The model's jobs in view (`_mine`) stored under a mode they did not run as (reduce-overhead on the CPU): the
    N-calls chart's lines, like the answer's rows, count them under the mode that ran (labels.fold_modes). Two
    columns of the model's rows: no numbers read."""
    return labels.folded_notes(labels.fold_modes(_mine[["mode", "device"]]))


def first_call_and_launch(parts: dict) -> None:
    """Where the compiled first call's seconds go; and, on CUDA, the launch overhead on top of device time.
    Both plots have one row per series, in the same order, so they read across."""
    if parts["empty"]:
        st.info("No job of this model in view succeeded: there is no first call to break down (the failures are "
                "under **Failures**).", icon=":material/info:")
        return
    if not parts["caches"].empty:
        st.markdown("**Cold, warm and portable first calls** (median compiled first call per compile cache)")
        st.dataframe(parts["caches"], hide_index=True, width="stretch", column_config={
            **{c: st.column_config.NumberColumn(format="%.2f") for c in cachecompare.COLUMNS.values()},
            "portable vs cold": st.column_config.NumberColumn(format="%.1f×", help="cold / portable first call")})
        st.caption("portable: a fresh cache directory plus the bundle a cold job of the same settings kept (torch's "
                   "mega-cache and the compiled kernel libraries): the first call a colleague on another host pays. "
                   "Each job's page says what it loaded and which cache layers hit.")
    if parts["noisy_note"]:
        st.caption(md(parts["noisy_note"]))
    wide = parts["host"] is None or parts["rows"] > WIDE_PAST  # many rows: each plot takes the page's width
    left, right = (st.container(), st.container()) if wide else st.columns(2)
    left.plotly_chart(parts["breakdown"], key="plot_breakdown")
    if parts["no_breakdown"]:
        left.caption("Some jobs carry no compile breakdown (stored before it was recorded): their first call is one bar.")
    if parts["host"] is None:  # the breakdown takes the full width
        right.info("GPU time inside latency is for CUDA jobs, and none in view has it. On the CPU latency "
                   "(perf_counter per call) already measures what a caller waits for.", icon=":material/memory:")
    else:
        right.plotly_chart(parts["host"], key="plot_host")
        right.caption("GPU time: CUDA events around the call's kernels alone (a host head start, L2 flushed). "
                      "Latency: one synchronous call as the caller sees it (sync, clock, call, sync, clock), Python, "
                      "dynamo's guards and kernel launches included. CUDA graphs (reduce-overhead) shrink the gap; "
                      "a configuration whose GPU idles half of a call or more is host-bound (◇ on the speedup plot).")


def repeat_spread(rep: dict | None) -> None:
    """Per repeated configuration: median and min–max; which configurations their ranges keep apart."""
    if rep is None:
        st.caption("No configuration of this model was repeated in view. Submit with **Repeat** 2 or more "
                   "(`--repeat N`) to see how far its numbers move from run to run, and which modes that leaves "
                   "apart.")
        return
    runs, noisy = int(rep["summary"]["runs"].sum()), int(rep["summary"]["noisy runs"].sum())
    if noisy * 2 > runs:
        st.warning(f"{noisy} of {runs} repeated runs were disturbed from outside (named on each job): a *separated* or "
                   "*not separable* verdict may rest on the machine's business more than on the compile. Repeat "
                   "when nothing else runs on it before reading much into these.", icon=":material/warning:")
    left, right = st.columns([3, 2])
    left.plotly_chart(rep["figure"], key="plot_repeats")
    if len(rep["groups"]) > REPEAT_GROUPS:
        left.caption(f"The plot shows the newest {REPEAT_GROUPS} of {len(rep['groups'])} groups; the tables hold all.")
    right.markdown("**Can they be told apart?** Two configurations are *separated* when the faster one's slowest "
                   "run beats the slower one's fastest; inside each other's range they are *not separable*: that "
                   "difference is run-to-run noise, not a finding. Fastest first (`<` separated, `≈` not):")
    right.markdown("\n".join(f"- **{g}**: {rep['chains'][g]}" for g in rep["groups"]))
    st.dataframe(rep["pairs"], hide_index=True, width="stretch", column_config={
        "ratio": st.column_config.NumberColumn("slower / faster", format="%.3f×"),
        "gap %": st.column_config.NumberColumn(format="%+.1f%%", help="(slower's min − faster's max) / faster's "
                                               "median; negative: the ranges overlap by that much")})
    numbers = {f"{m}{end}": st.column_config.NumberColumn(format="%.4g") for m in repeats.METRICS
               for end in ("", " min", " max")}
    st.dataframe(rep["summary"], hide_index=True, width="stretch", column_config={
        **numbers, **{f"{m} spread %": st.column_config.NumberColumn(format="%.2f%%", help="(max − min) / median "
                                                                     "over the repeats") for m in repeats.METRICS}})


def roofline_plot(shown, key: tuple, engine) -> None:
    """Every model in view against its device's measured ceilings."""
    pts = roofline_points(key, shown, state.store())
    if pts.empty:
        st.caption("No succeeded job in view has a FLOP count (results stored before the roofline was recorded).")
        return
    ceilings = device_ceilings.newest_ceilings(engine, shown["device_name"].dropna().unique())
    color_by = st.segmented_control("Colour by", ["model", "mode", "batch_size", "dtype"], key="rcolor",
                                    default="model", bind="query-params") or "model"
    calibrations = tuple((c["device_name"], c["dtype"], str(c["measured_at"])) for c in ceilings)
    parts = roofline_figure(key + calibrations, pts, ceilings, color_by)
    st.plotly_chart(parts["figure"], key="plot_roofline")
    for m in parts["missing"].itertuples():
        st.caption(f"No measured ceilings for **{m.device_name}** ({m.dtype}): no roofline to draw, and its jobs "
                   f"have no roofline %. " + CALIBRATE.format(device=m.device))
    if parts["off"]:
        st.caption("Not on the log axes, with 0 counted FLOPs (FlopCounterMode counts matmul-like ops; elementwise "
                   "work is all bytes, so its roofline is the copy bandwidth): " + parts["off"])


def model_in_view(facts: dict) -> str:
    """The model whose answer and plots the page shows: the newest job's at first; the URL's `plot` names the
    one shown, so a copied link keeps showing it. Read before its picker is drawn (model_ui)."""
    models, newest = facts["models"], facts["newest"]
    if len(models) == 1:
        return newest
    state.url_choice("plot", models, newest)
    return st.session_state.get("plot") or newest


def model_ui(facts: dict, per_model: bool) -> None:
    """The model picker, greyed out on the tabs that show every model in view."""
    models, newest = facts["models"], facts["newest"]
    if len(models) == 1:
        state.write_url_choice("plot", None)  # a link's ?plot= names no choice here: not left in the URL
        return
    model = st.segmented_control("Plots for model", models, key="plot", disabled=not per_model,
                                 help=None if per_model else "This tab shows every model in view") or newest
    state.write_url_choice("plot", model)


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
            st.markdown(f"**#{row.job_id}** {md(row.model)} bs={row.batch_size} {row.backend}/{row.mode} "
                        f"dynamic={row.dynamic} fullgraph={row.fullgraph}: **{row.status}**")
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
    rows = frame.complete(newest_first.iloc[(page - 1) * PAGE_ROWS:page * PAGE_ROWS], engine)[list(RECORD_FIELDS)]
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
                       "noisy": st.column_config.TextColumn(help="The speedup's spread past 5%, or host-sensitive (its "
                                                                 "latency moves from process to process): read this "
                                                                 "job's numbers with care, or repeat it; noise_note "
                                                                 "says why"),
                       "speedup_spread": st.column_config.NumberColumn(
                           format="percent", help="IQR / median of the per-round eager / compiled ratios: drift that "
                                                  "slows both sides of a round alike cancels"),
                       "eager_spread": st.column_config.NumberColumn(format="percent",
                                                                     help="IQR / median of per-round medians"),
                       "compiled_spread": st.column_config.NumberColumn(format="percent",
                                                                        help="IQR / median of per-round medians"),
                       "roofline_pct": st.column_config.NumberColumn(format="%.0f%%")})


st.title("Results")
engine = state.engine()
df = state.results()
if df.empty:
    st.info("No finished jobs yet. Submit a sweep; its results appear here as jobs finish.")
    st.page_link("screens/submit.py", label="Submit a sweep", icon=":material/send:")
    refresh.drawn(df, {})
    refresh.watch({})
    st.stop()

# The page's parts are laid out first and filled in the order a visitor waits for them: the open chart is sent
# before the filters, counts, answer table and pickers above it. A browser fetches each kind of element's code
# when the first one arrives, in that order, and draws a chart only once plotly's code has come: sent last, the
# chart waited for every other kind's code, and for their drawing. Widgets drawn after the chart have their
# values read first (the session's, else the URL's): the same values they then show.
filters_row = st.columns([1, 4, 1], vertical_alignment="center")  # the filters, what they keep, the downloads
summary_slot = st.container()
selected = chosen_filters(df)
shown = filters.apply_filters(df, selected)
key = view_key(df, selected)
facts = view_facts(key, shown)
if shown.empty:
    filters_ui(df, filters_row, selected)
    with summary_slot:
        summary(facts)
        refresh.drawn(df, selected)
        refresh.watch(selected)
    st.warning("No job matches these filters.")
    st.stop()

picker = st.container()
# in a popover: two download links, drawn before the chart on every visit, for a click now and then
downloads = filters_row[2].popover("Download", icon=":material/download:", width="stretch",
                                  help="Every shown row (all pages), every export field, as CSV or as "
                                       "`python -m runner export --format json` records")
answer_slot = st.container()  # the answer for the chosen model, above the tabs
speed_tab, launch_tab, repeat_tab, roofline_tab, fail_tab, table_tab = st.tabs(
    TABS, key="view", bind="query-params", width="stretch")
model = model_in_view(facts)
mine = answer.model_rows(key, model, shown)
answer_rows = answer.rows(key, model, engine, mine)

if speed_tab.open:
    with speed_tab:
        controls = st.container()
        chart, clock = chart_in_view()
        if model not in facts["plottable"]:
            st.info(f"Nothing to plot for {md(model)}: its jobs in view were all cancelled (they are listed under "
                    "**Failures**).", icon=":material/info:")
        elif chart == "N calls":
            answer.calls(answer_rows, folded_notes(key, model, mine), key=key + (model,))
        else:
            plots(chart, speed_figures(key, shown, model, state.store(), clock))
        if facts["failed"]:
            st.caption(f"{facts['failed']:,} jobs in view did not succeed: marked on the plots as red ✕ with their count "
                       "(hover for the reasons) and listed under **Failures**.")
        with controls:
            chart_ui(chart, model in facts["plottable"])

filters_ui(df, filters_row, selected)
with summary_slot:
    speed_slots = summary(facts)
    refresh.drawn(df, selected)
    refresh.watch(selected)  # reruns the page when results land in view, and says so
with picker:  # always drawn (a widget that is not drawn loses its state); idle on the all-model tabs
    model_ui(facts, per_model=bool(speed_tab.open or launch_tab.open or repeat_tab.open))


# links, not download buttons: the file streams from `runner export` in a process of its own (dashboard.downloads)
links = exports.offer(st.session_state.setdefault("export_token", exports.new_token()), state.url(),
                      shown["job_id"].to_numpy(), {ext: filters.download_name(selected, ext) for ext in ("csv", "json")})
downloads.link_button("CSV", links["csv"], icon=":material/download:", width="stretch")
downloads.link_button("JSON", links["json"], icon=":material/download:", width="stretch")
answer.show(speed_slots, answer_slot, key, model, engine, shown)

if launch_tab.open:
    with launch_tab:
        st.subheader(f"Warmup and launch overhead: {md(model)}")
        first_call_and_launch(launch_figures(key, shown, model, state.store()))
if repeat_tab.open:
    with repeat_tab:
        st.subheader(f"Spread across repeats: {md(model)}")
        repeat_spread(repeat_figures(key, shown, model, state.store()))
if roofline_tab.open:
    with roofline_tab:
        st.subheader("Roofline: every model in view")
        roofline_plot(shown, key, engine)
if fail_tab.open:
    with fail_tab:
        failures_section(stats.failures(shown, cancelled=True))
if table_tab.open:
    with table_tab:
        export_table(shown, engine)
