"""The Results table: rows from db.views as a DataFrame, filters, series labels, medians, exports.

Plain pandas, no streamlit: pages call these with values, tests call them directly. Column names are
the export record's (db.results.RECORD_FIELDS); a few derived columns are added for plotting
(`variant`: the model arguments as text; `config`: the compile settings that differ in view).
"""
from __future__ import annotations

import json
import logging
import re
import threading

import numpy as np
import pandas as pd

from dashboard import snapshot
from db import views
from db.results import DETAIL_FIELDS, RECORD_FIELDS, records_csv
from db.views import (
    FIRST_CALL_FIELDS,
    FRAME_FIELDS,
    INTEGER_COLUMNS,
    LAZY_FIELDS,
    ROOFLINE_FIELDS,
    VIEW_FIELDS,
    ResultRows,
)

JSON_COLUMNS = ("model_args", "schedule") + tuple(f for f in DETAIL_FIELDS if f not in views.DETAIL_NUMBERS)
FILTERS = {  # column -> label; every one is a URL query parameter on the Results page
    "sweep": "Sweep", "model": "Model", "backend": "Backend", "mode": "Mode", "dynamic": "Dynamic",
    "fullgraph": "Fullgraph", "cache": "Compile cache", "device": "Device", "dtype": "dtype",
    "torch_version": "torch", "device_name": "GPU / CPU", "status": "Status"}
ENV_FILTERS = ("torch_version", "device_name")  # unknown for jobs that never ran: kept under these filters
# what tells one plotted series from another, in label order
# (timing_protocol: results timed before caller latency are their own series, never mixed with later ones)
BASE_COLS = ("task", "device", "dtype", "variant", "torch_version", "device_name", "timing_protocol")
COMPILE_COLS = ("backend", "mode", "dynamic", "fullgraph", "cache")
# a warm-cache job whose compiled graph was not in the cache yet (the first of its kind) compiled the graph
# anyway: its `cache_state` says so, and its configuration's label says how many of its runs found the graph
# cached, so a plot does not credit "warm" with hits it never had (the series stays one configuration)
WARM_MISS = "warm (graph not cached yet)"
NUMBERS = ("eager_first_call_s", "compiled_first_call_s", "compiled_second_call_s", "eager_ms", "compiled_ms",
           "eager_p10_ms", "eager_p90_ms", "compiled_p10_ms", "compiled_p90_ms", "speedup", "break_even_calls",
           "eager_throughput_ms", "compiled_throughput_ms", "throughput_speedup", "eager_gpu_ms", "compiled_gpu_ms",
           "gpu_speedup", "eager_host_overhead", "compiled_host_overhead")
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


BOOL_FIELDS = ("fullgraph", "noisy", "accuracy_ok", "host_bound", "has_schedule")  # SQLite hands these back as 0 / 1


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
        label = np.array([f"#{i} {n or m}" for i, n, m in zip(ids, names, models)], dtype=object)
        shown = np.array([n or f"sweep {i}" for i, n in zip(ids, names)], dtype=object)
        df["sweep_label"] = _objects(label[codes] if len(df) else [])
        df["sweep"] = _objects(shown[codes] if len(df) else [])
    if "fullgraph" in df.columns:
        df["fullgraph"] = df["fullgraph"].map({True: "true", False: "false"})
    if "model_args" in df.columns:
        df["variant"] = _map_unique(df["model_args"], _args_text)
    return _add_cache_state(df)


def _add_cache_state(df: pd.DataFrame) -> pd.DataFrame:
    """`cache_state`: the requested compile cache, or WARM_MISS for a warm-cache job whose graph was not
    cached yet (its `cache_hits`). Needs both columns; frames without them are returned as they are."""
    if "cache" in df.columns and "cache_hits" in df.columns:
        graph_hit = _map_unique(df["cache_hits"], _graph_hit)
        df["cache_state"] = df["cache"].where((df["cache"] != "warm") | graph_hit.isna() | graph_hit.eq(True),
                                              WARM_MISS)
    return df


