"""Result queries: the export record (one flat dict per job) shared by `export`, the dashboard and tests; a job's
timeline put into its stored result (lab.timeline assembles it), and how much of a sweep's wall time was measurement."""
from __future__ import annotations

import io
from dataclasses import fields
from typing import Iterable, Iterator, TextIO

from sqlalchemy import Engine, func, select, update

from db import artifacts, team
from db.engine import atomic, reading
from db.models import RESULT_SCALARS, Job, Result, Sweep, WorkerRow
from lab import tabular, timeline
from lab.record import detail_keys
from lab.spec import ExperimentSpec, stored_spec
from lab.sweep import sweep_name as sweep_display

SPEC_FIELDS = tuple(f.name for f in fields(ExperimentSpec))
ENV_FROM_WORKER = ("torch_version", "device_name")  # known for failed jobs too, from the worker that ran them
# where a worker's published capabilities name a CPU job's device: its probe's device_name is its GPU's, or none
CPU_NAME = "cpu_name"
IDENTITY_FIELDS = ("job_id", "sweep_id", "sweep", "status", "error", "attempts", "worker", "created_at",
                   "finished_at")
# from the result's `detail`: what torch says about the compile, the warm-up and speedup spread, and the host around
# the rounds (load, torch threads, CPUs, the other workers busy on it: what may have made a result noisy)
DETAIL_FIELDS = ("graph_break_reasons", "recompile_reasons", "recompile_limit_hits", "compile_phases_s",
                 "compile_breakdown_s", "cache_hits", "cache_layers", "mega_cache", "cudagraphs", "speedup_p10",
                 "speedup_p90", "host_state", "timeline", "tlparse_note", "accuracy_check", "autotune_picks",
                 "host_pace", "first_call_pace", "first_call_disturbance")
RECORD_FIELDS = IDENTITY_FIELDS + SPEC_FIELDS + RESULT_SCALARS + DETAIL_FIELDS  # also the Results table's columns
# the export adds the job's artifacts (db.artifacts): [{name, bytes, stored_bytes, truncated}], read one with
# `python -m runner artifact JOB NAME`; the Results table leaves them to the job's page
# and its sweep's team record (db.team): who submitted it, the sweep's tags and note
TEAM_FIELDS = ("submitter", "tags", "note")
EXPORT_FIELDS = RECORD_FIELDS + TEAM_FIELDS + ("artifacts",)


def write_csv(records: Iterable[dict], out: TextIO) -> int:
    """Export records as CSV into `out`, one column per EXPORT_FIELDS name, a row as each record comes; JSON fields
    as JSON text; no cell a spreadsheet would run as a formula (lab.tabular). The CLI's `export --format csv` and the
    dashboard's CSV download are both this, so the two files agree. Returns the number of records."""
    return tabular.csv_into(out, records, EXPORT_FIELDS)


def write_json(records: Iterable[dict], out: TextIO) -> int:
    """Export records as one strict JSON list into `out`, a record as each comes, a number that is not finite as
    null (the CLI's `export --format json` and the dashboard's JSON download). Returns the number of records."""
    return tabular.json_list_into(out, records)


def records_csv(records: Iterable[dict]) -> str:
    return _text(write_csv, records)


def records_json(records: Iterable[dict]) -> str:
    return _text(write_json, records)


def _text(write, records: Iterable[dict]) -> str:
    buf = io.StringIO()
    write(records, buf)
    return buf.getvalue()


ID_CHUNK = 5000  # job ids per query: SQLite allows 32766 bound parameters, and a download may hold 100k jobs
BATCH = 500  # records built at a time: what an export holds in memory, whatever the number of jobs


def export_records(engine: Engine, job_ids: Iterable[int] | None = None, sweep_ids: Iterable[int] | None = None,
                   include_raw: bool = False) -> list[dict]:
    """Every job (succeeded or not) as one export record, oldest first (iter_records, as a list)."""
    return list(iter_records(engine, job_ids, sweep_ids, include_raw))


