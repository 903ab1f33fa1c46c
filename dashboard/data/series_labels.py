"""Series labels: what tells one plotted configuration from another, naming only what differs in view (lab.labels,
the labeller the answer table shares), the rest for a caption; a warm-cache configuration says what the cache gave
its runs; off CUDA, a mode that differs from another by CUDA graphs alone is shown as that other (fold_modes)."""
from __future__ import annotations

import pandas as pd

from dashboard.data.frame import WARM_MISS
from lab import labels as db_labels
from lab.axes import COMPILE_FIELDS, FOLD_WITHOUT_CUDA, GRAPH_DEVICES, folded_mode

# what tells one plotted series from another, in label order
# (timing_protocol: results timed before caller latency are their own series, never mixed with later ones)
BASE_COLS = ("task", "device", "dtype", "variant", "torch_version", "device_name", "timing_protocol")
COMPILE_COLS = (*COMPILE_FIELDS, "cache")


def fold_modes(df: pd.DataFrame) -> pd.DataFrame:
    """Off CUDA, a job stored as reduce-overhead compiled as default (CUDA graphs need CUDA), and one stored as
    max-autotune-no-cudagraphs as max-autotune (lab.axes.folded_mode): shown under the mode it really ran, so the
    same compile is never drawn as two results. `attrs["folded"]` counts them per stored mode."""
    if not {"mode", "device"} <= set(df.columns) or df.empty:
        return df
    fold = _folds(df)
    if not fold.any():
        return df
    counts = df.loc[fold].groupby(["mode", "device"]).size()
    out = df.assign(mode=df["mode"].where(~fold, df["mode"].map(FOLD_WITHOUT_CUDA)))
    out.attrs["folded"] = {(m, d): int(n) for (m, d), n in counts.items()}
    return out


def _folds(df: pd.DataFrame) -> pd.Series:
    """Per row, whether its stored mode is shown as another off CUDA (lab.axes.folded_mode)."""
    return df["mode"].isin(list(FOLD_WITHOUT_CUDA)) & ~df["device"].isin(list(GRAPH_DEVICES))


def modes_as_run(df: pd.DataFrame) -> pd.Series:
    """Each row's mode as it compiled (fold_modes' column alone): what the Results mode filter offers and matches."""
    if "device" not in df.columns or df.empty:
        return df["mode"]
    fold = _folds(df)
    return df["mode"].where(~fold, df["mode"].map(FOLD_WITHOUT_CUDA)) if fold.any() else df["mode"]


def folded_notes(df: pd.DataFrame) -> list[str]:
    """One line per stored mode shown as another (fold_modes)."""
    return [f"{n} job{'s' * (n > 1)} stored as {m} {'are' if n > 1 else 'is'} shown under {folded_mode(m, d)}: on {d} "
            "they are the same compile, since CUDA graphs need CUDA." for (m, d), n in df.attrs.get("folded", {}).items()]


def fold_request(request: dict) -> dict:
    """A sweep's request as Compare sets it beside another: off CUDA its modes as they compile (folded_mode), so two
    CPU sweeps asked for default and for reduce-overhead read as the same setting, as their results do."""
    modes, device = request.get("modes"), request.get("device")
    if not isinstance(modes, list) or not device:
        return request
    folded = list(dict.fromkeys(folded_mode(m, device) for m in modes))
    return request if folded == modes else {**request, "modes": folded}


def label_series(df: pd.DataFrame) -> pd.DataFrame:
    """Add `config` (a compiled series), `baseline` (its eager series) and `series` (config, plus the batch
    size when several are in view). Only what differs in view is named, so labels stay short; what every
    configuration shares is `attrs["common"]`, for a caption (lab.labels)."""
    df = fold_modes(with_cache_state(df))
    folded = df.attrs.get("folded", {})
    keys = [c for c in BASE_COLS + COMPILE_COLS if c in df.columns]
    text = df[keys].astype(str)
    groups = text.groupby(keys, sort=False, dropna=False)
    firsts = groups.head(1)
    firsts = firsts.astype(object).where(firsts.notna(), None).to_dict(orient="records")  # a missing value: None
    differ = db_labels.varying(firsts, keys, missing_differs=False)
    config = [db_labels.label(row, differ) for row in firsts]
    baseline = [" · ".join(["eager"] + [db_labels.part(c, row[c]) for c in differ if c in BASE_COLS])
                for row in firsts]
    code = groups.ngroup().to_numpy()
    config = _with_warm_state(pd.Series(config, dtype=object), df["cache"], df["cache_state"], code)
    df = df.assign(config=config.to_numpy()[code] if len(df) else [],
                   baseline=pd.Series(baseline, dtype=object).to_numpy()[code] if len(df) else [])
    several = df["batch_size"].nunique() > 1
    out = df.assign(series=df["config"] + (" · bs " + df["batch_size"].astype(str) if several else ""))
    shared = db_labels.common(firsts, [c for c in keys if c not in ("device_name",)], skip=("timing_protocol",))
    sizes = sorted(df["batch_size"].dropna().unique())
    out.attrs = {"folded": folded, "common": shared + (f" · bs {sizes[0]}" if len(sizes) == 1 else "")}
    return out


def with_cache_state(df: pd.DataFrame) -> pd.DataFrame:
    """Frames built without _finish (tests, hand-made rows) take the requested cache as its outcome."""
    return df if "cache_state" in df.columns else df.assign(cache_state=df["cache"])


def _warm_counts(cache: pd.Series, state: pd.Series, code, n: int) -> tuple[pd.Series, pd.Series]:
    """Per configuration (`code` numbers them 0..n-1): its warm-cache runs with a known graph-cache outcome,
    and how many of them found their compiled graph cached."""
    known = (cache == "warm") & state.isin(["warm", WARM_MISS])
    runs = pd.Series(known.to_numpy(), dtype=int).groupby(code).sum().reindex(range(n), fill_value=0)
    hits = pd.Series((known & (state == "warm")).to_numpy(), dtype=int).groupby(code).sum().reindex(range(n),
                                                                                                     fill_value=0)
    return runs, hits


def _with_warm_state(labels: pd.Series, cache: pd.Series, state: pd.Series, code) -> pd.Series:
    """A warm-cache configuration's label says what the cache gave its runs: "warm cache: graph cached",
    "graph not cached yet", or "graph cached in 1 of 2 runs" (in place of a plain "warm cache")."""
    runs, hits = _warm_counts(cache, state, code, len(labels))
    text = pd.Series("", index=labels.index, dtype=object)
    text[(runs > 0) & (hits == runs)] = "warm cache: graph cached"
    text[(runs > 0) & (hits == 0)] = "warm cache: graph not cached yet"
    some = (hits > 0) & (hits < runs)
    text[some] = "warm cache: graph cached in " + hits[some].astype(str) + " of " + runs[some].astype(str) + " runs"
    out = labels.copy()
    for i in text.index[text != ""]:
        parts = labels[i].split(" · ")
        parts = [text[i] if p == "warm cache" else p for p in parts]
        out[i] = " · ".join(parts if text[i] in parts else parts + [text[i]])
    return out
