"""The Results frame: db.views' rows as a typed DataFrame (one row per job, export-record columns) with the derived
columns the pages use, and the columns a view needs read for its rows only (`complete`). Plain pandas."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from db import views
from db.results import DETAIL_FIELDS
from db.views import (
    FIRST_CALL_FIELDS,
    FRAME_FIELDS,
    INTEGER_COLUMNS,
    LAZY_FIELDS,
    ROOFLINE_FIELDS,
    VIEW_FIELDS,
    ResultRows,
)
from lab.record import graph_cache_hit
from lab.sweep import sweep_label, sweep_name

JSON_COLUMNS = ("model_args", "schedule") + tuple(f for f in DETAIL_FIELDS if f not in views.DETAIL_NUMBERS)
# a warm-cache job whose compiled graph was not in the cache yet (the first of its kind) compiled the graph
# anyway: its `cache_state` says so, and its configuration's label says how many of its runs found the graph
# cached, so a plot does not credit "warm" with hits it never had (the series stays one configuration)
WARM_MISS = "warm (graph not cached yet)"
NUMBERS = ("eager_first_call_s", "compiled_first_call_s", "compiled_second_call_s", "eager_ms", "compiled_ms",
           "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms", "compiled_p90_ms", "speedup", "break_even_calls",
           "eager_throughput_ms", "compiled_throughput_ms", "throughput_speedup", "eager_gpu_ms", "compiled_gpu_ms",
           "gpu_speedup", "eager_host_overhead", "compiled_host_overhead")


def results_frame(rows: ResultRows) -> pd.DataFrame:
    """db.views.result_rows -> one row per job (export-record columns), plus the sweep's display label
    and the model arguments as text. Numbers become float arrays in one step (None -> NaN)."""
    df = pd.DataFrame({name: (np.array(values, dtype=float) if name in rows.number_columns
                              else _objects(values)) for name, values in rows.columns.items()})
    return _finish(df)


def load_frame(engine, finished_since=None, fields=FRAME_FIELDS) -> tuple[pd.DataFrame, tuple]:
    """The Results frame (db.views.FRAME_FIELDS: every finished job, the columns filters and counts use;
    `complete` adds the others for the rows a view draws) and the data version of the same snapshot.
    (A columnar reader such as ADBC was tried: it links a second SQLite library into the process,
    which does not see this process's uncheckpointed WAL writes and is a documented corruption risk.)"""
    rows = views.result_rows(engine, finished_since=finished_since, fields=fields)
    return results_frame(rows), rows.version


BOOL_FIELDS = ("fullgraph", "noisy", "disturbed", "accuracy_ok", "host_bound", "has_schedule")  # SQLite hands these back as 0 / 1


def _bools(series: pd.Series) -> pd.Series:
    """True / False / None, whether the driver gave booleans or 0 / 1."""
    num = pd.to_numeric(series.astype(object).where(series.notna(), np.nan), errors="coerce")
    return _objects(np.where(num.isna(), None, num > 0).tolist())


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    """Shared by both readers: types the columns, adds the sweep label and the model arguments as text."""
    df["job_id"] = df["job_id"].astype("int64")
    for col in INTEGER_COLUMNS:
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce").round().astype("Int64")
    for col in ("created_at", "finished_at"):
        if col in df.columns:
            df[col] = pd.to_datetime(df[col])
    for col in BOOL_FIELDS:
        if col in df.columns:
            df[col] = _bools(df[col])
    if "has_schedule" in df.columns:
        df["has_schedule"] = df["has_schedule"].fillna(False).astype(bool)
    if "sweep" in df.columns:
        df["sweep_id"] = df["sweep_id"].astype("int64")
        # built once per sweep, not per row (100k jobs are a few thousand sweeps): the label the sweep pickers
        # use (db.views.SweepSummary.label), "#id name-or-model", and "sweep id" for an unnamed sweep
        codes, ids = pd.factorize(df["sweep_id"])
        first = pd.Series(np.arange(len(df))).groupby(codes).first().to_numpy() if len(df) else []
        names = [n if isinstance(n, str) else "" for n in df["sweep"].to_numpy(dtype=object)[first]]
        models = df["model"].to_numpy(dtype=object)[first]
        label = np.array([sweep_label(i, n, m) for i, n, m in zip(ids, names, models)], dtype=object)
        shown = np.array([sweep_name(i, n) for i, n in zip(ids, names)], dtype=object)
        df["sweep_label"] = _objects(label[codes] if len(df) else [])
        df["sweep"] = _objects(shown[codes] if len(df) else [])
    if "fullgraph" in df.columns:
        df["fullgraph"] = df["fullgraph"].map({True: "true", False: "false"})
    if "model_args" in df.columns:
        df["variant"] = _map_unique(df["model_args"], _args_text)
    return add_cache_state(df)


def add_cache_state(df: pd.DataFrame) -> pd.DataFrame:
    """`cache_state`: the requested compile cache, or WARM_MISS for a warm-cache job whose graph was not
    cached yet (its `cache_hits`). Needs both columns; frames without them are returned as they are."""
    if "cache" in df.columns and "cache_hits" in df.columns:
        graph_hit = _map_unique(df["cache_hits"], _graph_hit)
        df["cache_state"] = df["cache"].where((df["cache"] != "warm") | graph_hit.isna() | graph_hit.eq(True),
                                              WARM_MISS)
    return df


def json_dict(text) -> dict | None:
    """A stored JSON object (compile_breakdown_s, cache_hits), or None when absent or not an object."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _graph_hit(text) -> bool | None:
    """Did inductor's FX graph cache serve the compiled graph (runner.measure's cache counters)? None when
    the job never asked it (another backend: every counter 0) or the counters are unknown."""
    return graph_cache_hit(json_dict(text))


def _objects(values: list) -> pd.Series:
    """Text columns stay object columns: pandas would convert each to arrow strings, a cost
    per value, and nothing here needs that."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return pd.Series(out, dtype=object)