def _json_dict(text) -> dict | None:
    """A stored JSON object (compile_breakdown_s, cache_hits), or None when absent or not an object."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _graph_hit(text) -> bool | None:
    """Did inductor's FX graph cache serve the compiled graph (runner.measure's cache counters)? None when
    the job never asked it (another backend: every counter 0) or the counters are unknown."""
    hits = _json_dict(text)
    if hits is None:
        return None
    hit, miss = hits.get("inductor_fx_local_cache_hit_count") or 0, hits.get("inductor_fx_local_cache_miss_count") or 0
    return True if hit > 0 else False if miss > 0 else None


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
    not modify the frame they get (filters make new frames).

    `snapshot_path` (dashboard.snapshot): the frame is also kept on disk, so a restarted server starts
    from it and appends, instead of reading every row again. It is rewritten in the background after a
    full load and whenever SAVE_EVERY rows (or a twentieth of the frame) were appended since, once the
    page that asked has been drawn (save_if_due)."""

    MARGIN = pd.Timedelta(hours=1)
    SAVE_EVERY = 1000

    def __init__(self, engine, snapshot_path=None):
        self.engine = engine
        self.snapshot_path = snapshot_path
        self.frame_: pd.DataFrame | None = None
        self.version: tuple | None = None
        self.full_loads = 0  # for tests and the benchmark
        self.restored = False  # started from the snapshot on disk
        self._saved_rows = 0
        self._due: tuple | None = None  # (frame, version, snapshot key) to write to the snapshot
        self._lock = threading.Lock()
        self.saving: threading.Thread | None = None
        self.pages_asked = False  # a page called frame() (warm() then leaves the snapshot to the page)
        self._extra: dict[tuple, pd.DataFrame] = {}  # complete(): fields -> the rows read so far (job_id + fields)
        self._extra_lock = threading.Lock()
        self._generation = 0  # moves when _forget drops rows: a complete() read begun before then is not kept

    def frame(self, page: bool = True) -> pd.DataFrame:
        if page:
            self.pages_asked = True
        version = views.data_version(self.engine)
        with self._lock:
            if self.frame_ is None and self.snapshot_path is not None:
                self._restore()
            if version == self.version and self.frame_ is not None:
                return self.frame_
            old = self.frame_
            full = True
            # the snapshot's key is read before the rows: a migration in between makes it stale, not wrong
            key = snapshot.key(self.engine) if self.snapshot_path is not None else None
            if old is not None and not old.empty and old["finished_at"].notna().any():
                since = (old["finished_at"].max() - self.MARGIN).to_pydatetime()
                new, new_version = load_frame(self.engine, finished_since=since)
                # a fetched row replaces the one held for its job id: the database is the truth (a file
                # restored from a backup may have re-run a job; SQLite may reuse the ids of deleted jobs)
                df = pd.concat([old[~old["job_id"].isin(new["job_id"])], new], ignore_index=True)
                full = len(df) != new_version[0]
                if full:
                    df, new_version = self._load_all()
                else:
                    self._forget(_finished_again(old, new))
            else:
                df, new_version = self._load_all()
            self.frame_, self.version = df, new_version
            if full or len(df) - self._saved_rows >= max(self.SAVE_EVERY, len(df) // 20):
                self._due = (df, new_version, key)
            return df

    def warm(self) -> None:
        """Load in the background (the app starts this once per server process), so the first visit to
        Results does not wait for 100k rows; a page that asks meanwhile waits on the lock, not twice.
        If one did, the snapshot is left to it (the app saves after a page has run): pickling here would
        hold the GIL while that page draws (~1.5 s more for the first Results page at 100k jobs)."""
        try:
            self.frame(page=False)
        except Exception as e:  # the page will load (and report) it itself
            logging.getLogger("compile_lab.dashboard").warning("warming the results table failed: %s", e)
        if not self.pages_asked:
            self.save_if_due()

    def _load_all(self) -> tuple[pd.DataFrame, tuple]:
        self.full_loads += 1
        self._forget(None)
        return load_frame(self.engine)

    def complete(self, df: pd.DataFrame, fields) -> pd.DataFrame:
        """`complete(df, engine, fields)`, remembering what it read: a finished job's numbers never
        change, so when one more job finishes, only that job is read again, not the 25k of its model."""
        fields = tuple(f for f in fields if f not in df.columns)
        if not fields:
            return df
        with self._extra_lock:
            held, generation = self._extra.get(fields), self._generation
        need = df if held is None else df[~df["job_id"].isin(held["job_id"])]
        if len(need):
            got = complete(need[["job_id"]], self.engine, fields)
            with self._extra_lock:
                keep = self._generation == generation  # else jobs were read again meanwhile: this read may predate them
                base = self._extra.get(fields) if keep else held
                held = got if base is None else pd.concat([base[~base["job_id"].isin(got["job_id"])], got],
                                                          ignore_index=True)
                if keep:
                    self._extra[fields] = held
        out = df.merge(held[held["job_id"].isin(df["job_id"])], on="job_id", how="left", validate="one_to_one")
        out.index = df.index
        return _add_cache_state(out) if "cache_hits" in fields else out

    def _forget(self, job_ids) -> None:
        """Drop what complete() holds for these jobs (all jobs: None): they were read again."""
        if job_ids is not None and len(job_ids) == 0:
            return
        with self._extra_lock:
            self._generation += 1
            if job_ids is None:
                self._extra.clear()
            else:
                self._extra = {k: v[~v["job_id"].isin(job_ids)] for k, v in self._extra.items()}

    def _restore(self) -> None:
        got = snapshot.load(self.snapshot_path, self.engine)
        if got is not None:
            self.frame_, self.version = got
            self._saved_rows, self.restored = len(self.frame_), True

    def save_if_due(self) -> None:
        """Write the snapshot if frame() asked for it, in a background thread. Pickling 100k rows takes
        ~0.7 s and holds the GIL, so the app calls this when a page has finished drawing, not while it
        draws (the frame is never modified, so the thread can read it meanwhile)."""
        with self._lock:
            due, self._due = self._due, None
            if due is None or self.snapshot_path is None:
                return
            self.saving = threading.Thread(target=self._save, args=due, name="compile-lab-results-snapshot",
                                           daemon=True)
            self.saving.start()

    def _save(self, df: pd.DataFrame, version: tuple, key: dict) -> None:
        try:
            snapshot.save(self.snapshot_path, key, df, version)
        except Exception as e:  # a read-only folder, a full disk: the store works without it
            logging.getLogger("compile_lab.dashboard").warning("saving the results snapshot failed: %s", e)
        else:
            self._saved_rows = len(df)


def _finished_again(old: pd.DataFrame, new: pd.DataFrame) -> pd.Series:
    """Job ids of `new` that `old` held with another finish time: run again (e.g. a database restored from a
    backup). The append window re-reads an hour of unchanged jobs; those keep what complete() read."""
    held = old.set_index("job_id")["finished_at"]
    again = new[new["job_id"].isin(held.index)]
    same = again["finished_at"].to_numpy() == held.loc[again["job_id"]].to_numpy()
    return again.loc[~same, "job_id"]


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


def filter_options(df: pd.DataFrame, col: str) -> list:
    if col == "sweep":
        order = df.drop_duplicates("sweep_id").sort_values("sweep_id", ascending=False)
        return order["sweep_label"].tolist()
    return sorted({str(v) for v in pd.unique(df[col].to_numpy()) if not pd.isna(v)})  # no str() per row


def apply_filters(df: pd.DataFrame, selected: dict[str, list]) -> pd.DataFrame:
    """Keep rows whose value is among the chosen ones (empty choice: all). Rows with no environment
    (jobs that failed before measuring on an unknown worker) stay under the environment filters. With no
    filter set, `df` itself (no copy of every row on each rerun)."""
    if not any(selected.values()):
        return df
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
            "torch_version": f"torch {value}",
            "timing_protocol": "old timing (protocol 1)" if value == "1" else f"timing protocol {value}",
            }.get(col, value)


