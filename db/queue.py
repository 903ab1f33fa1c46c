"""Queue operations: submit, claim under a lease, heartbeat, fenced finish, cancel, re-queue.

Every state change is one short transaction through `atomic`. A claimed job carries a lease token;
every later write for that attempt names the token, so a worker whose lease was lost (cancelled,
expired and re-queued) writes nothing. Rows another transaction may change at the same moment are
locked first (PostgreSQL: FOR UPDATE, SKIP LOCKED where any free row will do; SQLite: BEGIN IMMEDIATE
already serialises writers, and SQLAlchemy leaves FOR UPDATE out there). Every new job, submitted, re-submitted or
a follow-up, is made by db.admission, after its check of the sweep's and the lab's limits in the same transaction.
"""
from __future__ import annotations

import getpass
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable, Mapping

from sqlalchemy import Engine, and_, case, func, select, true, update

from db import admission, advice, team
from db import artifacts as job_artifacts
from db.engine import atomic, is_sqlite, reading
from db.errors import QueueError
from db.follow_ups import queue_follow_ups
from db.models import TERMINAL, Job, JobStatus, Result, WorkerRow, utcnow
from db.queue_views import jobs_overview, status_counts, timed_on_host, waiting_reason
from lab.checks import SpecError
from lab.record import ResultRecord
from lab.spec import (
    ALL_LIVE,
    ANY_TORCH,
    DEVICES,
    ExperimentSpec,
    ModelInfo,
    spec_key,
    torch_prefixes,
)
from lab.sweep import SweepRequest

WORKER_FRESH_S = 30  # a worker whose heartbeat is older than this is not counted as alive
LOST = "lost: "  # how a job failed for its attempts' leases running out begins its error (finish_kept reads it)


@dataclass(frozen=True)
class Claim:
    """What a worker holds after a claim: the job, the spec to run and the lease that fences its writes."""

    job_id: int
    token: str
    attempt: int
    # the stored JSON as loaded: a dict, or whatever a corrupt row holds (the worker rebuilds and so
    # re-validates it, and fails the job with the reason when it is not a valid spec)
    spec: object
    # a process repeat or re-run of a configuration measured before ({kind, n, total, because}; None: a first run).
    # It compiles from its configuration's first run's cache where that is on this worker (runner.worker.cache_repeat)
    follow_up: dict | None = None


def submit(engine: Engine, request: SweepRequest, catalog: Mapping[str, ModelInfo] | None,
           created_by: str | None = None, max_attempts: int = 3) -> tuple[int, list[int], list[str]]:
    """Store a sweep and one queued job per combination, all or nothing. Returns (sweep id, job ids, notes)."""
    return submit_many(engine, [request], catalog, created_by, max_attempts)[0]


def submit_many(engine: Engine, requests: list[SweepRequest], catalog: Mapping[str, ModelInfo] | None,
                created_by: str | None = None, max_attempts: int = 3) -> list[tuple[int, list[int], list[str]]]:
    """Several sweeps (say one per value of a model parameter) in one transaction: all or nothing. A sweep's
    torch choice "all-live" becomes the versions live workers offer now (stored so: the sweep says what ran)."""
    if any(ALL_LIVE in r.torch_versions for r in requests):
        live = live_torch_versions(engine)
        if not live:
            raise SpecError("torch_versions", f"{ALL_LIVE}: no live worker has published its torch version yet")
        requests = [SweepRequest.from_dict({**r.to_dict(), "torch_versions": [
            x for v in r.torch_versions for x in (live if v == ALL_LIVE else [v])]}) for r in requests]
    expanded = [(r, *r.expand(catalog)) for r in requests]  # every SpecError before anything is stored
    out = []
    with atomic(engine) as s:
        for request, specs, notes in expanded:
            stored = request.to_dict()
            if specs:  # the model's parameters as its jobs ran them, defaults filled in (ExperimentSpec.check_model):
                # a sweep the form submitted (every value explicit) and one the CLI did ({}) read the same on Compare
                stored["model_args"] = dict(specs[0].model_args)
            sweep = team.new_sweep(request, stored, created_by or whoami())
            s.add(sweep)
            s.flush()
            job_ids = admission.add_jobs(s, [admission.NewJob(sweep.id, spec.to_dict(), spec_key(spec.to_dict()),
                                                              max_attempts) for spec in specs])
            out.append((sweep.id, job_ids, notes))
    return out


