"""The one gate every new job passes: whatever queues it (a submission, a re-submit, a follow-up), a job row is made
here, after a check of two limits in the transaction that inserts it. A sweep holds at most lab.sweep.MAX_JOBS jobs
(every status: a sweep's size is what it cost), and the lab at most max_queued() queued jobs together.

The check and the insert are one transaction, so two of them cannot both pass at the edge. PostgreSQL: the sweeps'
rows are locked FOR UPDATE (ascending ids: two transactions never wait on each other in a cycle), then a
transaction-scoped advisory lock serialises every admission's lab-wide count; each holder commits before the next
counts, and READ COMMITTED gives the next one's count a snapshot that holds the rows just admitted. SQLite: writers are
already serialised by BEGIN IMMEDIATE (db.engine.atomic), so nothing changes the counts under the check.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Iterable

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from db.errors import QueueError
from db.models import Job, JobStatus, Sweep
from lab import sweep as sweep_limits

MAX_QUEUED_ENV = "COMPILE_LAB_MAX_QUEUED"
# a lab's queue: four full sweeps waiting. Past it a typo, or a script re-submitting in a loop, has queued more
# GPU-time than any lab meant to; a lab with more GPUs raises it (docs/operations.md)
DEFAULT_MAX_QUEUED = 20_000
PG_LOCK_KEY = 0x636C6171  # "claq": the advisory lock every admission takes on PostgreSQL (db.migrate's is "clab")


class AdmissionError(QueueError):
    """Adding these jobs would pass the sweep's job limit or the lab's queued-job limit; none was added."""


@dataclass(frozen=True)
class NewJob:
    """A job to queue: what the jobs row holds at its start (status queued, no attempt yet)."""

    sweep_id: int
    spec: dict
    config: str
    max_attempts: int
    follow_up_of: int | None = None
    follow_up: dict | None = None


def max_queued() -> int:
    """The lab's limit on queued jobs: COMPILE_LAB_MAX_QUEUED, else DEFAULT_MAX_QUEUED. Read on each admission, by
    every process that queues jobs (the dashboard, the CLI, the workers' follow-ups): give them all the same value."""
    raw = os.environ.get(MAX_QUEUED_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_QUEUED
    if not re.fullmatch(r"[0-9]{1,9}", raw) or int(raw) < 1:
        shown = repr(raw[:20]) + ("..." if len(raw) > 20 else "")
        raise AdmissionError(f"{MAX_QUEUED_ENV}: {shown} is not a number of jobs (a whole number, 1 or more)")
    return int(raw)


@dataclass(frozen=True)
class Room:
    """How many jobs may still be added now, and which limit stops the next one (in words)."""

    jobs: int
    why: str


def room(s: Session, sweep_id: int) -> Room:
    """How many more jobs `sweep_id` may take now, locked as add_jobs locks (the room holds until this transaction
    ends): the smaller of the sweep's and the lab's."""
    held, queued, lab_limit = _counts(s, [sweep_id])
    per_sweep = sweep_limits.MAX_JOBS - held.get(sweep_id, 0)
    in_lab = lab_limit - queued
    if per_sweep <= in_lab:
        return Room(max(0, per_sweep), f"sweep {sweep_id} holds {held.get(sweep_id, 0):,} jobs, its limit "
                                       f"{sweep_limits.MAX_JOBS:,} (lab.sweep.MAX_JOBS)")
    return Room(max(0, in_lab), f"the lab has {queued:,} jobs queued, its limit {lab_limit:,} ({MAX_QUEUED_ENV})")


def add_jobs(s: Session, new: Iterable[NewJob]) -> list[int]:
    """Check both limits for these jobs and insert them (their ids, in order), or raise AdmissionError naming the
    limit and the numbers with nothing added. The only place a jobs row is made (tests/integration/test_boundaries)."""
    new = list(new)
    if not new:
        return []
    adding = Counter(j.sweep_id for j in new)
    held, queued, lab_limit = _counts(s, list(adding))
    for sweep_id, n in sorted(adding.items()):
        if held.get(sweep_id, 0) + n > sweep_limits.MAX_JOBS:
            raise AdmissionError(
                f"sweep {sweep_id} holds {held.get(sweep_id, 0):,} jobs; {n:,} more would make "
                f"{held.get(sweep_id, 0) + n:,}, past its limit of {sweep_limits.MAX_JOBS:,} jobs per sweep "
                "(submit a new sweep for the rest)")
    if queued + len(new) > lab_limit:
        raise AdmissionError(f"the lab has {queued:,} jobs queued; {len(new):,} more would make {queued + len(new):,}, "
                             f"past its limit of {lab_limit:,} queued jobs ({MAX_QUEUED_ENV}; cancel some, or wait)")
    rows = [Job(**asdict(j)) for j in new]
    s.add_all(rows)
    s.flush()
    return [r.id for r in rows]


def _counts(s: Session, sweep_ids: list[int]) -> tuple[dict[int, int], int, int]:
    """Lock, then count: (jobs per sweep, queued jobs in the lab, the lab's limit). A sweep that is not there (deleted
    meanwhile) refuses the whole admission."""
    lab_limit = max_queued()  # a bad setting refuses before any lock is taken
    ids = sorted(set(sweep_ids))
    found = set(s.scalars(select(Sweep.id).where(Sweep.id.in_(ids)).order_by(Sweep.id).with_for_update()))
    missing = [i for i in ids if i not in found]
    if missing:
        raise QueueError(f"sweep {', '.join(map(str, missing))}: no such sweep (deleted?); nothing was queued")
    if s.get_bind().dialect.name == "postgresql":
        s.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})
    held = dict(s.execute(select(Job.sweep_id, func.count()).where(Job.sweep_id.in_(ids)).group_by(Job.sweep_id)).all())
    queued = s.scalar(select(func.count()).select_from(Job).where(Job.status == JobStatus.QUEUED.value))
    return held, queued, lab_limit