def iter_records(engine: Engine, job_ids: Iterable[int] | None = None, sweep_ids: Iterable[int] | None = None,
                 include_raw: bool = False) -> Iterator[dict]:
    """Every job (succeeded or not) as one export record, oldest first: the only place a record is built
    (the CLI's export and the dashboard's downloads). A job without a result has null numbers and its error:
    a failure is never a 0.0 speedup.

    The rows stream from one snapshot of the database (SQLAlchemy's yield_per: a server-side cursor on
    PostgreSQL, SQLite's stepping cursor), BATCH at a time, with only the columns a record holds: the raw
    samples (tens of kB a job) are read only for `include_raw`. So an export of 100k jobs holds a batch in
    memory, not the database."""
    cols = [Job.id, Job.sweep_id, Job.status, Job.error, Job.attempts, Job.worker_id, Job.created_at, Job.finished_at,
            Job.spec, Sweep.name, Result.id.label("result_id"), *(getattr(Result, n) for n in RESULT_SCALARS),
            Result.detail] + ([Result.schedule, Result.samples] if include_raw else [])
    q = (select(*cols).join(Sweep, Job.sweep_id == Sweep.id).outerjoin(Result, Result.job_id == Job.id)
         .order_by(Job.id))
    if sweep_ids is not None:
        q = q.where(Job.sweep_id.in_(list(sweep_ids)))
    ids = sorted(set(job_ids)) if job_ids is not None else None
    chunks = [q] if ids is None else [q.where(Job.id.in_(ids[i:i + ID_CHUNK])) for i in range(0, len(ids), ID_CHUNK)]
    with reading(engine) as s:
        # a job without a result takes its environment from its worker's published capabilities: the workers are
        # few, their capabilities (every model they offer) long, so each is read once, not once per job
        workers = dict(s.execute(select(WorkerRow.id, WorkerRow.capabilities)).all())
        for chunk in chunks:
            for rows in s.execute(chunk.execution_options(yield_per=BATCH)).partitions():
                listed = artifacts.listing(engine, [r.id for r in rows])
                sweeps = team.meta(engine, {r.sweep_id for r in rows})
                for r in rows:
                    rec = _record(r._mapping, workers.get(r.worker_id), include_raw)
                    m = sweeps.get(r.sweep_id)
                    rec |= {"submitter": m.submitter, "tags": list(m.tags), "note": m.note} if m else \
                        dict.fromkeys(TEAM_FIELDS)
                    rec["artifacts"] = listed.get(r.id, [])
                    yield rec


def worker_key(name: str, device: str | None) -> str:
    """The worker capability that says `name` (an ENV_FROM_WORKER field) for a job on `device`: a CPU job's
    device_name is the CPU's, as its result would say (runner.child.environment), not the host's GPU. (A worker that
    published no CPU name, from before workers did, is read by `name` itself.)"""
    return CPU_NAME if name == "device_name" and device == "cpu" else name


def worker_env(name: str, device: str | None, caps) -> str | None:
    """What a job's worker published for `name` (an ENV_FROM_WORKER field): where a job without a result ran."""
    if not isinstance(caps, dict):
        return None
    return caps.get(worker_key(name, device)) or caps.get(name)


def _record(row, worker_caps: dict | None, include_raw: bool) -> dict:
    rec = {"job_id": row["id"], "sweep_id": row["sweep_id"], "sweep": sweep_display(row["sweep_id"], row["name"]),
           "status": row["status"], "error": row["error"], "attempts": row["attempts"], "worker": row["worker_id"],
           "created_at": row["created_at"].isoformat() if row["created_at"] else None,
           "finished_at": row["finished_at"].isoformat() if row["finished_at"] else None}
    spec = stored_spec(row["spec"])
    for name in SPEC_FIELDS:
        rec[name] = spec.get(name)
    has_result = row["result_id"] is not None
    for name in RESULT_SCALARS:
        rec[name] = row[name] if has_result else None
    for name in ENV_FROM_WORKER:  # a job that failed still ran somewhere: say where (filters need it)
        if rec[name] is None:
            rec[name] = worker_env(name, rec.get("device"), worker_caps)
    detail = row["detail"] if has_result and isinstance(row["detail"], dict) else {}
    for name in DETAIL_FIELDS:
        rec[name] = detail.get(name)
    # what the job replayed (its spec's stream) and what the replay gave (lab.traffic.summarize: calls,
    # eager_total_s, compiled_total_s, recompiles, fallback_calls, ...; the calls one by one in `stream`)
    asked, got = spec.get("traffic"), detail.get("traffic")  # a hand-made row may hold anything: never a crash
    rec["traffic"] = ({**asked, **(got if isinstance(got, dict) else {})} if isinstance(asked, dict) and asked
                      else None)
    if include_raw:
        rec["schedule_calls"] = row["schedule"] if has_result else None
        rec["samples"] = row["samples"] if has_result else None
    return rec


def store_timeline(engine: Engine, job_id: int, detail: dict | None, entries: list[dict]) -> bool:
    """Put a timeline (lab.timeline.for_job's `entries`) into job_id's stored result detail (`detail`: the detail
    that was stored with it)."""
    detail = {**(detail or {}), "timeline": entries}
    with atomic(engine) as s:
        done = s.execute(update(Result).where(Result.job_id == job_id)
                         .values(detail=detail, detail_keys=detail_keys(detail)))
        return done.rowcount == 1


def sweep_measurement(engine: Engine, sweep_id: int) -> dict | None:
    """{"wall_s", "measured_s", "share", "jobs"} for one sweep: wall time from its first claim to its last
    stored result, against the measurement in its jobs' timelines. None while nothing of it has finished."""
    with reading(engine) as s:
        first, last = s.execute(select(func.min(Job.claimed_at), func.max(Job.finished_at))
                                .where(Job.sweep_id == sweep_id)).one()
        details = s.scalars(select(Result.detail).join(Job, Job.id == Result.job_id)
                            .where(Job.sweep_id == sweep_id)).all()
    if first is None or last is None:
        return None
    timelines = [d.get("timeline") for d in details if isinstance(d, dict) and d.get("timeline")]
    wall = (last - first).total_seconds()
    return {"wall_s": wall, "measured_s": sum(timeline.measured_s(t) for t in timelines), "jobs": len(timelines),
            "share": timeline.sweep_share(timelines, wall)}