def _map_unique(series: pd.Series, fn) -> pd.Series:
    """Apply fn once per distinct value (100k rows hold a handful of distinct JSON texts); missing stays
    missing. An object column, like the others (no inferred string dtype to convert to)."""
    codes, uniques = pd.factorize(series)
    mapped = np.empty(len(uniques) + 1, dtype=object)  # the last slot: code -1, a missing value
    mapped[:-1] = [fn(u) for u in uniques]
    mapped[-1] = None
    return pd.Series(mapped[codes], index=series.index, dtype=object)


def _args_text(text: str) -> str:
    try:
        args = json.loads(text) if text else {}
    except ValueError:
        return str(text)
    return " ".join(f"{k}={v}" for k, v in sorted(args.items())) if isinstance(args, dict) else str(args)


DENSE = 0.5  # complete(): rows that fill at least this share of the job ids they span are read by id range


def complete(df: pd.DataFrame, engine=None,
             fields=VIEW_FIELDS + FIRST_CALL_FIELDS + ROOFLINE_FIELDS + LAZY_FIELDS) -> pd.DataFrame:
    """These rows with `fields` (by default every export field). The bulk frame holds what filters and
    counts use (db.views.FRAME_FIELDS); the rest is read here for these rows only: a model's plots
    (VIEW_FIELDS), a table page, a comparison, a download. Finished jobs never change, so what is read
    now belongs to the rows held, whenever they were read.

    Rows that fill most of the job ids they span (every job in view) are read by that id range and matched
    here, without an IN list of 100k ids; others (one model's jobs, a page) by their ids."""
    missing = [f for f in fields if f not in df.columns]
    if not missing:
        return df
    if engine is None:
        raise ValueError(f"reading {', '.join(missing)} needs the engine")
    if df.empty:
        extra = pd.DataFrame({"job_id": pd.Series(dtype="int64"), **{f: pd.Series(dtype=object) for f in missing}})
    elif len(df) > 1000 and len(df) >= DENSE * (int(df["job_id"].max()) - int(df["job_id"].min()) + 1):
        span = (int(df["job_id"].min()), int(df["job_id"].max()))
        extra = results_frame(views.result_rows(engine, job_id_range=span, fields=missing))
    else:
        extra = results_frame(views.result_rows(engine, job_ids=df["job_id"].tolist(), fields=missing))
    out = df.merge(extra[["job_id", *missing]], on="job_id", how="left", validate="one_to_one")
    out.index = df.index
    return add_cache_state(out) if "cache_hits" in missing else out
