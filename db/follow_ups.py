"""The follow-ups a finished run calls for (lab.noise.plan_follow_ups), queued in the transaction that stores its
result (db.queue.finish): the same spec, in the same sweep, linked to the run with why. They pass the one gate for new
jobs (db.admission); what the sweep's or the lab's limit leaves no room for is skipped, never the finish itself, and
the skip recorded as a lab event on the sweep (its history on Queue, `runner events`) with the limit that stopped it."""
from __future__ import annotations

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from db import admission
from db.engine import reading
from db.models import Job, LabEvent, Result, Sweep, utcnow
from lab import history, noise
from lab.spec import spec_key
from lab.sweep import follow_up_settings

ACTOR = "lab"  # who a skip is recorded as: the lab itself, not a person
SKIPPED = "follow_ups_skipped"  # the lab event's action


def queue_follow_ups(s: Session, job_id: int, row: Result) -> list[int]:
    """Queue the follow-ups this result calls for, as many as the limits leave room for. Its configuration's other
    runs are found through the (sweep, config) index, not by reading the sweep. Returns the new job ids."""
    job = s.get(Job, job_id)
    # the sweep row locked (PostgreSQL; SQLite's writers are serialised already): two runs of one configuration
    # finishing at once must not both see the budget unspent
    reruns, process_repeats = follow_up_settings(s.scalar(
        select(Sweep.request).where(Sweep.id == job.sweep_id).with_for_update()))
    key = job.config or spec_key(job.spec)
    runs = [noise.Run(status, _kind(follow_up), bool(disturbed), center, pace)
            for status, follow_up, disturbed, center, pace in s.execute(same_configuration(job.sweep_id, key))]
    past = None
    if job.config is None:  # stored before jobs had keys and never migrated: this run alone is known
        runs = [noise.Run(job.status, _kind(job.follow_up), bool(row.disturbed))]
    elif process_repeats >= 2 and row.device_name and row.torch_version:  # one process asked for no spread
        past = history.past_spread(s.scalars(past_processes(job.sweep_id, key, row.device_name, row.torch_version)))
    # every follow-up the plan calls for (at most a re-run and the missing processes): the gate decides how many go in
    wanted = noise.plan_follow_ups(bool(row.disturbed), row.noise_note, reruns, process_repeats, runs,
                                   room=process_repeats + history.MORE + 1, past=past)  # the most any plan asks
    if not wanted:
        return []
    try:
        free = admission.room(s, job.sweep_id)
    except admission.AdmissionError as e:  # the lab's limit set wrong on this worker: the finish stands, the skip said
        free = admission.Room(0, str(e))
    if len(wanted) > free.jobs:
        s.add(LabEvent(actor=ACTOR, action=SKIPPED, sweep_id=job.sweep_id, at=utcnow(), detail={
            "job_id": job_id, "wanted": len(wanted), "queued": free.jobs,
            "skipped": [f.to_dict() for f in wanted[free.jobs:]], "because": free.why}))
    return admission.add_jobs(s, [admission.NewJob(job.sweep_id, dict(job.spec), key, job.max_attempts,
                                                   follow_up_of=job_id, follow_up=f.to_dict())
                                  for f in wanted[:free.jobs]])


def _kind(follow_up) -> str | None:
    """A job's stored follow_up (JSON: kind, n, total, because) as the kind planning reads."""
    return follow_up.get("kind") if isinstance(follow_up, dict) else None


def same_configuration(sweep_id: int, config: str):
    """The runs of one configuration in one sweep, read through the (sweep_id, config) index."""
    return (select(Job.status, Job.follow_up, Result.disturbed, Result.round_speedup, Result.host_pace_us)
            .outerjoin(Result, Result.job_id == Job.id)
            .where(Job.sweep_id == sweep_id, Job.config == config))


def counted_processes(device_name: str, torch_version: str) -> list:
    """What makes a job one of a configuration's earlier processes on this device kind under this torch: succeeded,
    undisturbed, a paired speedup (the planner's and the Queue's estimate of it alike: db.estimates)."""
    return [func.coalesce(Job.status, "") == "succeeded", Result.device_name == device_name,
            Result.torch_version == torch_version, Result.round_speedup > 0,
            func.coalesce(Result.disturbed, False).is_(False)]


def past_processes(sweep_id: int, config: str, device_name: str, torch_version: str,
                   limit: int = history.HISTORY_LIMIT):
    """The paired speedups of one configuration's earlier processes on this device kind under this torch, in sweeps
    other than this one: succeeded and undisturbed, the newest `limit`, read through the (config, id) index."""
    return (select(Result.round_speedup).select_from(Job).join(Result, Result.job_id == Job.id)
            .where(Job.config == config, Job.sweep_id != sweep_id, *counted_processes(device_name, torch_version))
            .order_by(Job.id.desc()).limit(limit))


def reruns_of(engine: Engine, job_id: int) -> tuple[int, list[int]]:
    """The re-runs a job's sweep allows per configuration, and the ids of the re-runs this job's result queued."""
    with reading(engine) as s:
        job = s.get(Job, job_id)
        reruns, _ = follow_up_settings(s.scalar(select(Sweep.request).where(Sweep.id == job.sweep_id)))
        later = s.execute(select(Job.id, Job.follow_up).where(Job.follow_up_of == job_id).order_by(Job.id)).all()
    return reruns, [i for i, f in later if (f or {}).get("kind") == noise.NOISY_RERUN]
