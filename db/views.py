"""Read-only queries shaped for the dashboard: flat rows in one SQL query each, never ORM loops.

The Results page may hold 100k jobs, and a Python object per cell is what reading them costs (~0.15 s
per 100k cells of a column). So every finished job is read with only the columns that filters, counts
and pickers need (FRAME_FIELDS: what a job is, its status and headline number); the numbers a plot of
one model draws (VIEW_FIELDS) are read for that model's jobs when it is plotted, and the rest of the
export record (LAZY_FIELDS: long reason texts, environment details) for the rows a page shows or a
download asks for: `result_rows(..., job_ids=..., fields=...)`. A job's spec is read as its JSON text
and decoded once per distinct text in Python (100k jobs hold a few hundred distinct specs): SQLite
before 3.45 re-parses the JSON for every field it extracts, which was ~0.5 s of a 100k-row read.
Column names are the export record's names (db.results.RECORD_FIELDS), so what the dashboard shows
and downloads is what `python -m runner export` prints. No torch, no streamlit, no pandas here (numpy
builds the decoded spec columns).
"""
from __future__ import annotations

import gc
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Iterator

import numpy as np
from sqlalchemy import Column, Engine, Float, Integer, Text, case, cast, false, func, or_, select
from sqlalchemy import text as sql_text
from sqlalchemy.sql import visitors

from db import models
from db.engine import reading
from db.job_views import job_detail, job_rows, job_statuses, last_cold_compiles  # noqa: F401 (the Queue page's)
from db.models import RESULT_SCALARS, TERMINAL, Job, Result, Sweep, WorkerRow
from db.results import DETAIL_FIELDS, ENV_FROM_WORKER, RECORD_FIELDS, SPEC_FIELDS, worker_env
from lab import packing
from lab.checks import SpecError, dynamic_text, integer, parse_bool
from lab.record import DETAIL_KEYS
from lab.spec import stored_spec
from lab.sweep import sweep_label

# spec fields stored as JSON objects/lists come back as JSON text (parsed only where shown)
_SPEC_INT = ("batch_size", "iters", "timeout_s")
_SPEC_JSON = ("model_args", "schedule", "traffic")
# detail fields that are numbers: read as floats (a cast to text would keep 15 digits and hand out strings)
DETAIL_NUMBERS = ("speedup_p10", "speedup_p90")
NUMBER_COLUMNS = tuple(c.name for c in Result.__table__.columns
                       if c.name in RESULT_SCALARS and isinstance(c.type, (Float, Integer)))
INTEGER_COLUMNS = ("attempts",) + _SPEC_INT + tuple(
    c.name for c in Result.__table__.columns if c.name in NUMBER_COLUMNS and isinstance(c.type, Integer))
# read for every finished job: what filters, counts, pickers and the timing caption use
FRAME_FIELDS = ("job_id", "sweep_id", "sweep", "status", "error", "finished_at") + SPEC_FIELDS + (
    "speedup", "timing_method", "samples_per_side", "torch_version", "device_name")
# read for the rows a page shows (a table page, a comparison), never for a model's plots; among them every detail
# field but lab.record.DETAIL_KEYS, which are unpacked row by row (~0.1 ms a job: 2.8 s for a model's 25k jobs)
LAZY_FIELDS = ("worker", "created_at", "attempts", "graph_count", "graph_breaks", "recompiles",
               "peak_mem_eager_mb", "peak_mem_compiled_mb", "max_abs_error", "rel_error",
               "accuracy_ok", "triton_version", "cuda_version", "hostname", "graph_break_reasons",
               "recompile_reasons", "compile_phases_s", "speedup_p10", "speedup_p90", "host_state")
