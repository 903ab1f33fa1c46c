"""The Results table: rows from db.views as a DataFrame, filters, series labels, medians, exports.

Plain pandas, no streamlit: pages call these with values, tests call them directly. Column names are
the export record's (db.results.RECORD_FIELDS); a few derived columns are added for plotting
(`variant`: the model arguments as text; `config`: the compile settings that differ in view).
"""
from __future__ import annotations

import json
import logging
import threading

import numpy as np
import pandas as pd

from db.results import RECORD_FIELDS, DETAIL_FIELDS
from db import views
from db.views import INTEGER_COLUMNS, LAZY_FIELDS, ResultRows

JSON_COLUMNS = ("model_args", "schedule") + DETAIL_FIELDS
FILTERS = {  # column -> label; every one is a URL query parameter on the Results page
    "sweep": "Sweep", "model": "Model", "backend": "Backend", "mode": "Mode", "dynamic": "Dynamic",
    "fullgraph": "Fullgraph", "device": "Device", "dtype": "dtype", "torch_version": "torch",
    "device_name": "GPU / CPU"}
ENV_FILTERS = ("torch_version", "device_name")  # unknown for jobs that never ran: kept under these filters
# what tells one plotted series from another, in label order
BASE_COLS = ("task", "device", "dtype", "variant", "torch_version", "device_name")
COMPILE_COLS = ("backend", "mode", "dynamic", "fullgraph", "cache")
NUMBERS = ("eager_first_call_s", "compiled_first_call_s", "compiled_second_call_s", "eager_ms", "compiled_ms",
           "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms", "compiled_p90_ms", "speedup", "break_even_calls",
           "eager_wall_ms", "compiled_wall_ms")


def results_frame(rows: ResultRows) -> pd.DataFrame:
    """db.views.result_rows -> one row per job (export-record columns), plus the sweep's display label
    and the model arguments as text. Numbers become float arrays in one step (None -> NaN)."""
    df = pd.DataFrame({name: (np.array(values, dtype=float) if name in rows.number_columns
                              else _objects(values)) for name, values in rows.columns.items()})
    return _finish(df)


def load_frame(engine, finished_since=None) -> tuple[pd.DataFrame, tuple]:
    """The Results frame (db.views.FRAME_FIELDS) and the data version of the same snapshot.
    (A columnar reader such as ADBC was tried: it links a second SQLite library into the process,
    which does not see this process's uncheckpointed WAL writes and is a documented corruption risk.)"""
    rows = views.result_rows(engine, finished_since=finished_since)
    return results_frame(rows), rows.version


BOOL_FIELDS = ("fullgraph", "noisy", "accuracy_ok", "has_schedule")  # SQLite hands these back as 0 / 1


def _bools(series: pd.Series) -> pd.Series:
    """True / False / None, whether the driver gave booleans or 0 / 1."""
    num = pd.to_numeric(series.astype(object).where(series.notna(), np.nan), errors="coerce")
    return _objects(np.where(num.isna(), None, num > 0).tolist())


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    """Shared by both readers: types the columns, adds the sweep label and the model arguments as text."""
    df["job_id"] = df["job_id"].astype("int64")
    for col in INTEGER_COLUMNS:
        if col in df.columns:
            df[col] = df[col].round().astype("Int64")
    for col in ("created_at", "finished_at"):
        if col in df.columns:
            df[col] = pd.to_datetime(df[col])
    for col in BOOL_FIELDS:
        if col in df.columns:
            df[col] = _bools(df[col])
    if "has_schedule" in df.columns:
        df["has_schedule"] = df["has_schedule"].fillna(False).astype(bool)
    if "sweep" in df.columns:
        names = df["sweep"].fillna("")
        df["sweep_id"] = df["sweep_id"].astype("int64")
        # the label the sweep pickers use (db.views.SweepSummary.label): "#id name-or-model"
        df["sweep_label"] = "#" + df["sweep_id"].astype(str) + " " + names.where(names != "", df["model"])
        df["sweep"] = names.where(names != "", "sweep " + df["sweep_id"].astype(str))
    if "fullgraph" in df.columns:
        df["fullgraph"] = df["fullgraph"].map({True: "true", False: "false"})
    if "model_args" in df.columns:
        df["variant"] = _map_unique(df["model_args"], _args_text)
    return df


