"""Compare's three views: two sweeps (spec, environment, numbers matched configuration by configuration), the torch
versions the chosen sweeps ran (version against version), and two runs (spec, numbers and every latency sample)."""
import pandas as pd
import streamlit as st

from dashboard.charts import compare_bars
from dashboard.data import answers, diff, frame
from dashboard.data.jobs import export_records
from dashboard.data.plot_data import NOISY
from dashboard.data.series_labels import fold_modes, fold_request, folded_notes
from dashboard.markup import md
from dashboard.panels import answer_table, baseline_table, job_diff_view, results_filters, versiondiff
from dashboard.panels import compare_tables as tables
from dashboard.state import resources
from lab import axes
from lab.axes import folded_mode
from lab.checks import dynamic_text
from lab.spec import job_label


def compare_sweeps(df: pd.DataFrame, summaries: list, suffix: dict | None = None) -> None:
    labels = {s.id: s.label + (suffix or {}).get(s.id, "") for s in summaries}  # `suffix`: who submitted it, its tags
    ids = [s.id for s in summaries]
    by_id = {s.id: s for s in summaries}
    a0, b0 = tables.starting_pair(ids, {i: s.request.get("model") for i, s in by_id.items()},
                           set(df.loc[df["status"] == "succeeded", "sweep_id"]) if not df.empty else set())
    a, b = tables.pick_pair("Sweep", ids, labels, ("a", "b"), (a0, b0))
    if a is None or b is None:
        return
    pair = sweep_pair(results_filters.frame_key(df), a, b, df)
    nums = pair["nums"]
    both_ran = nums is not None and not nums.dropna(subset=["speedup A", "speedup B"]).empty
    tables_slot, chart_slot = st.container(), st.container()
    # the chart is sent first and drawn under the tables: its code (Vega's) is fetched while the tables' is run
    if both_ran:  # one side's bars alone compare nothing; an empty plot with made-up axes says nothing
        with chart_slot:
            fig, any_noisy = sweeps_figure(results_filters.frame_key(df), a, b, labels[a], labels[b], nums)
            st.altair_chart(fig, width="stretch", key="compare_speedup")
            if any_noisy:
                st.caption("Grey bars with a dashed outline: every run of that combination on that side was disturbed "
                           "by a measured cause (another process on the GPU or the worker's cores, throttled clocks): "
                           "its numbers are those runs', no finding either way.")
    with tables_slot:
        _sweeps_tables(pair, by_id[a], by_id[b])