def _label(values: dict, cols: list[str]) -> str:
    parts = [f"{values['backend']}/{values['mode']}"] if "backend" in cols or "mode" in cols else []
    return " · ".join(parts + [_part(c, values[c]) for c in cols if c not in ("backend", "mode")])


def label_series(df: pd.DataFrame) -> pd.DataFrame:
    """Add `config` (a compiled series), `baseline` (its eager series) and `series` (config, plus the batch
    size when several are in view). Only what differs in view is named, so labels stay short."""
    df = _with_cache_state(df)
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


def _with_cache_state(df: pd.DataFrame) -> pd.DataFrame:
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


def first_calls(view: pd.DataFrame) -> pd.DataFrame:
    """`summarize`'s medians for the warmup plot, with a warm-cache configuration's hits and misses apart
    (split_by_graph_cache)."""
    return summarize(split_by_graph_cache(view))[0]


def failures(df: pd.DataFrame, cancelled: bool = False) -> pd.DataFrame:
    """Every job in view that failed, timed out or crashed, with its reason (never dropped from a plot).
    A job a person cancelled says nothing about its configuration: it is left out unless `cancelled`."""
    cols = [c for c in ("job_id", "sweep", "status", "error", "attempts", "model", "batch_size", "backend", "mode",
                        "dynamic", "fullgraph", "config", "series") if c in df.columns]
    bad = df.loc[(df["status"] != "succeeded") & (cancelled | (df["status"] != "cancelled")), cols]
    return bad.assign(error=bad["error"].fillna(bad["status"]))


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
    return _add_cache_state(out) if "cache_hits" in missing else out