LAZY_FIELDS += tuple(f for f in DETAIL_FIELDS if f not in LAZY_FIELDS + DETAIL_KEYS)
# the First call tab alone draws the compile breakdown, the Roofline tab alone the roofline: each reads its
# own, not every model view
FIRST_CALL_FIELDS = ("compile_breakdown_s",)
ROOFLINE_FIELDS = ("flops", "min_bytes", "achieved_tflops", "achieved_gbps", "roofline_bound", "roofline_pct", "mfu")
VIEW_FIELDS = tuple(f for f in RECORD_FIELDS if f not in FRAME_FIELDS + LAZY_FIELDS + FIRST_CALL_FIELDS
                    + ROOFLINE_FIELDS) + ("has_schedule",)


@dataclass(frozen=True)
class ResultRows:
    """Finished jobs, column by column (each a list or an object array, one value per job, oldest first);
    `number_columns` names the numeric ones (None for missing), which a caller can turn into arrays at C speed."""

    columns: dict[str, list]
    number_columns: tuple[str, ...]
    version: tuple | None  # data_version() as of the same snapshot the rows come from (None: a read by job id)

    def __len__(self) -> int:
        return len(self.columns["job_id"])


def data_version(engine: Engine, statuses: Iterable[str] = TERMINAL) -> tuple:
    """A cheap fingerprint that changes whenever the rows `result_rows` returns change (cache key):
    (number of jobs, newest finished_at, newest job id, number of results)."""
    with reading(engine) as s:
        return _version(s.connection(), statuses)


def _version(conn, statuses: Iterable[str]) -> tuple:
    n, last_finished, last_id = conn.execute(
        select(func.count(Job.id), func.max(Job.finished_at), func.max(Job.id))
        .where(Job.status.in_(list(statuses)))).one()
    return n, last_finished, last_id, conn.execute(select(func.count(Result.id))).scalar()


def _column(name: str):
    """The SQL expression for one export field (and `has_schedule`), labelled with its name."""
    spec = Job.spec
    identity = {"job_id": Job.id, "sweep_id": Job.sweep_id, "sweep": Sweep.name, "status": Job.status,
                "error": Job.error, "attempts": Job.attempts, "worker": Job.worker_id,
                "created_at": Job.created_at, "finished_at": Job.finished_at}
    if name in identity:
        col = identity[name]
    elif name == "config_key":  # the configuration's key (lab.spec.spec_key), which its follow-ups share
        col = Job.config
    elif name == "env_worker":  # the worker of a job whose result does not say where it ran (result_rows fills it)
        col = case((or_(*(getattr(Result, n).is_(None) for n in ENV_FROM_WORKER)), Job.worker_id))
    elif name == "spec_text":  # the spec fields, decoded by result_rows (_spec_columns)
        col = cast(spec, Text)
    elif name in RESULT_SCALARS:  # ENV_FROM_WORKER among them: result_rows fills a job without a result from its worker
        col = getattr(Result, name)
    elif name in DETAIL_KEYS:  # the detail's keys SQL reads by name; the others are unpacked (_detail_columns)
        col = Result.detail_keys[name].as_float() if name in DETAIL_NUMBERS else Result.detail_keys[name].as_string()
    elif name == "detail_packed":
        col = Result.detail
    elif name == "has_schedule":
        col = func.coalesce(func.json_array_length(Result.schedule), 0) > 0
    else:
        raise KeyError(f"no column {name!r}")
    return col.label(name)


def _spec_value(spec: dict, name: str):
    """One spec field as result_rows hands it out: text, an int, JSON text for model_args and schedule,
    "none" / "true" / "false" for dynamic, a bool for fullgraph; None when the spec lacks it. Read as the
    worker reads it (lab.spec's parsers: "false" is false); a value the worker would refuse (the job failed
    on it) is shown as written for dynamic, and as None where a number or a bool belongs."""
    value = spec.get(name)
    if name == "dynamic":
        return dynamic_text(value)
    if value is None:
        return None
    if name in _SPEC_JSON:
        return json.dumps(value, separators=(",", ":"))
    if name not in _SPEC_INT + ("fullgraph",):
        return str(value)
    try:
        return integer(value, name) if name in _SPEC_INT else parse_bool(value, name)
    except SpecError:
        return None