def whoami() -> str:
    try:
        return f"{getpass.getuser()}@{socket.gethostname()}"
    except Exception:  # no login name in some containers
        return socket.gethostname()


def requeue_expired(engine: Engine, now: datetime | None = None) -> list[int]:
    """Jobs whose worker stopped heartbeating: back to the queue, or `failed` once attempts are spent."""
    now = now or utcnow()
    expired = (Job.status == JobStatus.RUNNING.value, Job.lease_expires_at < now)
    with reading(engine) as s:  # every worker asks on every poll: look before taking the write lock
        if s.scalar(select(Job.id).where(*expired).limit(1)) is None:
            return []
    with atomic(engine) as s:
        rows = s.execute(select(Job.id, Job.lease_token, Job.attempts, Job.max_attempts, Job.worker_id)
                         .where(*expired).with_for_update(skip_locked=True)).all()
        for job_id, token, attempts, max_attempts, worker_id in rows:
            who = worker_id or "unknown worker"
            if attempts < max_attempts:
                values = {"status": JobStatus.QUEUED.value,
                          "error": f"attempt {attempts} lost: {who} stopped heartbeating; re-queued"}
            else:
                values = {"status": JobStatus.FAILED.value, "finished_at": now,
                          "error": f"{LOST}{who} stopped heartbeating on attempt {attempts} of {max_attempts}"}
            s.execute(update(Job).where(Job.id == job_id, Job.lease_token == token)
                      .values(**values, lease_token=None, lease_expires_at=None, phase=None, phase_at=None, progress=None))
        return [r.id for r in rows]


def claim_next(engine: Engine, worker_id: str, devices: Iterable[str], models: Iterable[str],
               lease_s: float, torch_version: str | None = None) -> Claim | None:
    """Atomically take the oldest queued job this worker can run, or None. A job pinned to a torch version goes
    only to a worker whose torch matches it (lab.spec.torch_matches); without `torch_version`, only unpinned jobs."""
    devices, models = list(devices), list(models)
    if not devices or not models:
        return None
    now = utcnow()
    with atomic(engine) as s:
        # SKIP LOCKED (PostgreSQL): a row another claimer holds is passed over, not waited for
        query = (select(Job)
                 .where(Job.status == JobStatus.QUEUED.value, _claimable(engine, devices, models, torch_version))
                 .order_by(Job.id).limit(1).with_for_update(skip_locked=True))
        job = s.scalars(query).first()
        if job is None:
            return None
        job.status = JobStatus.RUNNING.value
        job.attempts += 1
        job.lease_token = uuid.uuid4().hex
        job.lease_expires_at = now + timedelta(seconds=lease_s)
        job.claimed_at = now
        job.worker_id = worker_id
        job.phase, job.progress, job.phase_at = "starting", None, now
        return Claim(job.id, job.lease_token, job.attempts, job.spec, job.follow_up)


def _claimable(engine: Engine, devices: list[str], models: list[str], torch_version: str | None = None):
    """The claim filter: jobs for this worker's devices, models and torch (a row stored before jobs named a
    torch reads as "any"), plus rows no worker could ever
    route (spec not a JSON object, model not a string, device missing or unknown). Any worker takes
    those and fails them with "stored spec is invalid", so a corrupt row neither waits forever nor
    breaks the query for every other job (SQLite's json_extract raises on malformed JSON: it is
    reached only through json_valid)."""
    device, model = Job.spec["device"].as_string(), Job.spec["model"].as_string()
    pinned = func.coalesce(Job.spec["torch"].as_string(), ANY_TORCH).in_(torch_prefixes(torch_version))
    if is_sqlite(engine):
        sane = case((func.json_valid(Job.spec) == 1,
                     case((func.json_type(Job.spec) == "object",
                           and_(func.json_type(Job.spec, "$.model") == "text", device.in_(DEVICES))),
                          else_=False)),
                    else_=False)
        wanted = case((sane, and_(device.in_(devices), model.in_(models), pinned)), else_=True)
    else:
        sane = case((func.json_typeof(Job.spec) == "object",
                     and_(func.json_typeof(Job.spec["model"]) == "string", device.in_(DEVICES))),
                    else_=False)
        wanted = case((sane, and_(device.in_(devices), model.in_(models), pinned)), else_=true())
    return wanted


