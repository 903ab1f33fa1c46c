"""What the plots draw: medians per configuration and batch size, failures, noise and host-bound marks, eager
drift between jobs, the first call's parts, and the three clocks under the headline's names."""
from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.data.frame import NUMBERS, WARM_MISS, json_dict
from dashboard.data.series_labels import with_cache_state
from lab import first_call, noise
from lab.axes import FIELDS

# The three clocks of a result (runner/timing.py): each one's columns, under the headline's names, for the plots.
# Latency is the headline (what a caller waits for per call); the others answer their own questions.
CLOCKS = {
    "latency": {"label": "latency (what a caller waits for per call)", "speedup": "speedup",
                "eager_ms": "eager_ms", "compiled_ms": "compiled_ms"},
    "throughput": {"label": "throughput (back-to-back calls, per call)", "speedup": "throughput_speedup",
                   "eager_ms": "eager_throughput_ms", "compiled_ms": "compiled_throughput_ms"},
    "gpu": {"label": "GPU time (kernels only: a diagnosis of the generated code)", "speedup": "gpu_speedup",
            "eager_ms": "eager_gpu_ms", "compiled_ms": "compiled_gpu_ms"},
}
_BANDS = ("eager_p10_ms", "eager_p90_ms", "compiled_p10_ms", "compiled_p90_ms")  # latency's percentiles


def answering(df: pd.DataFrame, by: list[str]) -> pd.Series:
    """Per succeeded row, whether the run answers for its group, as lab.noise decides for lab.answer: an undisturbed
    run does; a run a measured cause disturbed does only where every run of its group was disturbed."""
    ok = df.loc[df["status"] == "succeeded"]
    disturbed = ok["disturbed"].eq(True) if "disturbed" in ok else pd.Series(False, index=ok.index)
    if not disturbed.any():
        return pd.Series(True, index=ok.index)
    groups = zip(*(ok[b].astype(object).where(ok[b].notna(), None) for b in by))  # NaN-free keys, as counting asks
    return pd.Series(noise.counting(disturbed.tolist(), groups), index=ok.index, dtype=bool)