def _spec_columns(texts: list, names: list[str]) -> dict[str, np.ndarray]:
    """The spec fields `names`, column by column (object arrays), from each job's spec JSON text: each
    distinct text is decoded once (a sweep's jobs share a handful of specs), and the columns are built
    by their codes, not row by row; `spec_code` among `names`: those codes (equal for equal specs)."""
    index: dict = {}
    codes = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.intp, count=len(texts))
    decoded = []
    for text in index:
        try:
            spec = json.loads(text) if text else {}
        except (TypeError, ValueError):
            spec = {}
        decoded.append(stored_spec(spec))
    out = {"spec_code": codes} if "spec_code" in names else {}
    for name in names:
        if name == "spec_code":
            continue
        values = np.empty(len(decoded), dtype=object)
        values[:] = [_spec_value(spec, name) for spec in decoded]
        out[name] = values[codes]
    return out


def rows_sql(engine: Engine, names: list[str], statuses: Iterable[str] = TERMINAL,
             sweep_ids: Iterable[int] | None = None, finished_since: datetime | None = None,
             job_ids: Iterable[int] | None = None, job_id_range: tuple[int, int] | None = None) -> str:
    """The SELECT behind result_rows, compiled for the engine's dialect with its values inline (so a
    columnar reader, e.g. ADBC, can run the very same statement)."""
    # Through the status index, SQLite would gather the rows in status order and sort all of them (dozens of
    # columns) in a temp B-tree for ORDER BY id: ~0.7 s of 2 at 100k jobs, and 0.2 s for 25k jobs by id. An
    # expression the index does not cover makes it walk the table (or the ids asked for) in id order instead,
    # with no sort. What finished since a time is found through the (status, finished_at) index: a few rows.
    status = Job.status if finished_since is not None else func.coalesce(Job.status, "")
    q = (select(*(_column(n) for n in names)).select_from(Job)
         .outerjoin(Sweep, Sweep.id == Job.sweep_id).outerjoin(Result, Result.job_id == Job.id)
         .where(status.in_(list(statuses))).order_by(Job.id))
    if sweep_ids is not None:
        q = q.where(Job.sweep_id.in_(list(sweep_ids)))
    if finished_since is not None:
        q = q.where(Job.finished_at >= finished_since)
    if job_ids is not None:
        # written out here: rendering 25k literal binds one by one costs SQLAlchemy ~0.05 s; int() keeps it SQL
        ids = ",".join(str(int(i)) for i in job_ids)
        q = q.where(sql_text(f"{Job.__tablename__}.id IN ({ids})") if ids else false())
    if job_id_range is not None:
        q = q.where(Job.id.between(*job_id_range))
    return answer_sql(engine, q)


def answer_sql(engine: Engine, q) -> str:
    """Select `q` compiled for the engine's dialect with its values inline, and on SQLite told to read the results
    through the answer's index where every results column it reads is there (_answer_index)."""
    sql = str(q.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True, "render_postcompile": True}))
    return _answer_index(engine, q, sql)


def _answer_index(engine: Engine, q, sql: str) -> str:
    """On SQLite, a read of results columns all in the answer's index (db.models.ANSWER_INDEXED) is told to use it: the
    planner would rather look each job's result up by the unique job_id index and read the result's row, a page or
    more of its own (0.71 s against 0.50 s at 100k jobs). SQLAlchemy writes no INDEXED BY: it goes in here. A read of
    no results column is left as it is (SQLite drops its join to the results)."""
    if engine.dialect.name != "sqlite":
        return sql
    used = {c.name for c in visitors.iterate(q) if isinstance(c, Column) and c.table is Result.__table__}
    join = f" JOIN {Result.__tablename__} ON "
    if used <= {"job_id"} or not used <= set(models.ANSWER_INDEXED) or sql.count(join) != 1:
        return sql
    return sql.replace(join, f" JOIN {Result.__tablename__} INDEXED BY {models.ANSWER_INDEX} ON ")


