"""Roofline frames for Results: where each configuration's compiled call sits against its device's measured ceilings
(lab.roofline places the results; this gathers what the plot draws). Models with 0 FLOPs are listed, not plotted."""
from __future__ import annotations

import pandas as pd

from dashboard.data.series_labels import fold_modes
from dashboard.data.plot_data import answering
from db import views
from lab import axes

KEYS = ["model", "variant", "task", "device", "device_name", "dtype", *axes.FIELDS, "cache"]
VALUES = ["flops", "min_bytes", "achieved_tflops", "achieved_gbps", "roofline_pct", "mfu", "compiled_ms"]
READ = views.ROOFLINE_FIELDS + ("compiled_ms", "disturbed")  # what points() needs beyond the Results frame
CEILING_COLUMNS = ["device_name", "dtype", "copy_gbps", "matmul_tflops", "hostname", "measured_at"]


def points(shown: pd.DataFrame) -> pd.DataFrame:
    """One point per configuration with a FLOP count, as the other plots draw it: medians over the runs that answer
    (dashboard.data.plot_data.answering: lab.noise), flagged `only_noisy` where every run of it was disturbed; off CUDA
    under the mode it ran (series_labels.fold_modes). The work is the configuration's (its first run counts it; its
    process repeats and re-runs time the same call): on the host clock their rates follow from their compiled ms. A
    GPU's rates are read on its GPU clock, which only first runs keep: where those were disturbed and left out, the
    point is theirs, flagged `rates_disturbed`. `ai`, `label` (the spec in words), `runs` (the runs the point is the
    median of), `noisy_runs` (disturbed and left out), and `on_plot` (FLOPs and bytes > 0)."""
    shown = fold_modes(shown)
    done = shown.loc[shown["status"] == "succeeded"]
    done = done.assign(_config=done.groupby(KEYS, dropna=False, sort=True).ngroup())  # one integer key per configuration
    done = _with_work(done)
    ok = done.loc[done["flops"].notna()]
    answers = answering(ok, ["_config"]) if len(ok) else pd.Series(dtype=bool)
    disturbed = ok["disturbed"].eq(True) if "disturbed" in ok else pd.Series(False, index=ok.index)
    rated = ok["achieved_tflops"].notna()
    good = answers & rated
    any_good = good.groupby(ok["_config"]).transform("any") if len(ok) else good
    use = ok.loc[good | ~any_good, KEYS + VALUES + ["roofline_bound", "_config"]]  # every configuration keeps rows
    g = use.groupby("_config", sort=True)  # in the keys' sorted order (ngroup above)
    out = g[KEYS].first().join(g[VALUES].median())  # a group's keys are its rows' (first: a missing one stays missing)
    out["runs"] = g["achieved_tflops"].count()
    # the compiled time beside it is the answer's: the runs that answer, as on every plot
    out["compiled_ms"] = ok.loc[answers, "compiled_ms"].groupby(ok.loc[answers, "_config"]).median() \
        .reindex(out.index).fillna(out["compiled_ms"]) if len(ok) else out["compiled_ms"]
    out["noisy_runs"] = (~answers).groupby(ok["_config"]).sum() if len(ok) else 0
    out["only_noisy"] = disturbed.groupby(ok["_config"]).all() if len(ok) else False
    out["rates_disturbed"] = (~any_good & rated).groupby(ok["_config"]).any() & ~out["only_noisy"] if len(ok) \
        else False
    out["roofline_bound"] = g["roofline_bound"].first()
    out = out.reset_index(drop=True)
    out["ai"] = out["flops"] / out["min_bytes"].where(out["min_bytes"] > 0)
    out["on_plot"] = (out["flops"] > 0) & (out["min_bytes"] > 0) & (out["achieved_tflops"] > 0)
    variant = out["variant"].fillna("")
    out["label"] = (out["model"] + variant.where(variant == "", " " + variant) + " · bs "
                    + out["batch_size"].astype(str) + " · " + out["backend"] + "/" + out["mode"]
                    + " · dynamic=" + out["dynamic"].astype(str) + " · fullgraph=" + out["fullgraph"].astype(str)
                    + " · " + out["cache"] + " cache · " + out["dtype"] + " · " + out["task"])
    return out


