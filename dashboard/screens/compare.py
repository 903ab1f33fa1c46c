"""Compare: two sweeps (or two runs) side by side; what differs in spec, environment and numbers is
highlighted. The choice lives in the URL (?kind=sweeps&a=...&b=...)."""
import pandas as pd
import plotly.express as px
import streamlit as st

from dashboard import diff, frame, state, versiondiff
from dashboard.labels import fold_modes, fold_request, folded_notes
from dashboard.markup import md
from dashboard.markup import plot as plot_text
from dashboard.stats import NOISY
from db import reports, views
from db.results import export_records
from lab import axes
from lab.axes import folded_mode
from lab.checks import dynamic_text

CHANGED = "background-color: rgba(255, 196, 0, 0.28)"
BETTER = "background-color: rgba(44, 160, 44, 0.25)"
WORSE = "background-color: rgba(214, 39, 40, 0.25)"


def highlight_rows(table: pd.DataFrame):
    """Rows whose A and B differ, marked; the `differs` column is only used for the marking."""
    differs = table["differs"]
    shown = table.drop(columns=["differs"])
    return shown.style.apply(lambda row: [CHANGED if differs[row.name] else ""] * len(row), axis=1)


def fit(rows: int) -> int:
    return 35 * (rows + 1) + 3


DIFFERENT_MODELS = ("A runs {a}, B runs {b}: the numbers sit side by side, but a difference between two models is "
                    "no better or worse, so nothing is coloured.")


def highlight_changes(table: pd.DataFrame, judge: bool = True):
    """The Δ% cell of each (metric) row coloured where B is notably better (green) or worse (red) than A
    (never when not `judge`: two different models). Numbers are shown as text: st.dataframe draws a missing
    number as "None" whatever the Styler says."""
    colours = [{"better": BETTER, "worse": WORSE}.get(diff.verdict(r["metric"], r["Δ%"], r.get("note", "")), "")
               if judge else "" for _, r in table.iterrows()]
    shown = table.assign(A=table["A"].map(_number_text), B=table["B"].map(_number_text),
                         **{"Δ%": table["Δ%"].map(lambda v: "–" if pd.isna(v) else f"{v:+.1f}%")})
    return shown.style.apply(lambda row: [colours[row.name] if col == "Δ%" else "" for col in row.index], axis=1)


def _number_text(value) -> str:
    if value is None or pd.isna(value):
        return "–"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def pick(label: str, options: list, labels: dict, key: str, fallback):
    """A selectbox whose choice is always in the URL by id (?a=3), starting from `fallback`."""
    state.url_choice(key, options, fallback)
    value = st.selectbox(label, options, format_func=lambda v: labels.get(v, str(v)), key=key,
                         placeholder="choose one")
    state.write_url_choice(key, value)
    return value


def starting_pair(ids: list, model: dict, measured) -> tuple:
    """The pair Compare opens on (`ids` newest first, `model` by id): B the newest with results (a cancelled
    or still queued one has nothing to compare), A the newest earlier one with results of the same model
    (the same experiment run again, say), else the next newest with results."""
    with_results = [i for i in ids if i in measured] or ids
    if not with_results:
        return None, None
    b = with_results[0]
    rest = [i for i in with_results[1:] if model[i] == model[b]] or with_results[1:]
    return (rest[0] if rest else None), b


def judged(model_a: str, model_b: str) -> bool:
    """Whether changes between A and B may be called better or worse: not between two models (a warning
    says so)."""
    if model_a != model_b:
        st.warning(DIFFERENT_MODELS.format(a=md(model_a), b=md(model_b)))
    return model_a == model_b