def _detail_columns(blobs: list, names: list[str]) -> dict[str, list]:
    """The detail fields `names` of each row's packed detail (None for a job without a result), as SQL hands out a
    JSON value it reads by name: an object or a list as its JSON text, a string, a number (DETAIL_NUMBERS: a float),
    a boolean as 1 or 0. Each detail is unpacked once (~0.15 ms): read for the rows a page shows, not for 100k."""
    out: dict[str, list] = {n: [] for n in names}
    for blob in blobs:
        detail = packing.unpack_json(blob, {}) if blob is not None else {}
        for name in names:
            out[name].append(_sql_value(detail.get(name) if isinstance(detail, dict) else None, name in DETAIL_NUMBERS))
    return out


def _sql_value(value, number: bool):
    if value is None:
        return None
    if number:
        return float(value) if isinstance(value, (int, float)) else None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return value


FETCH_BLOCK = 5000  # rows turned into columns at a time (result_rows)


def result_rows(engine: Engine, statuses: Iterable[str] = TERMINAL, sweep_ids: Iterable[int] | None = None,
                finished_since: datetime | None = None, job_ids: Iterable[int] | None = None,
                fields: Iterable[str] = FRAME_FIELDS, job_id_range: tuple[int, int] | None = None,
                versioned: bool = True) -> ResultRows:
    """Every job in `statuses` (the finished ones by default), oldest first, with `fields` (job_id always).

    One job, one row, in one SQL query. A job without a result row has null numbers and keeps its
    error: failures are rows too. The environment of a job without a result comes from the worker
    that ran it, so filtering by torch version or GPU does not hide its failures. `dynamic` is "none",
    "true" or "false" (as typed); JSON fields are JSON text; `sweep` is the sweep's name ("" when
    unnamed); timestamps are datetimes. `finished_since` (inclusive) fetches only newer rows: a
    finished job never changes again, so a cache can append them. `job_ids`: only these jobs;
    `job_id_range` (inclusive): only jobs with ids in it. `versioned`: with every row (no job_ids or range), also
    their data_version (a cache of them needs it)."""
    names = ["job_id"] + [f for f in fields if f != "job_id"]
    # a job without a result takes its environment from its worker's published capabilities, read once here: a
    # join of the workers to every row cost 0.45 s at 100k jobs (SQLite looks each up by its text key)
    env = [n for n in names if n in ENV_FROM_WORKER]
    fetched = names + [n for n in (["env_worker", "device"] if env else []) if n not in names]
    spec_names = [n for n in fetched if n in SPEC_FIELDS or n == "spec_code"]
    packed = [n for n in fetched if n in DETAIL_FIELDS + DETAIL_NUMBERS and n not in DETAIL_KEYS]
    query_names = [n for n in fetched if n not in spec_names + packed] + (["spec_text"] if spec_names else []) + (
        ["detail_packed"] if packed else [])
    sql = rows_sql(engine, query_names, statuses, sweep_ids, finished_since, job_ids, job_id_range)
    # One snapshot for the rows and their version: SQLite's read transaction is one already; PostgreSQL
    # needs REPEATABLE READ for it. The statement runs on the DB-API cursor of the same connection and
    # transaction: plain tuples, no per-value result processing or Row objects (100k rows x dozens of
    # columns: ~0.3 s less than SQLAlchemy's result on SQLite).
    options = {"isolation_level": "REPEATABLE READ"} if engine.dialect.name == "postgresql" else {}
    with reading(engine) as s:
        conn = s.connection(execution_options=options)
        # a cache of every row needs the version its rows belong to; a read of given jobs does not
        version = _version(conn, statuses) if versioned and job_ids is None and job_id_range is None else None
        workers = dict(conn.execute(select(WorkerRow.id, WorkerRow.capabilities)).all()) if env else {}
        cursor = conn.connection.cursor()
        try:
            with gc_paused():  # millions of new tuples would set off full collections over every object
                cursor.execute(sql)  # no parameters: values are inline (rows_sql), so "%" needs no escaping
                # into columns a block of rows at a time: each block's tuples are freed before the next is made, so
                # their memory is reused (all rows at once, then their columns, cost 0.06 s more at 100k jobs)
                columns = {n: [] for n in query_names}
                while rows := cursor.fetchmany(FETCH_BLOCK):
                    for column, values in zip(columns.values(), zip(*rows)):
                        column.extend(values)
        finally:
            cursor.close()
    if spec_names:
        columns.update(_spec_columns(columns.pop("spec_text"), spec_names))
    if packed:
        columns.update(_detail_columns(columns.pop("detail_packed"), packed))
    for n in env:
        values, worker, device = columns[n], columns["env_worker"], columns["device"]
        for i in [i for i, v in enumerate(values) if v is None]:  # a few: the jobs without a result
            values[i] = worker_env(n, device[i], workers.get(worker[i]))
    columns = {n: columns[n] for n in names}
    for n in ("created_at", "finished_at"):  # SQLite hands back text
        if n in columns and columns[n] and isinstance(next((x for x in columns[n] if x is not None), None), str):
            columns[n] = [datetime.fromisoformat(x) if x is not None else None for x in columns[n]]
    if "fullgraph" in columns:
        columns["fullgraph"] = [None if x is None else bool(x) for x in columns["fullgraph"]]
    numbers = tuple(n for n in names if n in NUMBER_COLUMNS + INTEGER_COLUMNS + DETAIL_NUMBERS + ("job_id", "sweep_id"))
    return ResultRows(columns, numbers, version)