def _with_work(done: pd.DataFrame) -> pd.DataFrame:
    """Each run with its configuration's work (FLOPs, minimum bytes) where it counted none (a process repeat or re-run:
    its sweep's first run counted it, on the same host and torch), and off CUDA its rates from its own compiled ms:
    lab.roofline's fields scale as 1 / ms from one whole run of the same sweep that has them (its ceilings)."""
    if done.empty:
        return done
    keys = ["_config", "sweep_id"] if "sweep_id" in done else ["_config"]
    work = done.groupby(keys, dropna=False)[["flops", "min_bytes"]].transform("first")
    done = done.assign(flops=done["flops"].fillna(work["flops"]), min_bytes=done["min_bytes"].fillna(work["min_bytes"]))
    whole = done.loc[done["achieved_tflops"].notna() & (done["compiled_ms"] > 0)]
    ref = whole.sort_values("roofline_pct", na_position="last").drop_duplicates(keys)  # one run's fields, all of them
    ref = done[keys].merge(ref[keys + ["compiled_ms", "roofline_pct", "mfu", "roofline_bound"]], how="left",
                           on=keys).set_index(done.index)
    ms = done["compiled_ms"].where(done["compiled_ms"] > 0)
    fill = done["achieved_tflops"].isna() & done["device"].ne("cuda") & ms.notna() & done["flops"].notna()
    scale = ref["compiled_ms"] / ms
    return done.assign(
        achieved_tflops=done["achieved_tflops"].where(~fill, done["flops"] / (ms / 1e3) / 1e12),
        achieved_gbps=done["achieved_gbps"].where(~fill, done["min_bytes"] / (ms / 1e3) / 1e9),
        roofline_pct=done["roofline_pct"].where(~fill, ref["roofline_pct"] * scale),
        mfu=done["mfu"].where(~fill, ref["mfu"] * scale),
        roofline_bound=done["roofline_bound"].where(~fill, ref["roofline_bound"]))


def ceilings_in_view(ceilings: list[dict], pts: pd.DataFrame) -> pd.DataFrame:
    """The ceilings (db.device_ceilings.newest_ceilings) of the (device_name, dtype) pairs that have points."""
    table = pd.DataFrame(ceilings, columns=CEILING_COLUMNS)
    return table.merge(pts[["device_name", "dtype"]].drop_duplicates(), on=["device_name", "dtype"])


def missing_ceilings(ceilings: list[dict], pts: pd.DataFrame) -> pd.DataFrame:
    """(device, device_name, dtype) in view with no measured ceiling: no line, no roofline_pct."""
    have = pd.DataFrame(ceilings, columns=CEILING_COLUMNS)[["device_name", "dtype"]].assign(known=True)
    pairs = pts[["device", "device_name", "dtype"]].drop_duplicates().merge(have, how="left")
    return pairs[pairs["known"].isna()].drop(columns="known").reset_index(drop=True)


def lines(ceilings: pd.DataFrame, pts: pd.DataFrame) -> pd.DataFrame:
    """Each ceiling as a polyline over intensity (three points: log axes make both parts straight),
    spanning the points in view and the ridge with room on both sides."""
    placed = pts[pts["on_plot"]]
    lo, hi = (placed["ai"].min() / 4, placed["ai"].max() * 4) if len(placed) else (0.1, 1000.0)
    rows = []
    for c in ceilings.itertuples():  # one per device and dtype: a handful
        ridge = c.matmul_tflops * 1e3 / c.copy_gbps
        for ai in sorted({min(lo, ridge / 4), ridge, max(hi, ridge * 4)}):
            rows.append({"device_name": c.device_name, "dtype": c.dtype, "ai": ai, "ridge": ridge,
                         "tflops": min(c.matmul_tflops, c.copy_gbps * ai / 1e3), "copy_gbps": c.copy_gbps,
                         "matmul_tflops": c.matmul_tflops, "hostname": c.hostname})
    return pd.DataFrame(rows, columns=["device_name", "dtype", "ai", "ridge", "tflops", "copy_gbps", "matmul_tflops",
                                       "hostname"])


def off_plot(pts: pd.DataFrame) -> str:
    """The configurations that cannot sit on log axes (0 FLOPs), per model and device, by bandwidth."""
    off = pts[~pts["on_plot"]]
    out = []
    for (model, device), sub in off.groupby(["model", "device_name"], sort=True):  # a handful
        lo, hi, best = sub["achieved_gbps"].min(), sub["achieved_gbps"].max(), sub["roofline_pct"].max()
        rate = f"{hi:,.0f} GB/s" if f"{lo:,.0f}" == f"{hi:,.0f}" else f"{lo:,.0f}–{hi:,.0f} GB/s"
        n = f"{len(sub)} configuration{'s' * (len(sub) > 1)}"
        out.append(f"{model} on {device} ({n}): {rate}" + ("" if pd.isna(best) else f", at best {best:.0f}% of the roofline"))
    return "; ".join(out) + ("." if out else "")