def compare_sweeps(df: pd.DataFrame, summaries: list) -> None:
    labels = {s.id: s.label for s in summaries}
    ids = [s.id for s in summaries]
    by_id = {s.id: s for s in summaries}
    a0, b0 = starting_pair(ids, {i: s.request.get("model") for i, s in by_id.items()},
                           set(df.loc[df["status"] == "succeeded", "sweep_id"]) if not df.empty else set())
    c1, c2 = st.columns(2)
    with c1:
        a = pick("Sweep A", ids, labels, "a", a0)
    with c2:
        b = pick("Sweep B", ids, labels, "b", b0)
    if a is None or b is None:
        st.info("Choose two sweeps.")
        return
    # every field of these jobs; off CUDA under the mode they compiled with, as on Results (labels.fold_modes): on the
    # CPU a sweep stored as reduce-overhead and one stored as default ran the same compile, so they are matched
    both = fold_modes(frame.complete(df[df["sweep_id"].isin([a, b])], state.engine()))
    folded = folded_notes(both)
    rows_a, rows_b = both[both["sweep_id"] == a], both[both["sweep_id"] == b]
    c1, c2 = st.columns([3, 2])
    with c1:
        st.subheader("Spec")
        spec = diff.side_by_side(fold_request(by_id[a].request), fold_request(by_id[b].request))
        st.dataframe(highlight_rows(spec), hide_index=True, width="stretch", height=fit(len(spec)),
                     column_config={"field": st.column_config.TextColumn(width="small")})
    with c2:
        st.subheader("Environment")
        env = diff.side_by_side(diff.environment(rows_a), diff.environment(rows_b))
        st.dataframe(highlight_rows(env), hide_index=True, width="stretch", height=fit(len(env)))
        st.caption(f"A: {_jobs(by_id[a].total)} ({_counts(by_id[a].counts)}); "
                   f"B: {_jobs(by_id[b].total)} ({_counts(by_id[b].counts)}). Changed rows are highlighted.")
    st.subheader("Numbers")
    for note in folded:
        st.caption(":material/info: " + md(note))
    if rows_a.empty and rows_b.empty:
        st.info("Neither sweep has finished jobs yet.")
        return
    by_version = reports.version_report(state.engine(), sweep_ids=sorted({a, b}))
    if by_version:  # the two sweeps (or one, pinned to several) ran the same configurations under two torch versions
        st.markdown("**Torch versions**: the same configuration under each version these sweeps ran")
        versiondiff.show(by_version, key="compare_versions")
    old_timing(rows_a, rows_b)
    nums = diff.numbers(rows_a, rows_b)
    apart = diff.compared(rows_a, rows_b)
    matched = [c for c in diff.MATCH if c not in apart]
    both_ran = nums.dropna(subset=["speedup A", "speedup B"])
    if both_ran.empty:
        st.warning(f"No configuration has results in both sweeps: jobs are matched on {', '.join(matched)}, "
                   "and these sweeps share no such combination with a succeeded job on each side (compare two runs "
                   "instead to set any two jobs side by side).")
    metrics = st.pills("Metrics", list(diff.METRICS), selection_mode="multi", key="metric", bind="query-params",
                       default=["speedup", "throughput_speedup", "gpu_speedup", "compiled_ms",
                                "compiled_first_call_s"]) or ["speedup"]
    table = diff.long_form(nums, metrics, same_workload=diff.same_workload(rows_a, rows_b))
    judge = judged(by_id[a].request.get("model"), by_id[b].request.get("model"))
    st.dataframe(highlight_changes(table, judge=judge), hide_index=True, width="stretch",
                 height=min(fit(len(table)), 600))
    st.caption(("; ".join(f"**{c}** sets the sweeps apart ({va} → {vb}): jobs are not matched on it" for c, (va, vb)
                          in apart.items()) + ". " if apart else "")
               + f"Jobs are matched on {', '.join(matched) or 'nothing else'}; medians over repeats. Δ% is B against A: green "
               f"where B is at least {diff.NOTABLE:.0%} better, red where worse; never for a steady-state change "
               f"smaller than {diff.NOISE_FACTOR:g}× the runs' spread (IQR / median of a job's round medians): inside "
               "the noise it is no finding. With one eager workload on both sides, eager is the control: it runs no "
               "compiled code, so when it moved, a compiled change of the same size is the machine, not the setting.")
    if both_ran.empty:
        return  # one side's bars alone compare nothing; an empty plot with made-up axes says nothing
    plot = pd.concat([nums.assign(sweep=f"A: {plot_text(labels[a])}", speedup=nums["speedup A"], noisy=nums["noisy A"]),
                      nums.assign(sweep=f"B: {plot_text(labels[b])}", speedup=nums["speedup B"], noisy=nums["noisy B"])]
                     ).dropna(subset=["speedup"])
    plot["combination"] = ("bs " + plot["batch_size"].astype(str) + " · " + plot["backend"] + "/" + plot["mode"]
                           + " · dynamic=" + plot["dynamic"].astype(str) + " · fullgraph=" + plot["fullgraph"].astype(str))
    fig = px.bar(plot, x="combination", y="speedup", color="sweep", barmode="group",
                 color_discrete_sequence=["#1f77b4", "#ff7f0e"],
                 labels={"combination": "", "sweep": ""})
    grey_noisy(fig, plot)
    fig.add_hline(y=1.0, line=dict(dash="dot", color="#444"))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), title="Speedup (latency), A vs B",
                      legend=dict(orientation="h", y=-0.3))
    st.plotly_chart(fig, key="compare_speedup")
    if plot["noisy"].any():
        st.caption("Greyed, hatched bars: every run of that combination on that side was noisy (its rounds spread past "
                   "5%, or one host-sensitive process): out of the answer, and no finding either way.")


