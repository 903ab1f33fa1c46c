"""Repeats: how much a configuration's numbers move across a `--repeat N` sweep's identical jobs, and which
configurations that leaves apart (`separated` when their min-max ranges of ms do not overlap). Plain pandas."""
from __future__ import annotations

import pandas as pd

from dashboard.data import series_labels
from dashboard.data import plot_data

# what compared configurations have in common: one model, one size, one sweep (one machine, one day)
# (not every swept axis: repeats are compared across backend, mode and dynamic)
SHARED = ("sweep_id", "model", "model_args", "task", "device", "dtype", "batch_size", "fullgraph", "cache")
# what makes two jobs repeats of each other: the whole spec, in the same sweep
SPEC = SHARED + ("backend", "mode", "dynamic", "schedule", "iters", "timeout_s")
METRICS = ("compiled_ms", "eager_ms", "speedup")
SEPARATED, NOT_SEPARABLE = "separated", "not separable"
EAGER = "eager"  # every job's eager side, one candidate per group


def repeated(view: pd.DataFrame) -> pd.DataFrame:
    """The succeeded jobs that have at least one identical twin in their sweep, each with its `spec_id`
    (the same for identical specs), `group` (the configurations it can be compared with, as text),
    `noisy_run` (a measured cause disturbed it), `answers` (lab.noise), and a `config` label that names only what
    differs among the repeated jobs (series_labels.label_series), marked plot_data.NOISY when every one of its runs was disturbed."""
    ok = view.loc[view["status"] == "succeeded", list(SPEC)]
    spec_id = ok.groupby(list(SPEC), dropna=False, sort=False).ngroup()
    keep = (spec_id.map(spec_id.value_counts()) >= 2).to_numpy()
    if not keep.any():
        return view.iloc[0:0].assign(group=pd.Series(dtype=object), noisy_run=pd.Series(dtype=bool),
                                     spec_id=pd.Series(dtype=int))
    rep = series_labels.label_series(view.loc[ok.index[keep]]).assign(spec_id=spec_id[keep].to_numpy())
    variant = rep["variant"].fillna("")
    group = rep["sweep_label"] + " · bs " + rep["batch_size"].astype(str) + variant.where(variant == "", " · " + variant)
    # which runs answer, as everywhere (lab.noise); a configuration whose every run was disturbed is named NOISY,
    # and its range is drawn greyed
    answers = plot_data.answering(rep, ["spec_id"])
    disturbed = rep["disturbed"].eq(True) if "disturbed" in rep else pd.Series(False, index=rep.index)
    only = disturbed.groupby(rep["spec_id"]).transform("all").astype(bool)
    config = rep["config"].where(~only, plot_data.NOISY + " · " + rep["config"])
    return rep.assign(group=group, noisy_run=disturbed, answers=answers, config=config)


def summary(rep: pd.DataFrame) -> pd.DataFrame:
    """One row per repeated configuration: runs, then per metric its median, min, max and spread %."""
    if rep.empty:
        return pd.DataFrame(columns=["group", "config", "runs", "noisy runs"])
    named = {"group": ("group", "first"), "config": ("config", "first"), "runs": ("job_id", "size"),
             "noisy_runs": ("noisy_run", "sum")}
    for m in METRICS:
        named |= {m: (m, "median"), f"{m} min": (m, "min"), f"{m} max": (m, "max")}
    out = rep.groupby("spec_id", sort=False).agg(**named)  # one pass over the repeated jobs
    if "answers" in rep:  # the medians over the runs that answer, as the answer takes them (lab.noise): one number
        answering = rep[rep["answers"].astype(bool)]
        out[list(METRICS)] = answering.groupby("spec_id", sort=False)[list(METRICS)].median().reindex(out.index)
    for m in METRICS:
        out[f"{m} spread %"] = 100 * (out[f"{m} max"] - out[f"{m} min"]) / out[m]
    order = ["group", "config", "runs", "noisy runs"] + [f"{m}{end}" for m in METRICS
                                                         for end in ("", " min", " max", " spread %")]
    out = out.rename(columns={"noisy_runs": "noisy runs"}).reset_index(drop=True)[order]
    return out.sort_values(["group", "compiled_ms"], kind="stable").reset_index(drop=True)


def candidates(rep: pd.DataFrame) -> pd.DataFrame:
    """Every run's ms, per comparison group: each repeated configuration's compiled_ms under its config
    label, and every job's eager_ms under `eager` (eager is the same model whichever config ran it)."""
    cols = ["group", "job_id", "noisy_run"]
    compiled = rep[cols].assign(candidate=rep["config"], ms=rep["compiled_ms"])
    eager = rep[cols].assign(candidate=EAGER, ms=rep["eager_ms"])
    return pd.concat([compiled, eager], ignore_index=True).dropna(subset=["ms"])


