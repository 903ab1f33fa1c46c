"""A sweep's submitter, and who may cancel its jobs. The submitter is the signed-in person who submitted the sweep from
the dashboard, or the OS user (user@host) who did from the CLI or from a dashboard with sign-in off. With the
dashboard's sign-in on, a job is cancelled there only for its sweep's submitter; with it off, anyone who opens the
page may cancel any job, and the CLI may always (its database URL is its credential)."""
from __future__ import annotations

from typing import Collection

from sqlalchemy import Engine, select

from db import queue
from db.engine import reading
from db.models import Job, Sweep


class NotSubmitter(queue.QueueError):
    """A cancel refused: the job's sweep was submitted by someone else."""


def submitter(engine: Engine, job_id: int) -> str | None:
    """Who submitted the sweep of job `job_id`; None when there is no such job."""
    with reading(engine) as s:
        return s.scalar(select(Sweep.created_by).join(Job, Job.sweep_id == Sweep.id).where(Job.id == job_id))


def cancel_as(engine: Engine, job_id: int, who: str | Collection[str] | None) -> str:
    """queue.cancel on behalf of `who` (None: anyone may, sign-in is off): a submitter's id, or every id that is one
    person's (a signed-in subject and the verified address older sweeps were recorded under); refused with
    NotSubmitter unless one of them submitted the job's sweep. A job's sweep and a sweep's submitter never change:
    looking first leaves no race."""
    if who is not None:
        ids = {who} if isinstance(who, str) else set(who)
        owner = submitter(engine, job_id)
        if owner is None:
            raise queue.QueueError(f"job {job_id}: no such job")
        if owner not in ids:
            raise NotSubmitter(f"job {job_id}: its sweep was submitted by {owner}; only its submitter may cancel it")
    return queue.cancel(engine, job_id)
