"""Two sweeps or two runs side by side: what differs in the spec, the environment and the numbers (plain pandas)."""
from __future__ import annotations

import math

import pandas as pd

from dashboard.data.plot_data import answering, first_call_kinds
from lab import axes, first_call

ENV = ("torch_version", "triton_version", "device_name", "cuda_version", "hostname", "worker")
# sweep jobs are matched on what varies inside a sweep
MATCH = axes.FIELDS
# metric -> True when bigger is better
# (speedup is latency's, the headline; throughput_speedup and gpu_speedup are the other clocks', by name)
METRICS = {"speedup": True, "throughput_speedup": True, "gpu_speedup": True, "eager_ms": False, "compiled_ms": False,
           "compiled_gpu_ms": False, "compiled_first_call_s": False, "first_call_cold_s": False,
           "compiled_second_call_s": False, "break_even_calls": False, "peak_mem_compiled_mb": False}
# Two sweeps: a combination's compiled first call is its cold runs' (lab.first_call, the answer table's "first call
# cold s"): a process repeat compiles from its first run's cache, and a median over both is a first call no run had.
# Two runs: each one's own first call, whatever it compiled from.
COLD = "first_call_cold_s"
SWEEP_METRICS = tuple(m for m in METRICS if m != "compiled_first_call_s")
RUN_METRICS = tuple(m for m in METRICS if m != COLD)
GPU_METRICS = ("gpu_speedup", "compiled_gpu_ms")  # the GPU clock's: none on CPU-only data
NOTABLE = 0.10  # a relative change this large is highlighted
# steady-state numbers move with the runs' own noise: a change smaller than NOISE_FACTOR x the larger side's
# spread (IQR / median of a job's per-round medians, the `noisy` measure) is no finding, whatever its size
NOISE_METRICS = ("speedup", "eager_ms", "compiled_ms", "break_even_calls")
NOISE_FACTOR = 2.0
# the answer's numbers that carry a 95% interval (lab.answer): a change between two sweeps is a finding only past
# both intervals together (on a log scale, sqrt(hA^2 + hB^2), hA and hB each one's half width): each sweep's number
# moves with its processes, which the runs' rounds cannot see
BRACKETED = {"speedup": ("speedup_ci_low", "speedup_ci_high"), COLD: ("first_call_cold_low", "first_call_cold_high")}
# a cold first call with no interval yet (under 4 processes compiled it cold on its device) is one process's cold
# compile, which moves between fresh processes: over 3 fresh scripts on an H200, sincos bs 10000 took 2.56-4.32 s
# (1.69x). A change inside that is no finding until the intervals say more
COLD_MOVES = 1.69


def _text(value) -> str:
    """Compact text: {"scope": "model"} -> scope=model, [8, 16] -> 8, 16, None in a list -> none."""
    if isinstance(value, dict):
        return " ".join(f"{k}={_text(v)}" for k, v in sorted(value.items())) or "–"
    if isinstance(value, (list, tuple)):
        return ", ".join("none" if v is None else _text(v) for v in value) or "–"
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def side_by_side(a: dict, b: dict) -> pd.DataFrame:
    """One row per key of either dict: the two values as text, and whether they differ."""
    keys = list(dict.fromkeys(list(a) + list(b)))
    rows = [{"field": k, "A": _text(a.get(k)), "B": _text(b.get(k))} for k in keys]
    out = pd.DataFrame(rows, columns=["field", "A", "B"])
    out["differs"] = out["A"] != out["B"]
    return out


def environment(rows: pd.DataFrame) -> dict:
    """The environment fields of a set of jobs: each as its distinct values ("a, b" when mixed)."""
    return {col: ", ".join(sorted(rows[col].dropna().astype(str).unique())) for col in ENV if col in rows}


# compile settings a comparison may be about; the batch size is the workload (bs 8 against bs 16 is not
# "B is faster"), so it is always matched on
SETTINGS = axes.COMPILE_FIELDS