def _sweeps_tables(pair: dict, sweep_a, sweep_b) -> None:
    """Spec, environment and numbers of two sweeps (sweep_pair's `pair`; `sweep_a`, `sweep_b`: their summaries)."""
    a, b, by_id = sweep_a.id, sweep_b.id, {sweep_a.id: sweep_a, sweep_b.id: sweep_b}
    rows_a, rows_b, nums, apart = pair["rows_a"], pair["rows_b"], pair["nums"], pair["apart"]
    c1, c2 = st.columns([3, 2])
    with c1:
        st.subheader("Spec")
        # the tags and note as submitted are not the sweep's: its record (below) holds them, edited since maybe
        spec = diff.side_by_side(*({k: v for k, v in fold_request(by_id[i].request).items() if k not in ("tags", "note")}
                                   for i in (a, b)))
        st.dataframe(tables.highlight_rows(spec), hide_index=True, width="stretch", height=tables.fit(len(spec)),
                     column_config={"field": st.column_config.TextColumn(width="small")})
    with c2:
        st.subheader("Environment")
        env = diff.side_by_side(diff.environment(rows_a), diff.environment(rows_b))
        st.dataframe(tables.highlight_rows(env), hide_index=True, width="stretch", height=tables.fit(len(env)))
        st.caption(f"A: {tables.jobs(by_id[a].total)} ({tables.counts(by_id[a].counts)}); "
                   f"B: {tables.jobs(by_id[b].total)} ({tables.counts(by_id[b].counts)}). Changed rows are highlighted.")
    engine = resources.engine()
    for side, sweep in (("A: ", sweep_a), ("B: ", sweep_b)):  # who ran it, its tags and note (db.team)
        baseline_table.record_line(engine, sweep.id, side)
    st.subheader("Numbers")
    for side, sweep in (("A", sweep_a), ("B", sweep_b)):
        baseline_table.show(engine, lambda i=sweep.id: answers.report(engine, sweep_ids=[i]), sweep.request.get("model"),
                            f"{side} against the baseline")
    for note in pair["folded"]:
        st.caption(":material/info: " + md(note))
    if rows_a.empty and rows_b.empty:
        st.info("Neither sweep has finished jobs yet.")
        return
    if pair["by_version"]:  # the two sweeps (or one, pinned to several) ran the same configurations under two versions
        st.markdown("**Torch versions**: the same configuration under each version these sweeps ran")
        versiondiff.show(pair["by_version"], key="compare_versions")
    tables.old_timing(rows_a, rows_b)
    matched = [c for c in diff.MATCH if c not in apart]
    if nums.dropna(subset=["speedup A", "speedup B"]).empty:
        st.warning(f"No configuration has results in both sweeps: jobs are matched on {', '.join(matched)}, "
                   "and these sweeps share no such combination with a succeeded job on each side (compare two runs "
                   "instead to set any two jobs side by side).")
    on_gpu = bool(pd.concat([rows_a["device"], rows_b["device"]]).eq("cuda").any())
    offered = [m for m in diff.SWEEP_METRICS if on_gpu or m not in diff.GPU_METRICS]  # no GPU clock on CPU-only data
    if any(m not in offered for m in st.session_state.get("metric") or []):
        st.session_state["metric"] = [m for m in st.session_state["metric"] if m in offered]
    metrics = st.pills("Metrics", offered, selection_mode="multi", key="metric", bind="query-params",
                       default=[m for m in ("speedup", "throughput_speedup", "gpu_speedup", "compiled_ms",
                                            diff.COLD) if m in offered]) or ["speedup"]
    table = diff.long_form(nums, metrics, same_workload=diff.same_workload(rows_a, rows_b))
    judge = tables.judged(by_id[a].request.get("model"), by_id[b].request.get("model"))
    st.dataframe(tables.highlight_changes(table, judge=judge), hide_index=True, width="stretch",
                 height=min(tables.fit(len(table)), 600))
    st.caption(("; ".join(f"**{c}** sets the sweeps apart ({va} → {vb}): jobs are not matched on it" for c, (va, vb)
                          in apart.items()) + ". " if apart else "")
               + f"Jobs are matched on {', '.join(matched) or 'nothing else'}; speedup, latencies, break-even and "
               "the cold first call (first_call_cold_s: runs that compiled from an empty cache) are each sweep's "
               "answer (as on Results), the other numbers medians over repeats. Δ% is B against A: green "
               f"where B is at least {diff.NOTABLE:.0%} better, red where worse; never for a steady-state change "
               f"smaller than {diff.NOISE_FACTOR:g}× the runs' spread (IQR / median of a job's round medians): inside "
               "the noise it is no finding; nor for a speedup or cold first call inside the two sweeps' 95% intervals "
               "together (each moves with its processes), or, for a cold first call with no interval yet, inside "
               f"{diff.COLD_MOVES:g}×: how far one process's cold compile moved. With one eager workload on both sides, "
               "eager is the control: it runs no compiled code, so when it moved, a compiled change of the same size is "
               "the machine, not the setting.")


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
    rows = answers.version_report(resources.engine(), sweep_ids=chosen)
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
                          + f"bs {r['batch_size']} · {r['config']}", "torch": v,
                          "speedup": s} for r in rows for v, s in ((r["torch_a"], r["speedup_a"]),
                                                                     (r["torch_b"], r["speedup_b"]))])
    plot = plot.drop_duplicates().dropna(subset=["speedup"])
    if not plot.empty:
        st.altair_chart(compare_bars.versions_speedup(plot), width="stretch", key="versions_speedup")


