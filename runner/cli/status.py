"""`python -m runner status`: jobs by status, the live workers (with their scheduler job, node and allocation where a
cluster's scheduler started them), the scheduler jobs a launcher submitted that have not started and the scheduler's
reason why, and the newest jobs (why a queued one waits)."""
from __future__ import annotations

import json

from db import cluster, estimates, queue
from db.database import get_engine
from db.engine import describe, resolve_url
from db.models import JobStatus, utcnow
from lab import eta, scheduler
from lab.errors import cut, first_line
from lab.spec import job_label


def add_parser(sub, add_db) -> None:
    st = sub.add_parser("status", help="jobs by status, recent jobs, live workers, scheduler jobs still pending")
    add_db(st)
    st.add_argument("--json", action="store_true")


def cmd_status(args) -> int:
    engine = get_engine(args.db)
    counts = queue.status_counts(engine)
    workers = queue.live_workers(engine)
    pending = cluster.pending_jobs(engine)
    jobs = queue.jobs_overview(engine, limit=30)
    est = estimates.queue_estimates(engine, workers)  # from the history of similar jobs (lab.eta)
    for j in jobs:  # why a queued job may wait forever (no live worker has its device, model or torch)
        j["waiting_reason"] = queue.waiting_reason(j["spec"], workers) if j["status"] == "queued" else None
        j["eta"] = est.row_words(j["job_id"]) or None
    if args.json:
        print(json.dumps({"database": describe(resolve_url(args.db)), "counts": counts,
                          "workers": [{"id": w.id, "hostname": w.hostname, "gpu": w.gpu, "state": w.state,
                                       "job": w.current_job_id, "heartbeat_at": w.heartbeat_at.isoformat(),
                                       "torch_version": w.capabilities.get("torch_version"),
                                       "scheduler": w.capabilities.get("scheduler"),
                                       "paused": w.capabilities.get("paused") if w.state == "paused" else None}
                                      for w in workers],
                          "scheduler_pending": pending, "jobs": jobs,
                          "queue_done_in_s": est.queue[0] if est.queue else None,
                          "process_repeats_to_come": sum(est.planned.values())}, default=str, indent=1))
        return 0
    print(f"database: {describe(resolve_url(args.db))}")
    print("jobs: " + (", ".join(f"{counts.get(s.value, 0)} {s.value}" for s in JobStatus) if counts else "none"))
    if est.queue is not None:
        coming = sum(est.planned.values())
        print(f"queue: done {eta.in_words(est.queue)} (from the history of similar jobs"
              + (f"; with {coming} process repeat{'s' if coming > 1 else ''} to be queued" if coming else "") + ")")
    now = utcnow()
    print(f"live workers: {len(workers)}" + "".join(
        f"\n  {w.id}  host {w.hostname}  gpu {w.gpu if w.gpu is not None else '-'}  {w.state}"
        + f"  torch {w.capabilities.get('torch_version')}" + (f" job {w.current_job_id}" if w.current_job_id else "")
        + f"  heartbeat {(now - w.heartbeat_at).total_seconds():.0f} s ago"
        + (f"\n    {scheduler.allocation(w.capabilities['scheduler'])}" if w.capabilities.get("scheduler") else "")
        + (f"\n    {w.capabilities['paused']}" if w.state == "paused" and w.capabilities.get("paused") else "")
        for w in workers))
    if pending:
        print(scheduler.pending_line(pending) + "".join(
            f"\n  {scheduler.NAMES.get(p.get('kind'), p.get('kind'))} job {p.get('job_id')}  pool {p.get('pool')}  "
            f"{p.get('state')}  reason {p.get('reason')}" for p in pending))
    for j in jobs:
        line = f"{j['job_id']:>6}  {j['status']:<10} {job_label(j['spec'])}"
        if j["status"] == "running":
            line += f"  [{j['phase']}" + (f" {j['progress']:.0%}" if j["progress"] is not None else "") + "]"
            line += f"  {est.left[j['job_id']].words(stage=False)}" if j["job_id"] in est.left else ""
        elif j["status"] == "queued":
            line += f"  ({j['waiting_reason']})" if j["waiting_reason"] else ""
            line += f"  {j['eta']}" if j["eta"] else ""
        elif j["error"]:
            line += f"  {cut(first_line(j['error']), 140)}"
        if j["follow_up"]:
            line += f"  ({cut(j['follow_up'], 160)})"
        print(line)
    return 0


COMMANDS = {"status": cmd_status}