def _objects(values: list) -> pd.Series:
    """Text columns stay object columns: pandas would convert each to arrow strings (~15 ms per 100k
    values) and nothing here needs that."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return pd.Series(out, dtype=object)


class ResultStore:
    """Every finished job of one database as a DataFrame, kept current by appending what finished since.

    A finished job never changes again (cancel, finish and requeue touch only queued or running jobs;
    re-submit makes a new job), so when the data version moves, only jobs finished since the newest one
    held (less a margin for clocks and commit order) are fetched. If the count then disagrees with the
    snapshot's count, everything is reloaded. One store per database and server process; callers must
    not modify the frame they get (filters make new frames)."""

    MARGIN = pd.Timedelta(hours=1)

    def __init__(self, engine):
        self.engine = engine
        self.frame_: pd.DataFrame | None = None
        self.version: tuple | None = None
        self.full_loads = 0  # for tests and the benchmark
        self._lock = threading.Lock()

    def frame(self) -> pd.DataFrame:
        version = views.data_version(self.engine)
        with self._lock:
            if version == self.version and self.frame_ is not None:
                return self.frame_
            old = self.frame_
            if old is not None and not old.empty and old["finished_at"].notna().any():
                since = (old["finished_at"].max() - self.MARGIN).to_pydatetime()
                new, new_version = load_frame(self.engine, finished_since=since)
                df = pd.concat([old, new[~new["job_id"].isin(old["job_id"])]], ignore_index=True)
                if len(df) != new_version[0]:
                    df, new_version = self._load_all()
            else:
                df, new_version = self._load_all()
            self.frame_, self.version = df, new_version
            return df

    def warm(self) -> None:
        """Load in the background (the app starts this once per server process), so the first visit to
        Results does not wait for 100k rows; a page that asks meanwhile waits on the lock, not twice."""
        try:
            self.frame()
        except Exception as e:  # the page will load (and report) it itself
            logging.getLogger("compile_lab.dashboard").warning("warming the results table failed: %s", e)

    def _load_all(self) -> tuple[pd.DataFrame, tuple]:
        self.full_loads += 1
        return load_frame(self.engine)


def _map_unique(series: pd.Series, fn) -> pd.Series:
    """Apply fn once per distinct value (100k rows hold a handful of distinct JSON texts)."""
    uniques = series.dropna().unique()
    return series.map({u: fn(u) for u in uniques})


def _args_text(text: str) -> str:
    try:
        args = json.loads(text) if text else {}
    except ValueError:
        return str(text)
    return " ".join(f"{k}={v}" for k, v in sorted(args.items())) if isinstance(args, dict) else str(args)


def filter_options(df: pd.DataFrame, col: str) -> list:
    if col == "sweep":
        order = df.drop_duplicates("sweep_id").sort_values("sweep_id", ascending=False)
        return order["sweep_label"].tolist()
    return sorted(df[col].dropna().astype(str).unique().tolist())


def apply_filters(df: pd.DataFrame, selected: dict[str, list]) -> pd.DataFrame:
    """Keep rows whose value is among the chosen ones (empty choice: all). Rows with no environment
    (jobs that failed before measuring on an unknown worker) stay under the environment filters."""
    mask = pd.Series(True, index=df.index)
    for col, values in selected.items():
        if not values:
            continue
        key = "sweep_label" if col == "sweep" else col
        hit = df[key].astype(str).isin([str(v) for v in values])
        if col in ENV_FILTERS:
            hit |= df[key].isna()
        mask &= hit
    return df[mask]


def _part(col: str, value: str) -> str:
    return {"dynamic": f"dynamic={value}", "fullgraph": f"fullgraph={value}", "cache": f"{value} cache",
            "torch_version": f"torch {value}"}.get(col, value)


def _label(values: dict, cols: list[str]) -> str:
    parts = [f"{values['backend']}/{values['mode']}"] if "backend" in cols or "mode" in cols else []
    return " · ".join(parts + [_part(c, values[c]) for c in cols if c not in ("backend", "mode")])


def label_series(df: pd.DataFrame) -> pd.DataFrame:
    """Add `config` (a compiled series), `baseline` (its eager series) and `series` (config, plus the batch
    size when several are in view). Only what differs in view is named, so labels stay short."""
    keys = list(BASE_COLS + COMPILE_COLS)
    text = df[keys].astype(str)
    groups = text.groupby(keys, sort=False, dropna=False)
    firsts = groups.head(1)
    varying = [c for c in keys if firsts[c].nunique() > 1]
    config, baseline = [], []
    for row in firsts.to_dict(orient="records"):
        config.append(_label(row, varying) or f"{row['backend']}/{row['mode']}")
        baseline.append(" · ".join(["eager"] + [_part(c, row[c]) for c in varying if c in BASE_COLS]))
    code = groups.ngroup().to_numpy()
    df = df.assign(config=pd.Series(config, dtype=object).to_numpy()[code] if len(df) else [],
                   baseline=pd.Series(baseline, dtype=object).to_numpy()[code] if len(df) else [])
    several = df["batch_size"].nunique() > 1
    return df.assign(series=df["config"] + (" · bs " + df["batch_size"].astype(str) if several else ""))


def medians(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Median of every number over repeated runs of one configuration, and how many runs that is."""
    ok = df.loc[df["status"] == "succeeded", list(by) + list(NUMBERS)]
    grouped = ok.groupby(by, dropna=False, sort=True)
    agg = grouped[list(NUMBERS)].median()
    agg["runs"] = grouped.size()
    return agg.reset_index()