def grey_noisy(fig, plot: pd.DataFrame) -> None:
    """Grey and hatch the bars of combinations whose runs on that side were all noisy (lab.noise): drawn, so
    nothing disappears, but not as a number to read."""
    for trace in fig.data:
        noisy = plot.loc[plot["sweep"] == trace.name, "noisy"].tolist()
        if any(noisy) and len(noisy) == len(trace.y):
            trace.marker.color = ["#c8c8c8" if n else trace.marker.color for n in noisy]
            trace.marker.pattern.shape = ["/" if n else "" for n in noisy]
            trace.hovertemplate = (trace.hovertemplate or "") + "<br>%{customdata[0]}"
            trace.customdata = [["⚠ noisy runs only: out of the answer" if n else ""] for n in noisy]


def compare_versions(df: pd.DataFrame, summaries: list) -> None:
    """Every configuration the chosen sweeps ran under two torch versions or more, version against version."""
    labels = {s.id: s.label for s in summaries}
    versioned = df[df["status"] == "succeeded"].groupby("sweep_id")["torch_version"].nunique() if not df.empty else None
    several = [s.id for s in summaries if versioned is not None and versioned.get(s.id, 0) > 1]
    ids = [s.id for s in summaries]
    if "vs" not in st.session_state:  # from the link (?vs=3&vs=4), else the newest sweep that ran several versions
        linked = [i for i in ids if str(i) in st.query_params.get_all("vs")]
        st.session_state["vs"] = linked or several[:1] or ids[:2]
    chosen = st.multiselect("Sweeps", [s.id for s in summaries], format_func=lambda i: labels.get(i, str(i)), key="vs",
                            help="The sweeps whose jobs are set version against version (a sweep pinned to several "
                                 "versions with --torch, or one sweep per version)")
    st.query_params["vs"] = [str(i) for i in chosen]
    if not chosen:
        st.info("Choose one sweep or more.")
        return
    rows = reports.version_report(state.engine(), sweep_ids=chosen)
    if not rows:
        seen = sorted(df.loc[df["sweep_id"].isin(chosen) & (df["status"] == "succeeded"), "torch_version"].dropna()
                      .unique())
        st.info(f"No configuration in these sweeps ran under two torch versions (versions seen: "
                f"{md(', '.join(seen)) or 'none'}). Pin a sweep to several: `--torch 2.13 --torch 2.14`, or "
                "**Torch versions** on Submit.")
        return
    versiondiff.show(rows, key="versions_table")
    # a configuration with noisy runs only on a side is marked as on every plot (the table says which side)
    plot = pd.DataFrame([{"configuration": (f"{NOISY} · " if r["noisy"] else "")
                          + f"bs {r['batch_size']} · {plot_text(r['config'])}", "torch": plot_text(v),
                          "speedup": s} for r in rows for v, s in ((r["torch_a"], r["speedup_a"]),
                                                                     (r["torch_b"], r["speedup_b"]))])
    plot = plot.drop_duplicates().dropna(subset=["speedup"])
    if not plot.empty:
        fig = px.bar(plot, x="configuration", y="speedup", color="torch", barmode="group",
                     labels={"configuration": "", "torch": "torch"})
        fig.add_hline(y=1.0, line=dict(dash="dot", color="#444"))
        fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10), title="Speedup (latency) per torch version",
                          legend=dict(orientation="h", y=-0.3))
        st.plotly_chart(fig, key="versions_speedup")


def old_timing(rows_a: pd.DataFrame, rows_b: pd.DataFrame) -> None:
    """Say so when a side holds results timed before caller latency was (timing protocol 1): on CUDA their
    only clock was GPU time, so their speedup (latency) is empty and only gpu_speedup compares."""
    old = [name for name, rows in (("A", rows_a), ("B", rows_b))
           if "timing_protocol" in rows and (rows["timing_protocol"] == 1).any()]
    if old:
        st.caption(f"{' and '.join(old)} hold{'s' if len(old) == 1 else ''} results timed before caller latency was "
                   "measured (timing protocol 1): their CUDA numbers are GPU time only (gpu_speedup, compiled_gpu_ms), "
                   "never set against latency.")


def _jobs(n: int) -> str:
    return f"{n} job{'s' if n != 1 else ''}"