_gc_lock = threading.Lock()
_gc_pauses = 0  # result_rows calls running now (the dashboard's threads may overlap)
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while a bulk read makes its tuples (~0.2 s at 100k rows), back on when the last
    overlapping read ends, and only if it was on before the first began."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def schedule_calls(engine: Engine, job_ids: Iterable[int]) -> dict[int, list[dict]]:
    """The shape-schedule calls of these jobs ({size, dim, eager_s, compiled_s, recompiled, reason})."""
    job_ids = list(job_ids)
    out: dict[int, list[dict]] = {}
    with reading(engine) as s:
        for start in range(0, len(job_ids), 500):  # stay under SQLite's bound-parameter limit
            chunk = job_ids[start:start + 500]
            for job_id, calls in s.execute(select(Result.job_id, Result.schedule)
                                           .where(Result.job_id.in_(chunk))).all():
                if calls:
                    out[job_id] = list(calls)
    return out


@dataclass(frozen=True)
class SweepSummary:
    """One sweep as the dashboard lists it: what was asked for and how far its jobs have got."""

    id: int
    name: str
    created_at: datetime
    created_by: str
    request: dict
    counts: dict  # status -> number of jobs

    @property
    def label(self) -> str:
        return sweep_label(self.id, self.name, self.request.get("model"))

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def sweeps(engine: Engine, limit: int = 1000) -> list[SweepSummary]:
    """The newest sweeps first, each with its job counts by status."""
    with reading(engine) as s:
        rows = s.execute(select(Sweep.id, Sweep.name, Sweep.created_at, Sweep.created_by, Sweep.request)
                         .order_by(Sweep.id.desc()).limit(limit)).all()
        ids = [r.id for r in rows]
        counts: dict[int, dict] = {i: {} for i in ids}
        if ids:
            for sweep_id, status, n in s.execute(
                    select(Job.sweep_id, Job.status, func.count()).where(Job.sweep_id >= min(ids))
                    .group_by(Job.sweep_id, Job.status)).all():
                if sweep_id in counts:
                    counts[sweep_id][status] = n
    return [SweepSummary(r.id, r.name, r.created_at, r.created_by, dict(r.request or {}), counts[r.id])
            for r in rows]


def sweeps_named(engine: Engine, name: str) -> list[tuple[int, datetime]]:
    """(id, created_at) of the sweeps already called `name`, newest first."""
    with reading(engine) as s:
        return [tuple(r) for r in s.execute(select(Sweep.id, Sweep.created_at).where(Sweep.name == name)
                                            .order_by(Sweep.id.desc())).all()]