def download_name(selected: dict[str, list], ext: str) -> str:
    """A download's file name that says what it holds: compile_lab_sweep12_complexnet_default.csv from the
    sweep, model and mode filters (compile_lab_results.csv with none set), so two downloads do not overwrite
    each other under one generic name."""
    word = {"sweep": lambda v: "sweep" + str(v).split()[0].lstrip("#"), "dynamic": lambda v: f"dynamic-{v}"}
    parts = [word.get(col, str)(v) for col in ("sweep", "model", "mode", "dynamic") for v in selected.get(col) or []]
    stem = "_".join(re.sub(r"[^A-Za-z0-9.-]+", "-", p).strip("-") for p in parts)[:80].strip("_-")
    return f"compile_lab_{stem or 'results'}.{ext}"


def export_columns(df: pd.DataFrame, engine=None) -> pd.DataFrame:
    """Exactly the export record's fields, in its order (what the table shows and CSV holds)."""
    return complete(df, engine)[list(RECORD_FIELDS)]


def to_csv(df: pd.DataFrame, engine=None) -> str:
    """The shown rows as `python -m runner export --format csv` writes them (the same function)."""
    return records_csv(export_rows(df, engine))


def to_json(df: pd.DataFrame, engine=None) -> str:
    """The shown rows as `python -m runner export --format json` records (JSON fields parsed, dynamic as
    null/true/false)."""
    return json.dumps(export_rows(df, engine), indent=1, default=str)


def export_rows(df: pd.DataFrame, engine=None) -> list[dict]:
    """The shown rows as export records (db.results.export_records' types: JSON fields parsed, dynamic and
    fullgraph as None / True / False, times as ISO text)."""
    out = export_columns(df, engine).copy()
    for col in JSON_COLUMNS:
        out[col] = _map_unique(out[col], json.loads).where(out[col].notna(), None)
    out["dynamic"] = out["dynamic"].map({"none": None, "true": True, "false": False})
    out["fullgraph"] = out["fullgraph"].map({"true": True, "false": False})
    for col in ("created_at", "finished_at"):
        out[col] = out[col].map(lambda t: t.isoformat() if pd.notna(t) else None)
    return out.astype(object).where(out.notna(), None).to_dict(orient="records")


# -- issue 5: trust in a number, where the first call goes, device time vs host latency ----------------
BREAKDOWN_PARTS = ("dynamo tracing", "aot autograd", "inductor lowering", "codegen + kernel compile", "autotuning",
                   "other (run, guards)")  # runner.measure.compile_breakdown's keys, in the order they happen
NO_BREAKDOWN = "first call (no breakdown recorded)"