def _counts(counts: dict) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def compare_runs(df: pd.DataFrame) -> None:
    # newest first, succeeded runs ahead of the rest
    recent = df.sort_values("job_id", ascending=False).head(2000)
    recent = pd.concat([recent[recent["status"] == "succeeded"], recent[recent["status"] != "succeeded"]])
    recent = fold_modes(recent)  # off CUDA under the mode a run compiled with, as on Results
    labels = {int(r.job_id): f"#{r.job_id} {r.model} bs={r.batch_size} {r.backend}/{r.mode} dynamic={r.dynamic}"
                             f"{' fullgraph' if r.fullgraph == 'true' else ''} · {r.status}"
              for r in recent.itertuples()}
    ids = list(labels)
    ok = recent.loc[recent["status"] == "succeeded", "job_id"].astype(int)
    a0, b0 = starting_pair(ids, dict(zip(recent["job_id"].astype(int), recent["model"])), set(ok))
    c1, c2 = st.columns(2)
    with c1:
        a = pick("Run A", ids, labels, "ja", a0)
    with c2:
        b = pick("Run B", ids, labels, "jb", b0)
    if a is None or b is None:
        st.info("Choose two runs.")
        return
    recs = {r["job_id"]: {**r, "dynamic": dynamic_text(r["dynamic"]), "mode": folded_mode(r["mode"], r["device"])}
            for r in export_records(state.engine(), job_ids=[a, b], include_raw=True)}
    ra, rb = recs[a], recs[b]
    for note in folded_notes(fold_modes(df[df["job_id"].isin([a, b])])):
        st.caption(":material/info: " + md(note))
    c1, c2 = st.columns(2)
    with c1:
        st.subheader("Spec and status")
        keys = ["sweep", "status", "error", "model", "model_args", "task", "device", "dtype", *axes.FIELDS, "cache",
                "schedule", "iters", "timeout_s"]
        st.dataframe(highlight_rows(diff.side_by_side({k: ra[k] for k in keys}, {k: rb[k] for k in keys})),
                     hide_index=True, width="stretch", height=fit(len(keys)))
    with c2:
        st.subheader("Environment")
        # from the results table: a failed run's environment is its worker's
        env = diff.side_by_side(diff.environment(df[df["job_id"] == a]), diff.environment(df[df["job_id"] == b]))
        st.dataframe(highlight_rows(env), hide_index=True, width="stretch")
        st.subheader("Numbers")
        noisy = [(name, rec) for name, rec in (("A", ra), ("B", rb)) if rec.get("noisy") is True]
        for name, rec in noisy:
            st.warning(f"Run {name} (#{rec['job_id']}) is noisy: {md(rec.get('noise_note') or 'spread past 5%')}. Its "
                       "numbers are out of the answer; no change against it is coloured.", icon=":material/warning:")
        st.dataframe(highlight_changes(diff.run_numbers(ra, rb), judge=judged(ra["model"], rb["model"]) and not noisy),
                     hide_index=True, width="stretch")
    samples = []
    for name, rec in (("A", ra), ("B", rb)):
        for side in ("eager", "compiled"):
            for block in (rec.get("samples") or {}).get(side, []) or []:
                samples += [{"run": f"{name} #{rec['job_id']}" + (" ⚠ noisy" if rec.get("noisy") is True else ""),
                             "side": side, "ms": v} for v in block]
    if samples:
        fig = px.box(pd.DataFrame(samples), x="run", y="ms", color="side", points="outliers",
                     color_discrete_map={"eager": "#7f7f7f", "compiled": "#1f77b4"},
                     title="Every kept latency sample (ms per synchronous call)")
        fig.update_layout(height=380, margin=dict(l=10, r=10, t=40, b=10))
        ms = pd.Series([x["ms"] for x in samples])
        if (ms > 0).all() and ms.max() / ms.min() > 20:  # a few slow outliers would flatten every box
            fig.update_yaxes(type="log", title="ms per call (log)", dtick=1)  # decades only: "5" read as 0.5
        st.plotly_chart(fig, key="compare_samples")


st.title("Compare")
engine = state.engine()
summaries = views.sweeps(engine)
if not summaries:
    st.info("Nothing to compare yet: submit a sweep first.")
    st.stop()
kind = st.segmented_control("Compare", ["sweeps", "runs", "torch versions"], key="kind", bind="query-params",
                            default="sweeps", required=True)
df = state.results()
if kind == "sweeps":
    compare_sweeps(df, summaries)
elif kind == "torch versions":
    compare_versions(df, summaries)
elif df.empty:
    st.info("No finished runs yet.")
else:
    compare_runs(df)