def summarize(view: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the plots draw: medians per (config, batch size) with their `series` label, and the failures."""
    agg = medians(view, ["config", "baseline", "batch_size"])
    several = view["batch_size"].nunique() > 1
    agg["series"] = agg["config"] + (" · bs " + agg["batch_size"].astype(str) if several else "")
    return agg, failures(view)


def failures(df: pd.DataFrame) -> pd.DataFrame:
    """Every job in view that did not succeed, with its reason (never dropped from a plot)."""
    cols = [c for c in ("job_id", "sweep", "status", "error", "attempts", "model", "batch_size", "backend", "mode",
                        "dynamic", "fullgraph", "config", "series") if c in df.columns]
    bad = df.loc[df["status"] != "succeeded", cols]
    return bad.assign(error=bad["error"].fillna(bad["status"]))


def complete(df: pd.DataFrame, engine=None) -> pd.DataFrame:
    """These rows with every export field. The bulk frame holds what filters and plots use; the rest
    (db.views.LAZY_FIELDS) is read here for these rows only (a table page, a comparison, a download)."""
    missing = [f for f in LAZY_FIELDS if f not in df.columns]
    if not missing:
        return df
    if engine is None:
        raise ValueError(f"reading {', '.join(missing)} needs the engine")
    extra = results_frame(views.result_rows(engine, job_ids=df["job_id"].tolist(), fields=missing))
    out = df.merge(extra[["job_id", *missing]], on="job_id", how="left", validate="one_to_one")
    out.index = df.index
    return out


def export_columns(df: pd.DataFrame, engine=None) -> pd.DataFrame:
    """Exactly the export record's fields, in its order (what the table shows and CSV holds)."""
    return complete(df, engine)[list(RECORD_FIELDS)]


def to_csv(df: pd.DataFrame, engine=None) -> str:
    return export_columns(df, engine).to_csv(index=False)


def to_json(df: pd.DataFrame, engine=None) -> str:
    """The shown rows as `python -m runner export --format json` records (JSON fields parsed, dynamic as
    null/true/false)."""
    out = export_columns(df, engine).copy()
    for col in JSON_COLUMNS:
        out[col] = _map_unique(out[col], json.loads).where(out[col].notna(), None)
    out["dynamic"] = out["dynamic"].map({"none": None, "true": True, "false": False})
    out["fullgraph"] = out["fullgraph"].map({"true": True, "false": False})
    for col in ("created_at", "finished_at"):
        out[col] = out[col].map(lambda t: t.isoformat() if pd.notna(t) else None)
    records = out.astype(object).where(out.notna(), None).to_dict(orient="records")
    return json.dumps(records, indent=1, default=str)