def with_noise(agg: pd.DataFrame, view: pd.DataFrame) -> pd.DataFrame:
    """`agg` (summarize) plus, per (config, batch size), how many runs were noisy (spread past 5%) and the
    largest spread of either side, so plots can mark numbers that moved within their own job; and how many
    were host-bound (the GPU idle half of a call or more: runner.measure.HOST_BOUND), with one's note."""
    ok = view.loc[view["status"] == "succeeded", ["config", "batch_size", "eager_spread", "compiled_spread"]]
    dropped = (view.loc[ok.index, "measure_recompiles"] if "measure_recompiles" in view
               else pd.Series(0, index=ok.index)).fillna(0)
    bound = view.loc[ok.index, "host_bound"] if "host_bound" in view else pd.Series(None, index=ok.index)
    note = view.loc[ok.index, "host_note"] if "host_note" in view else pd.Series(None, index=ok.index)
    why = view.loc[ok.index, "noise_note"] if "noise_note" in view else pd.Series(None, index=ok.index)
    ok = ok.assign(noisy_runs=view.loc[ok.index, "noisy"].eq(True),
                   max_spread=ok[["eager_spread", "compiled_spread"]].max(axis=1),
                   recompiled_runs=dropped > 0, dropped_calls=dropped,
                   host_bound_runs=bound.eq(True), host_note=note.where(bound.eq(True)),
                   noise_note=why.where(view.loc[ok.index, "noisy"].eq(True)))
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
    None when eager held."""
    ok = agg.dropna(subset=["eager_ms"])
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


def breakdown_frame(view: pd.DataFrame) -> pd.DataFrame:
    """The first calls per `series`, long: the compiled first call cut into compile_breakdown_s parts, and
    the eager first call. Parts come from one real job, the one with the median compiled first call (parts
    of different runs' medians would not add up); the eager bar is the median over the series' runs."""
    cols = ["series", "config", "batch_size", "bar", "part", "seconds", "job_id", "runs", "cache", "cache_hits"]
    needed = ["series", "config", "batch_size", "job_id", "cache_state", "cache_hits", "compile_breakdown_s",
              "compiled_first_call_s", "eager_first_call_s"]
    view = _with_cache_state(view)
    ok = view.loc[(view["status"] == "succeeded") & view["compiled_first_call_s"].notna(), needed]
    if ok.empty:  # typed, so sums and cumsums over it work (object columns refuse cumsum)
        return pd.DataFrame(columns=cols).astype({"seconds": float, "batch_size": float, "runs": float})
    order = ok.sort_values(["series", "compiled_first_call_s", "job_id"])
    grouped = order.groupby("series", sort=False)
    runs = grouped["job_id"].transform("size")
    picked = order[grouped.cumcount() == (runs - 1) // 2].assign(runs=runs)
    rows = []
    for r in picked.itertuples():  # one per series
        parts, hits = _parts(r.compile_breakdown_s, r.compiled_first_call_s), _hits_text(r.cache_hits)
        rows += [{"series": r.series, "config": r.config, "batch_size": r.batch_size, "bar": "compiled", "part": p,
                  "seconds": s, "job_id": r.job_id, "runs": r.runs, "cache": r.cache_state, "cache_hits": hits}
                 for p, s in parts.items()]
    eager = grouped.agg(config=("config", "first"), batch_size=("batch_size", "first"), cache=("cache_state", "first"),
                        seconds=("eager_first_call_s", "median"), runs=("job_id", "size")).reset_index()
    eager = eager.assign(bar="eager", part="eager first call", job_id=None, cache_hits=None)
    return pd.concat([pd.DataFrame(rows), eager.dropna(subset=["seconds"])], ignore_index=True)[cols]


def _parts(text, first_call_s: float) -> dict:
    parts = _json_dict(text)
    if not parts:
        return {NO_BREAKDOWN: first_call_s}
    known = {p: float(parts[p]) for p in BREAKDOWN_PARTS if parts.get(p) is not None}
    return known | {p: float(v) for p, v in parts.items() if p not in known and v is not None}  # newer torch, new parts


def _hits_text(text) -> str:
    """runner.measure's cache counters in a few words: "3 cache hits, 0 misses"."""
    hits = _json_dict(text)
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
    cols = ["series", "config", "side", "what", "ms", "gpu_ms", "latency_ms", "overhead_ms", "idle", "runs"]
    has = agg.dropna(subset=["eager_gpu_ms", "compiled_gpu_ms"], how="all").dropna(subset=["eager_ms"])
    frames = []
    for side in ("eager", "compiled"):
        part = has[["series", "config", "runs"]].assign(side=side, gpu_ms=has[f"{side}_gpu_ms"],
                                                        latency_ms=has[f"{side}_ms"])
        part["overhead_ms"] = part["latency_ms"] - part["gpu_ms"]
        part["idle"] = has[f"{side}_host_overhead"]
        frames += [part.assign(what=f"{side}: GPU time", ms=part["gpu_ms"]),
                   part.assign(what=f"{side}: latency", ms=part["latency_ms"])]
    return pd.concat(frames, ignore_index=True).dropna(subset=["ms"])[cols]