def heartbeat_job(engine: Engine, job_id: int, token: str, lease_s: float,
                  phase: str | None = None, progress: float | None = None, since: datetime | None = None) -> bool:
    """Extend the lease and note the child's phase; `since`: when the child said it (its progress line's time), else
    now. False: the lease is gone (cancelled or re-queued)."""
    values = {"lease_expires_at": utcnow() + timedelta(seconds=lease_s)}
    if phase is not None:  # the phase's start moves only when the phase changes
        now = utcnow()
        began = min(since, now) if since is not None else now  # a phase the child began before this beat
        values.update(phase=phase[:64], progress=progress,
                      phase_at=case((Job.phase == phase[:64], func.coalesce(Job.phase_at, began)), else_=began))
    with atomic(engine) as s:
        done = s.execute(update(Job).where(Job.id == job_id, Job.lease_token == token,
                                           Job.status == JobStatus.RUNNING.value).values(**values))
        return done.rowcount == 1


def finish(engine: Engine, job_id: int, token: str, status: JobStatus, error: str | None = None,
           result: Mapping | None = None, log_tail: str | None = None, artifacts: list[dict] | None = None) -> bool:
    """Record the end of an attempt, fenced by its lease token. False: stale, nothing was written. The attempt's
    artifacts (lab.artifact_files.read_dir) go in with it, whatever the outcome: a failed compile's trace says why."""
    if not status.terminal:
        raise ValueError(f"finish needs a terminal status, got {status.value}")
    if (status is JobStatus.SUCCEEDED) != (result is not None):
        raise ValueError("a result is stored with status succeeded, and only then")
    row = _result_row(job_id, result) if result is not None else None
    with atomic(engine) as s:
        done = s.execute(update(Job)
                         .where(Job.id == job_id, Job.lease_token == token,
                                Job.status == JobStatus.RUNNING.value)
                         .values(status=status.value, error=error, finished_at=utcnow(),
                                 lease_token=None, lease_expires_at=None, log_tail=log_tail,
                                 phase=None, phase_at=None, progress=None))
        if done.rowcount != 1:
            return False
        if row is not None:
            s.add(row)
            s.flush()  # a value the database refuses fails here, as itself, before any follow-up is planned
            queue_follow_ups(s, job_id, row)  # with the result, in its transaction: both go in, or neither
        job_artifacts.add(s, job_id, artifacts or [])
    advice.after_finish(engine, job_id)  # a search's next round, once its last pending job has ended (db.advice)
    return True


def finish_kept(engine: Engine, job_id: int, token: str, worker_id: str, attempt: int, status: JobStatus,
                error: str | None = None, result: Mapping | None = None, log_tail: str | None = None,
                artifacts: list[dict] | None = None) -> bool:
    """finish() for an outcome its worker kept on disk while the database was out (runner.worker.store). Fenced by the lease
    token as finish() is; or, once that lease ran out and the job was taken back (queued again, or failed as lost)
    but not claimed since, by the worker and attempt that ran it, as hand_back is: an outage never throws a
    finished attempt away, nor counts one. False: someone else's now (claimed again, cancelled), nothing written."""
    if finish(engine, job_id, token, status, error, result, log_tail, artifacts):
        return True
    row = _result_row(job_id, result) if result is not None else None
    taken_back = (Job.status == JobStatus.QUEUED.value) | (
        (Job.status == JobStatus.FAILED.value) & Job.error.startswith(LOST, autoescape=True))
    with atomic(engine) as s:
        done = s.execute(update(Job)
                         .where(Job.id == job_id, Job.lease_token.is_(None), Job.worker_id == worker_id,
                                Job.attempts == attempt, taken_back)
                         .values(status=status.value, error=error, finished_at=utcnow(), lease_expires_at=None,
                                 log_tail=log_tail, phase=None, phase_at=None, progress=None))
        if done.rowcount != 1:
            return False
        if row is not None:
            s.add(row)
            queue_follow_ups(s, job_id, row)
        job_artifacts.add(s, job_id, artifacts or [])
    advice.after_finish(engine, job_id)
    return True


