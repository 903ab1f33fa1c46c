"""Series labels: what tells one plotted configuration from another, naming only what differs in view; a
warm-cache configuration says what the cache gave its runs."""
from __future__ import annotations

import pandas as pd

from dashboard.frame import WARM_MISS
from db.axes import BY_FIELD, COMPILE_FIELDS

# what tells one plotted series from another, in label order
# (timing_protocol: results timed before caller latency are their own series, never mixed with later ones)
BASE_COLS = ("task", "device", "dtype", "variant", "torch_version", "device_name", "timing_protocol")
COMPILE_COLS = (*COMPILE_FIELDS, "cache")


def _part(col: str, value: str) -> str:
    if col in BY_FIELD:
        return BY_FIELD[col].part(value)
    return {"cache": f"{value} cache",
            "torch_version": f"torch {value}",
            "timing_protocol": "old timing (protocol 1)" if value == "1" else f"timing protocol {value}",
            }.get(col, value)


def _label(values: dict, cols: list[str]) -> str:
    parts = [f"{values['backend']}/{values['mode']}"] if "backend" in cols or "mode" in cols else []
    return " · ".join(parts + [_part(c, values[c]) for c in cols if c not in ("backend", "mode")])


def label_series(df: pd.DataFrame) -> pd.DataFrame:
    """Add `config` (a compiled series), `baseline` (its eager series) and `series` (config, plus the batch
    size when several are in view). Only what differs in view is named, so labels stay short."""
    df = with_cache_state(df)
    keys = [c for c in BASE_COLS + COMPILE_COLS if c in df.columns]
    text = df[keys].astype(str)
    groups = text.groupby(keys, sort=False, dropna=False)
    firsts = groups.head(1)
    varying = [c for c in keys if firsts[c].nunique() > 1]
    config, baseline = [], []
    for row in firsts.to_dict(orient="records"):
        config.append(_label(row, varying) or f"{row['backend']}/{row['mode']}")
        baseline.append(" · ".join(["eager"] + [_part(c, row[c]) for c in varying if c in BASE_COLS]))
    code = groups.ngroup().to_numpy()
    config = _with_warm_state(pd.Series(config, dtype=object), df["cache"], df["cache_state"], code)
    df = df.assign(config=config.to_numpy()[code] if len(df) else [],
                   baseline=pd.Series(baseline, dtype=object).to_numpy()[code] if len(df) else [])
    several = df["batch_size"].nunique() > 1
    return df.assign(series=df["config"] + (" · bs " + df["batch_size"].astype(str) if several else ""))


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


def split_by_graph_cache(view: pd.DataFrame) -> pd.DataFrame:
    """For first-call views: where the warm-cache runs of one configuration and batch size did not all find
    their graph cached, hits and misses become two series (" · hit" / " · miss"): a median over a miss and
    a hit is a first call no run had. Steady-state views keep one series (the compiled code is the same)."""
    warm = view["cache_state"].isin(["warm", WARM_MISS]) & (view["cache"] == "warm")
    keys = ["config", "batch_size"]
    states = view[warm].groupby(keys)["cache_state"].transform("nunique")
    split = pd.Series(False, index=view.index)
    split[states.index] = states.to_numpy() > 1
    if not split.any():
        return view
    suffix = view["cache_state"].map({"warm": " · hit", WARM_MISS: " · miss"}).where(split, "")
    return view.assign(series=view["series"] + suffix, config=view["config"] + suffix)
