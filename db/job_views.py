"""What the Queue page reads about single jobs: the newest jobs with their phase, elapsed time and follow-up links,
one job's detail, which of some jobs exist, and how long a running compile's configuration took cold before. Read-only
(db.views re-exports each, where the pages find them)."""
from __future__ import annotations

from typing import Iterable

from sqlalchemy import Engine, select

from db.engine import reading
from db.models import Job, JobStatus, Result, utcnow
from lab import noise
from lab.spec import stored_spec
from lab.sweep import sweep_label


def job_rows(engine: Engine, sweep_ids: Iterable[int] | None = None, statuses: Iterable[str] | None = None,
             limit: int = 500) -> list[dict]:
    """The newest jobs for the Queue page: status, attempts, elapsed time, worker, phase and progress."""
    q = (select(Job.id, Job.sweep_id, Job.status, Job.attempts, Job.max_attempts, Job.worker_id, Job.phase,
                Job.progress, Job.error, Job.created_at, Job.claimed_at, Job.finished_at, Job.spec, Job.follow_up_of,
                Job.follow_up)
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
                "finished_at": r.finished_at, "spec": stored_spec(r.spec),
                "elapsed_s": (end - r.claimed_at).total_seconds() if end and r.claimed_at else None,
                "follow_up": noise.describe(r.follow_up, r.follow_up_of),
                "follow_up_short": noise.short(r.follow_up, r.follow_up_of),
            })
    return out


def last_cold_compiles(engine: Engine, job_ids: Iterable[int]) -> dict[int, float]:
    """For each of these (running) jobs, how long its configuration's newest stored cold first call took (the
    same spec on the same key, jobs.config): what the Queue says a compile in progress may take. {} for none."""
    ids = list(job_ids)
    if not ids:
        return {}
    with reading(engine) as s:
        keys = dict(s.execute(select(Job.id, Job.config).where(Job.id.in_(ids))).all())
        wanted = {k for k in keys.values() if k}
        if not wanted:
            return {}
        newest = (select(Job.config, Result.compiled_first_call_s).join(Result, Result.job_id == Job.id)
                  .where(Job.config.in_(sorted(wanted)), Result.first_call_cache == "cold",
                         Result.compiled_first_call_s.is_not(None))
                  .order_by(Job.id.desc()))
        took: dict[str, float] = {}
        for config, seconds in s.execute(newest):
            took.setdefault(config, float(seconds))
    return {j: took[k] for j, k in keys.items() if k in took}


def job_detail(engine: Engine, job_id: int) -> dict | None:
    """One job's spec, status, error and log tail (the Queue page's detail view)."""
    with reading(engine) as s:
        job = s.get(Job, job_id)
        if job is None:
            return None
        later = s.execute(select(Job.id, Job.status, Job.follow_up).where(Job.follow_up_of == job.id)
                          .order_by(Job.id)).all()
        return {"job_id": job.id, "sweep_id": job.sweep_id, "status": job.status, "error": job.error,
                "spec": stored_spec(job.spec), "log_tail": job.log_tail, "attempts": job.attempts,
                "worker": job.worker_id, "follow_up_of": job.follow_up_of,
                "follow_up": noise.describe(job.follow_up, job.follow_up_of),
                # the jobs this one's result called for: (id, status, what it is)
                "follow_ups": [(i, status, noise.describe(f, None)) for i, status, f in later],
                "sweep_label": sweep_label(job.sweep_id, job.sweep.name if job.sweep else None,
                                           stored_spec(job.spec).get("model"))}


def job_statuses(engine: Engine, job_ids: Iterable[int]) -> dict[int, str]:
    """Which of these jobs exist, and their status."""
    job_ids = list(job_ids)
    out: dict[int, str] = {}
    with reading(engine) as s:
        for start in range(0, len(job_ids), 500):
            out.update(s.execute(select(Job.id, Job.status).where(Job.id.in_(job_ids[start:start + 500]))).all())
    return out