def _result_row(job_id: int, result: Mapping) -> Result:
    return Result(job_id=job_id, **ResultRecord.from_dict(result).to_row())


def release(engine: Engine, job_id: int, token: str, reason: str, log_tail: str | None = None) -> bool:
    """Give a running job back to the queue without counting the attempt (the worker is stopping). `log_tail`: the
    stopped attempt's log, where it says why (else the job's is left as it was)."""
    kept = {} if log_tail is None else {"log_tail": log_tail}
    with atomic(engine) as s:
        done = s.execute(update(Job)
                         .where(Job.id == job_id, Job.lease_token == token,
                                Job.status == JobStatus.RUNNING.value)
                         .values(status=JobStatus.QUEUED.value, attempts=Job.attempts - 1, error=reason,
                                 lease_token=None, lease_expires_at=None, worker_id=None,
                                 phase=None, phase_at=None, progress=None, **kept))
        return done.rowcount == 1


def hand_back(engine: Engine, job_id: int, token: str, worker_id: str, attempt: int, reason: str,
              log_tail: str | None = None) -> bool:
    """Like release, for a worker that stopped its own child because it could not renew the lease (the
    database was down, or its files unwritable). If another worker's requeue_expired took the job back
    meanwhile and counted the attempt as lost, the attempt is given back too: the job never ran to an
    end, and the worker, not the job, was at fault. Fenced by the worker and attempt number instead of
    the (cleared) token: once anyone claims the job again, nothing changes."""
    if release(engine, job_id, token, reason, log_tail):
        return True
    kept = {} if log_tail is None else {"log_tail": log_tail}
    with atomic(engine) as s:
        done = s.execute(update(Job)
                         .where(Job.id == job_id, Job.status == JobStatus.QUEUED.value, Job.worker_id == worker_id,
                                Job.attempts == attempt, Job.lease_token.is_(None))
                         .values(attempts=Job.attempts - 1, error=reason, worker_id=None, **kept))
        return done.rowcount == 1


def cancel(engine: Engine, job_id: int) -> str:
    """Cancel a queued or running job; a running one's worker sees its lease gone and kills the child."""
    with atomic(engine) as s:
        job = s.get(Job, job_id, with_for_update=True)  # a finish racing this one waits, then finds it cancelled
        if job is None:
            raise QueueError(f"job {job_id}: no such job")
        if job.status in TERMINAL:
            raise QueueError(f"job {job_id}: already {job.status}, nothing to cancel")
        was = job.status
        job.status = JobStatus.CANCELLED.value
        job.error = "cancelled by user" + (" while running" if was == JobStatus.RUNNING.value else "")
        job.finished_at = utcnow()
        job.lease_token = job.lease_expires_at = None
        job.phase = job.progress = None
        return was


def resubmit(engine: Engine, job_ids: Iterable[int]) -> list[int]:
    """Queue fresh copies of finished jobs (same spec, same sweep), all or none, within the sweeps' and the lab's
    limits (db.admission); returns the new job ids."""
    with atomic(engine) as s:
        copies = []
        for job in s.scalars(select(Job).where(Job.id.in_(list(job_ids))).order_by(Job.id)).all():
            if job.status not in TERMINAL:
                raise QueueError(f"job {job.id}: still {job.status}; cancel it first")
            ExperimentSpec.from_row(job)  # refuse to re-queue a spec that no longer validates
            copies.append(admission.NewJob(job.sweep_id, dict(job.spec), job.config or spec_key(job.spec),
                                           job.max_attempts))
        return admission.add_jobs(s, copies)