def ranges(runs: pd.DataFrame) -> pd.DataFrame:
    """Per group and candidate: runs, median, min and max of ms, fastest first within a group."""
    g = runs.groupby(["group", "candidate"], sort=False)["ms"]
    out = g.agg(["size", "median", "min", "max"]).rename(columns={"size": "runs"}).reset_index()
    return out.sort_values(["group", "median"], kind="stable").reset_index(drop=True)


def separability(spans: pd.DataFrame) -> pd.DataFrame:
    """Every pair of candidates in a group, the faster (by median) first, with the verdict: `separated`
    when the faster one's slowest run beats the slower one's fastest, else `not separable`; `gap %` is
    that margin over the faster median (negative: the ranges overlap by that much)."""
    cols = ["group", "faster", "slower", "verdict", "ratio", "gap %", "faster ms", "slower ms"]
    pairs = spans.merge(spans, on="group", suffixes=("_a", "_b"))
    # each unordered pair once, faster first (ties: by name, so the pair is still kept once)
    first = (pairs["median_a"] < pairs["median_b"]) | (
        (pairs["median_a"] == pairs["median_b"]) & (pairs["candidate_a"] < pairs["candidate_b"]))
    pairs = pairs[first]
    if pairs.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame({
        "group": pairs["group"], "faster": pairs["candidate_a"], "slower": pairs["candidate_b"],
        "faster ms": _range_text(pairs, "_a"), "slower ms": _range_text(pairs, "_b"),
        "ratio": pairs["median_b"] / pairs["median_a"],
        "gap %": 100 * (pairs["min_b"] - pairs["max_a"]) / pairs["median_a"]})
    out["verdict"] = NOT_SEPARABLE
    out.loc[pairs["max_a"] < pairs["min_b"], "verdict"] = SEPARATED
    return out.sort_values(["group", "ratio"], kind="stable").reset_index(drop=True)[cols]


def against_eager(pairs: pd.DataFrame, answers: dict[tuple[str, str], dict]) -> pd.DataFrame:
    """The pairs with eager judged as the answer judges them: by the configuration's paired interval (each run's
    rounds interleave eager and compiled calls), not by whether runs' ranges of ms overlap, which another process's
    slower host moves. `answers`: (group, candidate) -> that configuration's answer row (lab.answer). The ratio is
    the answer's speedup (slower over faster), the verdict its interval's, and `gap %` is left empty for them."""
    out = pairs.copy()
    for i, r in out.iterrows():
        if EAGER not in (r["faster"], r["slower"]):
            continue
        config = r["slower"] if r["faster"] == EAGER else r["faster"]
        row = answers.get((r["group"], config))
        if row is None or row.get("speedup") is None or row.get("speedup_ci_low") is None:
            continue
        speedup, low, high = row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"]
        faster, slower = (config, EAGER) if speedup >= 1 else (EAGER, config)
        out.loc[i, ["faster", "slower", "ratio", "gap %"]] = [faster, slower, max(speedup, 1 / speedup), float("nan")]
        out.loc[i, "verdict"] = SEPARATED if low > 1 or high < 1 else NOT_SEPARABLE
    return out


def chains(spans: pd.DataFrame, pairs: pd.DataFrame | None = None) -> dict[str, str]:
    """Per group, its candidates fastest first, joined by `<` where neighbours are separated and `≈` where
    they are not: "reduce-overhead < default ≈ max-autotune < eager" (the pairs table has every pair). With
    `pairs`, neighbours are judged by its verdicts (against_eager's for eager: `>` where the answer found the
    later one faster), else by their ranges."""
    judged = {} if pairs is None else {(r.group, frozenset((r.faster, r.slower))): (r.verdict, r.faster)
                                       for r in pairs.itertuples(index=False)}
    out = {}
    for group, span in spans.groupby("group", sort=False):  # one per group: a handful
        names, lo, hi = span["candidate"].tolist(), span["min"].tolist(), span["max"].tolist()
        text = names[0]
        for i in range(1, len(names)):
            verdict, faster = judged.get((group, frozenset((names[i - 1], names[i]))), (None, None))
            apart = verdict == SEPARATED if verdict is not None else hi[i - 1] < lo[i]
            # `>`: separated the other way round (the answer's paired rounds against the runs' medians of ms)
            text += (" ≈ " if not apart else " > " if faster == names[i] else " < ") + names[i]
        out[group] = text
    return out


def _range_text(pairs: pd.DataFrame, side: str) -> pd.Series:
    def fmt(s: pd.Series) -> pd.Series:
        return s.map("{:.4g}".format)
    return (fmt(pairs[f"median{side}"]) + " (" + fmt(pairs[f"min{side}"]) + "–" + fmt(pairs[f"max{side}"])
            + ", " + pairs[f"runs{side}"].astype(str) + " runs)")
