"""The cluster's scheduler in the lab's database, with no table of its own. A launcher (runner.launch) reads what is
queued per device, torch and model, and the scheduler jobs it submitted that have not started yet are rows of
`workers` in state "pending" (one per scheduler job, refreshed by the launcher, carrying the scheduler's own pending
reason) until their workers register themselves. A worker publishes its scheduler job in its capabilities
("scheduler": lab.scheduler's identity). A lab job whose worker the scheduler ended goes back to the queue, or ends,
in the scheduler's words."""
from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Iterable, Mapping, NamedTuple

from sqlalchemy import Engine, delete, select, update

from db.engine import atomic, reading
from db.models import Job, JobStatus, WorkerRow, utcnow
from db.queue import LOST, WORKER_FRESH_S, release
from lab.spec import ANY_TORCH

PENDING = "pending"  # WorkerRow.state of a row that stands for a scheduler job whose worker has not started
PENDING_FRESH_S = 600  # a pending row its launcher has not refreshed for this long is no longer shown
RECENT_S = 24 * 3600  # the workers a launcher learns a pool's offer from, and whose scheduler endings it notes
HEARTBEAT_LOST = " stopped heartbeating"  # how requeue_expired names a worker that vanished (db.queue)


class Demand(NamedTuple):
    """Queued jobs that need one kind of worker: their device, torch pin and model, and how many."""

    device: str
    torch: str
    model: str
    jobs: int


def queued_demand(engine: Engine) -> list[Demand]:
    """The queue by what a worker must offer to take it. A row whose spec is not an object (no worker could route it;
    any worker fails it) needs no particular worker and is left out."""
    device, model = Job.spec["device"].as_string(), Job.spec["model"].as_string()
    torch = Job.spec["torch"].as_string()
    with reading(engine) as s:
        rows = s.execute(select(device, torch, model, Job.id).where(Job.status == JobStatus.QUEUED.value)).all()
    counts = Counter((d, t or ANY_TORCH, m) for d, t, m, _ in rows if isinstance(d, str) and isinstance(m, str))
    return [Demand(d, t, m, n) for (d, t, m), n in sorted(counts.items())]


def scheduler_workers(engine: Engine, fresh_s: float = WORKER_FRESH_S) -> dict[str, str]:
    """Live workers started by a scheduler: their scheduler job id -> their state (idle, busy, ...)."""
    cutoff = utcnow() - timedelta(seconds=fresh_s)
    with reading(engine) as s:
        rows = s.execute(select(WorkerRow.state, WorkerRow.capabilities).where(
            WorkerRow.heartbeat_at >= cutoff, WorkerRow.state.notin_(("stopped", PENDING)))).all()
    return {caps["scheduler"]["job_id"]: state for state, caps in rows if _identity(caps).get("job_id")}


def pool_offers(engine: Engine) -> dict[str, dict]:
    """What a pool's workers offered, from the newest worker of each pool (any state, within a day): its models and
    torch version. The launcher starts no worker for a job the pool's workers showed they cannot take."""
    cutoff = utcnow() - timedelta(seconds=RECENT_S)
    with reading(engine) as s:
        rows = s.execute(select(WorkerRow.capabilities).where(WorkerRow.started_at >= cutoff, WorkerRow.state != PENDING)
                         .order_by(WorkerRow.started_at)).all()
    offers = {}
    for (caps,) in rows:
        if _identity(caps).get("pool") and caps.get("models") is not None:
            offers[caps["scheduler"]["pool"]] = {"models": [m["name"] for m in caps.get("models", [])],
                                                 "torch_version": caps.get("torch_version")}
    return offers


def publish_pending(engine: Engine, names: Iterable[str], jobs: list[Mapping], host: str, pid: int) -> None:
    """Replace the pending rows of the scheduler jobs named `names` (the launcher's) by `jobs`: dicts with kind, name,
    job_id, pool, state and reason as the scheduler says them."""
    now = utcnow()
    prefixes = [f"{j_kind}:{name}:" for name in names for j_kind in ("slurm", "kubernetes")]
    wanted = {f"{j['kind']}:{j['name']}:{j['job_id']}": j for j in jobs}
    with atomic(engine) as s:
        known = set(s.scalars(select(WorkerRow.id).where(WorkerRow.state == PENDING)).all())
        stale = [i for i in known if any(i.startswith(p) for p in prefixes) and i not in wanted]
        if stale:
            s.execute(delete(WorkerRow).where(WorkerRow.id.in_(stale), WorkerRow.state == PENDING))
        for row_id, job in wanted.items():
            row = s.get(WorkerRow, row_id) or WorkerRow(id=row_id, started_at=now)
            row.hostname, row.pid, row.gpu, row.state, row.current_job_id = host, pid, None, PENDING, None
            row.capabilities, row.heartbeat_at = {"scheduler": dict(job), "launcher": f"{host}:{pid}"}, now
            s.add(row)


