"""Read-only queries shaped for the dashboard: flat rows in one SQL query each, never ORM loops.

The Results page may hold 100k jobs, so `result_rows` selects the Result scalar columns next to
JSON-extracted spec fields in SQL (no per-job Python objects); the caller turns the rows into a table. The column
names are the export record's names (db.results.RECORD_FIELDS), so what the dashboard shows and
downloads is what `python -m runner export` prints. No torch, no streamlit, no pandas here.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable

from sqlalchemy import Engine, Float, Integer, case, func, select

from db.engine import reading
from db.models import RESULT_SCALARS, TERMINAL, Job, JobStatus, Result, Sweep, Worker, utcnow
from db.results import DETAIL_FIELDS

# spec fields stored as JSON objects/lists come back as JSON text (parsed only where shown)
_SPEC_TEXT = ("model", "task", "device", "dtype", "backend", "mode", "cache")
_SPEC_INT = ("batch_size", "iters", "timeout_s")
_SPEC_JSON = ("model_args", "schedule")
ENV_FROM_WORKER = ("torch_version", "device_name")  # known for failed jobs too, from the worker that ran them
NUMBER_COLUMNS = tuple(c.name for c in Result.__table__.columns
                       if c.name in RESULT_SCALARS and isinstance(c.type, (Float, Integer)))
INTEGER_COLUMNS = ("attempts",) + _SPEC_INT + tuple(
    c.name for c in Result.__table__.columns if c.name in NUMBER_COLUMNS and isinstance(c.type, Integer))


@dataclass(frozen=True)
class ResultRows:
    """Finished jobs as two row sets keyed by job_id (first column of each): text-like columns, and the
    numeric ones (plain numbers and None, so a caller can turn them into arrays at C speed). On SQLite both
    come from one snapshot (with `version`); align them by job_id all the same."""

    text_columns: list[str]
    text_rows: list[tuple]
    number_columns: list[str]
    number_rows: list[tuple]
    version: tuple  # data_version() as of the same snapshot the rows come from


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


def result_rows(engine: Engine, statuses: Iterable[str] = TERMINAL, sweep_ids: Iterable[int] | None = None,
                finished_since: datetime | None = None) -> ResultRows:
    """Every job in `statuses` (the finished ones by default) with its spec and numbers, oldest first.

    One job, one row, in two SQL queries over the same rows. A job without a result row has null numbers
    and keeps its error: failures are rows too. The environment of a job without a result comes from the
    worker that ran it, so filtering by torch version or GPU does not hide its failures. `dynamic` is
    "none", "true" or "false" (as typed); model_args, schedule and the reason fields are JSON text;
    `sweep` is the sweep's name ("" when unnamed). `finished_since` (inclusive) fetches only newer rows:
    a finished job never changes again, so a cache can append them."""
    spec = Job.spec
    text: list[Any] = [Job.id.label("job_id"), Job.sweep_id, Sweep.name.label("sweep"), Job.status, Job.error,
                       Job.worker_id.label("worker"), Job.created_at, Job.finished_at]
    text += [spec[name].as_string().label(name) for name in _SPEC_TEXT + _SPEC_JSON]
    dyn = spec["dynamic"].as_boolean()
    text.append(case((dyn.is_(None), "none"), (dyn, "true"), else_="false").label("dynamic"))
    text.append(spec["fullgraph"].as_boolean().label("fullgraph"))
    for name in RESULT_SCALARS:
        if name in NUMBER_COLUMNS:
            continue
        col = getattr(Result, name)
        if name in ENV_FROM_WORKER:
            col = func.coalesce(col, Worker.capabilities[name].as_string())
        text.append(col.label(name))
    text += [Result.detail[name].as_string().label(name) for name in DETAIL_FIELDS]
    text.append((func.coalesce(func.json_array_length(Result.schedule), 0) > 0).label("has_schedule"))
    numbers: list[Any] = [Job.id, Job.attempts] + [spec[name].as_integer().label(name) for name in _SPEC_INT]
    numbers += [getattr(Result, name) for name in NUMBER_COLUMNS]

    def query(cols, joins):
        q = select(*cols).select_from(Job)
        for table, on in joins:
            q = q.outerjoin(table, on)
        q = q.where(Job.status.in_(list(statuses))).order_by(Job.id)
        if sweep_ids is not None:
            q = q.where(Job.sweep_id.in_(list(sweep_ids)))
        if finished_since is not None:
            q = q.where(Job.finished_at >= finished_since)
        return q

    result_join = (Result, Result.job_id == Job.id)
    text_q = query(text, [(Sweep, Sweep.id == Job.sweep_id), result_join, (Worker, Worker.id == Job.worker_id)])
    # One snapshot for the rows and their version: SQLite's read transaction is one already; PostgreSQL
    # needs REPEATABLE READ for it. Core rows (no ORM loading), as plain tuples, which pandas reads fastest.
    options = {"isolation_level": "REPEATABLE READ"} if engine.dialect.name == "postgresql" else {}
    with reading(engine) as s:
        conn = s.connection(execution_options=options)
        version = _version(conn, statuses)
        text_rows = [tuple(r) for r in conn.execute(text_q)]
        number_rows = [tuple(r) for r in conn.execute(query(numbers, [result_join]))]
    return ResultRows([c.name for c in text_q.selected_columns], text_rows,
                      ["job_id", "attempts", *_SPEC_INT, *NUMBER_COLUMNS], number_rows, version)


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
        model = self.request.get("model", "?")
        return f"#{self.id} {self.name or model}"

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


def job_rows(engine: Engine, sweep_ids: Iterable[int] | None = None, statuses: Iterable[str] | None = None,
             limit: int = 500) -> list[dict]:
    """The newest jobs for the Queue page: status, attempts, elapsed time, worker, phase and progress."""
    q = (select(Job.id, Job.sweep_id, Job.status, Job.attempts, Job.max_attempts, Job.worker_id, Job.phase,
                Job.progress, Job.error, Job.created_at, Job.claimed_at, Job.finished_at, Job.spec)
         .order_by(Job.id.desc()).limit(limit))
    if sweep_ids:
        q = q.where(Job.sweep_id.in_(list(sweep_ids)))
    if statuses:
        q = q.where(Job.status.in_(list(statuses)))
    now = utcnow()
    out = []
    with reading(engine) as s:
        for r in s.execute(q).all():
            end = r.finished_at or (now if r.status == JobStatus.RUNNING.value else None)
            out.append({
                "job_id": r.id, "sweep_id": r.sweep_id, "status": r.status, "attempts": r.attempts,
                "max_attempts": r.max_attempts, "worker": r.worker_id, "phase": r.phase, "progress": r.progress,
                "error": r.error, "created_at": r.created_at, "claimed_at": r.claimed_at,
                "finished_at": r.finished_at, "spec": dict(r.spec or {}),
                "elapsed_s": (end - r.claimed_at).total_seconds() if end and r.claimed_at else None,
            })
    return out


def job_detail(engine: Engine, job_id: int) -> dict | None:
    """One job's spec, status, error and log tail (the Queue page's detail view)."""
    with reading(engine) as s:
        job = s.get(Job, job_id)
        if job is None:
            return None
        return {"job_id": job.id, "sweep_id": job.sweep_id, "status": job.status, "error": job.error,
                "spec": dict(job.spec or {}), "log_tail": job.log_tail, "attempts": job.attempts,
                "worker": job.worker_id}


def job_statuses(engine: Engine, job_ids: Iterable[int]) -> dict[int, str]:
    """Which of these jobs exist, and their status."""
    job_ids = list(job_ids)
    out: dict[int, str] = {}
    with reading(engine) as s:
        for start in range(0, len(job_ids), 500):
            out.update(s.execute(select(Job.id, Job.status).where(Job.id.in_(job_ids[start:start + 500]))).all())
    return out
