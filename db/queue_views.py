"""What the Queue page and `runner status` read about the queue: jobs per status, the newest jobs with their phase and
follow-up links, and why a queued job may wait forever (no live worker offers what it needs). Read-only; db.queue
re-exports each, where its callers find them."""
from __future__ import annotations

from typing import Iterable, Mapping

from sqlalchemy import Engine, func, select

from db.engine import reading
from db.models import Job, JobStatus, WorkerRow, utcnow
from lab import noise
from lab.spec import ANY_TORCH, stored_spec, torch_matches


def status_counts(engine: Engine, sweep_ids: Iterable[int] | None = None) -> dict[str, int]:
    """Jobs per status: all of them, or those of these sweeps."""
    q = select(Job.status, func.count()).group_by(Job.status)
    if sweep_ids:
        q = q.where(Job.sweep_id.in_(list(sweep_ids)))
    with reading(engine) as s:
        rows = s.execute(q).all()
    return {status: n for status, n in rows}


def jobs_overview(engine: Engine, limit: int = 500, statuses: Iterable[str] | None = None) -> list[dict]:
    """The newest jobs with what the Queue page and `status` show."""
    with reading(engine) as s:
        q = select(Job).order_by(Job.id.desc()).limit(limit)
        if statuses:
            q = q.where(Job.status.in_(list(statuses)))
        jobs = s.scalars(q).all()
        now = utcnow()
        out = []
        for j in jobs:
            end = j.finished_at or (now if j.status == JobStatus.RUNNING.value else None)
            out.append({
                "job_id": j.id, "sweep_id": j.sweep_id, "status": j.status,
                "spec": stored_spec(j.spec),  # a corrupt row: its error says why
                "attempts": j.attempts, "worker": j.worker_id, "phase": j.phase, "progress": j.progress,
                "error": j.error, "created_at": j.created_at, "claimed_at": j.claimed_at,
                "finished_at": j.finished_at, "follow_up_of": j.follow_up_of,
                "follow_up": noise.describe(j.follow_up, j.follow_up_of),
                "elapsed_s": (end - j.claimed_at).total_seconds() if end and j.claimed_at else None,
            })
        return out


def waiting_reason(spec: Mapping, workers: list[WorkerRow]) -> str | None:
    """Why a queued job may wait forever: no live worker offers its device or model."""
    if not workers:
        return "no live worker"
    devices = {d for w in workers for d in w.capabilities.get("devices", [])}
    if spec.get("device") not in devices:
        return f"no live worker offers device {spec.get('device')}"
    models = {m["name"] for w in workers for m in w.capabilities.get("models", [])}
    if spec.get("model") not in models:
        return f"no live worker offers model {spec.get('model')}"
    pin = spec.get("torch") or ANY_TORCH
    versions = sorted({str(w.capabilities.get("torch_version")) for w in workers})
    if not any(torch_matches(pin, w.capabilities.get("torch_version")) for w in workers):
        return f"no live worker has torch {pin} (live: {', '.join(versions)})"
    able = [w for w in workers if spec.get("device") in w.capabilities.get("devices", [])
            and spec.get("model") in {m["name"] for m in w.capabilities.get("models", [])}
            and torch_matches(pin, w.capabilities.get("torch_version"))]
    if not able:
        return f"no live worker offers device {spec.get('device')}, model {spec.get('model')} and torch {pin} together"
    if all(w.state == "paused" for w in able):  # it runs once one of them has room again
        w = able[0]
        why = w.capabilities.get("paused") or "paused"
        who = "the only worker able to run it" if len(able) == 1 else f"all {len(able)} workers able to run it"
        return f"{who} ({w.id}{' and others' if len(able) > 1 else ''}) {'is' if len(able) == 1 else 'are'} {why}"
    return None


def timed_on_host(engine: Engine, hostname: str, phases: Iterable[str] | None) -> list[tuple[int, str]]:
    """(job id, phase) of the running jobs whose worker runs on `hostname` and whose child is in one of `phases`
    now (as its worker last published; None: in any phase), under a lease that has not run out (a killed worker's job
    stays running until another worker requeues it: it is timed by nobody): one small query, what a page asks on each
    refresh."""
    q = (select(Job.id, Job.phase).join(WorkerRow, WorkerRow.id == Job.worker_id)
         .where(Job.status == JobStatus.RUNNING.value, WorkerRow.hostname == hostname,
                Job.lease_expires_at > utcnow()).order_by(Job.id))
    if phases is not None:
        q = q.where(Job.phase.in_(list(phases)))
    with reading(engine) as s:
        return [(job_id, phase) for job_id, phase in s.execute(q).all()]