def pending_jobs(engine: Engine, fresh_s: float = PENDING_FRESH_S) -> list[dict]:
    """Scheduler jobs a launcher submitted whose worker has not started, oldest first, with the scheduler's reason.
    One whose worker registered meanwhile is left out (the launcher removes its row on its next look)."""
    cutoff = utcnow() - timedelta(seconds=fresh_s)
    with reading(engine) as s:
        rows = s.execute(select(WorkerRow.capabilities, WorkerRow.heartbeat_at).where(
            WorkerRow.state == PENDING, WorkerRow.heartbeat_at >= cutoff).order_by(WorkerRow.started_at)).all()
    started = set(scheduler_workers(engine))
    return [{**caps["scheduler"], "seen_at": seen} for caps, seen in rows
            if _identity(caps).get("job_id") not in started]


def requeue_ended(engine: Engine, job_id: int, token: str, words: str, counted: bool, log_tail: str | None = None
                  ) -> bool:
    """A running job whose worker the scheduler ended, in the scheduler's words: back to the queue without counting
    the attempt (a cancel, a preemption), or counting it (a time limit: the job may need more than the allocation;
    once its attempts are spent it fails with the words). Fenced by the lease token. False: not this lease's."""
    if not counted:
        return release(engine, job_id, token, f"{words}; re-queued without counting the attempt", log_tail)
    kept = {} if log_tail is None else {"log_tail": log_tail}
    with atomic(engine) as s:
        row = s.execute(select(Job.attempts, Job.max_attempts).where(
            Job.id == job_id, Job.lease_token == token, Job.status == JobStatus.RUNNING.value).with_for_update()).first()
        if row is None:
            return False
        attempts, most = row
        if attempts < most:
            values = {"status": JobStatus.QUEUED.value, "error": f"attempt {attempts}: {words}; re-queued"}
        else:
            values = {"status": JobStatus.FAILED.value, "finished_at": utcnow(),
                      "error": f"{LOST}{words} on attempt {attempts} of {most}"}
        s.execute(update(Job).where(Job.id == job_id, Job.lease_token == token)
                  .values(**values, lease_token=None, lease_expires_at=None, phase=None, phase_at=None, progress=None, **kept))
        return True


def note_ended(engine: Engine, endings: Mapping[str, str]) -> list[int]:
    """Scheduler jobs that ended without their worker saying so (a failed node, SIGKILL): their workers are marked
    stopped, and a lab job such a worker lost (re-queued or failed by db.queue.requeue_expired, "<worker> stopped
    heartbeating") gets the scheduler's words beside it. `endings`: scheduler job id -> the words. Returns the lab
    jobs whose error now says it."""
    if not endings:
        return []
    cutoff = utcnow() - timedelta(seconds=RECENT_S)
    with reading(engine) as s:
        rows = s.execute(select(WorkerRow.id, WorkerRow.capabilities).where(WorkerRow.heartbeat_at >= cutoff,
                                                                     WorkerRow.state != PENDING)).all()
    workers = {wid: endings[_identity(caps)["job_id"]] for wid, caps in rows
               if _identity(caps).get("job_id") in endings}
    if not workers:
        return []
    noted = []
    with atomic(engine) as s:
        jobs = s.execute(select(Job.id, Job.worker_id, Job.error).where(
            Job.worker_id.in_(list(workers)), Job.status.in_((JobStatus.QUEUED.value, JobStatus.FAILED.value)),
            Job.lease_token.is_(None)).with_for_update()).all()
        for job_id, worker_id, error in jobs:
            lost = f"{worker_id}{HEARTBEAT_LOST}"
            words = workers[worker_id]
            if error and lost in error and f"{lost} (" not in error:  # said once
                s.execute(update(Job).where(Job.id == job_id, Job.error == error).values(
                    error=error.replace(lost, f"{lost} ({words})", 1)))
                noted.append(job_id)
        s.execute(update(WorkerRow).where(WorkerRow.id.in_(list(workers)), WorkerRow.state != "stopped")
                  .values(state="stopped"))
    return noted


def _identity(capabilities: Mapping | None) -> dict:
    scheduler = (capabilities or {}).get("scheduler") if isinstance(capabilities, Mapping) else None
    return scheduler if isinstance(scheduler, dict) else {}