# -- workers -----------------------------------------------------------------------------------------
def register_worker(engine: Engine, worker_id: str, hostname: str, pid: int, gpu: str | None,
                    capabilities: Mapping) -> None:
    now = utcnow()
    with atomic(engine) as s:
        row = s.get(WorkerRow, worker_id) or WorkerRow(id=worker_id, started_at=now)
        row.hostname, row.pid, row.gpu = hostname, pid, gpu
        row.capabilities, row.state, row.heartbeat_at, row.current_job_id = dict(capabilities), "idle", now, None
        s.add(row)


def publish_capabilities(engine: Engine, worker_id: str, capabilities: Mapping) -> None:
    """Replace what a registered worker publishes (say, that it now shares its cores with a worker started later)."""
    with atomic(engine) as s:
        s.execute(update(WorkerRow).where(WorkerRow.id == worker_id).values(capabilities=dict(capabilities)))


def heartbeat_worker(engine: Engine, worker_id: str, state: str, current_job_id: int | None = None) -> None:
    with atomic(engine) as s:
        s.execute(update(WorkerRow).where(WorkerRow.id == worker_id)
                  .values(state=state, current_job_id=current_job_id, heartbeat_at=utcnow()))


def live_workers(engine: Engine, fresh_s: float = WORKER_FRESH_S) -> list[WorkerRow]:
    cutoff = utcnow() - timedelta(seconds=fresh_s)
    with reading(engine) as s:
        return list(s.scalars(select(WorkerRow).where(WorkerRow.heartbeat_at >= cutoff,  # pending: not started (db.cluster)
                                                   WorkerRow.state.notin_(("stopped", "pending")))).all())


def live_devices(engine: Engine, fresh_s: float = WORKER_FRESH_S) -> set[str]:
    """The devices live workers offer (cuda, cpu)."""
    return {d for w in live_workers(engine, fresh_s) for d in w.capabilities.get("devices", [])}


def live_torch_versions(engine: Engine, fresh_s: float = WORKER_FRESH_S) -> list[str]:
    """The torch versions live workers run (their published torch.__version__), sorted."""
    return sorted({v for w in live_workers(engine, fresh_s) if (v := w.capabilities.get("torch_version"))})


def bundle_signers(engine: Engine, fresh_s: float = WORKER_FRESH_S) -> tuple[int, int]:
    """(live workers that hold the compile cache signing key, live workers): only the former load a portable job's
    bundle (runner.worker.cache_key); the rest run it as a cold run."""
    live = live_workers(engine, fresh_s)
    return sum(bool(w.capabilities.get("signs_bundles")) for w in live), len(live)


def published_listing(engine: Engine, key: str) -> dict | None:
    """The families' listing ({"models", "refused", "families"}) the newest worker with this listing key published
    (runner.worker.listing_cache: same interpreter, packages and listing code), or None."""
    with reading(engine) as s:
        row = s.scalars(select(WorkerRow).where(WorkerRow.capabilities["listing"]["key"].as_string() == key)
                        .order_by(WorkerRow.heartbeat_at.desc()).limit(1)).first()
    caps = row.capabilities if row is not None and isinstance(row.capabilities, dict) else None
    listing = caps.get("listing") if caps else None
    if not isinstance(listing, dict) or not isinstance(caps.get("models"), list):
        return None
    return {"models": caps["models"], "refused": caps.get("refused_models") or {}, "families": listing.get("families") or {}}


def published_catalog(engine: Engine, fresh_s: float = WORKER_FRESH_S) -> dict[str, ModelInfo]:
    """The models that live workers offer (what the dashboard's Submit page lists)."""
    catalog: dict[str, ModelInfo] = {}
    for w in live_workers(engine, fresh_s):
        for m in w.capabilities.get("models", []):
            catalog.setdefault(m["name"], ModelInfo.from_dict(m))
    return catalog


__all__ = [
    "Claim", "QueueError", "submit", "submit_many", "requeue_expired", "claim_next", "heartbeat_job", "finish", "release",
    "cancel", "hand_back", "resubmit", "register_worker", "publish_capabilities", "heartbeat_worker", "live_workers",
    "published_catalog", "published_listing", "live_torch_versions",
    "status_counts", "jobs_overview", "timed_on_host", "waiting_reason",
]