def medians(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Median of every number over the runs that answer for one configuration, and how many runs that is: a run a
    measured cause disturbed is left out where an undisturbed one exists. A configuration whose every run was
    disturbed keeps their medians, flagged `only_noisy`, so a plot can grey it out instead of dropping it."""
    ok = df.loc[df["status"] == "succeeded", list(by) + list(NUMBERS)]
    use = ok[answering(df, by)]
    disturbed = (df.loc[use.index, "disturbed"].eq(True) if "disturbed" in df
                 else pd.Series(False, index=use.index))
    grouped = use.groupby(by, dropna=False, sort=True)
    agg = grouped[list(NUMBERS)].median()
    agg["runs"] = grouped.size()
    agg["only_noisy"] = disturbed.groupby([use[b] for b in by], dropna=False).all()
    return agg.reset_index()


NOISY = "⚠ noisy"  # how a configuration whose every run was disturbed is marked wherever it is drawn


def only_noisy(agg: pd.DataFrame) -> pd.Series:
    """Per row of `medians`' output: whether every run of it was disturbed by a measured cause (lab.noise, through
    `answering`). Every plot draws such a row in its own colour and marks it NOISY (hollow, hatched); none draws it as
    a clean result, none drops it."""
    return agg["only_noisy"].eq(True) if "only_noisy" in agg else pd.Series(False, index=agg.index)


def noisy_series(agg: pd.DataFrame) -> set:
    """The `series` of the rows with disturbed runs only: what a plot with one row per series hatches."""
    return set(agg.loc[only_noisy(agg), "series"]) if "series" in agg else set()


def noisy_note(agg: pd.DataFrame) -> str:
    """One line naming the series whose every run was disturbed, and by what (their noise note): the caption under
    the plots that mark them. Empty when there are none."""
    rows = agg[only_noisy(agg)]
    if rows.empty:
        return ""
    why = rows["noise_note"] if "noise_note" in rows else pd.Series(None, index=rows.index)
    parts = [f"{r.series} (all {int(r.runs)} run{'s' * (int(r.runs) != 1)}: "
             + (w if isinstance(w, str) and w else "disturbed") + ")" for r, w in zip(rows.itertuples(), why)]
    return (f"{NOISY}, marked on every plot (hollow points, hatched bars): " + "; ".join(parts)
            + ". Every run was disturbed from outside, so these are their numbers; re-run it when nothing else runs "
              "on the machine.")


def answered_break_even(agg: pd.DataFrame, view: pd.DataFrame, answer_rows: list[dict]) -> pd.DataFrame:
    """`agg` with a configuration's break-even calls and speedup taken from the answer (lab.answer's rows: its quiet
    runs, the eager first call pooled over the batch size's runs) wherever the answer's row stands for the same jobs
    (its `job_ids`, the jobs of the row's configuration and batch size in `view`), so the break-even chart and the
    answer table never print two counts for one set of runs. Matched by jobs, not by label: the plots keep apart
    what the answer pools (a warm-cache row beside a cold one), and those rows keep their own medians. A row whose
    every run was disturbed takes the answer's numbers too, which the chart marks."""
    out = agg.assign(**dict.fromkeys((*PAID_BOUNDS, "speedup_ci_low"), np.nan))
    for i, row in _answer_rows(out, view, answer_rows):
        for col in ("break_even_calls", "speedup", "speedup_ci_low", *PAID_BOUNDS):
            out.at[i, col] = np.nan if row.get(col) is None else row[col]
    return out


# the calls it pays off after at its intervals' ends (lab.break_even.break_even_range), the answer's, NaN where none
PAID_BOUNDS = ("break_even_low", "break_even_high")


COLD_BOUNDS = ("first_call_cold_low", "first_call_cold_high")
SPEEDUP_BOUNDS = ("speedup_ci_low", "speedup_ci_high")


def answered_speedup(agg: pd.DataFrame, view: pd.DataFrame, answer_rows: list[dict]) -> pd.DataFrame:
    """`agg` (latency's) with each configuration's speedup and its 95% interval (SPEEDUP_BOUNDS, NaN where none) from
    the answer, matched by jobs as answered_break_even matches them: the Speedup chart's point is the answer table's
    number, with how far it can be trusted. Rows the answer does not stand for keep their own medians, unbracketed."""
    out = agg.assign(**dict.fromkeys(SPEEDUP_BOUNDS, np.nan))
    for i, row in _answer_rows(out, view, answer_rows):
        for col in ("speedup", *SPEEDUP_BOUNDS):
            out.at[i, col] = np.nan if row.get(col) is None else row[col]
    return out


def answered_cold(agg: pd.DataFrame, view: pd.DataFrame, answer_rows: list[dict]) -> pd.DataFrame:
    """`agg` (first_calls') with each configuration's cold first call interval from the answer (lab.first_call.bounds:
    COLD_BOUNDS, NaN where it has none), matched by jobs as answered_break_even matches them."""
    out = agg.assign(**dict.fromkeys(COLD_BOUNDS, np.nan))
    for i, row in _answer_rows(out, view, answer_rows):
        for col in COLD_BOUNDS:
            out.at[i, col] = np.nan if row.get(col) is None else row[col]
    return out


def _answer_rows(agg: pd.DataFrame, view: pd.DataFrame, answer_rows: list[dict]):
    """(index in `agg`, answer row) for each of agg's rows whose configuration and batch size's jobs in `view` are
    the jobs of one answer row (its `job_ids`; cancelled jobs are in none)."""
    answered = {frozenset(int(j) for j in r["job_ids"].split()): r for r in answer_rows}
    counted = view[view["status"] != "cancelled"]  # the answer leaves cancelled jobs out
    jobs = counted.groupby(["config", "batch_size"])["job_id"].agg(frozenset)
    for i, config, bs in zip(agg.index, agg["config"], agg["batch_size"]):
        row = answered.get(jobs.get((config, bs)))
        if row is not None:
            yield i, row


def summarize(view: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the plots draw: medians per (config, batch size) with their `series` label, and the failures."""
    agg = medians(view, ["config", "baseline", "batch_size"])
    several = view["batch_size"].nunique() > 1
    agg["series"] = agg["config"] + (" · bs " + agg["batch_size"].astype(str) if several else "")
    return agg, failures(view)


FIRST_CALL_KINDS = {k: f"first_call_{k}_s" for k in first_call.KINDS}  # the answer table's column per kind


def first_calls(view: pd.DataFrame) -> pd.DataFrame:
    """`summarize`'s medians for the warmup plot, with each series' compiled first calls separated into cold, warm
    and portable as the answer table separates them (lab.first_call, over the succeeded runs): FIRST_CALL_KINDS'
    columns and `<kind>_runs`. A process repeat compiles from its first run's cache: warm, never a cold figure; a cold
    one whose compile was disturbed counts as the answer counts it (lab.first_call.kept)."""
    agg = summarize(view)[0]
    ok = view[view["status"] == "succeeded"]
    kinds = first_call_kinds(ok)
    shaken = [_flag(v) is True for v in ok.get("first_call_disturbed", pd.Series(None, index=ok.index, dtype=object))]
    found = {}
    for key, idx in ok.groupby(["config", "batch_size"], dropna=False).indices.items():
        seconds = ok["compiled_first_call_s"].iloc[idx].tolist()
        keep = idx[first_call.kept([kinds[i] for i in idx], seconds, [shaken[i] for i in idx])]  # as the answer
        calls = first_call.separate(ok["job_id"].iloc[keep], ok["compiled_first_call_s"].iloc[keep],
                                    [kinds[i] for i in keep])
        found[key] = {**{col: calls[k].seconds if k in calls else np.nan for k, col in FIRST_CALL_KINDS.items()},
                      **{f"{k}_runs": calls[k].runs if k in calls else 0 for k in FIRST_CALL_KINDS}}
    columns = [*FIRST_CALL_KINDS.values(), *(f"{k}_runs" for k in FIRST_CALL_KINDS)]
    rows = [found.get((c, b), dict.fromkeys(columns, np.nan)) for c, b in zip(agg["config"], agg["batch_size"])]
    return agg.assign(**pd.DataFrame(rows, index=agg.index, columns=columns))


def first_call_kinds(rows: pd.DataFrame) -> list[str]:
    """Per row, what its compiled first call compiled from (lab.first_call.kind): as the run recorded it, its spec's
    cache, and the graph cache's answer as the result row holds it, else as the detail's counters tell it."""
    missing = pd.Series(None, index=rows.index, dtype=object)
    column = {c: rows.get(c, missing).tolist() for c in ("first_call_cache", "cache", "graph_cache_hit", "cache_state")}
    hits = [_flag(h) if _flag(h) is not None else (False if state == WARM_MISS else None)
            for h, state in zip(column["graph_cache_hit"], column["cache_state"])]
    return [first_call.kind(_text(r), _text(c), h) for r, c, h in zip(column["first_call_cache"], column["cache"], hits)]


def _text(v) -> str | None:
    return v if isinstance(v, str) else None


def _flag(v) -> bool | None:
    """A stored flag as True / False / None (SQLite hands back 0 / 1, a numeric column NaN)."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else bool(v)


def failures(df: pd.DataFrame, cancelled: bool = False) -> pd.DataFrame:
    """Every job in view that failed, timed out or crashed, with its reason (never dropped from a plot).
    A job a person cancelled says nothing about its configuration: it is left out unless `cancelled`."""
    cols = [c for c in ("job_id", "sweep", "status", "error", "attempts", "model", *FIELDS, "config", "series")
            if c in df.columns]
    bad = df.loc[(df["status"] != "succeeded") & (cancelled | (df["status"] != "cancelled")), cols]
    return bad.assign(error=bad["error"].fillna(bad["status"]))


BREAKDOWN_PARTS = ("dynamo tracing", "aot autograd", "inductor lowering", "codegen + kernel compile", "autotuning",
                   "other (run, guards)")  # runner.introspect.compile_breakdown's keys, in the order they happen
NO_BREAKDOWN = "first call (no breakdown recorded)"


def with_noise(agg: pd.DataFrame, view: pd.DataFrame) -> pd.DataFrame:
    """`agg` (summarize) plus, per (config, batch size), how many runs a measured cause disturbed and left out
    (lab.noise) with the cause, and the largest spread of either side; and how many were host-bound (the GPU idle
    half of a call or more: runner.stats.HOST_BOUND), with one's note."""
    ok = view.loc[view["status"] == "succeeded", ["config", "batch_size", "eager_spread", "compiled_spread"]]
    dropped = (view.loc[ok.index, "measure_recompiles"] if "measure_recompiles" in view
               else pd.Series(0, index=ok.index)).fillna(0)
    bound = view.loc[ok.index, "host_bound"] if "host_bound" in view else pd.Series(None, index=ok.index)
    note = view.loc[ok.index, "host_note"] if "host_note" in view else pd.Series(None, index=ok.index)
    why = view.loc[ok.index, "noise_note"] if "noise_note" in view else pd.Series(None, index=ok.index)
    left_out = ~answering(view, ["config", "batch_size"])
    disturbed = view.loc[ok.index, "disturbed"].eq(True) if "disturbed" in view else pd.Series(False, index=ok.index)
    ok = ok.assign(noisy_runs=left_out,
                   max_spread=ok[["eager_spread", "compiled_spread"]].max(axis=1),
                   recompiled_runs=dropped > 0, dropped_calls=dropped,
                   host_bound_runs=bound.eq(True), host_note=note.where(bound.eq(True)),
                   noise_note=why.where(disturbed))
    noise = ok.groupby(["config", "batch_size"], dropna=False).agg(
        noisy_runs=("noisy_runs", "sum"), max_spread=("max_spread", "max"), recompiled_runs=("recompiled_runs", "sum"),
        dropped_calls=("dropped_calls", "sum"), host_bound_runs=("host_bound_runs", "sum"),
        host_note=("host_note", "first"), noise_note=("noise_note", "first")).reset_index()
    return agg.merge(noise, on=["config", "batch_size"], how="left")


def eager_drift(agg: pd.DataFrame, least: float = 0.10) -> dict | None:
    """The largest gap between the eager medians of different configurations at one batch size (one eager
    workload, `baseline`), when it exceeds `least` and twice the jobs' own spread. Eager runs no compiled
    code, so such a gap is the machine changing between jobs (load, clocks): the latency lines of those
    configurations are not comparable, their speedups (eager and compiled interleaved in one job) are.
    None when eager held. Configurations with noisy runs only are left out: their eager moved within the job."""
    ok = agg[~only_noisy(agg)].dropna(subset=["eager_ms"])
    if ok.empty:
        return None
    g = ok.groupby(["baseline", "batch_size"])["eager_ms"]
    gap = (g.max() / g.min() - 1.0).dropna()
    spread = ok.groupby(["baseline", "batch_size"])["max_spread"].max() if "max_spread" in ok else gap * 0
    real = gap[(gap > least) & (gap > 2 * spread.reindex(gap.index).fillna(0))]
    if real.empty:
        return None
    baseline, bs = real.idxmax()
    rows = ok[(ok["baseline"] == baseline) & (ok["batch_size"] == bs)]
    lo, hi = rows.loc[rows["eager_ms"].idxmin()], rows.loc[rows["eager_ms"].idxmax()]
    return {"batch_size": bs, "gap": float(real.max()), "low_ms": float(lo["eager_ms"]), "low": lo["config"],
            "high_ms": float(hi["eager_ms"]), "high": hi["config"]}


def timing_methods(df: pd.DataFrame) -> list[str]:
    """The distinct timing methods of the succeeded jobs, each with its job count and samples per side."""
    ok = df.loc[(df["status"] == "succeeded") & df["timing_method"].notna(), ["timing_method", "samples_per_side"]]
    g = ok.groupby("timing_method", sort=True)
    counts, samples = g.size(), g["samples_per_side"].agg(["min", "max"])
    out = []
    for method, n in counts.items():
        lo, hi = samples.loc[method, "min"], samples.loc[method, "max"]
        per_side = "" if pd.isna(lo) else f", {lo} samples per side" if lo == hi else f", {lo}–{hi} samples per side"
        out.append(f"{method} ({n:,} jobs{per_side})")
    return out


def first_rows(parts: pd.DataFrame) -> dict:
    """breakdown_frame's configurations (`of`) -> the row each is first drawn on: its cold first call's where it has
    one, else its first row."""
    if parts.empty:
        return {}
    comp = parts[parts["bar"] == "compiled"]
    comp = comp.iloc[comp["cache"].ne("cold").argsort(kind="stable")]  # cold rows first, each kind in its order
    return comp.drop_duplicates("of").set_index("of")["series"].to_dict()


def breakdown_frame(view: pd.DataFrame) -> pd.DataFrame:
    """The first calls per `series`, long: the compiled first call cut into compile_breakdown_s parts, and the eager
    first call. A series' runs are separated by what their first call compiled from (lab.first_call.kind, as the
    Warmup chart and the answer table separate them): where one series holds more than one kind, each is a row of its
    own (" · cold first call", " · warm first call"), so a process repeat's warm first call is never drawn as a cold
    one. Parts come from one real job of a row, the one with the median compiled first call (parts of different runs'
    medians would not add up); the eager bar is the median over the row's runs. `cache`: the row's kind; `of`: the
    series the row belongs to; `median_s`: where the row's runs are an even count, their median compiled first call
    (between the middle two, so no run's own; else empty); `drawn_s`: the drawn job's compiled first call."""
    cols = ["series", "config", "batch_size", "bar", "part", "seconds", "job_id", "runs", "cache", "cache_hits", "of",
            "median_s", "drawn_s"]
    needed = ["series", "config", "batch_size", "job_id", "cache_hits", "compile_breakdown_s",
              "compiled_first_call_s", "eager_first_call_s"]
    view = with_cache_state(view)
    ok = view.loc[(view["status"] == "succeeded") & view["compiled_first_call_s"].notna()]
    if ok.empty:  # typed, so sums and cumsums over it work (object columns refuse cumsum)
        return pd.DataFrame(columns=cols).astype({"seconds": float, "batch_size": float, "runs": float})
    made = pd.Series(first_call_kinds(ok), index=ok.index)
    mixed = made.groupby(ok["series"]).transform("nunique") > 1
    ok = ok[needed].assign(cache=made, of=ok["series"],
                           series=ok["series"].where(~mixed, ok["series"] + " · " + made + " first call"))
    order = ok.sort_values(["series", "compiled_first_call_s", "job_id"])
    grouped = order.groupby("series", sort=False)
    runs = grouped["job_id"].transform("size")
    # the answer table's figure where it is no run's own (an even count of runs: between the middle two)
    median = grouped["compiled_first_call_s"].transform("median").where(runs % 2 == 0)
    picked = order[grouped.cumcount() == (runs - 1) // 2].assign(runs=runs, median_s=median)
    rows = []
    for r in picked.itertuples():  # one per row of the plot
        parts, hits = _parts(r.compile_breakdown_s, r.compiled_first_call_s), _hits_text(r.cache_hits)
        rows += [{"series": r.series, "config": r.config, "batch_size": r.batch_size, "bar": "compiled", "part": p,
                  "seconds": s, "job_id": r.job_id, "runs": r.runs, "cache": r.cache, "cache_hits": hits, "of": r.of,
                  "median_s": r.median_s, "drawn_s": r.compiled_first_call_s} for p, s in parts.items()]
    eager = grouped.agg(config=("config", "first"), batch_size=("batch_size", "first"), cache=("cache", "first"),
                        of=("of", "first"), seconds=("eager_first_call_s", "median"),
                        runs=("job_id", "size")).reset_index()
    eager = eager.assign(bar="eager", part="eager first call", job_id=None, cache_hits=None, median_s=None,
                         drawn_s=None)
    return pd.concat([pd.DataFrame(rows), eager.dropna(subset=["seconds"])], ignore_index=True)[cols]


def _parts(text, first_call_s: float) -> dict:
    parts = json_dict(text)
    if not parts:
        return {NO_BREAKDOWN: first_call_s}
    known = {p: float(parts[p]) for p in BREAKDOWN_PARTS if parts.get(p) is not None}
    return known | {p: float(v) for p, v in parts.items() if p not in known and v is not None}  # newer torch, new parts


def _hits_text(text) -> str:
    """runner.measure's cache counters in a few words: "3 cache hits, 0 misses"."""
    hits = json_dict(text)
    if hits is None:
        return ""
    n_hit = sum(v or 0 for k, v in hits.items() if k.endswith("hit_count"))
    n_miss = sum(v or 0 for k, v in hits.items() if k.endswith("miss_count"))
    return f"({n_hit} cache hit{'s' * (n_hit != 1)}, {n_miss} miss{'es' * (n_miss != 1)})"


def on_clock(agg: pd.DataFrame, clock: str) -> pd.DataFrame:
    """`agg` with the chosen clock's numbers under the headline's names (speedup, eager_ms, compiled_ms), so
    the speedup and latency plots draw any clock; the p10-p90 bands are latency's own, so other clocks have
    none."""
    cols = CLOCKS[clock]
    if clock == "latency":
        return agg
    out = agg.assign(speedup=agg[cols["speedup"]], eager_ms=agg[cols["eager_ms"]], compiled_ms=agg[cols["compiled_ms"]])
    return out.assign(**{c: out[c.rsplit("_p", 1)[0] + "_ms"] for c in _BANDS})


def gpu_latency_frame(agg: pd.DataFrame) -> pd.DataFrame:
    """Per series (CUDA jobs, which have a GPU clock), long: eager and compiled, each as GPU time (kernels
    only) and latency (one synchronous call as the caller sees it); `overhead_ms` = latency − GPU time: what
    the host adds (Python, dispatch, guards, launches), the part reduce-overhead's CUDA graphs shrink."""
    cols = ["series", "config", "side", "what", "ms", "gpu_ms", "latency_ms", "overhead_ms", "idle", "runs",
            "only_noisy"]
    has = agg.dropna(subset=["eager_gpu_ms", "compiled_gpu_ms"], how="all").dropna(subset=["eager_ms"])
    frames = []
    for side in ("eager", "compiled"):
        part = has[["series", "config", "runs"]].assign(side=side, gpu_ms=has[f"{side}_gpu_ms"],
                                                        latency_ms=has[f"{side}_ms"], only_noisy=only_noisy(has))
        part["overhead_ms"] = part["latency_ms"] - part["gpu_ms"]
        part["idle"] = has[f"{side}_host_overhead"]
        frames += [part.assign(what=f"{side}: GPU time", ms=part["gpu_ms"]),
                   part.assign(what=f"{side}: latency", ms=part["latency_ms"])]
    return pd.concat(frames, ignore_index=True).dropna(subset=["ms"])[cols]
