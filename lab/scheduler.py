"""The cluster scheduler's words in the lab. A worker started by Slurm or Kubernetes publishes where it runs (its
`identity`: the scheduler's job id, node and allocation); a scheduler job that has not started yet carries the
scheduler's own pending reason; a scheduler that ends a worker (scancel, time limit, preemption, a failed node) is
named on the lab job it was running ("the worker's Slurm job 812_3 hit its time limit"). Pure Python: the launcher,
the worker, the CLI and the dashboard all say it the same way."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Mapping, NamedTuple

SLURM, KUBERNETES = "slurm", "kubernetes"
NAMES = {SLURM: "Slurm", KUBERNETES: "Kubernetes"}

# Slurm's end states of a job, in words; those that count the lab job's attempt may be the job's doing (it needs more
# time or memory than the allocation has, or it brought the node down), so a job that keeps causing them ends after
# its attempts; a cancel or a preemption is someone else's decision and costs the job nothing
ENDINGS = {
    "TIMEOUT": ("hit its time limit", True),
    "OUT_OF_MEMORY": ("ran out of memory", True),
    "NODE_FAIL": ("lost its node (node failure)", True),
    "BOOT_FAIL": ("could not boot its node", False),
    "PREEMPTED": ("was preempted", False),
    "REQUEUED": ("was requeued by the scheduler (a preemption, or scontrol requeue)", False),
    "CANCELLED": ("was cancelled (scancel)", False),
    "DEADLINE": ("passed its deadline", False),
    "FAILED": ("failed", True),
}
# what slurmstepd writes in a job's output as it ends it ("*** JOB 812 ON c12 CANCELLED AT ... DUE TO TIME LIMIT ***")
STEPD_DUE = {"TIME LIMIT": "TIMEOUT", "PREEMPTION": "PREEMPTED", "JOB REQUEUE": "REQUEUED",
             "NODE FAILURE": "NODE_FAIL"}
# Slurm's pending reasons that mean "waiting its turn", as opposed to a request the cluster cannot meet as written
WAITING_TURN = {"Priority", "Resources", "None", "BeginTime", "JobArrayTaskLimit", "QOSMaxJobsPerUserLimit",
                "AssocMaxJobsLimit", "AssocGrpGRES", "QOSGrpGRES", "Dependency"}


class Ending(NamedTuple):
    """How a scheduler ended a worker: the words for its lab job, and whether that counts the job's attempt."""

    words: str
    counted: bool


def named(identity: Mapping | None) -> str:
    """The worker's scheduler job as a person looks it up: "the worker's Slurm job 812_3"."""
    if not identity:
        return "the worker"
    if identity.get("kind") == KUBERNETES:
        return f"the worker's Kubernetes pod {identity.get('pod')}"
    return f"the worker's {NAMES.get(identity.get('kind'), identity.get('kind'))} job {identity.get('job_id')}"


def slurm_ending(state: str | None, reason: str | None = None, stepd: str | None = None) -> str:
    """How Slurm is ending a job, from what it says meanwhile: its final state (TIMEOUT, ...), or COMPLETING with the
    reason (TimeLimit), and slurmstepd's line in the job's output (`stepd`: "CANCELLED AT ... DUE TO JOB REQUEUE"),
    else a cancel."""
    state, reason = (state or "").upper(), reason or ""
    if state in ENDINGS:
        return state
    due = (stepd or "").partition(" DUE TO ")[2].strip(" *")
    if due in STEPD_DUE:
        return STEPD_DUE[due]
    if reason == "TimeLimit":
        return "TIMEOUT"
    if "preempt" in reason.lower():
        return "PREEMPTED"
    if reason in ("NodeDown", "NodeFail", "Node_fail"):
        return "NODE_FAIL"
    return "CANCELLED"


def ending(identity: Mapping | None, state: str) -> Ending:
    """The lab's words for a scheduler state that ended a worker: "the worker's Slurm job 812_3 hit its time limit"."""
    words, counted = ENDINGS.get(state, (f"ended ({state})", False))
    return Ending(f"{named(identity)} {words}", counted)


def stopped(identity: Mapping | None) -> Ending:
    """A scheduler stopped the worker and it could not learn why (no answer from the scheduler, a Kubernetes pod deleted,
    evicted or preempted: a pod is told no more than SIGTERM)."""
    if identity and identity.get("kind") == KUBERNETES:
        return Ending(f"{named(identity)} was stopped (deleted, evicted or preempted)", False)
    return Ending(f"{named(identity)} was stopped by the scheduler (SIGTERM)", False)


def allocation(identity: Mapping | None) -> str:
    """Where a worker runs and what it was given, in one line: "Slurm job 812_3 on node c12: 8 CPUs, GPU 0, ..."."""
    if not identity:
        return ""
    if identity.get("kind") == KUBERNETES:
        head = f"Kubernetes pod {identity.get('pod')} (job {identity.get('job')}, index {identity.get('index')})"
    else:
        head = f"{NAMES.get(identity.get('kind'), identity.get('kind'))} job {identity.get('job_id')}"
    parts = [f"{identity['cpus']} CPUs" if identity.get("cpus") else "",
             f"GPU {identity['gpus']}" if identity.get("gpus") else "",
             f"{identity['mem_mb']} MB" if identity.get("mem_mb") else "",
             f"partition {identity['partition']}" if identity.get("partition") else "",
             f"account {identity['account']}" if identity.get("account") else "",
             f"time limit {identity['time_limit']}" if identity.get("time_limit") else ""]
    where = f" on node {identity['node']}" if identity.get("node") else ""
    given = ", ".join(p for p in parts if p)
    return head + where + (f": {given}" if given else "")


def pending_line(jobs: list[Mapping]) -> str:
    """Scheduler jobs that have not started, with the scheduler's reasons: "3 Slurm jobs pending (Resources: 2,
    Priority: 1)"."""
    if not jobs:
        return ""
    kinds = sorted({NAMES.get(j.get("kind"), j.get("kind")) for j in jobs})
    reasons: dict[str, int] = {}
    for j in jobs:
        reasons[j.get("reason") or "None"] = reasons.get(j.get("reason") or "None", 0) + 1
    said = ", ".join(f"{r}: {n}" if len(reasons) > 1 else r for r, n in sorted(reasons.items(), key=lambda x: -x[1]))
    return f"{len(jobs)} {'/'.join(kinds)} job{'s' if len(jobs) > 1 else ''} pending ({said})"


def utc_text(when) -> str:
    """A time as "YYYY-MM-DD HH:MM:SS UTC": a datetime (naive ones are the database's UTC) or an ISO string with its
    offset (the launcher stores Slurm's local submit time with one). Anything else is shown as it is."""
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when)
        except ValueError:
            return when
    if not isinstance(when, datetime):
        return "" if when is None else str(when)
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return f"{when:%Y-%m-%d %H:%M:%S} UTC"


def local_to_utc(text: str) -> str:
    """Slurm's times (squeue %V) are the cluster's local time without an offset: as UTC ISO text, read where the
    launcher runs (a login node keeps the cluster's time zone); "N/A" and the like stay as they are."""
    try:
        naive = datetime.fromisoformat(text)
    except ValueError:
        return text
    return naive.astimezone(timezone.utc).isoformat() if naive.tzinfo is None else naive.isoformat()
