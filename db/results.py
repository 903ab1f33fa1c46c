"""Result queries: the export record (one flat dict per job) shared by `export`, the dashboard and tests."""
from __future__ import annotations

from dataclasses import fields
from typing import Iterable

from sqlalchemy import Engine, select

from db import artifacts, tabular
from db.engine import reading
from db.models import RESULT_SCALARS, Job, Result, Sweep, Worker
from db.spec import ExperimentSpec, stored_spec
from db.spec import sweep_name as sweep_display

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
                 "speedup_p90", "host_state", "timeline")
RECORD_FIELDS = IDENTITY_FIELDS + SPEC_FIELDS + RESULT_SCALARS + DETAIL_FIELDS  # also the Results table's columns
# the export adds the job's artifacts (db.artifacts): [{name, bytes, stored_bytes, truncated}], read one with
# `python -m runner artifact JOB NAME`; the Results table leaves them to the job's page
EXPORT_FIELDS = RECORD_FIELDS + ("artifacts",)


def records_csv(records: Iterable[dict]) -> str:
    """Export records as CSV, one column per EXPORT_FIELDS name; JSON fields as JSON text; no cell a spreadsheet
    would run as a formula (db.tabular). The CLI's `export --format csv` and the dashboard's CSV download are both
    this, so the two files agree."""
    return tabular.write_csv(records, EXPORT_FIELDS)


def records_json(records: list[dict]) -> str:
    """Export records as strict JSON, a number that is not finite as null (the CLI's `export --format json` and
    the dashboard's JSON download)."""
    return tabular.json_text(records)


ID_CHUNK = 5000  # job ids per query: SQLite allows 32766 bound parameters, and a download may hold 100k jobs


def export_records(engine: Engine, job_ids: Iterable[int] | None = None, sweep_ids: Iterable[int] | None = None,
                   include_raw: bool = False) -> list[dict]:
    """Every job (succeeded or not) as one export record, oldest first: the only place a record is built
    (the CLI's export and the dashboard's downloads). A job without a result has null numbers and its error:
    a failure is never a 0.0 speedup."""
    q = (select(Job, Sweep.name, Result, Worker.capabilities).join(Sweep, Job.sweep_id == Sweep.id)
         .outerjoin(Result, Result.job_id == Job.id).outerjoin(Worker, Worker.id == Job.worker_id)
         .order_by(Job.id))
    if sweep_ids is not None:
        q = q.where(Job.sweep_id.in_(list(sweep_ids)))
    ids = sorted(set(job_ids)) if job_ids is not None else None
    chunks = [q] if ids is None else [q.where(Job.id.in_(ids[i:i + ID_CHUNK])) for i in range(0, len(ids), ID_CHUNK)]
    with reading(engine) as s:
        records = [_record(job, sweep_name, result, caps, include_raw)
                   for chunk in chunks for job, sweep_name, result, caps in s.execute(chunk).all()]
    ids = [r["job_id"] for r in records]
    for i in range(0, len(ids), ID_CHUNK):
        listed = artifacts.listing(engine, ids[i:i + ID_CHUNK])
        for r in records[i:i + ID_CHUNK]:
            r["artifacts"] = listed.get(r["job_id"], [])
    return records


def worker_key(name: str, device: str | None) -> str:
    """The worker capability that says `name` (an ENV_FROM_WORKER field) for a job on `device`: a CPU job's
    device_name is the CPU's, as its result would say (runner.environment), not the host's GPU. (A worker that
    published no CPU name, from before workers did, is read by `name` itself.)"""
    return CPU_NAME if name == "device_name" and device == "cpu" else name


def _record(job: Job, sweep_name: str, result: Result | None, worker_caps: dict | None, include_raw: bool) -> dict:
    rec = {"job_id": job.id, "sweep_id": job.sweep_id, "sweep": sweep_display(job.sweep_id, sweep_name),
           "status": job.status, "error": job.error, "attempts": job.attempts, "worker": job.worker_id,
           "created_at": job.created_at.isoformat() if job.created_at else None,
           "finished_at": job.finished_at.isoformat() if job.finished_at else None}
    spec = stored_spec(job.spec)
    for name in SPEC_FIELDS:
        rec[name] = spec.get(name)
    detail = result.detail if result is not None else {}
    for name in RESULT_SCALARS:
        rec[name] = getattr(result, name) if result is not None else None
    for name in ENV_FROM_WORKER:  # a job that failed still ran somewhere: say where (filters need it)
        if rec[name] is None and isinstance(worker_caps, dict):
            rec[name] = worker_caps.get(worker_key(name, rec.get("device"))) or worker_caps.get(name)
    for name in DETAIL_FIELDS:
        rec[name] = (detail or {}).get(name)
    if include_raw:
        rec["schedule_calls"] = result.schedule if result is not None else None
        rec["samples"] = result.samples if result is not None else None
    return rec