def compare_runs(df: pd.DataFrame) -> None:
    key = results_filters.frame_key(df)
    ids, labels, (a0, b0) = run_choices(key, df)
    a, b = tables.pick_pair("Run", ids, labels, ("ja", "jb"), (a0, b0))
    if a is None or b is None:
        return
    ra, rb = run_records(key, a, b)
    for note in folded_notes(fold_modes(df[df["job_id"].isin([a, b])])):
        st.caption(":material/info: " + md(note))
    c1, c2 = st.columns(2)
    with c1:
        st.subheader("Spec and status")
        keys = ["sweep", "status", "error", "model", "model_args", "task", "device", "dtype", *axes.FIELDS, "cache",
                "schedule", "iters", "timeout_s"]
        st.dataframe(tables.highlight_rows(diff.side_by_side({k: ra[k] for k in keys}, {k: rb[k] for k in keys})),
                     hide_index=True, width="stretch", height=tables.fit(len(keys)))
    with c2:
        st.subheader("Environment")
        # from the results table: a failed run's environment is its worker's
        env = diff.side_by_side(diff.environment(df[df["job_id"] == a]), diff.environment(df[df["job_id"] == b]))
        st.dataframe(tables.highlight_rows(env), hide_index=True, width="stretch")
        st.subheader("Numbers")
        # disturbed by a measured cause: out of the answer (a run an older worker flagged for its scatter is not)
        noisy = [(name, rec) for name, rec in (("A", ra), ("B", rb)) if rec.get("disturbed") is True]
        for name, rec in noisy:
            st.warning(f"Run {name} (#{rec['job_id']}) was disturbed: {md(rec.get('noise_note') or 'a cause from outside')}. "
                       "Its numbers are out of the answer; no change against it is coloured.", icon=":material/warning:")
        judge = tables.judged(ra["model"], rb["model"]) and not noisy
        st.dataframe(tables.highlight_changes(diff.run_numbers(ra, rb), judge=judge), hide_index=True, width="stretch")
    fig = samples_figure(key, a, b, ra, rb)
    if fig is not None:
        st.altair_chart(fig, width="stretch", key="compare_samples")
    job_diff_view.show(resources.engine(), ra, rb)  # what differs in the compile, and the code's diff


@st.cache_data(max_entries=4, show_spinner=False)
def run_choices(key: tuple, _df: pd.DataFrame) -> tuple[list, dict, tuple]:
    """The runs the pickers offer from the results table `key` names (newest first, succeeded ones ahead of the
    rest; at most 2000), their labels and the pair the view opens on: once per results table, not per rerun."""
    recent = _df.sort_values("job_id", ascending=False).head(2000)
    recent = pd.concat([recent[recent["status"] == "succeeded"], recent[recent["status"] != "succeeded"]])
    recent = fold_modes(recent)  # off CUDA under the mode a run compiled with, as on Results
    labels = {int(r.job_id): f"#{r.job_id} {job_label(r._asdict())} · {r.status}" for r in recent.itertuples()}
    ids = list(labels)
    ok = recent.loc[recent["status"] == "succeeded", "job_id"].astype(int)
    return ids, labels, tables.starting_pair(ids, dict(zip(recent["job_id"].astype(int), recent["model"])), set(ok))


@st.cache_data(max_entries=16, show_spinner=False)
def run_records(key: tuple, a: int, b: int) -> tuple[dict, dict]:
    """Runs A's and B's export records with their samples (what the run view shows), off CUDA under the mode they
    compiled with: read once per pair and results table."""
    recs = {r["job_id"]: {**r, "dynamic": dynamic_text(r["dynamic"]), "mode": folded_mode(r["mode"], r["device"])}
            for r in export_records(resources.engine(), job_ids=[a, b], include_raw=True)}
    return recs[a], recs[b]