def compared(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """The compile settings that set the two sweeps apart: each sweep ran one value of it (a job without
    the value counts as another), and the values differ (A ran default, B reduce-overhead). That is what
    the comparison is about, so jobs are not matched on it: {field: (A's value, B's value)}."""
    out = {}
    for col in SETTINGS:
        va, vb = a[col].astype(object).fillna("(none)").astype(str).unique(), \
            b[col].astype(object).fillna("(none)").astype(str).unique()
        if len(va) == 1 and len(vb) == 1 and va[0] != vb[0]:
            out[col] = (va[0], vb[0])
    return out


ANSWERED = ("speedup", "eager_ms", "compiled_ms", "break_even_calls", COLD)  # the numbers the answer itself gives


def cold_first_calls(ok: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per combination of `keys` (a groupby's index), the compiled first call of its succeeded runs that compiled
    from an empty cache, as lab.first_call separates them for the answer table; NaN where none did."""
    if ok.empty:
        return pd.Series(dtype=float)
    kinds = pd.Series(first_call_kinds(ok), index=ok.index)
    shaken = ok.get("first_call_disturbed", pd.Series(None, index=ok.index, dtype=object)).map(lambda v: not pd.isna(v) and bool(v))

    def cold(rows: pd.DataFrame) -> float:
        keep = rows.index[first_call.kept(kinds[rows.index].tolist(), rows["compiled_first_call_s"].tolist(),
                                          shaken[rows.index].tolist())]  # as the answer counts them
        calls = first_call.separate(rows.loc[keep, "job_id"], rows.loc[keep, "compiled_first_call_s"], kinds[keep])
        return calls["cold"].seconds if "cold" in calls else float("nan")

    return ok.groupby(keys, dropna=False)[["job_id", "compiled_first_call_s"]].apply(cold)


def numbers(a: pd.DataFrame, b: pd.DataFrame, answers: dict | None = None) -> pd.DataFrame:
    """Sweep jobs matched on batch size and compile settings, except those that set the sweeps apart
    (`compared`: their column reads "A's → B's"): medians of A and B (the first call: the cold runs', COLD), and B's
    change in %. A combination
    only one side ran, or that failed on one side, keeps its row with that side's status. `answers` (job id -> its
    configuration's answer row, lab.answer): where a side's combination is one configuration of the answer, its
    speedup, latencies and break-even are the answer's, the same numbers Results and `runner report` give."""
    apart = compared(a, b)
    keys = [c for c in MATCH if c not in apart] or ["_all"]

    def answered(df: pd.DataFrame, med: pd.DataFrame) -> pd.DataFrame:
        if not answers or df.empty:
            return med
        rows = df.assign(_row=df["job_id"].map(lambda j: id(answers[j]) if j in answers else None))
        for combo, part in rows.groupby(keys, dropna=False):
            combo = combo[0] if isinstance(combo, tuple) and len(keys) == 1 else combo
            ids = set(part["_row"].dropna())
            if len(ids) == 1:  # one configuration of the answer: its numbers
                row = answers[part["job_id"][part["_row"].notna()].iloc[0]]
                for metric in ANSWERED:
                    if row[metric] is not None and combo in med.index:
                        med.loc[combo, metric] = float(row[metric])
                for metric, (lo, hi) in BRACKETED.items():
                    if row.get(lo) and row.get(hi) and combo in med.index:
                        med.loc[combo, f"{metric} half"] = math.log(row[hi] / row[lo]) / 2
        return med

    def side(df: pd.DataFrame) -> pd.DataFrame:
        df = df.assign(_all="")
        ok = df[df["status"] == "succeeded"]
        cold = cold_first_calls(ok, keys)  # over every succeeded run, disturbed or not, as the answer's
        # as the answer does (lab.noise): disturbed runs are left out where an undisturbed one exists; a combination
        # whose every run was disturbed keeps their medians, flagged `noisy`, and is never coloured better or worse
        answers = answering(ok, keys)
        disturbed = ok["disturbed"].eq(True) if "disturbed" in ok else pd.Series(False, index=ok.index)
        every = disturbed.groupby([ok[c] for c in keys], dropna=False).transform("all").astype(bool)
        ok = ok[answers]
        grouped = ok.groupby(keys, dropna=False)
        med = grouped[[m for m in SWEEP_METRICS if m != COLD]].median()
        med[COLD] = cold.reindex(med.index)
        med = answered(df[df["status"] == "succeeded"], med)
        med["noisy"] = every[ok.index].groupby([ok[c] for c in keys], dropna=False).all()
        spread = ok[[c for c in ("eager_spread", "compiled_spread") if c in ok]].max(axis=1)
        med["spread"] = spread.groupby([ok[c] for c in keys], dropna=False).median() if len(spread) else float("nan")
        status = df.groupby(keys, dropna=False)["status"].agg(lambda s: ", ".join(sorted(set(s))))
        return med.join(status, how="outer")

    both = side(a).join(side(b), how="outer", suffixes=(" A", " B")).reset_index()
    for col, (va, vb) in apart.items():
        both[col] = f"{va} → {vb}"
    for col in ("status A", "status B"):
        both[col] = both[col].fillna("not run")
    for col in ("noisy A", "noisy B"):
        both[col] = both[col].eq(True)
    both["noise %"] = 100.0 * both[["spread A", "spread B"]].max(axis=1)  # each side: the median run's spread
    for metric in SWEEP_METRICS:
        both[f"{metric} Δ%"] = (both[f"{metric} B"] / both[f"{metric} A"] - 1.0) * 100.0
    cols = list(MATCH) + ["status A", "status B", "noisy A", "noisy B", "noise %"]
    for metric in BRACKETED:  # each side's interval half width (log), where its answer gives one
        cols += [f"{metric} half A", f"{metric} half B"]
        for side in "AB":
            both[f"{metric} half {side}"] = both.get(f"{metric} half {side}", float("nan"))
    for metric in SWEEP_METRICS:
        cols += [f"{metric} A", f"{metric} B", f"{metric} Δ%"]
    return both[cols].sort_values(list(MATCH)).reset_index(drop=True)


WORKLOAD = ("model", "model_args", "task", "device", "dtype")  # what eager runs; no compile setting changes it


def same_workload(a, b) -> bool:
    """Whether both sides ran one and the same eager workload (frames of jobs, or two records): then eager
    is the control, and a change of eager between them is the machine (load, clocks, another host)."""
    def values(side) -> set:
        if isinstance(side, dict):
            return {tuple(str(side.get(k)) for k in WORKLOAD)}
        cols = [k for k in WORKLOAD if k in side]
        return set(side[cols].astype(str).itertuples(index=False, name=None)) if len(cols) == len(WORKLOAD) else set()
    va, vb = values(a), values(b)
    return len(va) == 1 and va == vb


def long_form(nums: pd.DataFrame, metrics: list[str], same_workload: bool = False) -> pd.DataFrame:
    """`numbers` as one row per (combination, metric): readable however many metrics are chosen."""
    rows = []
    for r in nums.to_dict(orient="records"):
        combo = {k: r[k] for k in MATCH}
        for metric in metrics:
            noisy = [side for side in ("A", "B") if r.get(f"noisy {side}")]
            rows.append({**combo, "status A": r["status A"], "status B": r["status B"], "metric": metric,
                         "A": r[f"{metric} A"], "B": r[f"{metric} B"], "Δ%": r[f"{metric} Δ%"],
                         # every number of such a side came from disturbed runs (throughput, GPU time and the
                         # first call as much as latency): none is a finding, none is coloured
                         "note": (f"⚠ {' and '.join(noisy)}: every run disturbed: no finding"
                                  if noisy else
                                  _bracketed(metric, r[f"{metric} Δ%"], r.get(f"{metric} half A"),
                                             r.get(f"{metric} half B"))
                                  or _note(metric, r[f"{metric} Δ%"], r["noise %"],
                                           r["eager_ms Δ%"] if same_workload else float("nan")))})
    return pd.DataFrame(rows, columns=[*MATCH, "status A", "status B", "metric", "A", "B", "Δ%", "note"])


def _bracketed(metric: str, change_pct: float, half_a: float | None, half_b: float | None) -> str:
    """Why a change of an answer's number (BRACKETED) is no finding: it lies inside the two sweeps' intervals together
    (each half width, log, where its answer gives one); a cold first call without both intervals, inside how far one
    process's cold compile moves (COLD_MOVES)."""
    if metric not in BRACKETED or change_pct is None or pd.isna(change_pct) or change_pct <= -100:
        return ""
    moved = abs(math.log1p(change_pct / 100))
    known = [h for h in (half_a, half_b) if h is not None and not pd.isna(h)]
    if len(known) == 2:
        within = math.hypot(*known)
        if moved < within:
            return f"≈ within the two answers' intervals (together ±{math.expm1(within):.0%})"
        return ""
    if metric == COLD and moved < math.log(COLD_MOVES):
        return (f"≈ within how far one cold compile moves between fresh processes (up to {COLD_MOVES:.2g}x): "
                "no interval on both sides yet (4 processes that compiled it cold give one)")
    return ""


def _note(metric: str, change_pct: float, noise_pct: float, eager_pct: float = float("nan")) -> str:
    """Why a change is no finding. It lies within the runs' own noise (steady-state numbers only). Or, with
    one eager workload on both sides (`eager_pct`: eager's change), eager moved as well: eager runs no
    compiled code, so its change is the machine (load, clocks, another host), and a compiled change of the
    same size is that too (against eager, which is the speedup, it is no change)."""
    if metric not in NOISE_METRICS or pd.isna(change_pct):
        return ""
    if not pd.isna(noise_pct) and abs(change_pct) < NOISE_FACTOR * noise_pct:
        return f"≈ within noise (spread {noise_pct:.0f}%)"
    if pd.isna(eager_pct) or abs(change_pct) < NOTABLE * 100:
        return ""
    if metric == "eager_ms":
        return "eager runs no compiled code: this is the machine (load, clocks, host), not the setting"
    if metric == "compiled_ms":
        against_eager = ((1 + change_pct / 100) / (1 + eager_pct / 100) - 1) * 100
        floor = max(NOTABLE * 100, NOISE_FACTOR * noise_pct) if not pd.isna(noise_pct) else NOTABLE * 100
        if abs(against_eager) < floor:
            return (f"≈ eager moved {eager_pct:+.0f}% too: the machine, not the setting "
                    f"(against eager {against_eager:+.1f}%)")
    return ""


def verdict(metric: str, change_pct: float, note: str = "") -> str:
    """'better', 'worse' or '' for a change of B against A ('' too when the note says it is noise)."""
    if note or pd.isna(change_pct) or abs(change_pct) < NOTABLE * 100:
        return ""
    return "better" if (change_pct > 0) == METRICS[metric] else "worse"


def run_numbers(a: dict, b: dict) -> pd.DataFrame:
    """Two single runs: every metric of A and B and B's change in %."""
    rows = []
    spreads = [_number(r.get(k)) for r in (a, b) for k in ("eager_spread", "compiled_spread")]
    noise = 100.0 * max((x for x in spreads if not pd.isna(x)), default=float("nan"))
    changes = {m: _change(_number(a.get(m)), _number(b.get(m))) for m in RUN_METRICS}
    eager = changes["eager_ms"] if same_workload(a, b) else float("nan")
    made = [first_call.kind(r.get("first_call_cache"), r.get("cache"), r.get("graph_cache_hit")) for r in (a, b)]
    for metric in RUN_METRICS:
        va, vb = (_number(r.get(metric)) for r in (a, b))
        note = _note(metric, changes[metric], noise, eager)
        if metric == "compiled_first_call_s" and made[0] != made[1] and not (pd.isna(va) or pd.isna(vb)):  # a cold
            # compile against a warm one is no finding about the setting
            note = f"A compiled {made[0]}, B {made[1]}: not the same first call"
        rows.append({"metric": metric, "A": va, "B": vb, "Δ%": changes[metric], "note": note})
    # float columns: a missing number is NaN, which the table shows as "–" (None in an object column
    # was shown as "None")
    return pd.DataFrame(rows, columns=["metric", "A", "B", "Δ%", "note"])


def _change(va: float, vb: float) -> float:
    return (vb / va - 1.0) * 100.0 if va else float("nan")  # NaN in, NaN out


def _number(value) -> float:
    return float("nan") if value is None or pd.isna(value) else float(value)