@st.cache_resource(max_entries=16, show_spinner=False)
def samples_figure(key: tuple, a: int, b: int, _ra: dict, _rb: dict):
    """Every kept latency sample of runs A and B (run_records' `_ra`, `_rb`) as boxes, or None without samples: built
    once per pair."""
    samples = []
    for name, rec in (("A", _ra), ("B", _rb)):
        for side in ("eager", "compiled"):
            for block in (rec.get("samples") or {}).get(side, []) or []:
                samples += [{"run": f"{name} #{rec['job_id']}" + (" ⚠ noisy" if rec.get("noisy") is True else ""),
                             "side": side, "ms": v} for v in block]
    return compare_bars.samples_box(samples) if samples else None


def sweep_answers(sweep_ids: list[int]) -> dict:
    """Job id -> its configuration's answer row, each sweep answered on its own (two sweeps of one configuration are
    two answers here, not one pooled): Compare's speedups and latencies are the answer's (diff.numbers)."""
    engine = resources.engine()
    priors = answer_table.priors(resources.store().version, engine)
    return {int(j): row for sid in sweep_ids for row in answers.report(engine, sweep_ids=[sid], priors=priors)
            for j in row.job_ids.split()}


@st.cache_data(max_entries=16, show_spinner=False)
def sweep_pair(key: tuple, a: int, b: int, _df: pd.DataFrame) -> dict:
    """What the sweeps view computes from the jobs of sweeps A and B in the results table `key` names
    (results_filters.frame_key): their rows with every field, each sweep's answer matched configuration by
    configuration, the torch versions they ran. Once per pair and results table, for every session (st.cache_data):
    reading the rows and answering both sweeps is slow, and every click on the page reruns it."""
    # every field of these jobs; off CUDA under the mode they compiled with, as on Results (series_labels.fold_modes):
    # on the CPU a sweep stored as reduce-overhead and one stored as default ran the same compile, so they are matched
    both = fold_modes(frame.complete(_df[_df["sweep_id"].isin([a, b])], resources.engine()))
    rows_a, rows_b = both[both["sweep_id"] == a], both[both["sweep_id"] == b]
    out = {"rows_a": rows_a, "rows_b": rows_b, "folded": folded_notes(both), "by_version": [],
           "nums": None, "apart": {}}
    if rows_a.empty and rows_b.empty:
        return out
    out["by_version"] = answers.version_report(resources.engine(), sweep_ids=sorted({a, b}))
    out["nums"] = diff.numbers(rows_a, rows_b, sweep_answers(sorted({a, b})))
    out["apart"] = diff.compared(rows_a, rows_b)
    return out


@st.cache_resource(max_entries=16, show_spinner=False)
def sweeps_figure(key: tuple, a: int, b: int, label_a: str, label_b: str, _nums: pd.DataFrame) -> tuple:
    """A's and B's speedups side by side (sweep_pair's numbers of the results table `key` names) and whether a side's
    bars are greyed as noisy: built once per pair, not on every rerun."""
    plot = pd.concat([_nums.assign(sweep=f"A: {label_a}", speedup=_nums["speedup A"], noisy=_nums["noisy A"]),
                      _nums.assign(sweep=f"B: {label_b}", speedup=_nums["speedup B"], noisy=_nums["noisy B"])]
                     ).dropna(subset=["speedup"])
    plot["combination"] = ("bs " + plot["batch_size"].astype(str) + " · " + plot["backend"] + "/" + plot["mode"]
                           + " · dynamic=" + plot["dynamic"].astype(str) + " · fullgraph=" + plot["fullgraph"].astype(str))
    return compare_bars.sweeps_speedup(plot), bool(plot["noisy"].any())
